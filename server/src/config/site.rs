//! Where the app listens, as what it is known to the world, who may sign up, and whether this is
//! development or production.

use invoicer_core::state::DEFAULT_SITE_ADDR;

use super::present;

#[derive(clap::Args, Debug, Clone)]
pub struct Site {
    /// Listen address (cargo-leptos sets it).
    #[arg(
        long,
        env = "LEPTOS_SITE_ADDR",
        default_value = DEFAULT_SITE_ADDR,
        global = true
    )]
    pub leptos_site_addr: String,
    /// Production unless `DEV` is asked for (`scripts/dev` does; so does `cargo leptos watch`,
    /// which sets LEPTOS_WATCH=true): `DEV` allows the dev defaults (webhook secret, public URL),
    /// the Simulate button and failpoints. [default: PROD]
    #[arg(long, env = "LEPTOS_ENV", value_parser = parse_mode, global = true)]
    pub leptos_env: Option<Mode>,
    /// Public URL (links in emails, the origin form posts must come from); https makes session
    /// cookies `Secure` and `__Host-` and turns on HSTS. Required in production; dev default
    /// `http://LEPTOS_SITE_ADDR`.
    #[arg(long, env = "INVOICER_PUBLIC_URL", global = true)]
    pub invoicer_public_url: Option<String>,
    /// `open`: anyone may create an org at /signup (its card payments wait for `server admin
    /// allow-payments`); `closed`: orgs come from `server admin create-org`, people join by
    /// invitation. Production default `closed`, dev default `open`.
    #[arg(long, env = "SIGNUPS", value_parser = ["closed", "open"], global = true)]
    pub signups: Option<String>,
    /// The header a trusted reverse proxy puts the client address in (its last value counts), e.g.
    /// `x-forwarded-for`; unset: the connection's peer address. Set it only behind such a proxy.
    #[arg(long, env = "CLIENT_IP_HEADER", global = true)]
    pub client_ip_header: Option<String>,
}

/// `LEPTOS_ENV`: dev conveniences, or production's stricter defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Dev,
    Prod,
}

fn parse_mode(value: &str) -> Result<Mode, String> {
    match value.to_ascii_lowercase().as_str() {
        "dev" | "development" => Ok(Mode::Dev),
        "prod" | "production" => Ok(Mode::Prod),
        _ => Err("expected DEV or PROD".into()),
    }
}

/// [`Site`] with its defaults filled in.
#[derive(Debug, Clone)]
pub struct Checked {
    /// LEPTOS_SITE_ADDR.
    pub addr: String,
    /// INVOICER_PUBLIC_URL without a trailing slash, or the dev default.
    pub public_url: String,
    pub signups_open: bool,
    pub client_ip_header: Option<String>,
}

impl Site {
    /// LEPTOS_ENV=DEV, or unset under `cargo leptos watch`.
    pub fn dev_mode(&self) -> bool {
        let watching = std::env::var("LEPTOS_WATCH").is_ok_and(|w| w == "true");
        let mode = self
            .leptos_env
            .unwrap_or(if watching { Mode::Dev } else { Mode::Prod });
        mode == Mode::Dev
    }

    /// `dev`: the dev defaults may fill in what is unset.
    pub(super) fn check(self, dev: bool) -> anyhow::Result<Checked> {
        let public_url = match present(self.invoicer_public_url) {
            Some(url) => url,
            None => {
                anyhow::ensure!(
                    dev,
                    "INVOICER_PUBLIC_URL must be set in production (e.g. https://billing.example.com)"
                );
                format!("http://{}", self.leptos_site_addr)
            }
        };
        crate::security::origin_of(&public_url)
            .map_err(|e| anyhow::anyhow!("INVOICER_PUBLIC_URL: {e}"))?;
        let signups = self
            .signups
            .as_deref()
            .unwrap_or(if dev { "open" } else { "closed" });
        Ok(Checked {
            signups_open: signups == "open",
            public_url: public_url.trim_end_matches('/').to_owned(),
            addr: self.leptos_site_addr,
            client_ip_header: present(self.client_ip_header),
        })
    }
}

impl Checked {
    /// Where this server reaches itself.
    pub fn self_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The guards' view of this deployment.
    pub fn guard(&self) -> crate::security::Guard {
        let origin =
            crate::security::origin_of(&self.public_url).unwrap_or(self.public_url.clone());
        crate::security::Guard::new(&origin, self.public_url.starts_with("https://"))
    }
}

//! Configuration: environment variables (a `.env` file in the working directory may set them, never
//! overriding the real environment), each with a working dev default. `server --help` lists them all;
//! a bad value stops start-up with a message naming the variable.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use app::ssr::retention::RetentionConfig;
use app::ssr::secret::Secret;
use app::ssr::state::{Settings, DEV_WEBHOOK_SECRET};
use app::ssr::worker::WorkerConfig;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

/// The local cluster over its unix socket, database `invoicer`, as the OS user (peer auth).
pub const DEFAULT_DATABASE_URL: &str = "postgres:///invoicer?host=/var/run/postgresql";

/// The reads' pool's size unless DATABASE_READ_POOL_SIZE says otherwise: at 16 clients on the
/// large benchmark database, 4 connections served the invoice page 23-43 % faster than 16
/// (docs/performance.md).
pub const DEFAULT_READ_POOL_SIZE: u32 = 4;

/// The local Stripe of dev and tests (`scripts/stripe-local`), and the key it accepts.
pub const LOCAL_STRIPE: &str = "http://127.0.0.1:12111";
pub const LOCAL_STRIPE_KEY: &str = "sk_test_local";

#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Configuration (environment variables)")]
pub struct Config {
    /// Postgres; the default is the local cluster over its socket as your OS user.
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, global = true)]
    pub database_url: String,
    /// `true` lets production reach a database on another host without TLS (DATABASE_URL without
    /// `sslmode=require`, `verify-ca` or `verify-full`): only on a network you trust end to end.
    #[arg(long, env = "DATABASE_ALLOW_PLAINTEXT", default_value_t = false, action = clap::ArgAction::Set, global = true)]
    pub database_allow_plaintext: bool,
    /// Connections in the first pool: writes, sessions and searches.
    #[arg(long, env = "DATABASE_POOL_SIZE", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub database_pool_size: u32,
    /// Connections in the reads' pool, opened as needed (default: 4, or DATABASE_POOL_SIZE if
    /// smaller). Its statements are short and never wait for a lock, so a few connections serve
    /// them; more only make Postgres' backends take turns for its cores.
    #[arg(long, env = "DATABASE_READ_POOL_SIZE", value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub database_read_pool_size: Option<u32>,
    /// Listen address (cargo-leptos sets it).
    #[arg(
        long,
        env = "LEPTOS_SITE_ADDR",
        default_value = "127.0.0.1:3000",
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
    /// `test` or `live`: which Stripe mode this deployment takes events from. Required in
    /// production; dev default `test`.
    #[arg(long, env = "STRIPE_MODE", value_parser = ["test", "live"], global = true)]
    pub stripe_mode: Option<String>,
    /// One or more `whsec_...` secrets, comma separated (rotation: any may match). Required in
    /// production; dev default `whsec_dev_invoicer`.
    #[arg(long, env = "STRIPE_WEBHOOK_SECRET", value_delimiter = ',', value_parser = parse_secret, global = true, hide_env_values = true)]
    pub stripe_webhook_secret: Vec<Secret>,
    /// The secret API key (`sk_test_...` / `sk_live_...`) the app creates Checkout sessions with.
    /// Unset in production: the Pay button answers "payment unavailable". Dev default: the local
    /// Stripe's `sk_test_local`.
    #[arg(long, env = "STRIPE_SECRET_KEY", global = true, hide_env_values = true)]
    pub stripe_secret_key: Option<Secret>,
    /// The Stripe API the app calls. Default `https://api.stripe.com`; dev default the local Stripe,
    /// `http://127.0.0.1:12111` (`scripts/stripe-local`).
    #[arg(long, env = "STRIPE_API_BASE", global = true)]
    pub stripe_api_base: Option<String>,
    /// Calls to Stripe under way at once; beyond them Pay answers 503 with Retry-After before
    /// anything is claimed.
    #[arg(long, env = "STRIPE_MAX_CALLS", default_value_t = app::ssr::stripe::client::MAX_CALLS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..10_000), global = true)]
    pub stripe_max_calls: usize,
    /// Accepted clock skew of webhook signatures, in seconds (1 to 3600).
    #[arg(long, env = "STRIPE_WEBHOOK_TOLERANCE_SECS", default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..=3600), global = true)]
    pub stripe_webhook_tolerance_secs: u32,
    /// How long an API Idempotency-Key names its first request, in hours.
    #[arg(long, env = "IDEMPOTENCY_KEY_TTL_HOURS", default_value_t = 24, value_parser = clap::value_parser!(u64).range(1..), global = true)]
    pub idempotency_key_ttl_hours: u64,
    /// `smtp://[user:pass@]host:port` (STARTTLS when the server offers it, required with
    /// credentials) or `smtps://...` (TLS from the start); unset: emails are written as files to
    /// MAIL_DIR.
    #[arg(long, env = "SMTP_URL", global = true, hide_env_values = true)]
    pub smtp_url: Option<Secret>,
    /// A PEM file with the CA that signed the SMTP server's certificate, for a relay with a private
    /// CA (public CAs are trusted without it).
    #[arg(long, env = "SMTP_CA_FILE", global = true)]
    pub smtp_ca_file: Option<PathBuf>,
    /// How long one SMTP conversation may take, in milliseconds; WORKER_LEASE_SECS must be longer.
    #[arg(long, env = "SMTP_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=600_000), global = true)]
    pub smtp_timeout_ms: u64,
    /// The sender of every email, `Name <address>`. Required in production.
    #[arg(long, env = "MAIL_FROM", global = true)]
    pub mail_from: Option<String>,
    /// Where emails go without SMTP_URL.
    #[arg(long, env = "MAIL_DIR", default_value = "target/mail", global = true)]
    pub mail_dir: PathBuf,
    /// Outbox workers inside `server` (0: none); `server worker` runs this many (at least 1).
    #[arg(long, env = "WORKERS", default_value_t = 1, global = true)]
    pub workers: usize,
    /// How long a worker holds an email it is sending before another may take it over, in seconds.
    #[arg(long, env = "WORKER_LEASE_SECS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..), global = true)]
    pub worker_lease_secs: u64,
    /// How often workers look for due emails without a notification, in milliseconds.
    #[arg(long, env = "WORKER_POLL_MS", default_value_t = 1_000, global = true)]
    pub worker_poll_ms: u64,
    /// The first retry delay of a failed email, in milliseconds (doubling, with jitter).
    #[arg(
        long,
        env = "WORKER_BACKOFF_BASE_MS",
        default_value_t = 5_000,
        global = true
    )]
    pub worker_backoff_base_ms: u64,
    /// Retention of webhook claims and stored events, in days (at least 3: Stripe retries for three).
    #[arg(
        long,
        env = "WEBHOOK_CLAIM_RETENTION_DAYS",
        default_value_t = 30,
        global = true
    )]
    pub webhook_claim_retention_days: u32,
    /// Retention of a rendered form's key, in days (the invoice's unique source key outlives it).
    #[arg(long, env = "FORM_KEY_RETENTION_DAYS", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub form_key_retention_days: u32,
    /// Retention of the activity log (attempts), in days.
    #[arg(long, env = "ACTIVITY_RETENTION_DAYS", default_value_t = 90, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub activity_retention_days: u32,
    /// Retention of sent and dead emails in the outbox, in days.
    #[arg(long, env = "OUTBOX_RETENTION_DAYS", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub outbox_retention_days: u32,
    /// With it, `/metrics` requires `Authorization: Bearer <token>` (at least 16 characters).
    #[arg(long, env = "METRICS_TOKEN", global = true, hide_env_values = true)]
    pub metrics_token: Option<Secret>,
    /// A separate listener for `/metrics` only (e.g. `127.0.0.1:9100`, not exposed publicly); then
    /// the public listener has no `/metrics`.
    #[arg(long, env = "METRICS_ADDR", global = true)]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Login attempts per minute for one account from one client address.
    #[arg(long, env = "LOGINS_PER_ACCOUNT_MINUTE", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub logins_per_account_minute: u32,
    /// Login attempts per minute from one client address.
    #[arg(long, env = "LOGINS_PER_ADDRESS_MINUTE", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub logins_per_address_minute: u32,
    /// Sign-ups per hour from one client address.
    #[arg(long, env = "SIGNUPS_PER_ADDRESS_HOUR", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub signups_per_address_hour: u32,
    /// Emails one org may queue per hour (Send and Retry).
    #[arg(long, env = "EMAILS_PER_ORG_HOUR", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub emails_per_org_hour: u32,
    /// Account emails (password reset, verification, invitations) asked for per hour from one
    /// client address.
    #[arg(long, env = "ACCOUNT_EMAILS_PER_ADDRESS_HOUR", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub account_emails_per_address_hour: u32,
    /// Account emails per hour to one recipient address.
    #[arg(long, env = "ACCOUNT_EMAILS_PER_RECIPIENT_HOUR", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub account_emails_per_recipient_hour: u32,
    /// Password resets (a reset link followed) per hour from one client address.
    #[arg(long, env = "RESETS_PER_ADDRESS_HOUR", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub resets_per_address_hour: u32,
    /// Tries of one reset link per hour, from anywhere.
    #[arg(long, env = "RESETS_PER_TOKEN_HOUR", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub resets_per_token_hour: u32,
    /// Customer pages (`/i/{token}` and Pay) per minute from one client address.
    #[arg(long, env = "PUBLIC_PAGES_PER_ADDRESS_MINUTE", default_value_t = 120, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub public_pages_per_address_minute: u32,
    /// Customer pages per minute of one invoice link.
    #[arg(long, env = "PUBLIC_PAGES_PER_TOKEN_MINUTE", default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub public_pages_per_token_minute: u32,
    /// Customer PDFs per minute from one client address.
    #[arg(long, env = "PDFS_PER_ADDRESS_MINUTE", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub pdfs_per_address_minute: u32,
    /// Customer PDFs per minute of one invoice link.
    #[arg(long, env = "PDFS_PER_TOKEN_MINUTE", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub pdfs_per_token_minute: u32,
    /// Ceiling: login attempts per hour from all clients together.
    #[arg(long, env = "LOGINS_PER_HOUR", default_value_t = 20000, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub logins_per_hour: u32,
    /// Ceiling: sign-ups per hour from all clients together.
    #[arg(long, env = "SIGNUPS_PER_HOUR", default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub signups_per_hour: u32,
    /// Ceiling: account emails asked for per hour from all clients together.
    #[arg(long, env = "ACCOUNT_EMAILS_PER_HOUR", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub account_emails_per_hour: u32,
    /// Ceiling: password resets per hour from all clients together.
    #[arg(long, env = "RESETS_PER_HOUR", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub resets_per_hour: u32,
    /// Ceiling: customer pages per hour from all clients together.
    #[arg(long, env = "PUBLIC_PAGES_PER_HOUR", default_value_t = 200000, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub public_pages_per_hour: u32,
    /// Ceiling: customer PDFs per hour from all clients together.
    #[arg(long, env = "PDFS_PER_HOUR", default_value_t = 20000, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub pdfs_per_hour: u32,
    /// The header a trusted reverse proxy puts the client address in (its last value counts), e.g.
    /// `x-forwarded-for`; unset: the connection's peer address. Set it only behind such a proxy.
    #[arg(long, env = "CLIENT_IP_HEADER", global = true)]
    pub client_ip_header: Option<String>,
    /// Longest a request-serving SQL statement may run, in milliseconds.
    #[arg(long, env = "STATEMENT_TIMEOUT_MS", default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(100..), global = true)]
    pub statement_timeout_ms: u64,
    /// Crash injection for tests, comma separated (debug builds or `--features failpoints`).
    #[arg(long, env = "INVOICER_FAILPOINT", global = true)]
    pub invoicer_failpoint: Option<String>,
    /// Soak runs only (`lab soak`): `<window secs>/<every secs>`, every retention window that long
    /// and the retention job that often. Where failpoints are honoured, else refused.
    #[arg(long, env = "INVOICER_SOAK_RETENTION", global = true, hide = true)]
    pub invoicer_soak_retention: Option<String>,
    /// Log filter.
    #[arg(
        long,
        env = "RUST_LOG",
        default_value = "info,sqlx=warn,tower_sessions=warn",
        global = true
    )]
    pub rust_log: String,
    /// `json` for one JSON object per log event (always in production).
    #[arg(long, env = "LOG_FORMAT", default_value = "text", global = true)]
    pub log_format: String,
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

fn parse_secret(value: &str) -> Result<Secret, String> {
    let secret = value.trim();
    if secret.is_empty() {
        return Err("a secret in the list is empty".into());
    }
    Ok(Secret::from(secret))
}

impl Config {
    /// Checks what one variable cannot say alone and fills in the dev defaults; call once at
    /// start-up. Production (the default) has no defaults for what would be unsafe to guess.
    /// `deployed`: the command serves, works the outbox or talks to Stripe (everything but `admin`,
    /// which needs only the database).
    pub fn validate(&mut self, deployed: bool) -> anyhow::Result<()> {
        let dev = self.dev_mode() || !deployed;
        let blank = |v: &mut Option<String>| *v = v.take().filter(|s| !s.trim().is_empty());
        let blank_secret = |v: &mut Option<Secret>| *v = v.take().filter(|s| !s.is_blank());
        blank_secret(&mut self.smtp_url);
        blank(&mut self.invoicer_public_url);
        blank(&mut self.mail_from);
        blank_secret(&mut self.metrics_token);
        blank(&mut self.client_ip_header);
        blank_secret(&mut self.stripe_secret_key);
        blank(&mut self.stripe_api_base);
        if dev {
            self.stripe_api_base
                .get_or_insert_with(|| LOCAL_STRIPE.to_owned());
            self.stripe_secret_key
                .get_or_insert_with(|| LOCAL_STRIPE_KEY.into());
        }
        if self.stripe_webhook_secret.is_empty() {
            anyhow::ensure!(
                dev,
                "STRIPE_WEBHOOK_SECRET must be set in production (LEPTOS_ENV is not DEV)"
            );
            self.stripe_webhook_secret = vec![DEV_WEBHOOK_SECRET.into()];
        }
        anyhow::ensure!(
            dev || !self
                .stripe_webhook_secret
                .iter()
                .any(|s| s.expose() == DEV_WEBHOOK_SECRET),
            "STRIPE_WEBHOOK_SECRET: the public dev secret {DEV_WEBHOOK_SECRET} is refused in production"
        );
        if self.signups.is_none() {
            self.signups = Some(if dev { "open" } else { "closed" }.into());
        }
        if self.stripe_mode.is_none() {
            anyhow::ensure!(dev, "STRIPE_MODE (test or live) must be set in production");
            self.stripe_mode = Some("test".into());
        }
        let public_url = match self.invoicer_public_url.take() {
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
        self.invoicer_public_url = Some(public_url.trim_end_matches('/').to_owned());
        if self.mail_from.is_none() {
            // Production mails from the public host (the operator's own domain), never from the
            // dev sender's `.invalid` one.
            let host = url::Url::parse(&public_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned));
            self.mail_from = Some(match host {
                Some(host) if !dev && host.contains('.') => format!("invoicer <billing@{host}>"),
                _ => app::ssr::mail::DEV_FROM.to_owned(),
            });
        }
        app::ssr::mail::parse_from(self.mail_from.as_deref().unwrap_or_default())
            .map_err(|e| anyhow::anyhow!("MAIL_FROM: {e}"))?;
        if let Some(url) = &self.smtp_url {
            app::ssr::mail::SmtpTarget::parse(url.expose())
                .map_err(|e| anyhow::anyhow!("SMTP_URL: {e}"))?;
        }
        anyhow::ensure!(
            self.worker_lease_secs * 1000 > self.smtp_timeout_ms,
            "WORKER_LEASE_SECS ({} s) must be longer than SMTP_TIMEOUT_MS ({} ms): a lease that \
             ends while its email is still being sent lets another worker send it again",
            self.worker_lease_secs,
            self.smtp_timeout_ms
        );
        if let Some(token) = &self.metrics_token {
            anyhow::ensure!(
                token.expose().len() >= 16,
                "METRICS_TOKEN must have at least 16 characters"
            );
        }
        self.retention()?;
        anyhow::ensure!(
            dev || self.database_allow_plaintext || database_is_private(&self.database_url),
            "DATABASE_URL names a database on another host without TLS: add sslmode=verify-full \
             (and sslrootcert=<the CA's file>) or sslmode=require, or set \
             DATABASE_ALLOW_PLAINTEXT=true if the network to it is trusted"
        );
        Ok(())
    }

    /// The public URL, after [`Config::validate`].
    pub fn public_url(&self) -> String {
        self.invoicer_public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.leptos_site_addr))
    }

    pub fn limits(&self) -> app::ssr::throttle::Limits {
        app::ssr::throttle::Limits {
            logins_per_account_minute: self.logins_per_account_minute,
            logins_per_address_minute: self.logins_per_address_minute,
            signups_per_address_hour: self.signups_per_address_hour,
            emails_per_org_hour: self.emails_per_org_hour,
            account_emails_per_address_hour: self.account_emails_per_address_hour,
            account_emails_per_recipient_hour: self.account_emails_per_recipient_hour,
            resets_per_address_hour: self.resets_per_address_hour,
            resets_per_token_hour: self.resets_per_token_hour,
            public_pages_per_address_minute: self.public_pages_per_address_minute,
            public_pages_per_token_minute: self.public_pages_per_token_minute,
            pdfs_per_address_minute: self.pdfs_per_address_minute,
            pdfs_per_token_minute: self.pdfs_per_token_minute,
            ceilings: app::ssr::throttle::Ceilings {
                logins: self.logins_per_hour,
                signups: self.signups_per_hour,
                account_emails: self.account_emails_per_hour,
                resets: self.resets_per_hour,
                public_pages: self.public_pages_per_hour,
                pdfs: self.pdfs_per_hour,
            },
        }
    }

    pub fn dev_mode(&self) -> bool {
        let watching = std::env::var("LEPTOS_WATCH").is_ok_and(|w| w == "true");
        let mode = self
            .leptos_env
            .unwrap_or(if watching { Mode::Dev } else { Mode::Prod });
        mode == Mode::Dev
    }

    /// True when the secret is the built-in dev default (printed at start-up in dev).
    pub fn stripe_secret_is_default(&self) -> bool {
        self.stripe_webhook_secret == [Secret::from(DEV_WEBHOOK_SECRET)]
    }

    fn idempotency_key_ttl(&self) -> Duration {
        Duration::from_secs(self.idempotency_key_ttl_hours * 3600)
    }

    fn retention(&self) -> anyhow::Result<RetentionConfig> {
        let compressed = match &self.invoicer_soak_retention {
            None => None,
            Some(value) => {
                anyhow::ensure!(
                    app::ssr::failpoint::ENABLED && self.dev_mode(),
                    "INVOICER_SOAK_RETENTION is for soak runs: a debug build (or --features failpoints) with LEPTOS_ENV=DEV"
                );
                let parsed = value
                    .split_once('/')
                    .and_then(|(w, e)| Some((w.parse::<u64>().ok()?, e.parse::<u64>().ok()?)))
                    .filter(|&(w, e)| w > 0 && e > 0);
                let (window, every) = parsed.ok_or_else(|| {
                    anyhow::anyhow!(
                        "INVOICER_SOAK_RETENTION={value}: expected <window secs>/<every secs>"
                    )
                })?;
                Some((Duration::from_secs(window), Duration::from_secs(every)))
            }
        };
        Ok(RetentionConfig {
            compressed,
            form_key_days: self.form_key_retention_days,
            activity_days: self.activity_retention_days,
            outbox_days: self.outbox_retention_days,
            ..RetentionConfig::new(
                self.webhook_claim_retention_days,
                self.idempotency_key_ttl(),
            )
            .map_err(anyhow::Error::msg)?
        })
    }

    pub fn worker(&self) -> anyhow::Result<WorkerConfig> {
        Ok(WorkerConfig {
            lease: Duration::from_secs(self.worker_lease_secs),
            backoff_base: Duration::from_millis(self.worker_backoff_base_ms),
            poll: Duration::from_millis(self.worker_poll_ms),
            public_url: self.public_url(),
            retention: self.retention()?,
            stripe: Some(app::ssr::stripe::client::Stripe::new(
                self.stripe_api_base
                    .as_deref()
                    .unwrap_or(app::ssr::stripe::client::DEFAULT_API_BASE),
                self.stripe_secret_key.clone(),
            )),
            ..Default::default()
        })
    }

    pub fn settings(&self) -> Settings {
        Settings {
            stripe_webhook_secrets: self.stripe_webhook_secret.clone(),
            stripe_tolerance_secs: i64::from(self.stripe_webhook_tolerance_secs),
            stripe_livemode: self.stripe_mode.as_deref() == Some("live"),
            dev_mode: self.dev_mode(),
            self_url: format!("http://{}", self.leptos_site_addr),
            public_url: self.public_url(),
            idempotency_key_ttl: self.idempotency_key_ttl(),
            metrics_token: self.metrics_token.clone(),
            limits: self.limits(),
            client_ip_header: self.client_ip_header.clone(),
            stripe_api_base: self
                .stripe_api_base
                .clone()
                .unwrap_or_else(|| app::ssr::stripe::client::DEFAULT_API_BASE.to_owned()),
            stripe_secret_key: self.stripe_secret_key.clone(),
            stripe_max_calls: self.stripe_max_calls,
            signups_open: self.signups.as_deref() == Some("open"),
            signup_payments: self.dev_mode(),
        }
    }

    /// Where `server stripe ...` delivers by default: this configuration's own server.
    pub fn webhook_url(&self) -> String {
        format!("http://{}/webhooks/stripe", self.leptos_site_addr)
    }

    pub fn secure_cookies(&self) -> bool {
        self.public_url().starts_with("https://")
    }

    /// The guards' view of this deployment.
    pub fn guard(&self) -> crate::security::Guard {
        let url = self.public_url();
        let origin = crate::security::origin_of(&url).unwrap_or(url);
        crate::security::Guard::new(&origin, self.secure_cookies())
    }

    /// The pool: up to DATABASE_POOL_SIZE connections, planning as Postgres chooses.
    pub async fn connect(&self) -> anyhow::Result<PgPool> {
        let options = PgConnectOptions::from_str(&self.database_url)
            .context("DATABASE_URL is not a valid Postgres URL")?;
        let url = redact(&self.database_url);
        self.pool_options()
            .connect_with(options)
            .await
            .map_err(|e| {
                // rustls' refusal arrives as an I/O error during the handshake.
                let said = e.to_string();
                if matches!(e, sqlx::Error::Tls(_)) || said.contains("certificate") {
                    anyhow::anyhow!(
                        "the TLS handshake with Postgres at DATABASE_URL ({url}) failed: {said}. \
                         With sslmode=verify-full the server's certificate must be signed by the \
                         CA in sslrootcert and name the host of the URL"
                    )
                } else {
                    anyhow::Error::new(e).context(format!(
                        "cannot connect to Postgres at DATABASE_URL ({url}); is it running? \
                         scripts/dev starts one"
                    ))
                }
            })
    }

    /// The reads' pool ([`AppState::reads`](app::ssr::AppState)): up to DATABASE_READ_POOL_SIZE more
    /// connections that run every prepared statement on its generic plan. Connects when first used.
    pub fn connect_reads(&self) -> anyhow::Result<PgPool> {
        let options = PgConnectOptions::from_str(&self.database_url)
            .context("DATABASE_URL is not a valid Postgres URL")?;
        Ok(self
            .pool_options()
            .max_connections(self.read_pool_size())
            .connect_lazy_with(app::ssr::state::generic_plans(options)))
    }

    /// DATABASE_READ_POOL_SIZE, or its default.
    pub fn read_pool_size(&self) -> u32 {
        self.database_read_pool_size
            .unwrap_or(DEFAULT_READ_POOL_SIZE.min(self.database_pool_size))
    }

    fn pool_options(&self) -> PgPoolOptions {
        let statement_timeout_ms = self.statement_timeout_ms;
        PgPoolOptions::new()
            // Claims rely on READ COMMITTED (a concurrent duplicate waits, then sees the winner's row);
            // a server default of REPEATABLE READ would turn duplicates into serialization errors.
            // A statement that runs longer than STATEMENT_TIMEOUT_MS is cancelled: no request can
            // hold a connection (and the pool) hostage with a slow query.
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    use sqlx::Executor;
                    conn.execute(
                        "set session characteristics as transaction isolation level read committed",
                    )
                    .await?;
                    conn.execute(format!("set statement_timeout = {statement_timeout_ms}").as_str())
                        .await
                        .map(drop)
                })
            })
            .max_connections(self.database_pool_size)
            // sqlx pings every connection before handing it out by default: one more round trip per
            // acquire (three per duplicate webhook), the largest single cost the benchmark's profile
            // showed. A connection broken by a Postgres restart fails its next query instead, is
            // closed, and that request gets a 5xx its client retries (the fault harness does this).
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(5))
    }

    /// Readable logs in dev; JSON (one object per event, with the request span's fields, e.g.
    /// request_id) with `LOG_FORMAT=json` or in production.
    pub fn init_tracing(&self) {
        use tracing_subscriber::EnvFilter;
        let filter = EnvFilter::try_new(&self.rust_log)
            .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_sessions=warn"));
        let json = self.log_format.eq_ignore_ascii_case("json") || !self.dev_mode();
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_target(false);
        if json {
            builder
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .init();
        } else {
            builder.init();
        }
    }
}

/// Hides a password in a URL for messages.
/// The database is reached over TLS that at least encrypts (`sslmode` require, verify-ca,
/// verify-full), or it is on this machine (a socket, localhost, a loopback address).
fn database_is_private(url: &str) -> bool {
    use sqlx::postgres::PgSslMode;
    let Ok(options) = PgConnectOptions::from_str(url) else {
        // Refused with its own message when connecting.
        return true;
    };
    let encrypted = matches!(
        options.get_ssl_mode(),
        PgSslMode::Require | PgSslMode::VerifyCa | PgSslMode::VerifyFull
    );
    let host = options.get_host();
    let local = host.starts_with('/')
        || host.eq_ignore_ascii_case("localhost")
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    encrypted || local || options.get_socket().is_some()
}

fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Probe {
        #[command(flatten)]
        config: super::Config,
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            super::redact("postgres://me:secret@db:5432/x"),
            "postgres://me:***@db:5432/x"
        );
        assert_eq!(
            super::redact(super::DEFAULT_DATABASE_URL),
            super::DEFAULT_DATABASE_URL
        );
    }

    #[test]
    fn a_bad_value_names_its_variable() {
        let err = Probe::try_parse_from(["server", "--database-pool-size", "many"])
            .err()
            .expect("refused");
        assert!(err.to_string().contains("DATABASE_POOL_SIZE"), "{err}");
        let err = Probe::try_parse_from(["server", "--leptos-env", "staging"])
            .err()
            .expect("refused");
        assert!(err.to_string().contains("LEPTOS_ENV"), "{err}");
    }

    #[test]
    fn the_reads_pool_is_small_unless_told() {
        let size = |args: &[&str]| {
            Probe::try_parse_from([&["server"], args].concat())
                .unwrap()
                .config
                .read_pool_size()
        };
        assert_eq!(size(&[]), super::DEFAULT_READ_POOL_SIZE);
        assert_eq!(size(&["--database-pool-size", "2"]), 2);
        assert_eq!(size(&["--database-read-pool-size", "12"]), 12);
        assert!(Probe::try_parse_from(["server", "--database-read-pool-size", "0"]).is_err());
    }

    #[test]
    fn production_needs_a_webhook_secret() {
        let mut prod = Probe::try_parse_from(["server", "--leptos-env", "PROD"])
            .unwrap()
            .config;
        prod.stripe_webhook_secret.clear();
        assert!(prod.validate(true).is_err());
        let mut dev = Probe::try_parse_from(["server", "--leptos-env", "DEV"])
            .unwrap()
            .config;
        dev.stripe_webhook_secret.clear();
        dev.validate(true).unwrap();
        assert!(dev.stripe_secret_is_default());
    }

    /// A production configuration with everything required, plus `extra` arguments.
    fn prod(extra: &[&str]) -> super::Config {
        let defaults = [
            ("--leptos-env", "PROD"),
            ("--stripe-webhook-secret", "whsec_live_one"),
            ("--stripe-mode", "live"),
            ("--invoicer-public-url", "https://billing.example.com"),
            ("--mail-from", "Acme billing <billing@acme.example>"),
        ];
        let mut args = vec!["server"];
        for (flag, value) in defaults {
            if !extra.contains(&flag) {
                args.extend([flag, value]);
            }
        }
        args.extend_from_slice(extra);
        Probe::try_parse_from(args).unwrap().config
    }

    fn refusal(mut config: super::Config) -> String {
        config.validate(true).expect_err("refused").to_string()
    }

    #[test]
    fn production_refuses_what_would_be_unsafe() {
        prod(&[]).validate(true).unwrap();
        let dev_secret = prod(&[
            "--stripe-webhook-secret",
            "whsec_live_one,whsec_dev_invoicer",
        ]);
        assert!(refusal(dev_secret).contains("STRIPE_WEBHOOK_SECRET"));
        let mut no_url = prod(&[]);
        no_url.invoicer_public_url = None;
        assert!(refusal(no_url).contains("INVOICER_PUBLIC_URL"));
        let mut no_mode = prod(&[]);
        no_mode.stripe_mode = None;
        assert!(refusal(no_mode).contains("STRIPE_MODE"));
        let mut no_from = prod(&[]);
        no_from.mail_from = None;
        no_from.validate(true).unwrap();
        assert_eq!(
            no_from.mail_from.as_deref(),
            Some("invoicer <billing@billing.example.com>"),
            "production mails from its public host by default"
        );
        assert!(refusal(prod(&["--mail-from", "not a mailbox"])).contains("MAIL_FROM"));
        let short_lease = prod(&["--worker-lease-secs", "10", "--smtp-timeout-ms", "10000"]);
        assert!(refusal(short_lease).contains("WORKER_LEASE_SECS"));
        let bad_url = prod(&["--invoicer-public-url", "billing.example.com"]);
        assert!(refusal(bad_url).contains("INVOICER_PUBLIC_URL"));
        let short_token = prod(&["--metrics-token", "abc"]);
        assert!(refusal(short_token).contains("METRICS_TOKEN"));
        let bad_smtp = prod(&["--smtp-url", "http://mail.example"]);
        assert!(refusal(bad_smtp).contains("SMTP_URL"));
        // `admin` needs only the database, in production too.
        let mut admin = prod(&[]);
        admin.stripe_webhook_secret.clear();
        admin.invoicer_public_url = None;
        admin.validate(false).unwrap();
    }

    #[test]
    fn out_of_range_numbers_are_refused_by_name() {
        for (flag, value, var) in [
            (
                "--stripe-webhook-tolerance-secs",
                "-5",
                "STRIPE_WEBHOOK_TOLERANCE_SECS",
            ),
            (
                "--stripe-webhook-tolerance-secs",
                "0",
                "STRIPE_WEBHOOK_TOLERANCE_SECS",
            ),
            ("--worker-lease-secs", "0", "WORKER_LEASE_SECS"),
            (
                "--logins-per-address-minute",
                "0",
                "LOGINS_PER_ADDRESS_MINUTE",
            ),
            ("--statement-timeout-ms", "5", "STATEMENT_TIMEOUT_MS"),
        ] {
            let err = Probe::try_parse_from(["server".to_owned(), format!("{flag}={value}")])
                .err()
                .unwrap_or_else(|| panic!("{flag} {value} accepted"));
            assert!(
                err.to_string().contains(var) || err.to_string().contains(flag),
                "{err}"
            );
        }
    }

    #[test]
    fn signups_are_closed_in_production_and_open_in_dev_unless_told() {
        let mut prod_default = prod(&[]);
        prod_default.validate(true).unwrap();
        assert!(!prod_default.settings().signups_open);
        let mut prod_open = prod(&["--signups", "open"]);
        prod_open.validate(true).unwrap();
        assert!(prod_open.settings().signups_open);
        assert!(
            !prod_open.settings().signup_payments,
            "a signed-up org waits for the operator"
        );
        let mut dev = Probe::try_parse_from(["server", "--leptos-env", "DEV"])
            .unwrap()
            .config;
        dev.signups = None;
        dev.validate(true).unwrap();
        assert!(dev.settings().signups_open && dev.settings().signup_payments);
        assert!(Probe::try_parse_from(["server", "--signups", "maybe"]).is_err());
    }

    #[test]
    fn secrets_never_show_in_a_debug_print() {
        let mut config = prod(&[
            "--stripe-webhook-secret",
            "whsec_topsecret_one,whsec_topsecret_two",
            "--stripe-secret-key",
            "sk_live_topsecret",
            "--metrics-token",
            "metrics-topsecret-token",
            "--smtp-url",
            "smtp://user:pw-topsecret@mail.example.com",
        ]);
        config.validate(true).unwrap();
        let printed = format!("{config:?} {:?}", config.settings());
        assert!(!printed.contains("topsecret"), "{printed}");
        assert_eq!(
            config.settings().stripe_webhook_secrets[1].expose(),
            "whsec_topsecret_two"
        );
    }

    #[test]
    fn production_refuses_a_remote_database_without_tls() {
        let with_db = |url: &str, allow: &str| {
            let mut config = prod(&["--database-url", url, "--database-allow-plaintext", allow]);
            config.database_url = url.to_owned();
            config.database_allow_plaintext = allow == "true";
            config.validate(true)
        };
        let refused = with_db("postgres://app:pw@db.internal:5432/invoicer", "false")
            .unwrap_err()
            .to_string();
        assert!(refused.contains("sslmode=verify-full"), "{refused}");
        for fine in [
            "postgres://app:pw@db.internal/invoicer?sslmode=verify-full&sslrootcert=/etc/ca.pem",
            "postgres://app:pw@db.internal/invoicer?sslmode=require",
            "postgres://app@localhost/invoicer",
            "postgres://app@127.0.0.1:5432/invoicer",
            "postgres://app@[::1]/invoicer",
            "postgres:///invoicer?host=/var/run/postgresql",
        ] {
            with_db(fine, "false").unwrap_or_else(|e| panic!("{fine}: {e}"));
        }
        with_db("postgres://app:pw@db.internal/invoicer", "true").unwrap();
        // sslmode=prefer falls back to plain text: it is not TLS.
        assert!(with_db(
            "postgres://app:pw@db.internal/invoicer?sslmode=prefer",
            "false"
        )
        .is_err());
    }

    #[test]
    fn dev_fills_in_safe_local_defaults() {
        let mut dev = Probe::try_parse_from(["server", "--leptos-env", "DEV"])
            .unwrap()
            .config;
        dev.invoicer_public_url = None;
        dev.mail_from = None;
        dev.stripe_mode = None;
        dev.validate(true).unwrap();
        assert_eq!(dev.public_url(), format!("http://{}", dev.leptos_site_addr));
        assert_eq!(dev.stripe_mode.as_deref(), Some("test"));
        assert!(dev.mail_from.is_some());
    }

    #[test]
    fn an_unset_leptos_env_is_production() {
        let config = Probe::try_parse_from(["server"]).unwrap().config;
        if std::env::var("LEPTOS_ENV").is_err() && std::env::var("LEPTOS_WATCH").is_err() {
            assert!(!config.dev_mode());
        }
        let dev = Probe::try_parse_from(["server", "--leptos-env", "DEV"])
            .unwrap()
            .config;
        assert!(dev.dev_mode());
    }
}

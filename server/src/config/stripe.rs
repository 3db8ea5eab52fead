//! STRIPE_*: which mode's events apply, the webhook's secrets, and the API the app calls.

use invoicer_core::payments::stripe::client::{self, DEFAULT_API_BASE};
use invoicer_core::secret::Secret;
use invoicer_core::state::{DEFAULT_STRIPE_TOLERANCE_SECS, DEV_WEBHOOK_SECRET};

use super::{present, present_secret};

/// The local Stripe of dev and tests (`scripts/stripe-local`), and the key it accepts.
pub const LOCAL_STRIPE: &str = "http://127.0.0.1:12111";
pub const LOCAL_STRIPE_KEY: &str = "sk_test_local";

#[derive(clap::Args, Debug, Clone)]
pub struct Stripe {
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
    #[arg(long, env = "STRIPE_MAX_CALLS", default_value_t = client::MAX_CALLS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..10_000), global = true)]
    pub stripe_max_calls: usize,
    /// Accepted clock skew of webhook signatures, in seconds (1 to 3600).
    #[arg(long, env = "STRIPE_WEBHOOK_TOLERANCE_SECS", default_value_t = DEFAULT_STRIPE_TOLERANCE_SECS, value_parser = clap::value_parser!(u32).range(1..=3600), global = true)]
    pub stripe_webhook_tolerance_secs: u32,
}

fn parse_secret(value: &str) -> Result<Secret, String> {
    let secret = value.trim();
    if secret.is_empty() {
        return Err("a secret in the list is empty".into());
    }
    Ok(Secret::from(secret))
}

/// [`Stripe`] with its defaults filled in.
#[derive(Debug, Clone)]
pub struct Checked {
    /// STRIPE_MODE=live.
    pub live: bool,
    /// At least one.
    pub webhook_secrets: Vec<Secret>,
    pub secret_key: Option<Secret>,
    pub api_base: String,
    pub max_calls: usize,
    pub tolerance_secs: u32,
}

impl Stripe {
    /// `dev`: the dev defaults (the local Stripe, the public dev webhook secret) may fill in what is
    /// unset.
    pub(super) fn check(self, dev: bool) -> anyhow::Result<Checked> {
        let mut secret_key = present_secret(self.stripe_secret_key);
        let mut api_base = present(self.stripe_api_base);
        if dev {
            api_base.get_or_insert_with(|| LOCAL_STRIPE.to_owned());
            secret_key.get_or_insert_with(|| LOCAL_STRIPE_KEY.into());
        }
        let webhook_secrets = if self.stripe_webhook_secret.is_empty() {
            anyhow::ensure!(
                dev,
                "STRIPE_WEBHOOK_SECRET must be set in production (LEPTOS_ENV is not DEV)"
            );
            vec![DEV_WEBHOOK_SECRET.into()]
        } else {
            self.stripe_webhook_secret
        };
        anyhow::ensure!(
            dev || !webhook_secrets
                .iter()
                .any(|s| s.expose() == DEV_WEBHOOK_SECRET),
            "STRIPE_WEBHOOK_SECRET: the public dev secret {DEV_WEBHOOK_SECRET} is refused in production"
        );
        let mode = match self.stripe_mode {
            Some(mode) => mode,
            None => {
                anyhow::ensure!(dev, "STRIPE_MODE (test or live) must be set in production");
                "test".into()
            }
        };
        Ok(Checked {
            live: mode == "live",
            webhook_secrets,
            secret_key,
            api_base: api_base.unwrap_or_else(|| DEFAULT_API_BASE.to_owned()),
            max_calls: self.stripe_max_calls,
            tolerance_secs: self.stripe_webhook_tolerance_secs,
        })
    }
}

impl Checked {
    /// True when the secret is the built-in dev default (printed at start-up in dev).
    pub fn secret_is_default(&self) -> bool {
        self.webhook_secrets == [Secret::from(DEV_WEBHOOK_SECRET)]
    }

    /// A client for the workers' calls (expiring Checkout sessions).
    pub fn client(&self) -> client::Stripe {
        client::Stripe::new(&self.api_base, self.secret_key.clone())
    }
}

//! Configuration: environment variables (a `.env` file in the working directory may set them, never
//! overriding the real environment), each with a working dev default. `server --help` lists them all;
//! a bad value stops start-up with a message naming the variable.
//!
//! One struct per concern, flattened into [`Config`], which is what clap parses; [`Config::check`]
//! fills in the dev defaults, checks what one variable cannot say alone and returns the [`Checked`]
//! configuration the process runs with.

mod database;
mod jobs;
mod limits;
mod mail;
mod observability;
mod peppol;
mod site;
mod stripe;
#[cfg(test)]
mod tests;

use invoicer_core::jobs::retention::RetentionConfig;
use invoicer_core::secret::Secret;
use invoicer_core::state::Settings;
use invoicer_core::throttle::Limits as Allowances;
use invoicer_core::worker::WorkerConfig;

pub use database::{Database, DEFAULT_DATABASE_URL, DEFAULT_READ_POOL_SIZE};
pub use jobs::{Retention, Workers};
pub use limits::Limits;
pub use mail::{Mail, Outgoing};
pub use observability::{Logging, Metrics, DEFAULT_LOG_FILTER};
pub use peppol::{Peppol, DEV_INBOUND_SECRET};
pub use site::{Mode, Site};
pub use stripe::{Stripe, LOCAL_STRIPE, LOCAL_STRIPE_KEY};

#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Configuration (environment variables)")]
pub struct Config {
    #[command(flatten)]
    pub database: Database,
    #[command(flatten)]
    pub site: Site,
    #[command(flatten)]
    pub stripe: Stripe,
    #[command(flatten)]
    pub peppol: Peppol,
    #[command(flatten)]
    pub mail: Mail,
    #[command(flatten)]
    pub workers: Workers,
    #[command(flatten)]
    pub retention: Retention,
    #[command(flatten)]
    pub metrics: Metrics,
    #[command(flatten)]
    pub limits: Limits,
    #[command(flatten)]
    pub logging: Logging,
}

/// The configuration after [`Config::check`]: every default filled in, every value that depends on
/// another checked. Its `Debug` shows no secret (each is a [`Secret`]).
#[derive(Debug, Clone)]
pub struct Checked {
    /// LEPTOS_ENV=DEV: the dev conveniences (Simulate, failpoints, text logs) are on.
    pub dev_mode: bool,
    pub database: Database,
    pub site: site::Checked,
    pub stripe: stripe::Checked,
    pub peppol: peppol::Checked,
    pub mail: Outgoing,
    /// WORKERS: outbox workers inside `server`.
    pub workers: usize,
    /// Each worker's configuration but its id.
    pub worker: WorkerConfig,
    pub retention: RetentionConfig,
    pub metrics: Metrics,
    pub limits: Allowances,
    /// Where webhook endpoints may be (WEBHOOKS_ALLOW_PRIVATE).
    pub webhooks: invoicer_core::webhooks_out::guard::Policy,
}

/// A value that is only blanks is unset.
fn present(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

fn present_secret(value: Option<Secret>) -> Option<Secret> {
    value.filter(|v| !v.is_blank())
}

impl Config {
    /// LEPTOS_ENV=DEV (or unset under `cargo leptos watch`).
    pub fn dev_mode(&self) -> bool {
        self.site.dev_mode()
    }

    /// Checks what one variable cannot say alone and fills in the dev defaults; call once at
    /// start-up. Production (the default) has no defaults for what would be unsafe to guess.
    /// `deployed`: the command serves, works the outbox or talks to Stripe (everything but `admin`,
    /// which needs only the database).
    pub fn check(self, deployed: bool) -> anyhow::Result<Checked> {
        let dev_mode = self.dev_mode();
        let dev = dev_mode || !deployed;
        let stripe = self.stripe.check(dev)?;
        let peppol = self.peppol.check(dev)?;
        let site = self.site.check(dev)?;
        let mail = self.mail.check(dev, &site.public_url)?;
        let workers = self.workers.check(mail.timeout, dev_mode)?;
        let metrics = self.metrics.check()?;
        let retention = self.retention.check(dev_mode)?;
        self.database.check(dev)?;
        let limits = self.limits.allowances();
        Ok(Checked {
            dev_mode,
            database: self.database,
            worker: WorkerConfig {
                mail: invoicer_core::mail::gate::Allowance::of(&limits),
                dev_clock: dev_mode,
                public_url: site.public_url.clone(),
                retention: retention.clone(),
                stripe: Some(stripe.client()),
                peppol: peppol.access_point.clone(),
                invoice_pdf: Some(crate::pdf::mail::renderer(&site.public_url)),
                ..workers
            }
            .with_webhooks(self.workers.webhook_policy(dev_mode)),
            webhooks: self.workers.webhook_policy(dev_mode),
            workers: self.workers.workers,
            site,
            stripe,
            peppol,
            mail,
            retention,
            metrics,
            limits,
        })
    }
}

impl Checked {
    /// What requests see of this configuration ([`AppState::settings`](invoicer_core::AppState)).
    pub fn settings(&self) -> Settings {
        Settings {
            stripe_webhook_secrets: self.stripe.webhook_secrets.clone(),
            stripe_tolerance_secs: i64::from(self.stripe.tolerance_secs),
            stripe_livemode: self.stripe.live,
            dev_mode: self.dev_mode,
            self_url: self.site.self_url(),
            public_url: self.site.public_url.clone(),
            idempotency_key_ttl: self.retention.api_key_ttl,
            metrics_token: self.metrics.metrics_token.clone(),
            limits: self.limits,
            client_ip_header: self.site.client_ip_header.clone(),
            stripe_api_base: self.stripe.api_base.clone(),
            stripe_secret_key: self.stripe.secret_key.clone(),
            stripe_max_calls: self.stripe.max_calls,
            signups_open: self.site.signups_open,
            signup_payments: self.dev_mode,
            webhooks: self.webhooks,
            peppol_inbound_secret: self.peppol.inbound_secret.clone(),
        }
    }

    /// Where `server stripe ...` delivers by default: this configuration's own server.
    pub fn webhook_url(&self) -> String {
        format!("{}/webhooks/stripe", self.site.self_url())
    }
}

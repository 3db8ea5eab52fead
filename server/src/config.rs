//! Configuration: environment variables (a `.env` file in the working directory may set them, never
//! overriding the real environment), each with a working dev default. `server --help` lists them all;
//! a bad value stops start-up with a message naming the variable.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use app::ssr::retention::RetentionConfig;
use app::ssr::state::{Settings, DEV_WEBHOOK_SECRET};
use app::ssr::worker::WorkerConfig;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

/// The local cluster over its unix socket, database `invoicer`, as the OS user (peer auth).
pub const DEFAULT_DATABASE_URL: &str = "postgres:///invoicer?host=/var/run/postgresql";

#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Configuration (environment variables)")]
pub struct Config {
    /// Postgres; the default is the local cluster over its socket as your OS user.
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, global = true)]
    pub database_url: String,
    /// Connections in the pool.
    #[arg(long, env = "DATABASE_POOL_SIZE", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub database_pool_size: u32,
    /// Listen address (cargo-leptos sets it).
    #[arg(
        long,
        env = "LEPTOS_SITE_ADDR",
        default_value = "127.0.0.1:3000",
        global = true
    )]
    pub leptos_site_addr: String,
    /// `DEV` allows dev defaults (the webhook secret) and the Simulate button; `PROD` does not.
    #[arg(long, env = "LEPTOS_ENV", default_value = "DEV", value_parser = parse_mode, global = true)]
    pub leptos_env: Mode,
    /// Public origin; session cookies are `Secure` when it is https.
    #[arg(
        long,
        env = "INVOICER_PUBLIC_URL",
        default_value = "http://127.0.0.1:3000",
        global = true
    )]
    pub invoicer_public_url: String,
    /// One or more `whsec_...` secrets, comma separated (rotation: any may match). Required in
    /// production; dev default `whsec_dev_invoicer`.
    #[arg(long, env = "STRIPE_WEBHOOK_SECRET", value_delimiter = ',', value_parser = parse_secret, global = true, hide_env_values = true)]
    pub stripe_webhook_secret: Vec<String>,
    /// Accepted clock skew of webhook signatures, in seconds.
    #[arg(
        long,
        env = "STRIPE_WEBHOOK_TOLERANCE_SECS",
        default_value_t = 300,
        global = true
    )]
    pub stripe_webhook_tolerance_secs: u32,
    /// How long an API Idempotency-Key names its first request, in hours.
    #[arg(long, env = "IDEMPOTENCY_KEY_TTL_HOURS", default_value_t = 24, value_parser = clap::value_parser!(u64).range(1..), global = true)]
    pub idempotency_key_ttl_hours: u64,
    /// `smtp://host:port`; unset: emails are written as files to MAIL_DIR.
    #[arg(long, env = "SMTP_URL", global = true)]
    pub smtp_url: Option<String>,
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
    /// With it, `/metrics` requires `Authorization: Bearer <token>`.
    #[arg(long, env = "METRICS_TOKEN", global = true, hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// Crash injection for tests, comma separated (debug builds or `--features failpoints`).
    #[arg(long, env = "INVOICER_FAILPOINT", global = true)]
    pub invoicer_failpoint: Option<String>,
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

fn parse_secret(value: &str) -> Result<String, String> {
    let secret = value.trim();
    if secret.is_empty() {
        return Err("a secret in the list is empty".into());
    }
    Ok(secret.to_owned())
}

impl Config {
    /// Checks what one variable cannot say alone; call once at start-up.
    pub fn validate(&mut self) -> anyhow::Result<()> {
        if self.stripe_webhook_secret.is_empty() {
            anyhow::ensure!(
                self.dev_mode(),
                "STRIPE_WEBHOOK_SECRET must be set in production (LEPTOS_ENV=PROD)"
            );
            self.stripe_webhook_secret = vec![DEV_WEBHOOK_SECRET.to_owned()];
        }
        self.smtp_url = self.smtp_url.take().filter(|s| !s.is_empty());
        self.retention()?;
        Ok(())
    }

    pub fn dev_mode(&self) -> bool {
        self.leptos_env == Mode::Dev
    }

    /// True when the secret is the built-in dev default (printed at start-up in dev).
    pub fn stripe_secret_is_default(&self) -> bool {
        self.stripe_webhook_secret == [DEV_WEBHOOK_SECRET]
    }

    fn idempotency_key_ttl(&self) -> Duration {
        Duration::from_secs(self.idempotency_key_ttl_hours * 3600)
    }

    fn retention(&self) -> anyhow::Result<RetentionConfig> {
        RetentionConfig::new(
            self.webhook_claim_retention_days,
            self.idempotency_key_ttl(),
        )
        .map_err(anyhow::Error::msg)
    }

    pub fn worker(&self) -> anyhow::Result<WorkerConfig> {
        Ok(WorkerConfig {
            lease: Duration::from_secs(self.worker_lease_secs),
            backoff_base: Duration::from_millis(self.worker_backoff_base_ms),
            poll: Duration::from_millis(self.worker_poll_ms),
            public_url: self.invoicer_public_url.clone(),
            retention: self.retention()?,
            ..Default::default()
        })
    }

    pub fn settings(&self) -> Settings {
        Settings {
            stripe_webhook_secrets: self.stripe_webhook_secret.clone(),
            stripe_tolerance_secs: i64::from(self.stripe_webhook_tolerance_secs),
            dev_mode: self.dev_mode(),
            self_url: format!("http://{}", self.leptos_site_addr),
            idempotency_key_ttl: self.idempotency_key_ttl(),
            metrics_token: self.metrics_token.clone(),
        }
    }

    /// Where `server stripe ...` delivers by default: this configuration's own server.
    pub fn webhook_url(&self) -> String {
        format!("http://{}/webhooks/stripe", self.leptos_site_addr)
    }

    pub fn secure_cookies(&self) -> bool {
        self.invoicer_public_url.starts_with("https://")
    }

    pub async fn connect(&self) -> anyhow::Result<PgPool> {
        let options = PgConnectOptions::from_str(&self.database_url)
            .context("DATABASE_URL is not a valid Postgres URL")?;
        PgPoolOptions::new()
            // Claims rely on READ COMMITTED (a concurrent duplicate waits, then sees the winner's row);
            // a server default of REPEATABLE READ would turn duplicates into serialization errors.
            .after_connect(|conn, _| {
                Box::pin(async move {
                    use sqlx::Executor;
                    conn.execute("set session characteristics as transaction isolation level read committed")
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
            .connect_with(options)
            .await
            .with_context(|| {
                format!(
                    "cannot connect to Postgres at DATABASE_URL ({}); is it running? scripts/dev starts one",
                    redact(&self.database_url)
                )
            })
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
    fn production_needs_a_webhook_secret() {
        let mut prod = Probe::try_parse_from(["server", "--leptos-env", "PROD"])
            .unwrap()
            .config;
        prod.stripe_webhook_secret.clear();
        assert!(prod.validate().is_err());
        let mut dev = Probe::try_parse_from(["server", "--leptos-env", "DEV"])
            .unwrap()
            .config;
        dev.stripe_webhook_secret.clear();
        dev.validate().unwrap();
        assert!(dev.stripe_secret_is_default());
    }
}

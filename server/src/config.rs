//! Configuration from the environment (a `.env` file may set it); every value has a working dev default.

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use app::ssr::state::{Settings, DEV_WEBHOOK_SECRET};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

/// The local cluster over its unix socket, database `invoicer`, as the OS user (peer auth).
pub const DEFAULT_DATABASE_URL: &str = "postgres:///invoicer?host=/var/run/postgresql";

#[derive(Debug, Clone)]
pub struct Config {
    pub database_url: String,
    /// Public origin, used to decide whether cookies are `Secure` (https) or not.
    pub public_url: String,
    pub pool_size: u32,
    /// `LEPTOS_ENV` is not PROD: dev defaults and conveniences are allowed.
    pub dev_mode: bool,
    pub site_addr: String,
    pub stripe_webhook_secrets: Vec<String>,
    /// True when the secret is the built-in dev default (printed at start-up in dev).
    pub stripe_secret_is_default: bool,
    pub stripe_tolerance_secs: i64,
    pub idempotency_key_ttl: Duration,
    /// `smtp://host:port`; unset: messages are written as .eml files to `mail_dir`.
    pub smtp_url: Option<String>,
    pub mail_dir: std::path::PathBuf,
    /// Outbox workers inside `server` (0 disables them; `server worker` runs them on their own).
    pub workers: usize,
    pub worker: app::ssr::worker::WorkerConfig,
}

impl Config {
    pub fn from_env() -> anyhow::Result<Self> {
        load_dotenv();
        let pool_size = match std::env::var("DATABASE_POOL_SIZE") {
            Ok(v) => v.parse().context("DATABASE_POOL_SIZE must be a number")?,
            Err(_) => 16,
        };
        let dev_mode = !matches!(
            std::env::var("LEPTOS_ENV")
                .unwrap_or_default()
                .to_ascii_lowercase()
                .as_str(),
            "prod" | "production"
        );
        let (stripe_webhook_secrets, stripe_secret_is_default) =
            match std::env::var("STRIPE_WEBHOOK_SECRET") {
                Ok(list) => {
                    let secrets: Vec<String> = list
                        .split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect();
                    if secrets.is_empty() {
                        anyhow::bail!("STRIPE_WEBHOOK_SECRET is set but holds no secret");
                    }
                    (secrets, false)
                }
                Err(_) if dev_mode => (vec![DEV_WEBHOOK_SECRET.to_owned()], true),
                Err(_) => anyhow::bail!(
                    "STRIPE_WEBHOOK_SECRET must be set in production (LEPTOS_ENV=PROD)"
                ),
            };
        let stripe_tolerance_secs = match std::env::var("STRIPE_WEBHOOK_TOLERANCE_SECS") {
            Ok(v) => v
                .parse()
                .context("STRIPE_WEBHOOK_TOLERANCE_SECS must be a number of seconds")?,
            Err(_) => 300,
        };
        let idempotency_key_ttl_hours: u64 = match std::env::var("IDEMPOTENCY_KEY_TTL_HOURS") {
            Ok(v) => v
                .parse()
                .context("IDEMPOTENCY_KEY_TTL_HOURS must be a whole number of hours")?,
            Err(_) => 24,
        };
        if idempotency_key_ttl_hours == 0 {
            anyhow::bail!("IDEMPOTENCY_KEY_TTL_HOURS must be at least 1");
        }
        let number = |name: &str, default: u64| -> anyhow::Result<u64> {
            match std::env::var(name) {
                Ok(v) => v
                    .parse()
                    .with_context(|| format!("{name} must be a whole number")),
                Err(_) => Ok(default),
            }
        };
        let public_url =
            std::env::var("INVOICER_PUBLIC_URL").unwrap_or_else(|_| "http://127.0.0.1:3000".into());
        let worker = app::ssr::worker::WorkerConfig {
            lease: Duration::from_secs(number("WORKER_LEASE_SECS", 300)?),
            backoff_base: Duration::from_millis(number("WORKER_BACKOFF_BASE_MS", 5_000)?),
            poll: Duration::from_millis(number("WORKER_POLL_MS", 1_000)?),
            public_url: public_url.clone(),
            retention: app::ssr::retention::RetentionConfig::new(
                number("WEBHOOK_CLAIM_RETENTION_DAYS", 30)? as u32,
                Duration::from_secs(idempotency_key_ttl_hours * 3600),
            )
            .map_err(anyhow::Error::msg)?,
            ..Default::default()
        };
        Ok(Config {
            smtp_url: std::env::var("SMTP_URL").ok().filter(|s| !s.is_empty()),
            mail_dir: std::env::var("MAIL_DIR")
                .unwrap_or_else(|_| "target/mail".into())
                .into(),
            workers: number("WORKERS", 1)? as usize,
            worker,
            database_url: std::env::var("DATABASE_URL")
                .unwrap_or_else(|_| DEFAULT_DATABASE_URL.into()),
            public_url,
            pool_size,
            dev_mode,
            site_addr: std::env::var("LEPTOS_SITE_ADDR")
                .unwrap_or_else(|_| "127.0.0.1:3000".into()),
            stripe_webhook_secrets,
            stripe_secret_is_default,
            stripe_tolerance_secs,
            idempotency_key_ttl: Duration::from_secs(idempotency_key_ttl_hours * 3600),
        })
    }

    pub fn settings(&self) -> Settings {
        Settings {
            stripe_webhook_secrets: self.stripe_webhook_secrets.clone(),
            stripe_tolerance_secs: self.stripe_tolerance_secs,
            dev_mode: self.dev_mode,
            self_url: format!("http://{}", self.site_addr),
            idempotency_key_ttl: self.idempotency_key_ttl,
            ..Settings::default()
        }
    }

    /// Where `server stripe ...` delivers by default: this configuration's own server.
    pub fn webhook_url(&self) -> String {
        format!("http://{}/webhooks/stripe", self.site_addr)
    }

    pub fn secure_cookies(&self) -> bool {
        self.public_url.starts_with("https://")
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
            .max_connections(self.pool_size)
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

/// `KEY=VALUE` lines from `./.env`, never overriding the real environment.
fn load_dotenv() {
    let Ok(text) = std::fs::read_to_string(".env") else {
        return;
    };
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            let key = key.trim();
            if std::env::var_os(key).is_none() {
                // Called once at start-up, before anything reads the environment concurrently.
                std::env::set_var(key, value.trim().trim_matches('"'));
            }
        }
    }
}

/// Readable logs in dev; JSON (one object per event, with the request span's fields, e.g. request_id)
/// with `LOG_FORMAT=json` or in production (`LEPTOS_ENV=PROD`).
pub fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_sessions=warn"));
    let json = std::env::var("LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"))
        || std::env::var("LEPTOS_ENV")
            .is_ok_and(|e| matches!(e.to_ascii_lowercase().as_str(), "prod" | "production"));
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

#[cfg(test)]
mod tests {
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
}

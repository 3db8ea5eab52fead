//! The outbox workers (WORKER*) and how long what grows with traffic is kept (*_RETENTION_DAYS,
//! IDEMPOTENCY_KEY_TTL_HOURS).

use std::time::Duration;

use invoicer_core::jobs::retention::RetentionConfig;
use invoicer_core::worker::WorkerConfig;

const DEFAULTS: RetentionConfig = RetentionConfig::DEFAULT;

#[derive(clap::Args, Debug, Clone)]
pub struct Workers {
    /// Outbox workers inside `server` (0: none); `server worker` runs this many (at least 1).
    #[arg(long, env = "WORKERS", default_value_t = 1, global = true)]
    pub workers: usize,
    /// How long a worker holds an email it is sending before another may take it over, in seconds.
    #[arg(long, env = "WORKER_LEASE_SECS", default_value_t = WorkerConfig::DEFAULT_LEASE.as_secs(), value_parser = clap::value_parser!(u64).range(1..), global = true)]
    pub worker_lease_secs: u64,
    /// Rows each lane of a worker (account emails, customer emails, webhooks out, other jobs) works
    /// at once; the scheduler's lane runs a quarter of it.
    #[arg(long, env = "WORKER_CONCURRENCY", default_value_t = WorkerConfig::DEFAULT_CONCURRENCY as u64, value_parser = clap::value_parser!(u64).range(1..=256), global = true)]
    pub worker_concurrency: u64,
    /// How often workers look for due emails without a notification, in milliseconds.
    #[arg(long, env = "WORKER_POLL_MS", default_value_t = millis(WorkerConfig::DEFAULT_POLL), global = true)]
    pub worker_poll_ms: u64,
    /// The first retry delay of a failed email, in milliseconds (doubling, with jitter).
    #[arg(
        long,
        env = "WORKER_BACKOFF_BASE_MS",
        default_value_t = millis(WorkerConfig::DEFAULT_BACKOFF_BASE),
        global = true
    )]
    pub worker_backoff_base_ms: u64,
    /// Dev only: seconds added to the clock the scheduler reads (recurring invoices, reminders), so
    /// tests and demos can let time run fast. Refused outside dev mode.
    #[arg(long, env = "INVOICER_CLOCK_OFFSET_SECS", global = true, hide = true)]
    pub invoicer_clock_offset_secs: Option<i64>,
    /// Let webhook endpoints be loopback or private-network addresses and plain http, never
    /// link-local, cloud metadata or NAT64 ones (default: true in dev mode, false in production,
    /// where only public https endpoints are reached).
    #[arg(long, env = "WEBHOOKS_ALLOW_PRIVATE", global = true)]
    pub webhooks_allow_private: Option<bool>,
}

impl Workers {
    /// Where webhook deliveries may go.
    pub fn webhook_policy(&self, dev_mode: bool) -> invoicer_core::webhooks_out::guard::Policy {
        let allow_private = self.webhooks_allow_private.unwrap_or(dev_mode);
        invoicer_core::webhooks_out::guard::Policy {
            allow_private,
            https_only: !dev_mode && !allow_private,
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct Retention {
    /// How long an API Idempotency-Key names its first request, in hours.
    #[arg(long, env = "IDEMPOTENCY_KEY_TTL_HOURS", default_value_t = DEFAULTS.api_key_ttl.as_secs() / 3600, value_parser = clap::value_parser!(u64).range(1..), global = true)]
    pub idempotency_key_ttl_hours: u64,
    /// Retention of webhook claims and stored events, in days (at least 3: Stripe retries for three).
    #[arg(
        long,
        env = "WEBHOOK_CLAIM_RETENTION_DAYS",
        default_value_t = DEFAULTS.webhook_days,
        global = true
    )]
    pub webhook_claim_retention_days: u32,
    /// Retention of a rendered form's key, in days (the invoice's unique source key outlives it).
    #[arg(long, env = "FORM_KEY_RETENTION_DAYS", default_value_t = DEFAULTS.form_key_days, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub form_key_retention_days: u32,
    /// Retention of the activity log (attempts), in days.
    #[arg(long, env = "ACTIVITY_RETENTION_DAYS", default_value_t = DEFAULTS.activity_days, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub activity_retention_days: u32,
    /// Retention of sent and dead emails in the outbox, in days.
    #[arg(long, env = "OUTBOX_RETENTION_DAYS", default_value_t = DEFAULTS.outbox_days, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub outbox_retention_days: u32,
    /// Soak runs only (`lab soak`): `<window secs>/<every secs>`, every retention window that long
    /// and the retention job that often. Where failpoints are honoured, else refused.
    #[arg(long, env = "INVOICER_SOAK_RETENTION", global = true, hide = true)]
    pub invoicer_soak_retention: Option<String>,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Workers {
    /// Each worker's configuration but its id; the lease must outlast one SMTP conversation.
    pub(super) fn check(
        &self,
        smtp_timeout: Duration,
        dev_mode: bool,
    ) -> anyhow::Result<WorkerConfig> {
        anyhow::ensure!(
            self.invoicer_clock_offset_secs.is_none() || dev_mode,
            "INVOICER_CLOCK_OFFSET_SECS moves the scheduler's clock: dev mode (LEPTOS_ENV=DEV) only"
        );
        let offset = self.invoicer_clock_offset_secs.unwrap_or(0);
        anyhow::ensure!(
            offset.abs() <= 100 * 365 * 86_400,
            "INVOICER_CLOCK_OFFSET_SECS is at most a hundred years"
        );
        anyhow::ensure!(
            self.worker_lease_secs * 1000 > millis(smtp_timeout),
            "WORKER_LEASE_SECS ({} s) must be longer than SMTP_TIMEOUT_MS ({} ms): a lease that \
             ends while its email is still being sent lets another worker send it again",
            self.worker_lease_secs,
            millis(smtp_timeout)
        );
        Ok(WorkerConfig {
            lease: Duration::from_secs(self.worker_lease_secs),
            concurrency: self.worker_concurrency as usize,
            backoff_base: Duration::from_millis(self.worker_backoff_base_ms),
            poll: Duration::from_millis(self.worker_poll_ms),
            clock_offset: chrono::TimeDelta::seconds(offset),
            ..Default::default()
        })
    }
}

impl Retention {
    /// `dev_mode`: LEPTOS_ENV=DEV, where a soak run may compress the windows.
    pub(super) fn check(&self, dev_mode: bool) -> anyhow::Result<RetentionConfig> {
        let compressed = match &self.invoicer_soak_retention {
            None => None,
            Some(value) => {
                anyhow::ensure!(
                    invoicer_core::failpoint::ENABLED && dev_mode,
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
                Duration::from_secs(self.idempotency_key_ttl_hours * 3600),
            )
            .map_err(anyhow::Error::msg)?
        })
    }
}

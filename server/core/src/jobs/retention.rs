//! The retention job: every table that grows with traffic is trimmed here, in batches: webhook
//! claims, stored events and refunds or disputes still waiting for their payment after the webhook
//! window;
//! expired API claims; form claims, attempts (the activity page) and finished outbox rows after
//! their own windows. It runs at most once per period across all workers: the period is
//! its run id, leased as `(job, retention, <period>)` (a crashed run is taken over and
//! simply continues: deleting is idempotent).

use std::time::Duration;

use sqlx::PgPool;

use crate::claim::{self, ClaimKey, Leased, Outcome, Surface};

/// Stripe retries for three days: forgetting an event sooner would let a late retry apply twice.
pub const MIN_WEBHOOK_RETENTION_DAYS: u32 = 3;

#[derive(Debug, Clone)]
pub struct RetentionConfig {
    pub webhook_days: u32,
    pub api_key_ttl: Duration,
    /// Form claims (a rendered form's key); `invoices.source_key` stays unique after them.
    pub form_key_days: u32,
    /// Attempts, the activity page's rows.
    pub activity_days: u32,
    /// Sent and dead outbox rows.
    pub outbox_days: u32,
    pub batch: i64,
    /// Soak runs only (`lab soak`): every window is `.0` long and the job runs every `.1`, time
    /// compressed so that a 30-minute run shows the tables levelling off. Set from
    /// `INVOICER_SOAK_RETENTION=<window secs>/<every secs>`, honoured only where failpoints are.
    pub compressed: Option<(Duration, Duration)>,
}

impl RetentionConfig {
    pub fn new(webhook_days: u32, api_key_ttl: Duration) -> Result<Self, String> {
        if webhook_days < MIN_WEBHOOK_RETENTION_DAYS {
            return Err(format!(
                "WEBHOOK_CLAIM_RETENTION_DAYS={webhook_days} is shorter than Stripe's {MIN_WEBHOOK_RETENTION_DAYS}-day retry window"
            ));
        }
        Ok(RetentionConfig {
            webhook_days,
            api_key_ttl,
            ..Default::default()
        })
    }
}

impl RetentionConfig {
    /// The defaults of the configuration's variables (docs/operating.md).
    pub const DEFAULT: RetentionConfig = RetentionConfig {
        webhook_days: 30,
        api_key_ttl: Duration::from_secs(24 * 3600),
        form_key_days: 30,
        activity_days: 90,
        outbox_days: 30,
        batch: 1000,
        compressed: None,
    };
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig::DEFAULT
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub webhook_claims: u64,
    pub webhook_events: u64,
    /// Refunds and disputes whose payment never arrived within the webhook window (those of known
    /// payments are the payments' history and are kept with them).
    pub orphan_facts: u64,
    pub api_claims: u64,
    pub form_claims: u64,
    /// Finished job runs (sent emails, past retention periods) older than a week.
    pub job_claims: u64,
    pub attempts: u64,
    pub outbox_rows: u64,
    /// Sessions idle past the cookie's expiry are ended; ended ones go after the outbox window.
    pub sessions: u64,
    /// Verification and reset tokens, after their expiry plus the outbox window.
    pub tokens: u64,
    /// Outgoing webhook events and their delivery log, after the outbox window.
    pub webhooks_out: u64,
}

fn days(n: u32) -> Duration {
    Duration::from_secs(u64::from(n) * 86_400)
}

/// Job claims are only needed while their run can still be taken over.
const JOB_CLAIM_RETENTION: Duration = Duration::from_secs(7 * 86_400);

impl RetentionConfig {
    /// The current period's run id: one run per hour (per `compressed.1` in a soak run).
    pub fn current_period(&self) -> String {
        match self.compressed {
            None => chrono::Utc::now().format("%Y-%m-%dT%H").to_string(),
            Some((_, every)) => {
                let every = every.as_secs().max(1);
                let now = chrono::Utc::now().timestamp().max(0) as u64;
                format!("soak-{every}s-{}", now / every)
            }
        }
    }

    /// A window of `n` days, or the soak run's compressed window.
    fn window(&self, n: u32) -> Duration {
        self.compressed.map_or(days(n), |(window, _)| window)
    }

    fn window_of(&self, d: Duration) -> Duration {
        self.compressed.map_or(d, |(window, _)| window)
    }
}

/// Runs the job for `period` unless another worker has done it or is doing it (then None).
pub async fn run_once(
    pool: &PgPool,
    period: &str,
    config: &RetentionConfig,
) -> sqlx::Result<Option<Report>> {
    let key = ClaimKey::job("retention", period);
    let mut conn = pool.acquire().await?;
    // Autocommit: the lease is committed before the (batched) work.
    let lease = match claim::lease(&mut conn, &key, Duration::from_secs(600)).await? {
        Leased::Acquired(lease) => lease,
        Leased::Done(_) | Leased::Busy { .. } => return Ok(None),
    };
    let report = match delete_old(pool, config).await {
        Ok(report) => report,
        Err(e) => {
            // Give the period back so another pass (this worker's or another's) runs it.
            let _ = lease.release(&mut conn).await?;
            return Err(e);
        }
    };
    // Taken over means another worker ran it too: deleting twice is harmless.
    let _ = lease.complete(&mut conn, &Outcome::default()).await?;
    tracing::info!(period, ?report, "retention job done");
    Ok(Some(report))
}

/// Deletes the rows of `table` whose `time` column is older than `age` (and that meet `extra`, a
/// condition on the row as `f`), `batch` at a time, each batch found through the index on `time` and
/// named by the table's key `columns`. The names are this module's constants, never input.
async fn trim(
    pool: &PgPool,
    (table, columns, time, extra): (&str, &str, &str, &str),
    age: Duration,
    batch: i64,
) -> sqlx::Result<u64> {
    let sql = format!(
        "delete from {table} where ({columns}) in \
         (select {columns} from {table} f \
          where f.{time} < now() - make_interval(secs => $1) {extra} limit $2)"
    );
    let mut total = 0;
    loop {
        let deleted = sqlx::query(&sql)
            .bind(age.as_secs_f64())
            .bind(batch)
            .execute(pool)
            .await?
            .rows_affected();
        total += deleted;
        if deleted < batch as u64 {
            return Ok(total);
        }
    }
}

/// Deletes claims of `surface` older than `older_than`, `batch` rows per statement so no statement
/// holds many locks or runs long; returns how many were deleted.
pub async fn sweep_claims(
    pool: &PgPool,
    surface: Surface,
    older_than: Duration,
    batch: i64,
) -> sqlx::Result<u64> {
    let scope = format!("and f.scope = '{}'", surface.as_str());
    let claims = ("claims", "scope, owner, key", "created_at", scope.as_str());
    trim(pool, claims, older_than, batch).await
}

/// A refund or dispute whose payment never arrived (those of known payments are kept with them).
const ORPHAN: &str = "and not exists (select 1 from payments p \
                      where p.provider = f.provider and p.provider_payment_id = f.provider_payment_id)";

async fn delete_old(pool: &PgPool, config: &RetentionConfig) -> sqlx::Result<Report> {
    let batch = config.batch;
    let webhook = config.window(config.webhook_days);
    let outbox = config.window(config.outbox_days);
    let events = ("stripe_events", "account, id", "received_at", "");
    let refunds = (
        "refunds",
        "provider, provider_payment_id",
        "received_at",
        ORPHAN,
    );
    let disputes = ("disputes", "provider, dispute_id", "received_at", ORPHAN);
    let attempts = ("attempts", "id", "created_at", "");
    let ended = (
        "user_sessions",
        "id",
        "ended_at",
        "and f.ended_at is not null",
    );
    let tokens = ("user_tokens", "token_hash", "expires_at", "");
    let idle = crate::accounts::auth::SESSION_IDLE
        .to_std()
        .unwrap_or(Duration::from_secs(7 * 86_400));
    // Sent and dead rows, each through its own partial index; pending rows are never trimmed.
    let (sent, dead) = (
        ("outbox", "id", "sent_at", ""),
        ("outbox", "id", "dead_at", ""),
    );
    Ok(Report {
        webhook_claims: sweep_claims(pool, Surface::Webhook, webhook, batch).await?,
        webhook_events: trim(pool, events, webhook, batch).await?,
        orphan_facts: trim(pool, refunds, webhook, batch).await?
            + trim(pool, disputes, webhook, batch).await?,
        api_claims: sweep_claims(
            pool,
            Surface::Api,
            config.window_of(config.api_key_ttl),
            batch,
        )
        .await?,
        form_claims: sweep_claims(
            pool,
            Surface::Form,
            config.window(config.form_key_days),
            batch,
        )
        .await?,
        job_claims: sweep_claims(
            pool,
            Surface::Job,
            config.window_of(JOB_CLAIM_RETENTION),
            batch,
        )
        .await?,
        attempts: trim(pool, attempts, config.window(config.activity_days), batch).await?,
        outbox_rows: trim(pool, sent, outbox, batch).await?
            + trim(pool, dead, outbox, batch).await?,
        // The cookie's expiry, never compressed: a soak run's sessions stay logged in.
        sessions: end_idle_sessions(pool, idle, batch).await?
            + trim(pool, ended, outbox, batch).await?,
        tokens: trim(pool, tokens, outbox, batch).await?,
        // An event's deliveries end three days after it (a redelivery, three after that): the
        // outbox window outlives them. Its log goes with it, or alone after the same window.
        webhooks_out: trim(
            pool,
            ("webhook_attempts", "id", "attempted_at", ""),
            outbox,
            batch,
        )
        .await?
            + trim(
                pool,
                ("webhook_events", "id", "created_at", ""),
                outbox,
                batch,
            )
            .await?,
    })
}

/// Ends sessions nobody has used for longer than `idle` (their cookies have expired), `batch` at a
/// time through the index of live sessions by last use.
async fn end_idle_sessions(pool: &PgPool, idle: Duration, batch: i64) -> sqlx::Result<u64> {
    let mut total = 0;
    loop {
        // language=PostgreSQL
        let ended = sqlx::query!(
            r#"
            update user_sessions set ended_at = now()
            where id in (select id from user_sessions
                         where ended_at is null and last_seen_at < now() - make_interval(secs => $1)
                         limit $2)
            "#,
            idle.as_secs_f64(),
            batch
        )
        .execute(pool)
        .await?
        .rows_affected();
        total += ended;
        if ended < batch as u64 {
            return Ok(total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_shorter_than_stripes_retries_is_refused() {
        assert!(RetentionConfig::new(2, Duration::from_secs(1)).is_err());
        assert!(RetentionConfig::new(3, Duration::from_secs(1)).is_ok());
    }
}

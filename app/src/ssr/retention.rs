//! The retention job: deletes webhook claims and stored events older than the retention window and
//! expired API claims, in batches. It runs at most once per period across all workers: the period is
//! its run id, leased as `(job, retention, <period>)` (a crashed run is taken over and
//! simply continues: deleting is idempotent).

use std::time::Duration;

use sqlx::PgPool;

use crate::ssr::claim::{self, ClaimKey, Leased, Outcome, Surface};

/// Stripe retries for three days: forgetting an event sooner would let a late retry apply twice.
pub const MIN_WEBHOOK_RETENTION_DAYS: u32 = 3;

#[derive(Debug, Clone)]
pub struct RetentionConfig {
    pub webhook_days: u32,
    pub api_key_ttl: Duration,
    pub batch: i64,
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
            batch: 1000,
        })
    }
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            webhook_days: 30,
            api_key_ttl: Duration::from_secs(24 * 3600),
            batch: 1000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub webhook_claims: u64,
    pub webhook_events: u64,
    pub api_claims: u64,
    /// Finished job runs (sent emails, past retention periods) older than a week.
    pub job_claims: u64,
}

/// Job claims are only needed while their run can still be taken over.
const JOB_CLAIM_RETENTION: Duration = Duration::from_secs(7 * 86_400);

/// The current period's run id: one run per hour.
pub fn current_period() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H").to_string()
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

async fn delete_old(pool: &PgPool, config: &RetentionConfig) -> sqlx::Result<Report> {
    let window = Duration::from_secs(u64::from(config.webhook_days) * 86_400);
    let webhook_claims = claim::sweep_expired(pool, Surface::Webhook, window, config.batch).await?;
    let mut webhook_events = 0;
    loop {
        // language=PostgreSQL
        let deleted = sqlx::query!(
            r#"
            delete from stripe_events
            where (account, id) in (
                select account, id from stripe_events
                where received_at < now() - make_interval(secs => $1)
                limit $2
            )
            "#,
            window.as_secs_f64(),
            config.batch
        )
        .execute(pool)
        .await?
        .rows_affected();
        webhook_events += deleted;
        if deleted < config.batch as u64 {
            break;
        }
    }
    Ok(Report {
        webhook_claims,
        webhook_events,
        api_claims: claim::sweep_expired(pool, Surface::Api, config.api_key_ttl, config.batch)
            .await?,
        job_claims: claim::sweep_expired(pool, Surface::Job, JOB_CLAIM_RETENTION, config.batch)
            .await?,
    })
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

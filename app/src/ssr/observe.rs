//! What operators see of each attempt: one structured log event and the Prometheus series, from one
//! place, whatever the surface.

use std::time::Instant;

use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    Form,
    Webhook,
    Api,
    /// Outbox sends by the workers (logged and counted; not on the activity page).
    Job,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Form => "form",
            Surface::Webhook => "webhook",
            Surface::Api => "api",
            Surface::Job => "job",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// This attempt did the work.
    Won,
    /// A repeat of a finished attempt: answered with what the first one produced.
    Replay,
    /// A repeat while the first is still running.
    InFlight,
    /// The key was used for a different request.
    Mismatch,
    /// Refused before claiming (bad signature, invalid input, bad key).
    Rejected,
    /// Failed on our side; nothing committed.
    Failed,
}

impl AttemptOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Won => "won",
            AttemptOutcome::Replay => "replay",
            AttemptOutcome::InFlight => "in_flight",
            AttemptOutcome::Mismatch => "mismatch",
            AttemptOutcome::Rejected => "rejected",
            AttemptOutcome::Failed => "failed",
        }
    }
}

/// Records one attempt: a log event (inside the request's span, so it carries the request id) and
/// the `invoicer_attempts_total` / `invoicer_attempt_duration_seconds` series.
pub fn attempt(
    surface: Surface,
    owner: &str,
    key: &str,
    outcome: AttemptOutcome,
    started: Instant,
) {
    let elapsed = started.elapsed();
    tracing::info!(
        surface = surface.as_str(),
        owner,
        key,
        outcome = outcome.as_str(),
        duration_ms = elapsed.as_secs_f64() * 1000.0,
        "attempt"
    );
    metrics::counter!("invoicer_attempts_total", "surface" => surface.as_str(), "outcome" => outcome.as_str())
        .increment(1);
    metrics::histogram!("invoicer_attempt_duration_seconds", "surface" => surface.as_str())
        .record(elapsed.as_secs_f64());
}

/// One attempt as the activity page records it.
#[derive(Debug, Clone)]
pub struct Attempt<'a> {
    pub surface: Surface,
    /// The org it concerns, when known (a refused webhook has none).
    pub org: Option<Uuid>,
    pub owner: &'a str,
    pub key: &'a str,
    pub outcome: AttemptOutcome,
    /// The invoice it created, replayed or paid.
    pub invoice: Option<Uuid>,
    pub request_id: Option<&'a str>,
    pub started: Instant,
}

/// Logs and counts the attempt (see `attempt`) and stores it for the activity page. A failure to
/// store is logged, never turned into a failure of the request: the attempt itself already happened.
/// A won attempt is stored by the surface inside the transaction that did its work (`store`), so
/// its handler only calls `attempt`.
pub async fn record(pool: &PgPool, a: Attempt<'_>) {
    attempt(a.surface, a.owner, a.key, a.outcome, a.started);
    if let Err(e) = store(pool, &a).await {
        tracing::warn!(error = %e, "could not store an attempt for the activity page");
    }
}

/// Stores the attempt's row for the activity page. Inside the transaction that did the work it
/// commits with it: no second round trip and commit per won attempt.
pub async fn store(db: impl PgExecutor<'_>, a: &Attempt<'_>) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
        values ($1, $2, $3, $4, $5, $6, $7, $8)
        "#,
        a.org,
        a.surface.as_str(),
        a.owner,
        a.key,
        a.outcome.as_str(),
        a.invoice,
        a.request_id,
        a.started.elapsed().as_secs_f64() * 1000.0,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The won attempt's row, written by its surface inside the transaction that did the work (so it
/// commits with the work or not at all), naming the org and invoice the work concerned. `None`: the
/// caller records nothing (tests, tools).
pub async fn store_won(
    conn: &mut sqlx::PgConnection,
    won: Option<&Attempt<'_>>,
    org: Option<Uuid>,
    invoice: Option<Uuid>,
) -> sqlx::Result<()> {
    let Some(a) = won else { return Ok(()) };
    let row = Attempt {
        outcome: AttemptOutcome::Won,
        org,
        invoice,
        ..a.clone()
    };
    store(conn, &row).await
}

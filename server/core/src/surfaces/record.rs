//! The activity page's rows: the only module that writes `attempts`. A won attempt's row is written
//! by [`finish`], in the statement that settles its claim, inside the transaction that did the work
//! (it commits with the work or not at all, and costs no round trip of its own); a webhook delivery
//! of an event processed before by [`replay_of_event`], naming what the stored event concerned;
//! every other outcome's by [`track`], once the answer is known.

use std::future::Future;

use sqlx::{PgConnection, PgExecutor, PgPool};

use crate::claim::{ClaimKey, Outcome};
use crate::observe::{log_and_count, Attempt, AttemptOutcome, Concerns, Tracked};

/// Settles a won claim in the transaction that did the work, before commit, in one statement:
/// records what the work produced (`outcome`; `None` when it was written with the claim) and writes
/// `attempt`'s won row naming `concerns`, so both commit with the work or not at all. Call
/// [`Attempt::mark_stored`] once that transaction has committed.
pub async fn finish(
    conn: &mut PgConnection,
    key: &ClaimKey,
    outcome: Option<&Outcome>,
    attempt: &Attempt,
    concerns: Concerns,
) -> sqlx::Result<()> {
    let response = outcome.and_then(|o| o.response.as_ref());
    // The activity row is bound as one JSON row in the `attempts` table's column names.
    let activity = serde_json::json!({
        "org_id": concerns.org.or(attempt.org()),
        "surface": attempt.surface().as_str(),
        "owner": attempt.owner(),
        "key": attempt.key(),
        "invoice_id": concerns.invoice,
        "request_id": attempt.request_id(),
        "duration_ms": attempt.started().elapsed().as_secs_f64() * 1000.0,
    });
    // language=PostgreSQL
    let finished = sqlx::query_scalar!(
        r#"
        with finished as (
            update claims
            set result_id = $5, response_status = $6, response_headers = $7, response_body = $8
            where $4 and scope = $1 and owner = $2 and key = $3 and status = 'done'
            returning 1
        )
        insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
        select a.org_id, a.surface, a.owner, a.key, 'won', a.invoice_id, a.request_id, a.duration_ms
        from jsonb_populate_record(null::attempts, $9) a
        returning (select count(*) from finished) as "finished!"
        "#,
        key.surface.as_str(),
        key.owner,
        key.key,
        outcome.is_some(),
        outcome.and_then(|o| o.result_id),
        response.map(|r| r.status as i16),
        response.map(|r| r.headers.clone()),
        response.map(|r| r.body.as_slice()),
        activity,
    )
    .fetch_one(&mut *conn)
    .await?;
    if outcome.is_some() && finished != 1 {
        return Err(sqlx::Error::RowNotFound);
    }
    Ok(())
}

/// The activity row of a delivery of a Stripe event processed before, with the org and invoice the
/// stored event concerned: one statement, no separate lookup.
pub async fn replay_of_event(pool: &PgPool, attempt: &Attempt, account: &str) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
        select e.org_id, $3, $4, $2, $5, e.invoice_id, $6, $7
        from (select) one
        left join stripe_events e on e.account = $1 and e.id = $2
        "#,
        account,
        attempt.key(),
        attempt.surface().as_str(),
        attempt.owner(),
        AttemptOutcome::Replay.as_str(),
        attempt.request_id(),
        attempt.started().elapsed().as_secs_f64() * 1000.0,
    )
    .execute(pool)
    .await?;
    attempt.mark_stored();
    Ok(())
}

/// Runs one attempt and records it: the log event and metrics always, and the activity page's row
/// (unless it was written already, or the attempt was refused before anyone could be named: no page
/// would show it). A failure to store the row is logged, never turned into a failure of the attempt,
/// which already happened.
pub async fn track<T, F, Fut>(pool: &PgPool, attempt: Attempt, work: F) -> T
where
    T: Tracked,
    F: FnOnce(Attempt) -> Fut,
    Fut: Future<Output = T>,
{
    let answer = work(attempt.clone()).await;
    let outcome = answer.outcome();
    let concerns = answer.concerns();
    log_and_count(&attempt, outcome);
    let anonymous = concerns.org.or(attempt.org()).is_none();
    let unseen = anonymous && outcome == AttemptOutcome::Rejected;
    if !attempt.is_stored() && !unseen {
        if let Err(e) = store(pool, &attempt, outcome, concerns).await {
            tracing::warn!(error = %e, "could not store an attempt for the activity page");
        }
    }
    answer
}

/// Writes the activity page's row of `attempt` (for work that is not run through [`track`]).
pub(crate) async fn store(
    db: impl PgExecutor<'_>,
    attempt: &Attempt,
    outcome: AttemptOutcome,
    concerns: Concerns,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
            insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
            values ($1, $2, $3, $4, $5, $6, $7, $8)
            "#,
        concerns.org.or(attempt.org()) as _,
        attempt.surface().as_str(),
        attempt.owner(),
        attempt.key(),
        outcome.as_str(),
        concerns.invoice,
        attempt.request_id(),
        attempt.started().elapsed().as_secs_f64() * 1000.0,
    )
    .execute(db)
    .await?;
    Ok(())
}

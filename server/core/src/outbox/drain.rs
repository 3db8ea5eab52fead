//! Draining the outbox: workers lease due rows through their claims, then mark each sent or
//! failed, fenced by the lease (a holder whose lease was taken over records nothing).

use std::time::Duration;

use serde_json::Value as JsonValue;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::QUEUE;
use crate::claim::{self, ClaimKey, Fence, Lease, Leased as Claim, Outcome};

/// A row this worker holds, through the lease on its claim.
#[derive(Debug)]
pub struct Leased {
    pub id: Uuid,
    pub org_id: Option<Uuid>,
    pub kind: String,
    pub payload: JsonValue,
    pub attempts: i32,
    pub max_attempts: i32,
    pub lease: Lease,
}

/// Leases up to `batch` due rows. `SKIP LOCKED` spreads rows over workers; the claim decides: a row
/// whose claim another worker holds with a fresh lease is skipped, a stale one is taken over.
pub async fn lease_due(
    pool: &PgPool,
    worker: &str,
    batch: i64,
    lease: Duration,
) -> sqlx::Result<Vec<Leased>> {
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let rows = sqlx::query_as!(
        Due,
        r#"
        select id, org_id, kind, payload, max_attempts
        from outbox
        where sent_at is null and dead_at is null and next_attempt_at <= now()
        order by next_attempt_at
        limit $1
        for update skip locked
        "#,
        batch
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut leased = Vec::with_capacity(rows.len());
    for row in rows {
        if let Some(held) = take(&mut tx, row, worker, lease).await? {
            leased.push(held);
        }
    }
    tx.commit().await?;
    Ok(leased)
}

/// The queues of the workers: each kind of work in its own, with its own places.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    /// Emails about accounts (links, notices, invitations): never behind anyone's backlog.
    Account,
    /// Emails to customers (invoices, receipts, reminders, quotes).
    Customer,
    /// Deliveries to webhook endpoints.
    Webhooks,
    /// Calls to Stripe and imports.
    Jobs,
}

impl Lane {
    pub const ALL: [Lane; 4] = [Lane::Account, Lane::Customer, Lane::Webhooks, Lane::Jobs];

    /// As the `outbox.lane` column (generated from the kind) names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Account => "account",
            Lane::Customer => "customer",
            Lane::Webhooks => "webhooks",
            Lane::Jobs => "jobs",
        }
    }
}

/// The orgs (`org_key`: the org, or the nil id for account emails) with a due row in `lane`, in
/// `org_key` order after `after` (from the first without it), at most `limit` of them. One index
/// probe per org with pending rows (a loose scan of `outbox_lane_due_idx`), however many rows each
/// holds, due or waiting for a retry.
pub async fn due_orgs(
    pool: &PgPool,
    lane: Lane,
    after: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<Uuid>> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"
        with recursive pending (org_key) as (
            (select org_key from outbox
             where lane = $1 and sent_at is null and dead_at is null
               and ($3::uuid is null or org_key > $3)
             order by org_key limit 1)
            union all
            select (select o.org_key from outbox o
                    where o.lane = $1 and o.sent_at is null and o.dead_at is null
                      and o.org_key > p.org_key
                    order by o.org_key limit 1)
            from pending p where p.org_key is not null
        )
        select p.org_key as "org_key!" from pending p
        where p.org_key is not null
          and (select min(o.next_attempt_at) from outbox o
               where o.lane = $1 and o.org_key = p.org_key
                 and o.sent_at is null and o.dead_at is null) <= now()
        limit $2
        "#,
        lane.as_str(),
        limit,
        after
    )
    .fetch_all(pool)
    .await
}

/// Leases the oldest due row of `org_key` in `lane`, if there is one nobody else holds, passing over
/// deliveries to the webhook endpoints in `busy` (one delivery at a time per endpoint: events reach
/// it in order, and a failing one is not tried in parallel).
pub async fn lease_next(
    pool: &PgPool,
    worker: &str,
    lane: Lane,
    org_key: Uuid,
    busy: &[String],
    lease: Duration,
) -> sqlx::Result<Option<Leased>> {
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Due,
        r#"
        select id, org_id, kind, payload, max_attempts
        from outbox
        where lane = $1 and org_key = $2 and sent_at is null and dead_at is null
          and next_attempt_at <= now()
          and not (kind = 'webhook' and (payload ->> 'endpoint_id') = any($3))
        order by next_attempt_at
        limit 1
        for update skip locked
        "#,
        lane.as_str(),
        org_key,
        busy
    )
    .fetch_optional(&mut *tx)
    .await?;
    let held = match row {
        Some(row) => take(&mut tx, row, worker, lease).await?,
        None => None,
    };
    tx.commit().await?;
    Ok(held)
}

/// A due row, locked by the caller's transaction.
struct Due {
    id: Uuid,
    org_id: Option<Uuid>,
    kind: String,
    payload: JsonValue,
    max_attempts: i32,
}

/// Takes `row`'s lease in the caller's transaction (which locks the row): the row, or None when
/// another worker holds a fresh lease on it, when it was sent already (marked now) or when it has
/// used up its attempts (marked dead).
async fn take(
    tx: &mut PgConnection,
    row: Due,
    worker: &str,
    lease: Duration,
) -> sqlx::Result<Option<Leased>> {
    let key = ClaimKey::job(QUEUE, &row.id.to_string());
    match claim::lease(&mut *tx, &key, lease).await? {
        Claim::Acquired(held) => {
            // Not due again until the lease runs out: other workers stop picking it, and a
            // crashed holder's row comes due exactly when it may be taken over.
            // language=PostgreSQL
            let attempts = sqlx::query_scalar!(
                r#"
                update outbox
                set attempts = attempts + 1, locked_by = $2,
                    next_attempt_at = now() + make_interval(secs => $3)
                where id = $1
                returning attempts
                "#,
                row.id,
                worker,
                lease.as_secs_f64(),
            )
            .fetch_one(&mut *tx)
            .await?;
            if attempts > row.max_attempts {
                // Every earlier holder lost its lease (crashed or hung) without recording a
                // failure: stop trying, show it as dead.
                // language=PostgreSQL
                sqlx::query!(
                    r#"
                    update outbox set dead_at = now(), locked_by = null,
                        last_error = 'gave up: the worker holding it stopped answering ' || ($2::int - 1) || ' times'
                    where id = $1
                    "#,
                    row.id,
                    attempts,
                )
                .execute(&mut *tx)
                .await?;
                let _ = held.release(&mut *tx).await?;
                return Ok(None);
            }
            Ok(Some(Leased {
                id: row.id,
                org_id: row.org_id,
                kind: row.kind,
                payload: row.payload,
                attempts,
                max_attempts: row.max_attempts,
                lease: held,
            }))
        }
        // Another worker is sending it right now.
        Claim::Busy { .. } => Ok(None),
        // Sent, but the row was not marked (a crash between the two commits): mark it now.
        Claim::Done(_) => {
            // language=PostgreSQL
            sqlx::query!(
                "update outbox set sent_at = coalesce(sent_at, now()), payload = payload - 'token' where id = $1",
                row.id
            )
            .execute(&mut *tx)
            .await?;
            Ok(None)
        }
    }
}

/// Marks a sent row, fenced by its lease: nothing is recorded if the lease was taken over meanwhile.
/// Lock order everywhere: the outbox row, then its claim (`lease_due` takes them in that order too;
/// the other order deadlocks against it).
pub async fn mark_sent(pool: &PgPool, row: Leased) -> sqlx::Result<Fence> {
    let mut tx = pool.begin().await?;
    // locked_by is kept: it names the worker that sent it. An account email's link (`token`) lives
    // in its inbox from now on, not here.
    // language=PostgreSQL
    sqlx::query!(
        "update outbox set sent_at = now(), last_error = null, payload = payload - 'token' where id = $1",
        row.id
    )
    .execute(&mut *tx)
    .await?;
    let fence = row
        .lease
        .complete(&mut tx, &Outcome::result(row.id))
        .await?;
    match fence {
        Fence::Held => tx.commit().await?,
        Fence::TakenOver => tx.rollback().await?,
    }
    Ok(fence)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Tried again after the delay.
    Retry(Duration),
    /// Out of attempts (or a permanent error): shown in the UI with a retry action.
    Dead,
    /// The lease was taken over: nothing recorded.
    Fenced,
}

/// Exponential backoff with jitter: `base · 2^(attempt−1)`, capped, times a random factor in
/// [0.75, 1]: delays still grow from one attempt to the next, and workers do not retry in lockstep.
pub fn backoff(attempt: i32, base: Duration, cap: Duration) -> Duration {
    let exp = base
        .saturating_mul(1u32 << (attempt.clamp(1, 20) - 1) as u32)
        .min(cap);
    exp.mul_f64(0.75 + 0.25 * fastrand::f64())
}

/// Records a failed send, fenced by its lease.
pub async fn mark_failed(
    pool: &PgPool,
    row: Leased,
    error: &str,
    permanent: bool,
    base: Duration,
    cap: Duration,
) -> sqlx::Result<Failure> {
    let mut tx = pool.begin().await?;
    let dead = permanent || row.attempts >= row.max_attempts;
    let delay = backoff(row.attempts, base, cap);
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update outbox
        set locked_by = null, last_error = $2,
            dead_at = case when $3 then now() end,
            next_attempt_at = now() + make_interval(secs => $4),
            -- A dead account email's link rests nowhere in plain text: the row cannot be revived.
            payload = case when $3 then payload - 'token' else payload end
        where id = $1
        "#,
        row.id,
        error,
        dead,
        delay.as_secs_f64(),
    )
    .execute(&mut *tx)
    .await?;
    if row.lease.release(&mut tx).await? == Fence::TakenOver {
        tx.rollback().await?;
        return Ok(Failure::Fenced);
    }
    tx.commit().await?;
    Ok(if dead {
        Failure::Dead
    } else {
        Failure::Retry(delay)
    })
}

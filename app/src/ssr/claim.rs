//! The claim: the one mechanism every surface (form, webhook, API, job) uses to make a repeat harmless.
//!
//! A claim is a row keyed `(scope, owner, key)`: the key names the *attempt* and is minted where the
//! attempt is born (the form at render, Stripe's event id, the client's Idempotency-Key, a job's run
//! id). `claim` inserts it with `ON CONFLICT DO NOTHING` inside the caller's open transaction, and the
//! caller does its work in that same transaction, calls `complete`, and commits. Claim and work commit
//! together or not at all: claiming in one commit and working in another would turn a crash between
//! them into a silent loss (the attempt looks done while nothing happened).
//!
//! At READ COMMITTED a concurrent insert of the same key waits for the first transaction and then sees
//! its committed row (or wins, if the first rolled back). Do not run claims at REPEATABLE READ or
//! SERIALIZABLE: there the loser gets a serialization failure instead of the winner's result.
//!
//! Work that leaves the database commits the claim `in_progress` with a lease (`locked_until`) before
//! the side effect; a fresh lease answers `InFlight`, a stale one may be taken over.

use std::time::Duration;

use serde_json::Value as JsonValue;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `(org id, form uuid)`
    Form,
    /// `(stripe account, event id)`
    Stripe,
    /// `(api client id, Idempotency-Key)`
    Api,
    /// `(queue, run id)`
    Job,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Form => "form",
            Scope::Stripe => "stripe",
            Scope::Api => "api",
            Scope::Job => "job",
        }
    }
}

/// Names one attempt, scoped to its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimKey {
    pub scope: Scope,
    pub owner: String,
    pub key: String,
}

impl ClaimKey {
    /// An API client's request, keyed by its `Idempotency-Key`.
    pub fn api(api_key_id: Uuid, idempotency_key: &str) -> Self {
        ClaimKey {
            scope: Scope::Api,
            owner: api_key_id.to_string(),
            key: idempotency_key.to_owned(),
        }
    }

    /// A create form rendered for `org`, keyed by the UUID minted at render.
    pub fn form(org: Uuid, form_key: Uuid) -> Self {
        ClaimKey {
            scope: Scope::Form,
            owner: org.to_string(),
            key: form_key.to_string(),
        }
    }

    /// A job run (an outbox row), keyed by its stable run id.
    pub fn job(queue: &str, run_id: Uuid) -> Self {
        ClaimKey {
            scope: Scope::Job,
            owner: queue.to_owned(),
            key: run_id.to_string(),
        }
    }

    /// A Stripe event, keyed by its event id (never the object id: one charge has several events).
    pub fn stripe(account: &str, event_id: &str) -> Self {
        ClaimKey {
            scope: Scope::Stripe,
            owner: account.to_owned(),
            key: event_id.to_owned(),
        }
    }
}

/// A response stored with the claim so a replay can return it byte for byte.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    pub status: u16,
    pub headers: JsonValue,
    pub body: Vec<u8>,
}

/// What the first attempt produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub result_id: Option<Uuid>,
    pub response: Option<StoredResponse>,
}

/// The answer to "may I do this attempt?". Match every arm: that is the point of an enum here.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Claimed {
    /// This transaction owns the attempt: do the work, `complete` (unless `Rules::result_id` had the
    /// claim written done already), commit.
    Won,
    /// An earlier attempt finished; here is what it produced. Do nothing again.
    Done(Outcome),
    /// Another attempt holds a fresh lease (only claims committed before their work have one).
    InFlight { retry_after: Duration },
    /// The key was already used for a different request.
    Mismatch,
}

/// How a claim behaves beyond the key itself.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    /// Hash of what was asked (API requests): a reused key with another request is a `Mismatch`.
    pub fingerprint: Option<&'a [u8]>,
    /// How long a claim committed before its work (three-state claims) stays ours.
    pub lease: Duration,
    /// A claim older than this is forgotten and its key may be used again (API keys' TTL).
    pub expires_after: Option<Duration>,
    /// Do not wait behind another open transaction holding the same key: answer `InFlight` at once
    /// (an HTTP client is waiting, and blocking its connection for the other's whole transaction
    /// helps nobody). Uses a transaction-scoped advisory lock on the key.
    pub nowait: bool,
    /// What the attempt will produce, when it is known before the work (the form mints its
    /// invoice's id): a won claim is then written `done` with it at once and needs no `complete`.
    /// Only for claims whose work commits in the same transaction: nobody sees the row before the
    /// commit, and a rollback takes it away with the work.
    pub result_id: Option<Uuid>,
}

impl Rules<'static> {
    pub fn new(lease: Duration) -> Self {
        Rules {
            fingerprint: None,
            lease,
            expires_after: None,
            nowait: false,
            result_id: None,
        }
    }
}

/// Claims `key` inside the caller's transaction.
pub async fn claim(
    conn: &mut PgConnection,
    key: &ClaimKey,
    rules: &Rules<'_>,
) -> sqlx::Result<Claimed> {
    let lease_secs = rules.lease.as_secs_f64();
    let ttl_secs = rules.expires_after.map(|d| d.as_secs_f64());
    if rules.nowait {
        // language=PostgreSQL
        let free = sqlx::query_scalar!(
            r#"select pg_try_advisory_xact_lock(hashtextextended($1 || '/' || $2 || '/' || $3, 0)) as "free!""#,
            key.scope.as_str(),
            key.owner,
            key.key,
        )
        .fetch_one(&mut *conn)
        .await?;
        if !free {
            return Ok(Claimed::InFlight {
                retry_after: Duration::from_secs(1),
            });
        }
    }
    // A few rounds at most: the row we collided with can expire or be swept before we read it.
    for _ in 0..3 {
        // language=PostgreSQL
        let won = sqlx::query_scalar!(
            r#"
            insert into claims (scope, owner, key, fingerprint, status, result_id, completed_at, locked_until)
            values ($1, $2, $3, $4,
                    case when $6::uuid is null then 'in_progress' else 'done' end, $6,
                    case when $6::uuid is null then null else now() end,
                    case when $6::uuid is null then now() + make_interval(secs => $5) end)
            on conflict do nothing
            returning true as "won!"
            "#,
            key.scope.as_str(),
            key.owner,
            key.key,
            rules.fingerprint,
            lease_secs,
            rules.result_id,
        )
        .fetch_optional(&mut *conn)
        .await?;
        if won.is_some() {
            return Ok(Claimed::Won);
        }

        // language=PostgreSQL
        let Some(row) = sqlx::query!(
            r#"
            select status, fingerprint, result_id, response_status, response_headers, response_body,
                   extract(epoch from greatest(locked_until - now(), interval '0'))::float8 as "lease_left!",
                   coalesce(created_at < now() - make_interval(secs => $4), false) as "expired!"
            from claims
            where scope = $1 and owner = $2 and key = $3
            "#,
            key.scope.as_str(),
            key.owner,
            key.key,
            ttl_secs,
        )
        .fetch_optional(&mut *conn)
        .await?
        else {
            continue;
        };

        if row.expired {
            // Past its TTL the key names nothing any more: forget the old attempt, claim afresh.
            // language=PostgreSQL
            sqlx::query!(
                r#"
                delete from claims
                where scope = $1 and owner = $2 and key = $3 and created_at < now() - make_interval(secs => $4)
                "#,
                key.scope.as_str(),
                key.owner,
                key.key,
                ttl_secs,
            )
            .execute(&mut *conn)
            .await?;
            continue;
        }
        if let (Some(asked), Some(stored)) = (rules.fingerprint, row.fingerprint.as_deref()) {
            if asked != stored {
                return Ok(Claimed::Mismatch);
            }
        }
        if row.status == "done" {
            let response = match (row.response_status, row.response_body) {
                (Some(status), Some(body)) => Some(StoredResponse {
                    status: status as u16,
                    headers: row.response_headers.unwrap_or(JsonValue::Null),
                    body,
                }),
                _ => None,
            };
            return Ok(Claimed::Done(Outcome {
                result_id: row.result_id,
                response,
            }));
        }
        if row.lease_left > 0.0 {
            return Ok(Claimed::InFlight {
                retry_after: Duration::from_secs_f64(row.lease_left.ceil().max(1.0)),
            });
        }
        // A stale lease: its holder died or gave up. Take it over, unless someone else just did.
        // language=PostgreSQL
        let taken = sqlx::query_scalar!(
            r#"
            update claims
            set claimed_at = now(), locked_until = now() + make_interval(secs => $4)
            where scope = $1 and owner = $2 and key = $3
              and status = 'in_progress' and locked_until <= now()
            returning true as "taken!"
            "#,
            key.scope.as_str(),
            key.owner,
            key.key,
            lease_secs,
        )
        .fetch_optional(&mut *conn)
        .await?;
        if taken.is_some() {
            metrics::counter!("invoicer_lease_takeovers_total", "scope" => key.scope.as_str())
                .increment(1);
            if rules.result_id.is_some() {
                let outcome = Outcome {
                    result_id: rules.result_id,
                    response: None,
                };
                complete(conn, key, &outcome).await?;
            }
            return Ok(Claimed::Won);
        }
    }
    Err(sqlx::Error::Protocol(
        "claim kept changing under us; giving up".into(),
    ))
}

/// Marks a won claim done with what the attempt produced. Call it in the transaction that did the
/// work, before commit.
pub async fn complete(
    conn: &mut PgConnection,
    key: &ClaimKey,
    outcome: &Outcome,
) -> sqlx::Result<()> {
    let (status, headers, body) = match &outcome.response {
        Some(r) => (
            Some(r.status as i16),
            Some(r.headers.clone()),
            Some(r.body.as_slice()),
        ),
        None => (None, None, None),
    };
    // language=PostgreSQL
    let updated = sqlx::query!(
        r#"
        update claims
        set status = 'done', completed_at = now(), locked_until = null,
            result_id = $4, response_status = $5, response_headers = $6, response_body = $7
        where scope = $1 and owner = $2 and key = $3
        "#,
        key.scope.as_str(),
        key.owner,
        key.key,
        outcome.result_id,
        status,
        headers,
        body,
    )
    .execute(&mut *conn)
    .await?;
    if updated.rows_affected() != 1 {
        return Err(sqlx::Error::RowNotFound);
    }
    Ok(())
}

/// Deletes claims of `scope` older than `older_than`, `batch` rows per statement so no statement holds
/// many locks or runs long; returns how many were deleted.
pub async fn sweep_expired(
    pool: &PgPool,
    scope: Scope,
    older_than: Duration,
    batch: i64,
) -> sqlx::Result<u64> {
    let mut total = 0;
    loop {
        // language=PostgreSQL
        let deleted = sqlx::query!(
            r#"
            delete from claims
            where (scope, owner, key) in (
                select scope, owner, key from claims
                where scope = $1 and created_at < now() - make_interval(secs => $2)
                limit $3
            )
            "#,
            scope.as_str(),
            older_than.as_secs_f64(),
            batch,
        )
        .execute(pool)
        .await?
        .rows_affected();
        total += deleted;
        if deleted < batch as u64 {
            return Ok(total);
        }
    }
}

/// The fencing token of an in-progress claim: when its current holder claimed it. A takeover changes
/// it, so a holder whose lease was taken over can no longer complete or release the claim.
pub type LeaseToken = chrono::DateTime<chrono::Utc>;

/// The token of the in-progress claim on `key`, read right after winning it.
pub async fn lease_token(conn: &mut PgConnection, key: &ClaimKey) -> sqlx::Result<LeaseToken> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"
        select claimed_at as "claimed_at: LeaseToken"
        from claims
        where scope = $1 and owner = $2 and key = $3 and status = 'in_progress'
        "#,
        key.scope.as_str(),
        key.owner,
        key.key,
    )
    .fetch_one(&mut *conn)
    .await
}

/// `complete` for a claim committed before its work: only if `token` still holds it. False means the
/// lease was taken over: someone else owns the attempt now, and this holder must not record anything.
pub async fn complete_fenced(
    conn: &mut PgConnection,
    key: &ClaimKey,
    token: LeaseToken,
    outcome: &Outcome,
) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        r#"
        update claims
        set status = 'done', completed_at = now(), locked_until = null, result_id = $5
        where scope = $1 and owner = $2 and key = $3 and status = 'in_progress' and claimed_at = $4
        "#,
        key.scope.as_str(),
        key.owner,
        key.key,
        token as _,
        outcome.result_id,
    )
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Gives up a claim committed before its work (the work failed and will be tried again later), only
/// if `token` still holds it.
pub async fn release_fenced(
    conn: &mut PgConnection,
    key: &ClaimKey,
    token: LeaseToken,
) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let released = sqlx::query!(
        r#"
        delete from claims
        where scope = $1 and owner = $2 and key = $3 and status = 'in_progress' and claimed_at = $4
        "#,
        key.scope.as_str(),
        key.owner,
        key.key,
        token as _,
    )
    .execute(&mut *conn)
    .await?;
    Ok(released.rows_affected() == 1)
}

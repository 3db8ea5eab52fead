//! The claim: the one mechanism every surface (form, webhook, API, job) uses to make a repeat harmless.
//!
//! A claim is a row keyed `(surface, owner, key)`: the key names the *attempt* and is minted where the
//! attempt is born (the form at render, Stripe's event id, the client's Idempotency-Key, a job's run
//! id). Two shapes, one table:
//!
//! - [`claim`]: the claim commits with its work. It is inserted with `ON CONFLICT DO NOTHING` inside
//!   the caller's open transaction, the caller does its work in that same transaction, finishes
//!   (`surfaces::record::finish`: the outcome and the won attempt's row), and commits. Claim and work commit together or not at all: claiming in one commit and working in
//!   another would turn a crash between them into a silent loss (the attempt looks done while nothing
//!   happened). Nobody else ever sees such a claim before it is done.
//! - [`lease`]: for work that leaves the database (email, a third party). The claim is committed
//!   `in_progress` with a lease before the side effect; a fresh lease answers `Busy`, a stale one is
//!   taken over. The [`Lease`] carries its fencing token, and only it can complete or release the
//!   claim: a holder whose lease was taken over can record nothing.
//!
//! At READ COMMITTED a concurrent insert of the same key waits for the first transaction and then sees
//! its committed row (or wins, if the first rolled back). Do not run claims at REPEATABLE READ or
//! SERIALIZABLE: there the loser gets a serialization failure instead of the winner's result.

use std::time::Duration;

use serde_json::Value as JsonValue;
use sqlx::PgConnection;
use uuid::Uuid;

mod key;
mod lease;

pub use key::{ClaimKey, Surface};
pub use lease::{lease, Fence, Lease, LeaseToken, Leased};

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

impl Outcome {
    pub fn result(id: Uuid) -> Self {
        Outcome {
            result_id: Some(id),
            response: None,
        }
    }
}

/// How a claim that commits with its work treats repeats. Everything is optional.
#[derive(Debug, Clone, Copy, Default)]
pub struct Terms<'a> {
    /// Hash of what was asked: a reused key with another request is a `Mismatch`.
    pub fingerprint: Option<&'a [u8]>,
    /// A claim older than this is forgotten and its key may be used again (API keys' TTL).
    pub expires_after: Option<Duration>,
    /// Do not wait behind another open transaction holding the same key: answer `Busy` at once (an
    /// HTTP client is waiting, and blocking its connection for the other's whole transaction helps
    /// nobody). Uses a transaction-scoped advisory lock on the key.
    pub no_wait: bool,
    /// What the attempt will produce, when it is known before the work (the form mints its invoice's
    /// id): the claim is written with it and needs no `finish`.
    pub result_id: Option<Uuid>,
}

/// The answer to "may this transaction do the attempt?". Match every arm: that is the point.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Claimed {
    /// This transaction owns the attempt: do the work, finish (`surfaces::record::finish`), commit.
    Won,
    /// An earlier attempt finished; here is what it produced. Do nothing again.
    Done(Outcome),
    /// The key was already used for a different request.
    Mismatch,
    /// Another attempt holds the key right now (`no_wait`, or a lease of work outside the database).
    Busy { retry_after: Duration },
}

/// Claims `key` inside the caller's transaction, for work done in that same transaction.
pub async fn claim(
    conn: &mut PgConnection,
    key: &ClaimKey,
    terms: &Terms<'_>,
) -> sqlx::Result<Claimed> {
    let ttl_secs = terms.expires_after.map(|d| d.as_secs_f64());
    // A few rounds at most: the row we collided with can expire or be swept before we read it.
    for _ in 0..3 {
        // One round trip: with `no_wait`, the key's transaction-scoped lock is tried first and the
        // insert runs only if it was free (taking it again in a later round is a no-op). The row is
        // written done at once: it commits with the work, so nobody sees it before it is.
        // language=PostgreSQL
        let claimed = sqlx::query!(
            r#"
            with lock as (
                select case when $6::bool then pg_try_advisory_xact_lock(hashtextextended($1 || '/' || $2 || '/' || $3, 0))
                            else true end as free
            ), won as (
                insert into claims (scope, owner, key, fingerprint, status, result_id, completed_at)
                select $1, $2, $3, $4::bytea, 'done', $5::uuid, now() from lock where free
                on conflict do nothing
                returning true
            )
            select free as "free!", exists (select from won) as "won!" from lock
            "#,
            key.surface.as_str(),
            key.owner,
            key.key,
            terms.fingerprint,
            terms.result_id,
            terms.no_wait,
        )
        .fetch_one(&mut *conn)
        .await?;
        if !claimed.free {
            return Ok(Claimed::Busy {
                retry_after: Duration::from_secs(1),
            });
        }
        if claimed.won {
            return Ok(Claimed::Won);
        }
        let Some(found) = existing(conn, key, ttl_secs).await? else {
            continue;
        };
        if found.expired {
            forget_expired(conn, key, ttl_secs).await?;
            continue;
        }
        if let (Some(asked), Some(stored)) = (terms.fingerprint, found.fingerprint.as_deref()) {
            if asked != stored {
                return Ok(Claimed::Mismatch);
            }
        }
        return Ok(match found.done {
            Some(outcome) => Claimed::Done(outcome),
            // A lease holds the key: its side effect may be under way, so never take it over here.
            None => Claimed::Busy {
                retry_after: found.retry_after(),
            },
        });
    }
    Err(sqlx::Error::Protocol(
        "claim kept changing under us; giving up".into(),
    ))
}

/// What a claim of `key` would answer now, without claiming: `None` when the key is free (or its
/// claim expired). For work that must happen before the claiming transaction (a call out), so a
/// replay or a reused key is answered before the work is done again.
pub async fn peek(
    conn: &mut PgConnection,
    key: &ClaimKey,
    terms: &Terms<'_>,
) -> sqlx::Result<Option<Claimed>> {
    let ttl_secs = terms.expires_after.map(|d| d.as_secs_f64());
    let Some(found) = existing(conn, key, ttl_secs).await? else {
        return Ok(None);
    };
    if found.expired {
        return Ok(None);
    }
    if let (Some(asked), Some(stored)) = (terms.fingerprint, found.fingerprint.as_deref()) {
        if asked != stored {
            return Ok(Some(Claimed::Mismatch));
        }
    }
    Ok(Some(match found.done {
        Some(outcome) => Claimed::Done(outcome),
        None => Claimed::Busy {
            retry_after: found.retry_after(),
        },
    }))
}

/// The committed claim a conflicting insert ran into.
struct Existing {
    /// `Some` once done.
    done: Option<Outcome>,
    fingerprint: Option<Vec<u8>>,
    lease_left: f64,
    expired: bool,
}

impl Existing {
    fn retry_after(&self) -> Duration {
        Duration::from_secs_f64(self.lease_left.ceil().max(1.0))
    }
}

async fn existing(
    conn: &mut PgConnection,
    key: &ClaimKey,
    ttl_secs: Option<f64>,
) -> sqlx::Result<Option<Existing>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select status, fingerprint, result_id, response_status, response_headers, response_body,
               extract(epoch from greatest(locked_until - now(), interval '0'))::float8 as "lease_left!",
               coalesce(created_at < now() - make_interval(secs => $4), false) as "expired!"
        from claims
        where scope = $1 and owner = $2 and key = $3
        "#,
        key.surface.as_str(),
        key.owner,
        key.key,
        ttl_secs,
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|row| {
        let response = match (row.response_status, row.response_body) {
            (Some(status), Some(body)) => Some(StoredResponse {
                status: status as u16,
                headers: row.response_headers.unwrap_or(JsonValue::Null),
                body,
            }),
            _ => None,
        };
        Existing {
            done: (row.status == "done").then_some(Outcome {
                result_id: row.result_id,
                response,
            }),
            fingerprint: row.fingerprint,
            lease_left: row.lease_left,
            expired: row.expired,
        }
    }))
}

/// Past its TTL a key names nothing any more: forget the old attempt so it can be claimed afresh.
async fn forget_expired(
    conn: &mut PgConnection,
    key: &ClaimKey,
    ttl_secs: Option<f64>,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        delete from claims
        where scope = $1 and owner = $2 and key = $3 and created_at < now() - make_interval(secs => $4)
        "#,
        key.surface.as_str(),
        key.owner,
        key.key,
        ttl_secs,
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

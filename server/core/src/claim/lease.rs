//! Claims for work that leaves the database: committed in progress with a lease before the side
//! effect, settled only by the holder of the lease's fencing token.

use std::time::Duration;

use sqlx::PgConnection;

use super::{existing, ClaimKey, Outcome};

/// The fencing token of a lease: when its current holder took it. A takeover changes it.
pub type LeaseToken = chrono::DateTime<chrono::Utc>;

/// A claim committed in progress before work that leaves the database. Only its holder can settle it,
/// and only while nobody took it over.
#[derive(Debug)]
#[must_use = "a lease is settled with `complete` or `release` (or left to expire and be taken over)"]
pub struct Lease {
    key: ClaimKey,
    token: LeaseToken,
}

/// The answer to "may I start this work that leaves the database?".
#[derive(Debug)]
#[must_use]
pub enum Leased {
    /// Ours until the lease runs out: do the work, then `complete` (or `release` to try again later).
    Acquired(Lease),
    /// Done before; here is what it produced.
    Done(Outcome),
    /// Another holder's lease is fresh.
    Busy { retry_after: Duration },
}

impl Leased {
    /// What the work produced, when it was done before.
    pub fn done(self) -> Option<Outcome> {
        match self {
            Leased::Done(outcome) => Some(outcome),
            Leased::Acquired(_) | Leased::Busy { .. } => None,
        }
    }
}

/// Whether a lease still held its claim when its holder settled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Fence {
    Held,
    /// The lease was taken over: someone else owns the attempt now, and nothing was recorded.
    TakenOver,
}

/// Leases `key` for `duration`. Commit (or use an autocommit connection) before the side effect.
pub async fn lease(
    conn: &mut PgConnection,
    key: &ClaimKey,
    duration: Duration,
) -> sqlx::Result<Leased> {
    let secs = duration.as_secs_f64();
    for _ in 0..3 {
        // language=PostgreSQL
        let token = sqlx::query_scalar!(
            r#"
            insert into claims (scope, owner, key, status, locked_until)
            values ($1, $2, $3, 'in_progress', now() + make_interval(secs => $4))
            on conflict do nothing
            returning claimed_at as "token: LeaseToken"
            "#,
            key.surface.as_str(),
            key.owner,
            key.key,
            secs,
        )
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(token) = token {
            return Ok(Leased::Acquired(Lease {
                key: key.clone(),
                token,
            }));
        }
        let Some(found) = existing(conn, key, None).await? else {
            continue;
        };
        if let Some(outcome) = found.done {
            return Ok(Leased::Done(outcome));
        }
        if found.lease_left > 0.0 {
            return Ok(Leased::Busy {
                retry_after: found.retry_after(),
            });
        }
        // A stale lease: its holder died or gave up. Take it over, unless someone else just did.
        // language=PostgreSQL
        let token = sqlx::query_scalar!(
            r#"
            update claims
            set claimed_at = clock_timestamp(), locked_until = now() + make_interval(secs => $4)
            where scope = $1 and owner = $2 and key = $3
              and status = 'in_progress' and locked_until <= now()
            returning claimed_at as "token: LeaseToken"
            "#,
            key.surface.as_str(),
            key.owner,
            key.key,
            secs,
        )
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(token) = token {
            metrics::counter!("invoicer_lease_takeovers_total", "surface" => key.surface.as_str())
                .increment(1);
            return Ok(Leased::Acquired(Lease {
                key: key.clone(),
                token,
            }));
        }
    }
    Err(sqlx::Error::Protocol(
        "lease kept changing under us; giving up".into(),
    ))
}

impl Lease {
    pub fn key(&self) -> &ClaimKey {
        &self.key
    }

    pub fn token(&self) -> LeaseToken {
        self.token
    }

    /// Marks the claim done with what the work produced, if this lease still holds it.
    pub async fn complete(self, conn: &mut PgConnection, outcome: &Outcome) -> sqlx::Result<Fence> {
        // language=PostgreSQL
        let done = sqlx::query!(
            r#"
            update claims
            set status = 'done', completed_at = now(), locked_until = null, result_id = $5
            where scope = $1 and owner = $2 and key = $3 and status = 'in_progress' and claimed_at = $4
            "#,
            self.key.surface.as_str(),
            self.key.owner,
            self.key.key,
            self.token as _,
            outcome.result_id,
        )
        .execute(&mut *conn)
        .await?;
        Ok(fence(done.rows_affected()))
    }

    /// Gives the claim up (the work failed and will be tried again), if this lease still holds it.
    pub async fn release(self, conn: &mut PgConnection) -> sqlx::Result<Fence> {
        // language=PostgreSQL
        let released = sqlx::query!(
            r#"
            delete from claims
            where scope = $1 and owner = $2 and key = $3 and status = 'in_progress' and claimed_at = $4
            "#,
            self.key.surface.as_str(),
            self.key.owner,
            self.key.key,
            self.token as _,
        )
        .execute(&mut *conn)
        .await?;
        Ok(fence(released.rows_affected()))
    }
}

fn fence(rows: u64) -> Fence {
    if rows == 1 {
        Fence::Held
    } else {
        Fence::TakenOver
    }
}

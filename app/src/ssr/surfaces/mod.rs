//! The surfaces of the discipline: where attempts arrive (forms, Stripe webhooks, the JSON API).
//!
//! Each surface names its attempt with a key minted where the attempt was born, and runs [`once`]:
//! claim and work in one transaction, the won attempt's activity row in that same transaction, commit,
//! and only then an answer. A new surface is a key, its work, and a mapping of [`Once`] to its answer.

pub mod api;
pub mod form;
pub mod webhook;

use std::time::Duration;

use sqlx::{PgConnection, PgPool};

use crate::ssr::claim::{self, ClaimKey, Claimed, Outcome, Terms};
use crate::ssr::failpoint;
use crate::ssr::observe::{Attempt, Concerns};

/// What a won attempt's work decided, inside the claiming transaction.
pub enum Work<T> {
    /// Commit: the claim records `outcome`, the attempt's row names `concerns`.
    Commit {
        answer: T,
        outcome: Outcome,
        concerns: Concerns,
    },
    /// Roll back (claim included) and answer `answer`: the business write's own unique key found
    /// the attempt already done, so the claim row was the one thing missing.
    RollBack(T),
}

/// How one attempt ended.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Once<T> {
    /// This attempt ran the work (committed, or rolled back by `Work::RollBack`).
    Ran(T),
    /// An earlier attempt finished; here is what it produced.
    Done(Outcome),
    /// The key was already used for a different request.
    Mismatch,
    /// Another attempt holds the key right now.
    Busy { retry_after: Duration },
}

/// Claim `key` and run `work` in one transaction; answer only after commit.
///
/// Failpoints `<surface>.after_claim` and `<surface>.after_commit` let tests kill the process where
/// a claim-first design would lose the attempt.
pub async fn once<T, E, F>(
    pool: &PgPool,
    attempt: &Attempt,
    key: &ClaimKey,
    terms: &Terms<'_>,
    work: F,
) -> Result<Once<T>, E>
where
    E: From<sqlx::Error>,
    F: AsyncFnOnce(&mut PgConnection) -> Result<Work<T>, E>,
{
    let surface = key.surface.as_str();
    let mut tx = pool.begin().await?;
    match claim::claim(&mut tx, key, terms).await? {
        Claimed::Won => {}
        Claimed::Done(outcome) => return Ok(Once::Done(outcome)),
        Claimed::Mismatch => return Ok(Once::Mismatch),
        Claimed::Busy { retry_after } => return Ok(Once::Busy { retry_after }),
    }
    failpoint::hit_at(surface, "after_claim");

    let (answer, outcome, concerns) = match work(&mut tx).await? {
        Work::Commit {
            answer,
            outcome,
            concerns,
        } => (answer, outcome, concerns),
        Work::RollBack(answer) => {
            tx.rollback().await?;
            return Ok(Once::Ran(answer));
        }
    };
    // A result known up front was written with the claim; anything else is recorded now.
    let written = Outcome {
        result_id: terms.result_id,
        response: None,
    };
    if outcome != written {
        claim::finish(&mut tx, key, &outcome).await?;
    }
    attempt.store_won(&mut tx, concerns).await?;
    tx.commit().await?;
    failpoint::hit_at(surface, "after_commit");
    Ok(Once::Ran(answer))
}

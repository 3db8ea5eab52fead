//! The surfaces of the discipline: where attempts arrive (forms, Stripe webhooks, the JSON API).
//!
//! Each surface names its attempt with a key minted where the attempt was born, runs it inside
//! [`track`] (its log event, series and activity row) and through [`once`] (or [`once_in`], for a
//! job's transaction): claim and work in one transaction, the won attempt's activity row in that same
//! transaction, commit, and only then an answer. These are the only layer between a surface and the
//! claim; [`record`] is the only writer of `attempts`. A new surface is a key, its work, and a
//! mapping of [`Once`] to its answer.

pub mod api;
pub mod customer_forms;
pub mod form;
pub mod forms;
pub mod payment_forms;
pub mod quote_forms;
pub mod record;
pub mod webhook;

pub use record::track;

use std::time::Duration;

use sqlx::{PgConnection, PgPool};

use crate::claim::{self, ClaimKey, Claimed, Outcome, Terms};
use crate::failpoint;
use crate::observe::{Attempt, Concerns};

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

/// An error that may go away if the whole transaction is tried again: Postgres aborted it to break
/// a deadlock (40P01) or because it could not be serialised (40001).
pub trait Transient {
    fn is_transient(&self) -> bool;
}

impl Transient for sqlx::Error {
    fn is_transient(&self) -> bool {
        model::error::is_aborted(self)
    }
}

impl Transient for model::error::AppError {
    fn is_transient(&self) -> bool {
        *self == model::error::AppError::Contended
    }
}

pub use model::error::{is_unavailable, UNAVAILABLE_RETRY_AFTER};

/// The answer to a form whose key another attempt holds right now: `what` is happening, and when to
/// try again.
pub fn busy(what: &str, retry_after: Duration) -> model::error::AppError {
    model::error::AppError::BadRequest(format!(
        "{what} Try again in {} seconds.",
        retry_after.as_secs()
    ))
}

/// How many times one attempt's transaction is run before its error is answered.
pub const MAX_TRIES: u32 = 3;

/// Claim `key` and run the work in one transaction; answer only after commit. `work` makes the
/// transaction's work (`|| async |tx| { ... }`): a transaction Postgres aborted for a deadlock or a
/// serialization failure is run again from the claim with a fresh one, up to [`MAX_TRIES`] times in
/// all (nothing an aborted try did survives its rollback).
///
/// Failpoints `<surface>.after_claim` and `<surface>.after_commit` let tests kill the process where
/// a claim-first design would lose the attempt.
pub async fn once<T, E, F, W>(
    pool: &PgPool,
    attempt: &Attempt,
    key: &ClaimKey,
    terms: &Terms<'_>,
    mut work: F,
) -> Result<Once<T>, E>
where
    E: From<sqlx::Error> + Transient,
    F: FnMut() -> W,
    W: AsyncFnOnce(&mut PgConnection) -> Result<Work<T>, E>,
{
    let mut tries = 1;
    loop {
        match try_once(pool, attempt, key, terms, work()).await {
            Err(e) if e.is_transient() && tries < MAX_TRIES => {
                tracing::warn!(
                    surface = key.surface.as_str(),
                    tries,
                    "transaction aborted by Postgres (deadlock or serialization); running it again"
                );
                metrics::counter!("invoicer_transaction_retries_total", "surface" => key.surface.as_str())
                    .increment(1);
                // A short random pause, so that the two sides of a deadlock do not meet again.
                tokio::time::sleep(Duration::from_millis(
                    5 + fastrand::u64(0..20 * u64::from(tries)),
                ))
                .await;
                tries += 1;
            }
            other => return other,
        }
    }
}

/// What a claim this transaction did not win answers; `None` when it won.
fn unless_won<T>(claimed: Claimed) -> Option<Once<T>> {
    match claimed {
        Claimed::Won => None,
        Claimed::Done(outcome) => Some(Once::Done(outcome)),
        Claimed::Mismatch => Some(Once::Mismatch),
        Claimed::Busy { retry_after } => Some(Once::Busy { retry_after }),
    }
}

/// [`once`] inside a transaction the caller opened and commits (a job that picked its due row with
/// `FOR UPDATE SKIP LOCKED` first): claims `key`, and if this transaction won runs `work`, which
/// answers with what the attempt produced and concerned, and finishes the claim with the attempt's
/// row ([`record::finish`]). Otherwise answers what the claim found, and the caller goes on in the
/// same transaction. Call [`Attempt::mark_stored`] once it committed a `Ran`.
pub async fn once_in<T, E, W>(
    tx: &mut PgConnection,
    attempt: &Attempt,
    key: &ClaimKey,
    terms: &Terms<'_>,
    work: W,
) -> Result<Once<T>, E>
where
    E: From<sqlx::Error>,
    W: AsyncFnOnce(&mut PgConnection) -> Result<(T, Outcome, Concerns), E>,
{
    if let Some(answered) = unless_won(claim::claim(&mut *tx, key, terms).await?) {
        return Ok(answered);
    }
    let (answer, outcome, concerns) = work(&mut *tx).await?;
    record::finish(tx, key, Some(&outcome), attempt, concerns).await?;
    Ok(Once::Ran(answer))
}

async fn try_once<T, E, W>(
    pool: &PgPool,
    attempt: &Attempt,
    key: &ClaimKey,
    terms: &Terms<'_>,
    work: W,
) -> Result<Once<T>, E>
where
    E: From<sqlx::Error>,
    W: AsyncFnOnce(&mut PgConnection) -> Result<Work<T>, E>,
{
    let surface = key.surface.as_str();
    let mut tx = pool.begin().await?;
    if let Some(answered) = unless_won(claim::claim(&mut tx, key, terms).await?) {
        return Ok(answered);
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
    // A result known up front was written with the claim; anything else is recorded now, with the
    // won attempt's row.
    let written = Outcome {
        result_id: terms.result_id,
        response: None,
    };
    let unrecorded = (outcome != written).then_some(&outcome);
    record::finish(&mut tx, key, unrecorded, attempt, concerns).await?;
    tx.commit().await?;
    attempt.mark_stored();
    failpoint::hit_at(surface, "after_commit");
    Ok(Once::Ran(answer))
}

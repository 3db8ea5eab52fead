//! A quote's Accept and Decline buttons (the customer's, on the public page) as a surface: each
//! keyed by the UUID minted when its page was rendered and claimed as `(form, <org>/<button>, key)`
//! in the transaction that moves the quote. A double submit, a
//! resubmit after Back, or two tabs at once: one decision, one invoice.

use model::OrgId;
use sqlx::PgPool;
use uuid::Uuid;

use crate::claim::{Outcome, Terms};
use crate::invoicing::quotes::{self, Decided, QuoteError};
use crate::observe::{Attempt, AttemptOutcome, Concerns, Tracked};
use crate::surfaces::forms::Form;
use crate::surfaces::{busy, once, Once, Work};
use model::error::AppError;
use model::QuoteStatus;

/// How a customer's decision ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// This submit decided the quote (accepted: its invoice).
    Now(Option<Uuid>),
    /// An earlier submit of the same rendered button did.
    Repeated,
    /// The quote cannot be decided (any more): where it is.
    Refused(QuoteStatus),
}

impl Tracked for Decision {
    fn outcome(&self) -> AttemptOutcome {
        match self {
            Decision::Now(_) => AttemptOutcome::Won,
            Decision::Repeated => AttemptOutcome::Replay,
            Decision::Refused(_) => AttemptOutcome::Rejected,
        }
    }
}

/// The customer's Accept (`accept`) or Decline on `org`'s quote `quote`, once per rendered button.
#[allow(clippy::too_many_arguments)]
pub async fn decide(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    quote: Uuid,
    form_key: Uuid,
    accept: bool,
    public_base: &str,
    allowance: crate::mail::gate::Allowance,
) -> Result<Decision, AppError> {
    let form = if accept {
        Form::AcceptQuote
    } else {
        Form::DeclineQuote
    };
    let key = form.claim_key(org, form_key);
    attempt.identify(org.to_string(), Some(org));
    let ran = once(pool, attempt, &key, &Terms::default(), || {
        async |tx| match quotes::decide(tx, org, quote, accept, public_base, allowance).await {
            Ok(decided) => {
                let invoice = match decided {
                    Decided::Accepted(invoice) => Some(invoice),
                    Decided::Declined => None,
                };
                Ok(Work::Commit {
                    answer: Decision::Now(invoice),
                    outcome: Outcome {
                        result_id: Some(invoice.unwrap_or(quote)),
                        response: None,
                    },
                    concerns: Concerns {
                        org: Some(org),
                        invoice,
                    },
                })
            }
            // Nothing was written: the claim goes with the rollback.
            Err(QuoteError::Refused(status)) => Ok(Work::RollBack(Decision::Refused(status))),
            Err(QuoteError::NotFound) => Err(AppError::NotFound),
            Err(QuoteError::Invalid(fields)) => Err(AppError::invalid(fields)),
            Err(QuoteError::Db(e)) => Err(AppError::from(e)),
            Err(QuoteError::Mail(refused)) => Err(AppError::from(refused)),
        }
    })
    .await?;
    match ran {
        Once::Ran(decision) => Ok(decision),
        Once::Done(_) | Once::Mismatch => Ok(Decision::Repeated),
        Once::Busy { retry_after } => Err(busy("Your answer is being recorded.", retry_after)),
    }
}

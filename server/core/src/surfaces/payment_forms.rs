//! The invoice page's money forms as the form surface runs them: "Record a payment" (once per
//! rendered form: a double submit records one payment), a recorded payment's "Delete" button (once
//! per rendered button), "Credit" (once per rendered form: one credit note) and "Apply credit"
//! (once per rendered form: the customer's balance moved once).

use model::InvoiceId;
use model::OrgId;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

use super::form::Saved;
use super::{busy, once, Once, Work};
use crate::accounts::audit::Actor;
use crate::claim::{ClaimKey, Outcome, Terms};
use crate::observe::{Attempt, Concerns};
use crate::payments::manual::{self, PaymentError};
use crate::surfaces::forms::Form;
use model::error::AppError;
use model::PaymentInput;

/// What the owner reads when a payment is refused.
pub fn refusal(e: PaymentError) -> AppError {
    match e {
        PaymentError::NotFound => AppError::NotFound,
        PaymentError::NotPayable(status) => AppError::BadRequest(format!(
            "This invoice is {status}: it takes no payments.{}",
            if status == model::InvoiceStatus::Draft {
                " Finalize it first."
            } else {
                ""
            }
        )),
        PaymentError::Invalid(fields) => AppError::invalid(fields),
        PaymentError::NotManual => {
            AppError::BadRequest("Stripe's payments are changed by Stripe, not here.".into())
        }
        PaymentError::Refunded => AppError::BadRequest(
            "A refund depends on this payment: it can no longer be deleted.".into(),
        ),
        PaymentError::Db(e) => AppError::from(e),
    }
}

/// Records `input` on `invoice` at most once per rendered form `form_key`.
pub async fn record_payment(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    user: Uuid,
    form_key: Uuid,
    invoice: InvoiceId,
    input: &PaymentInput,
) -> Result<Saved, AppError> {
    let key = Form::RecordPayment.claim_key(org, form_key);
    let fingerprint = Sha256::digest(serde_json::to_vec(input).expect("input serialises")).to_vec();
    let payment = Uuid::now_v7();
    let terms = Terms {
        fingerprint: Some(&fingerprint),
        ..Terms::default()
    };
    let name = format!("form:{form_key}");
    let ran = once(pool, attempt, &key, &terms, || {
        async |tx| {
            let (recorded, _) = manual::record(tx, org, invoice, payment, &name, input, Some(user))
                .await
                .map_err(refusal)?;
            let concerns = Concerns {
                org: Some(org),
                invoice: Some(invoice.uuid()),
            };
            Ok::<_, AppError>(if recorded.id == payment {
                Work::Commit {
                    answer: payment,
                    outcome: Outcome::result(payment),
                    concerns,
                }
            } else {
                // The payment's own key (the attempt's name) found it recorded: only the claim
                // row was missing.
                Work::RollBack(recorded.id)
            })
        }
    })
    .await?;
    made(ran, payment, &key, "This payment is still being recorded.")
}

/// Deletes the recorded payment `payment` at most once per rendered button `button_key`.
pub async fn delete_payment(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    actor: &Actor,
    button_key: Uuid,
    invoice: InvoiceId,
    payment: Uuid,
) -> Result<Saved, AppError> {
    let key = Form::DeletePayment.claim_key(org, button_key);
    let terms = Terms {
        result_id: Some(payment),
        ..Terms::default()
    };
    let ran = once(pool, attempt, &key, &terms, || {
        async |tx| {
            manual::delete(tx, org, invoice, payment, actor)
                .await
                .map_err(refusal)?;
            Ok::<_, AppError>(Work::Commit {
                answer: payment,
                outcome: Outcome::result(payment),
                concerns: Concerns {
                    org: Some(org),
                    invoice: Some(invoice.uuid()),
                },
            })
        }
    })
    .await?;
    Ok(match ran {
        Once::Ran(id) => Saved::Created(id),
        Once::Done(_) => Saved::Replayed(payment),
        Once::Mismatch => Saved::KeyReused,
        Once::Busy { retry_after } => {
            return Err(busy("This payment is being deleted.", retry_after))
        }
    })
}

/// Issues a credit note of `input` on `invoice` at most once per rendered form `form_key`.
pub async fn credit_invoice(
    pool: &PgPool,
    attempt: &Attempt,
    form_key: Uuid,
    credit: &crate::invoicing::credit_notes::Credit<'_>,
    input: &model::CreditNoteInput,
    public_base: &str,
) -> Result<Saved, AppError> {
    use crate::invoicing::credit_notes::{self, CreditError};
    let key = Form::CreditInvoice.claim_key(credit.org, form_key);
    let fingerprint = Sha256::digest(serde_json::to_vec(input).expect("input serialises")).to_vec();
    let terms = Terms {
        fingerprint: Some(&fingerprint),
        result_id: Some(credit.id),
        ..Terms::default()
    };
    let ran = once(pool, attempt, &key, &terms, || {
        async |tx| {
            let (note, _) = credit_notes::issue(tx, credit, input, public_base)
                .await
                .map_err(|e| match e {
                    CreditError::Db(e) => AppError::from(e),
                    CreditError::NotFound => AppError::NotFound,
                    other => AppError::BadRequest(format!("Not credited: {other}.")),
                })?;
            let concerns = Concerns {
                org: Some(credit.org),
                invoice: Some(credit.invoice.uuid()),
            };
            Ok::<_, AppError>(if note.id == credit.id {
                Work::Commit {
                    answer: note.id,
                    outcome: Outcome::result(note.id),
                    concerns,
                }
            } else {
                Work::RollBack(note.id)
            })
        }
    })
    .await?;
    made(
        ran,
        credit.id,
        &key,
        "This credit note is still being issued.",
    )
}

/// Applies the customer's credit balance to `invoice` (`amount`; None: as much as is due and
/// available) at most once per rendered form `form_key`.
pub async fn apply_credit(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    user: Uuid,
    form_key: Uuid,
    invoice: InvoiceId,
    amount: Option<i64>,
) -> Result<Saved, AppError> {
    use crate::payments::credit_balance::{self, BalanceError};
    let key = Form::ApplyCredit.claim_key(org, form_key);
    let fingerprint = Sha256::digest(format!("{amount:?}")).to_vec();
    let terms = Terms {
        fingerprint: Some(&fingerprint),
        result_id: Some(invoice.uuid()),
        ..Terms::default()
    };
    let name = format!("form:{form_key}");
    let ran = once(pool, attempt, &key, &terms, || {
        async |tx| {
            credit_balance::apply(tx, org, invoice, amount, &name, Some(user))
                .await
                .map_err(|e| match e {
                    BalanceError::Db(e) => AppError::from(e),
                    BalanceError::NotFound => AppError::NotFound,
                    other => AppError::BadRequest(format!("No credit applied: {other}.")),
                })?;
            Ok::<_, AppError>(Work::Commit {
                answer: invoice.uuid(),
                outcome: Outcome::result(invoice.uuid()),
                concerns: Concerns {
                    org: Some(org),
                    invoice: Some(invoice.uuid()),
                },
            })
        }
    })
    .await?;
    made(
        ran,
        invoice.uuid(),
        &key,
        "This credit is still being applied.",
    )
}

/// How a form that makes `made` (a payment, a credit note) ended: made now, made by the attempt it
/// repeats (the claim's result, or what the business key found), its key reused with other content,
/// or still `busy` elsewhere.
fn made(ran: Once<Uuid>, made: Uuid, key: &ClaimKey, busy_doing: &str) -> Result<Saved, AppError> {
    Ok(match ran {
        Once::Ran(id) if id == made => Saved::Created(id),
        Once::Ran(id)
        | Once::Done(Outcome {
            result_id: Some(id),
            ..
        }) => Saved::Replayed(id),
        Once::Done(outcome) => {
            return Err(AppError::internal(
                "form claim done without its result",
                format!("{key:?} {outcome:?}"),
            ))
        }
        Once::Mismatch => Saved::KeyReused,
        Once::Busy { retry_after } => return Err(busy(busy_doing, retry_after)),
    })
}

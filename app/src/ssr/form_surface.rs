//! The create-invoice form as a surface of the discipline: key minted at render, claim
//! `(form, org, key)` written done with the invoice id minted up front, and the invoice insert, in
//! one transaction.

use std::time::Duration;

use sqlx::PgPool;
use uuid::Uuid;

use crate::error::AppError;
use crate::model::InvoiceInput;
use crate::ssr::claim::{self, ClaimKey, Claimed, Outcome, Rules};
use crate::ssr::observe::{self, Attempt};
use crate::ssr::{failpoint, invoices, outbox};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormOutcome {
    /// This submission created the invoice.
    Created(Uuid),
    /// An earlier submission of the same form, with the same content, did; here is its invoice.
    Replayed(Uuid),
    /// This rendered form already created an invoice with other content (edited after Back):
    /// not a repeat, and not a new attempt either; the user opens a new form.
    KeyReused,
    /// Only for claims committed before their work; kept so every outcome is handled.
    InFlight(Duration),
}

impl FormOutcome {
    pub fn invoice_id(self) -> Option<Uuid> {
        match self {
            FormOutcome::Created(id) | FormOutcome::Replayed(id) => Some(id),
            FormOutcome::KeyReused | FormOutcome::InFlight(_) => None,
        }
    }
}

/// What was submitted, hashed: a resubmit must match it to be a replay.
fn fingerprint(input: &InvoiceInput) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    Sha256::digest(serde_json::to_vec(input).expect("an invoice input serialises")).to_vec()
}

/// Creates the invoice for this form submission at most once, however often it is submitted. When
/// this submission wins, `won` (its activity row, outcome and invoice filled in here) commits with
/// the invoice.
pub async fn create_invoice_once(
    pool: &PgPool,
    org: Uuid,
    form_key: Uuid,
    input: &InvoiceInput,
    lease: Duration,
    won: Option<&Attempt<'_>>,
) -> Result<FormOutcome, AppError> {
    let key = ClaimKey::form(org, form_key);
    let source_key = format!("form:{form_key}");
    let fingerprint = fingerprint(input);
    // The invoice's id is minted first, so the claim is written done with it: no completion
    // statement (claim and invoice commit together, so nobody can see one without the other).
    let invoice_id = Uuid::now_v7();
    let rules = Rules {
        fingerprint: Some(&fingerprint),
        result_id: Some(invoice_id),
        ..Rules::new(lease)
    };
    let mut tx = pool.begin().await?;
    match claim::claim(&mut tx, &key, &rules).await? {
        Claimed::Won => {}
        Claimed::Done(Outcome {
            result_id: Some(id),
            ..
        }) => return Ok(FormOutcome::Replayed(id)),
        Claimed::Done(outcome) => {
            return Err(AppError::internal(
                "form claim done without an invoice",
                format!("{key:?} {outcome:?}"),
            ))
        }
        Claimed::InFlight { retry_after } => return Ok(FormOutcome::InFlight(retry_after)),
        Claimed::Mismatch => return Ok(FormOutcome::KeyReused),
    }
    failpoint::hit("form.after_claim");

    let invoice = match invoices::insert(&mut tx, invoice_id, org, Some(&source_key), input).await {
        Ok(invoice) => invoice,
        // The claim row is an optimisation: if it was ever lost (retention), the invoice's own
        // unique source key still refuses the duplicate, and we answer with the original invoice.
        Err(sqlx::Error::Database(e)) if e.constraint() == Some("invoices_org_source_key") => {
            drop(tx);
            return replay_by_source_key(pool, org, &source_key).await;
        }
        Err(e) => return Err(e.into()),
    };
    observe::store_won(&mut tx, won, Some(org), Some(invoice.id)).await?;
    tx.commit().await?;
    Ok(FormOutcome::Created(invoice.id))
}

async fn replay_by_source_key(
    pool: &PgPool,
    org: Uuid,
    source_key: &str,
) -> Result<FormOutcome, AppError> {
    // language=PostgreSQL
    let id = sqlx::query_scalar!(
        "select id from invoices where org_id = $1 and source_key = $2",
        org,
        source_key
    )
    .fetch_one(pool)
    .await?;
    Ok(FormOutcome::Replayed(id))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOutcome {
    /// This click queued the email (the outbox row id).
    Queued(Uuid),
    /// An earlier click of the same rendered button did.
    AlreadyQueued(Uuid),
}

/// "Send invoice": queues the invoice email at most once per rendered button. The claim and the
/// outbox row commit together; the worker's own claim then makes the SMTP send happen once.
pub async fn send_invoice_once(
    pool: &PgPool,
    org: Uuid,
    form_key: Uuid,
    invoice: Uuid,
    lease: Duration,
) -> Result<SendOutcome, AppError> {
    let key = ClaimKey::form(org, form_key);
    let mut tx = pool.begin().await?;
    match claim::claim(&mut tx, &key, &Rules::new(lease)).await? {
        Claimed::Won => {}
        Claimed::Done(Outcome {
            result_id: Some(id),
            ..
        }) => return Ok(SendOutcome::AlreadyQueued(id)),
        Claimed::Done(_) | Claimed::Mismatch => {
            return Err(AppError::internal(
                "send claim",
                format!("{key:?} has no outbox row"),
            ))
        }
        Claimed::InFlight { retry_after } => {
            return Err(AppError::BadRequest(format!(
                "This invoice is being sent. Try again in {} seconds.",
                retry_after.as_secs()
            )))
        }
    }
    // language=PostgreSQL
    let owned = sqlx::query_scalar!(
        "select true as \"owned!\" from invoices where id = $1 and org_id = $2",
        invoice,
        org
    )
    .fetch_optional(&mut *tx)
    .await?;
    if owned.is_none() {
        return Err(AppError::NotFound);
    }
    let id = outbox::enqueue(
        &mut tx,
        org,
        Some(invoice),
        outbox::Kind::InvoiceEmail,
        serde_json::json!({ "invoice_id": invoice }),
    )
    .await?
    .ok_or_else(|| AppError::internal("send invoice", "outbox insert conflicted"))?;
    claim::complete(
        &mut tx,
        &key,
        &Outcome {
            result_id: Some(id),
            response: None,
        },
    )
    .await?;
    tx.commit().await?;
    Ok(SendOutcome::Queued(id))
}

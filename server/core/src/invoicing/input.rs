//! An invoice input made ready for a write before anything is claimed: the named customer's name and
//! email filled in, the input's own checks, its lines' tax rates the org's; and a draft's edit as a
//! merge patch of its input. Each surface maps [`InvoiceError`] to its own answer.

use sqlx::PgPool;
use uuid::Uuid;

pub use crate::invoicing::error::InvoiceError;
use model::{Invoice, InvoiceInput, InvoiceStatus};

/// The named customer's name and email onto `input` (one of the org's, or a field error), then the
/// input's own checks, then its lines' tax rates (the org's, or a field error). What was sent is
/// checked as sent: with a customer, a name and email may be left out (blank), but one that is there
/// must be valid, even though the customer's replaces it. `einvoicing`: as
/// [`create_problems`](crate::documents::einvoice::create_problems) takes it.
pub async fn checked(
    pool: &PgPool,
    org: Uuid,
    einvoicing: Option<bool>,
    input: &mut InvoiceInput,
) -> Result<(), InvoiceError> {
    if let Err(mut fields) = input.check() {
        if input.customer_id.is_some() {
            if input.customer_name.is_empty() {
                fields.remove("customer_name");
            }
            if input.customer_email.is_empty() {
                fields.remove("customer_email");
            }
        }
        if !fields.is_empty() {
            return Err(InvoiceError::Invalid(fields));
        }
    }
    let (name, email) = (&mut input.customer_name, &mut input.customer_email);
    crate::customers::fill_invoice(pool, org, input.customer_id, name, email).await?;
    input.check().map_err(InvoiceError::Invalid)?;
    crate::invoicing::tax_rates::check(pool, org, input).await?;
    let problems =
        crate::documents::einvoice::create_problems(pool, org, einvoicing, input).await?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(InvoiceError::Invalid(problems))
    }
}

/// The input an edit of `current` made at `version` saves: when `current` is a draft at that version,
/// `patch` (a JSON merge patch of its input) merged in and [`checked`], so an invalid result claims
/// nothing. Otherwise the edit cannot apply (versions only grow, drafts never come back) and the
/// draft's own input stands in: the claim still decides, so a retry of a request that did apply gets
/// its stored answer.
pub async fn edited(
    pool: &PgPool,
    current: &Invoice,
    org: Uuid,
    version: i32,
    patch: &serde_json::Value,
) -> Result<InvoiceInput, InvoiceError> {
    let input = InvoiceInput::of(current);
    if current.status != InvoiceStatus::Draft || current.version != version {
        return Ok(input);
    }
    // A due date sent alone replaces the draft's terms: the later choice wins.
    let sets_date_only = patch.get("due_date").is_some_and(|d| !d.is_null())
        && patch.get("payment_terms_days").is_none();
    let mut patch = patch.clone();
    patch["draft"] = true.into();
    if sets_date_only {
        patch["payment_terms_days"] = serde_json::Value::Null;
    }
    let mut input = crate::patch::patched(&input, &patch).map_err(InvoiceError::Unreadable)?;
    if input.save_customer {
        return Err(InvoiceError::field(
            "save_customer",
            "Only when creating an invoice: create the customer, then set customer_id.",
        ));
    }
    checked(pool, org, None, &mut input).await?;
    Ok(input)
}

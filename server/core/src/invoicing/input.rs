//! An invoice input as every command that writes one takes it: the field checks of what was sent
//! run first, before anything is claimed ([`model::InvoiceInput::check_as_sent`]); the org's rules
//! run inside the claimed transaction ([`settle`]), so a refusal rolls the claim back with the rest
//! and the key stays usable. A draft's edit is a merge patch of its input ([`edited`]). Each surface
//! maps [`InvoiceError`] to its own answer.

use model::OrgId;
use sqlx::PgConnection;

pub use crate::invoicing::error::InvoiceError;
use model::{AppliedTax, Invoice, InvoiceInput, InvoiceStatus};

/// The org's rules on `input`, read once, in the claimed transaction that writes it: the field
/// checks of what was sent, then the named customer's name and email filled in (one of `org`'s, or
/// a field error) and the whole input checked again with them, then each line's tax rate (one of
/// `org`'s, or a field error). Returns the lines' taxes, for the write.
pub async fn settle(
    tx: &mut PgConnection,
    org: OrgId,
    input: &mut InvoiceInput,
) -> Result<Vec<Option<AppliedTax>>, InvoiceError> {
    input.check_as_sent().map_err(InvoiceError::Invalid)?;
    let (name, email) = (&mut input.customer_name, &mut input.customer_email);
    crate::customers::fill_invoice(&mut *tx, org, input.customer_id, name, email).await?;
    input.check().map_err(InvoiceError::Invalid)?;
    crate::invoicing::tax_rates::of_lines(tx, org, input).await
}

/// The input an edit of `current` made at `version` saves: when `current` is a draft at that version,
/// `patch` (a JSON merge patch of its input) merged in, with its field checks passed (the org's
/// rules are the write's, [`settle`]). Otherwise the edit cannot apply (versions only grow, drafts
/// never come back) and the draft's own input stands in: the claim still decides, so a retry of a
/// request that did apply gets its stored answer.
pub fn edited(
    current: &Invoice,
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
    let input = crate::patch::patched(&input, &patch).map_err(InvoiceError::Unreadable)?;
    if input.save_customer {
        return Err(InvoiceError::field(
            "save_customer",
            "Only when creating an invoice: create the customer, then set customer_id.",
        ));
    }
    input.check_as_sent().map_err(InvoiceError::Invalid)?;
    Ok(input)
}

/// [`settle`] for a template inside another write (a quote, a schedule) whose own checks found
/// `more` field errors: every field error at once, or the template's taxes.
pub async fn settle_template(
    tx: &mut PgConnection,
    org: OrgId,
    template: &mut InvoiceInput,
    more: model::error::FieldErrors,
) -> Result<Vec<Option<AppliedTax>>, InvoiceError> {
    match settle(tx, org, template).await {
        Ok(taxes) if more.is_empty() => Ok(taxes),
        Ok(_) => Err(InvoiceError::Invalid(more)),
        Err(InvoiceError::Invalid(mut fields)) => {
            fields.extend(more);
            Err(InvoiceError::Invalid(fields))
        }
        Err(e) => Err(e),
    }
}

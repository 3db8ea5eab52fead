//! Refusing what would be invalid: before an e-invoicing org's invoice is finalized (created
//! finalized, or a draft finalized), the finalization is tried in a transaction that is rolled
//! back, and the document it would make is checked against [`Document::problems`]. The surfaces ask
//! before they claim anything, so a refusal leaves the attempt's key usable and takes no number.

use model::OrgId;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{invoice_document, Document, InvoiceDocumentError};
use crate::invoicing::lifecycle::{self, Action, Moved};
use model::error::FieldErrors;

/// Whether `org` issues e-invoices.
pub async fn enabled(conn: &mut PgConnection, org: OrgId) -> sqlx::Result<bool> {
    // language=PostgreSQL
    sqlx::query_scalar!("select einvoicing from orgs where id = $1", org as _)
        .fetch_optional(&mut *conn)
        .await
        .map(|on| on.unwrap_or(false))
}

/// What is wrong with the e-invoice of `org`'s finalized invoice `id`, as written so far in this
/// transaction.
pub async fn problems_of(
    conn: &mut PgConnection,
    org: OrgId,
    id: Uuid,
) -> sqlx::Result<FieldErrors> {
    match invoice_document(conn, org, id).await {
        Ok(document) => Ok(Document::problems(&document)),
        Err(InvoiceDocumentError::Db(e)) => Err(e),
        Err(_) => Ok(FieldErrors::new()),
    }
}

/// What finalizing draft `id` would leave wrong in `org`'s e-invoice; empty for an org without
/// e-invoicing, for an invoice that is not a draft, or when nothing is.
pub async fn finalize_problems(pool: &PgPool, org: OrgId, id: Uuid) -> sqlx::Result<FieldErrors> {
    let mut tx = pool.begin().await?;
    if !enabled(&mut tx, org).await? {
        return Ok(FieldErrors::new());
    }
    let problems =
        match lifecycle::apply(&mut tx, org, model::InvoiceId::from(id), Action::Finalize).await? {
            Moved::Now => problems_of(&mut tx, org, id).await?,
            _ => FieldErrors::new(),
        };
    tx.rollback().await?;
    Ok(problems)
}

/// The problems as one sentence, for a button's banner.
pub fn sentence(problems: &FieldErrors) -> String {
    let said: Vec<&str> = problems.values().map(String::as_str).collect();
    format!("Not a valid e-invoice yet: {}", said.join(" "))
}

/// The problems as a form shows them: those about the seller (the org's settings) in one banner
/// (`einvoice`), the others next to their fields.
pub fn for_form(problems: FieldErrors) -> FieldErrors {
    let mut out = FieldErrors::new();
    for (field, message) in problems {
        let field = if field.starts_with("seller.") {
            "einvoice".to_owned()
        } else {
            field
        };
        out.entry(field).or_insert(message);
    }
    out
}

//! Refusing what would be invalid: before an e-invoicing org's invoice is finalized (created
//! finalized, or a draft finalized), the finalization is tried in a transaction that is rolled
//! back, and the document it would make is checked against [`Document::problems`]. The surfaces ask
//! before they claim anything, so a refusal leaves the attempt's key usable and takes no number.

use model::OrgId;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{invoice_document, InvoiceDocumentError};
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

/// Whether finalizing `org`'s invoice `id` must make a valid e-invoice, in one statement:
/// (the org issues e-invoices, the invoice's customer receives by Peppol).
pub async fn checked(conn: &mut PgConnection, org: OrgId, id: Uuid) -> sqlx::Result<(bool, bool)> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select o.einvoicing, coalesce(cu.einvoice_channel = 'peppol', false) as "peppol!"
        from orgs o
        left join invoices i on i.id = $2 and i.org_id = o.id
        left join customers cu on cu.id = i.customer_id and cu.org_id = o.id
        where o.id = $1
        "#,
        org as _,
        id
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map_or((false, false), |r| (r.einvoicing, r.peppol)))
}

/// What is wrong with the e-invoice of `org`'s finalized invoice `id`, as written so far in this
/// transaction: EN 16931's rules when the org issues e-invoices (`einvoicing`, as the caller read
/// it), and the rules of the network a buyer by Peppol receives it on.
pub async fn problems_of(
    conn: &mut PgConnection,
    org: OrgId,
    id: Uuid,
    einvoicing: bool,
) -> sqlx::Result<FieldErrors> {
    let document = match invoice_document(conn, org, id).await {
        Ok(document) => document,
        Err(InvoiceDocumentError::Db(e)) => return Err(e),
        Err(_) => return Ok(FieldErrors::new()),
    };
    let mut problems = if einvoicing {
        document.problems()
    } else {
        FieldErrors::new()
    };
    if let Some(profile) = document.channel_profile() {
        for (field, message) in document.with_profile(profile).problems() {
            problems.entry(field).or_insert(message);
        }
    }
    Ok(problems)
}

/// What finalizing draft `id` would leave wrong in `org`'s e-invoice; empty for an org without
/// e-invoicing and a customer by email, for an invoice that is not a draft, or when nothing is.
pub async fn finalize_problems(pool: &PgPool, org: OrgId, id: Uuid) -> sqlx::Result<FieldErrors> {
    let mut tx = pool.begin().await?;
    let (einvoicing, peppol) = checked(&mut tx, org, id).await?;
    if !einvoicing && !peppol {
        return Ok(FieldErrors::new());
    }
    let problems =
        match lifecycle::apply(&mut tx, org, model::InvoiceId::from(id), Action::Finalize).await? {
            Moved::Now => problems_of(&mut tx, org, id, einvoicing).await?,
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

//! Server functions of the bank page (`/payments/bank`): the page (the upload form's key, the
//! import just made, the unmatched entries with their suggestions and their rows' keys), and the
//! row buttons: confirm a suggested invoice, dismiss an entry — each once per rendered row.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;

use model::error::AppError;
use model::BankPage;

/// The session org's bank page; `imported` names the import the upload was sent back from.
#[server(prefix = "/rpc", endpoint = "get_bank_page")]
pub async fn get_bank_page(imported: Option<String>) -> Result<BankPage, AppError> {
    use invoicer_core::bank::{entries, import};
    let user = super::require(model::Action::Read).await?;
    let state = super::state()?;
    let org = user.org_id;
    let mut db = state.reads.acquire().await?;
    let imported = match imported
        .as_deref()
        .map(|id| uuid::Uuid::try_parse(id.trim()))
    {
        Some(Ok(id)) => entries::import_summary(&mut *db, org, id).await?,
        _ => None,
    };
    let accounts = import::accounts(&mut db, org).await?;
    let (rows, more) = entries::unmatched(&mut db, org).await?;
    let unmatched = rows
        .into_iter()
        .map(|(entry, suggestions)| model::UnmatchedEntry {
            entry,
            suggestions,
            key: model::form_key(org),
        })
        .collect();
    Ok(BankPage {
        upload_key: model::form_key(org),
        imported,
        accounts,
        unmatched,
        more,
        can_edit: user.role.may(model::Action::EditInvoices),
    })
}

/// "Confirm": the entry (an unmatched credit) is recorded as the invoice's payment, once per
/// rendered row; a second press of the row's buttons is the same submit.
#[server(prefix = "/rpc", endpoint = "match_bank_entry")]
pub async fn match_bank_entry(
    idempotency_key: Option<String>,
    entry_id: String,
    invoice_id: String,
) -> Result<(), AppError> {
    let entry = super::form::parse_id(&entry_id)?;
    let invoice = super::form::parse_id(&invoice_id)?;
    super::form::SettingsForm {
        form: invoicer_core::surfaces::forms::Form::MatchBankEntry,
        action: model::Action::EditInvoices,
        back: "/payments/bank",
        idempotency_key,
        content: &(entry, invoice),
        check: Ok(()),
    }
    .run(async |tx, user| {
        if !invoicer_core::bank::import::record(tx, user.org_id, entry, invoice).await? {
            return Err(AppError::BadRequest(
                "This entry is no longer an unmatched credit, or the invoice takes no payments. \
                 Reload the page."
                    .into(),
            )
            .respond());
        }
        Ok(entry)
    })
    .await
}

/// "Dismiss": the entry is set aside for good (a debit, a credit that pays none of the org's
/// invoices), once per rendered row.
#[server(prefix = "/rpc", endpoint = "ignore_bank_entry")]
pub async fn ignore_bank_entry(
    idempotency_key: Option<String>,
    entry_id: String,
) -> Result<(), AppError> {
    let entry = super::form::parse_id(&entry_id)?;
    super::form::SettingsForm {
        form: invoicer_core::surfaces::forms::Form::IgnoreBankEntry,
        action: model::Action::EditInvoices,
        back: "/payments/bank",
        idempotency_key,
        content: &entry,
        check: Ok(()),
    }
    .run(async |tx, user| {
        if !invoicer_core::bank::import::ignore(tx, user.org_id, entry).await? {
            return Err(AppError::BadRequest(
                "This entry is no longer unmatched. Reload the page.".into(),
            )
            .respond());
        }
        Ok(entry)
    })
    .await
}

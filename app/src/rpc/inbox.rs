//! Server functions of the inbox (`/inbox`): the page (the upload form's key, the received
//! documents), one document's page, and "Mark paid" once per rendered button.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;

use model::error::AppError;
use model::peppol::{InboxPage, ReceivedPage};

/// The session org's inbox.
#[server(prefix = "/rpc", endpoint = "get_inbox_page")]
pub async fn get_inbox_page() -> Result<InboxPage, AppError> {
    let user = super::require(model::Action::Read).await?;
    let state = super::state()?;
    let org = user.org_id;
    let documents = invoicer_core::peppol::inbox::list(&state.reads, org, 500).await?;
    let details = invoicer_core::accounts::orgs::details(&state.reads, org).await?;
    Ok(InboxPage {
        upload_key: model::form_key(org),
        documents,
        peppol_id: details.peppol_id,
        can_edit: user.role.may(model::Action::EditInvoices),
    })
}

/// One received document of the session org.
#[server(prefix = "/rpc", endpoint = "get_received_page")]
pub async fn get_received_page(id: String) -> Result<ReceivedPage, AppError> {
    let user = super::require(model::Action::Read).await?;
    let state = super::state()?;
    let id = super::form::parse_id(&id)?;
    let detail = invoicer_core::peppol::inbox::get(&state.reads, user.org_id, id)
        .await?
        .ok_or(AppError::NotFound)?;
    Ok(ReceivedPage {
        detail,
        paid_key: model::form_key(user.org_id),
        can_edit: user.role.may(model::Action::EditInvoices),
    })
}

/// "Mark paid": once per rendered button; a second press is the same submit.
#[server(prefix = "/rpc", endpoint = "mark_received_paid")]
pub async fn mark_received_paid(
    idempotency_key: Option<String>,
    document_id: String,
) -> Result<(), AppError> {
    let id = super::form::parse_id(&document_id)?;
    let back = format!("/inbox/{id}");
    super::form::SettingsForm {
        form: invoicer_core::surfaces::forms::Form::MarkReceivedPaid,
        action: model::Action::EditInvoices,
        back: &back,
        idempotency_key,
        content: &id,
        check: Ok(()),
    }
    .run(async |tx, user| {
        if invoicer_core::peppol::inbox::get(&mut *tx, user.org_id, id)
            .await?
            .is_none()
        {
            return Err(AppError::NotFound.respond());
        }
        invoicer_core::peppol::inbox::mark_paid(tx, user.org_id, id).await?;
        Ok(id)
    })
    .await
}

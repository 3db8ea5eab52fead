//! Server functions of customer imports: the upload form's key, an import's page, and applying it.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;
use uuid::Uuid;

use model::error::AppError;
use model::imports::ImportView;

/// A key for the upload form (it names the org the form was rendered for).
#[server(prefix = "/rpc", endpoint = "import_form")]
pub async fn import_form() -> Result<Uuid, AppError> {
    let user = super::require(model::Action::Read).await?;
    Ok(model::form_key(user.org_id))
}

/// The session org's import `id`.
#[server(prefix = "/rpc", endpoint = "get_customer_import")]
pub async fn get_customer_import(id: String) -> Result<ImportView, AppError> {
    let user = super::require(model::Action::Read).await?;
    let state = super::state()?;
    let id = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    invoicer_core::customers::imports::get(&state.reads, user.org_id, id)
        .await?
        .ok_or_else(|| AppError::NotFound.respond())
}

/// Adds the import's valid rows as customers, once per rendered button (the form's claim, the
/// start in its transaction).
#[server(prefix = "/rpc", endpoint = "apply_customer_import")]
pub async fn apply_customer_import(
    idempotency_key: Option<String>,
    id: String,
) -> Result<(), AppError> {
    let id = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    let back = format!("/customers/import/{id}");
    super::form::SettingsForm {
        form: invoicer_core::surfaces::forms::Form::ApplyCustomerImport,
        action: model::Action::EditInvoices,
        back: &back,
        idempotency_key,
        content: &id,
        check: Ok(()),
    }
    .run(async |tx, user| {
        invoicer_core::customers::imports::start(tx, user.org_id, id).await?;
        Ok(id)
    })
    .await
}

//! Server functions of the invoice pages: the list, one invoice, and the new and edit forms (each
//! saved once per rendered form).

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;
use uuid::Uuid;

use model::error::{AppError, FormError};
use model::{InvoiceForm, InvoicePage};

#[cfg(feature = "ssr")]
use super::{
    form::{for_this_org, parse_form_key},
    request_id, state,
};

/// Creates an invoice from the form, once per rendered form: `idempotency_key` is the UUID the
/// server minted when it rendered the form. A repeat returns the first invoice, and either way the
/// browser is sent to it.
#[server(prefix = "/rpc", endpoint = "create_invoice")]
pub async fn create_invoice(
    idempotency_key: Option<String>,
    input: InvoiceForm,
) -> Result<Uuid, FormError<InvoiceForm>> {
    use invoicer_core::observe::{Attempt, Surface};
    use invoicer_core::surfaces::form::{invoice_from_form, FormOutcome};
    use invoicer_core::surfaces::track;

    let state = state().map_err(FormError::from)?;
    let key = idempotency_key.clone().unwrap_or_default();
    let attempt = Attempt::new(Surface::Form, key, request_id());
    let outcome = track(&state.pool, attempt, async |attempt| {
        // A refusal keeps the key, and the form surface gives back the typed values: the corrected
        // resubmit is the same attempt. Who asks is checked first: nobody without the right gets a
        // rejection built from the values they sent.
        let user = super::require(model::Action::EditInvoices).await?;
        let refuse = |fields| AppError::rejected(idempotency_key.clone(), fields);
        let form_key = parse_form_key(idempotency_key.as_deref()).map_err(refuse)?;
        let form_key = for_this_org(form_key, &user)?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        // The form's own checks; the org's rules (customer, tax rates, e-invoicing) are the
        // command's, in the claimed transaction.
        let parsed = input.parse().map_err(refuse)?;
        invoice_from_form(&state.pool, &attempt, user.org_id, form_key, &parsed).await
    })
    .await
    .map_err(|e| FormError::refilling(e.keeping(idempotency_key.clone()), &input).respond())?;
    let id = match outcome {
        FormOutcome::Created(id) | FormOutcome::Replayed(id) => id,
        FormOutcome::KeyReused => {
            let used = AppError::BadRequest(
                "This form was already used to create an invoice with other details. \
                 Open a new invoice form to create another."
                    .into(),
            );
            return Err(FormError::from(used).respond());
        }
    };
    leptos_axum::redirect(&format!("/invoices/{id}"));
    Ok(id)
}

/// One page of the session org's invoices, filtered; `before` is the cursor the previous page gave.
#[server(prefix = "/rpc", endpoint = "list_invoices")]
pub async fn list_invoices(
    status: Option<String>,
    payment_state: Option<String>,
    q: Option<String>,
    before: Option<String>,
) -> Result<model::InvoiceListPage, AppError> {
    use invoicer_core::invoicing::invoices::{check_filter, page, ListCursor, ListFilter};

    let user = super::require(model::Action::Read).await?;
    let state = state()?;
    let filter = ListFilter {
        status: status.filter(|s| !s.is_empty()),
        payment_state: payment_state.filter(|s| !s.is_empty()),
        q: q.filter(|s| !s.is_empty()),
    };
    check_filter(&filter).map_err(|e| AppError::BadRequest(e).respond())?;
    let before = match before.as_deref().filter(|b| !b.is_empty()) {
        None => None,
        Some(text) => Some(ListCursor::parse(text, &filter).ok_or_else(|| {
            AppError::BadRequest("This page link is not valid. Start from the first page.".into())
                .respond()
        })?),
    };
    let (rows, next) = page(&state.reads, user.org_id, &filter, before, 50).await?;
    Ok(model::InvoiceListPage {
        rows,
        next_cursor: next.map(ListCursor::encode),
    })
}

#[server(prefix = "/rpc", endpoint = "get_invoice")]
pub async fn get_invoice(id: String) -> Result<InvoicePage, AppError> {
    let user = super::require(model::Action::Read).await?;
    let id = super::form::parse_id(&id)?;
    invoicer_core::pages::invoice(&state()?, &user, id.into())
        .await
        .map_err(AppError::respond)
}

/// `id` of the session's org, or NotFound (also for another org's id: no leak).
#[cfg(feature = "ssr")]
pub(super) async fn own_invoice(
    state: &invoicer_core::AppState,
    org: model::OrgId,
    id: &str,
) -> Result<model::Invoice, AppError> {
    let id = Uuid::try_parse(id).map_err(|_| AppError::NotFound.respond())?;
    let mut conn = state.reads.acquire().await?;
    invoicer_core::invoicing::invoices::get(
        &mut conn,
        org,
        model::InvoiceId::from(id),
        &state.settings.public_url,
    )
    .await?
    .ok_or_else(|| AppError::NotFound.respond())
}

/// What the invoice, quote and schedule forms offer: customers, tax rates, starting currencies.
#[server(prefix = "/rpc", endpoint = "invoice_form_options")]
pub async fn invoice_form_options() -> Result<model::InvoiceFormOptions, AppError> {
    let user = super::require(model::Action::Read).await?;
    invoicer_core::pages::invoice_form(&state()?, &user)
        .await
        .map_err(AppError::respond)
}

/// A draft's edit page: its content, its version, and the key this rendering's save is named by.
#[server(prefix = "/rpc", endpoint = "get_draft")]
pub async fn get_draft(id: String) -> Result<model::DraftEdit, AppError> {
    let user = super::require(model::Action::Read).await?;
    let state = state()?;
    let invoice = own_invoice(&state, user.org_id, &id).await?;
    if invoice.status != model::InvoiceStatus::Draft {
        return Err(AppError::BadRequest(format!(
            "This invoice is {} and can no longer be edited; duplicate it to start a new draft.",
            invoice.status.as_str()
        ))
        .respond());
    }
    Ok(model::DraftEdit {
        id: invoice.id,
        version: invoice.version,
        key: model::form_key(user.org_id),
        form: InvoiceForm::from_invoice(&invoice),
    })
}

/// Saves a draft's edit form: once per rendered form (`idempotency_key`), and only if the draft is
/// still at `version` (the one the form was rendered from).
#[server(prefix = "/rpc", endpoint = "update_draft")]
pub async fn update_draft(
    invoice_id: String,
    idempotency_key: Option<String>,
    version: String,
    input: InvoiceForm,
) -> Result<(), FormError<InvoiceForm>> {
    use invoicer_core::invoicing::lifecycle::Edited;
    use invoicer_core::observe::{Attempt, Surface};
    use invoicer_core::surfaces::form::{edit_draft, DraftSave};
    use invoicer_core::surfaces::track;

    let state = state().map_err(FormError::from)?;
    let answer =
        |e: AppError| FormError::refilling(e.keeping(idempotency_key.clone()), &input).respond();
    let invoice = Uuid::try_parse(&invoice_id).map_err(|_| answer(AppError::NotFound))?;
    let attempt = Attempt::new(
        Surface::Form,
        idempotency_key.clone().unwrap_or_default(),
        request_id(),
    );
    let refuse = |fields| AppError::rejected(idempotency_key.clone(), fields);
    let saved = track(&state.pool, attempt, async |attempt| {
        // Who asks first: no rejection carrying the values is built for someone without the right.
        let user = super::require(model::Action::EditInvoices).await?;
        let form_key = for_this_org(
            parse_form_key(idempotency_key.as_deref()).map_err(refuse)?,
            &user,
        )?;
        let version: i32 = version.trim().parse().map_err(|_| {
            refuse(model::error::FieldErrors::from([(
                "version".to_owned(),
                "This form has no valid version. Open the draft again.".to_owned(),
            )]))
        })?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let parsed = input.parse().map_err(refuse)?;
        edit_draft(
            &state.pool,
            &attempt,
            user.org_id,
            form_key,
            model::InvoiceId::from(invoice),
            version,
            &parsed,
        )
        .await
    })
    .await
    .map_err(answer)?;
    let message = match saved {
        DraftSave::Saved | DraftSave::Replayed | DraftSave::Refused(Edited::Now(_)) => {
            leptos_axum::redirect(&format!("/invoices/{invoice}"));
            return Ok(());
        }
        DraftSave::Refused(Edited::Stale { .. }) => {
            "Someone else saved this draft after you opened it, so your changes were not saved \
             (nothing was overwritten). What you typed is still below: copy it, then open the \
             draft again to see their version."
        }
        DraftSave::Refused(Edited::NotDraft(_)) => {
            "This invoice was finalized or voided since you opened it, so it can no longer be \
             edited. Duplicate it to start a new draft."
        }
        DraftSave::Refused(Edited::NotFound) => return Err(answer(AppError::NotFound)),
        DraftSave::KeyReused => {
            "This form already saved other changes. Open the draft again to edit it further."
        }
    };
    Err(answer(refuse(model::error::FieldErrors::from([(
        "version".to_owned(),
        message.to_owned(),
    )]))))
}

//! Server functions of quotes: the list, one quote (with its Send button's key), the new-quote
//! form (the invoice form plus expiry), and Send (each form and button once per rendering).

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use uuid::Uuid;

use model::error::{AppError, FormError};
use model::{InvoiceForm, NewQuotePage, Quote, QuoteEdit, QuoteForm, QuotePage};

#[cfg(feature = "ssr")]
use super::{form::SettingsForm, state};

/// The session org's quotes, newest first.
#[server(prefix = "/rpc", endpoint = "list_quotes")]
pub async fn list_quotes() -> Result<Vec<Quote>, AppError> {
    let user = super::require(model::Action::Read).await?;
    let state = state()?;
    let mut conn = state.reads.acquire().await?;
    Ok(
        invoicer_core::invoicing::quotes::list(&mut conn, user.org_id, &state.settings.public_url)
            .await?,
    )
}

/// One quote, the invoice it proposes, and the key of its Send button.
#[server(prefix = "/rpc", endpoint = "get_quote")]
pub async fn get_quote(id: String) -> Result<QuotePage, AppError> {
    let user = super::require(model::Action::Read).await?;
    let id = super::form::parse_id(&id)?;
    invoicer_core::pages::quote(&state()?, &user, id)
        .await
        .map_err(AppError::respond)
}

/// What the new-quote form is rendered with.
#[server(prefix = "/rpc", endpoint = "new_quote_form")]
pub async fn new_quote_form() -> Result<NewQuotePage, AppError> {
    // A read: the form's submit is what needs the right to make invoices.
    let user = super::require(model::Action::Read).await?;
    invoicer_core::pages::new_quote(&state()?, &user)
        .await
        .map_err(AppError::respond)
}

/// Creates a quote (open at once, or a draft with "Save draft"), once per rendered form; a refusal
/// brings back the form's key and what was typed.
#[server(prefix = "/rpc", endpoint = "create_quote")]
pub async fn create_quote(
    idempotency_key: Option<String>,
    input: InvoiceForm,
    quote: QuoteForm,
) -> Result<(), FormError<InvoiceForm>> {
    use invoicer_core::surfaces::forms::Form;
    let state = state().map_err(FormError::from)?;
    let source_key = format!(
        "form:{}",
        idempotency_key.as_deref().unwrap_or_default().trim()
    );
    let fields = quote.parse();
    let content = (&input, &quote);
    let saved = SettingsForm {
        form: Form::CreateQuote,
        action: model::Action::EditInvoices,
        back: "/quotes",
        idempotency_key,
        content: &content,
        check: fields.as_ref().map(|_| ()).map_err(Clone::clone),
    }
    .saved(async |tx, user| {
        let fields = fields.clone().map_err(AppError::invalid)?;
        let invoice = input.parse().map_err(AppError::invalid)?;
        let input = model::QuoteInput {
            invoice,
            quote: fields,
        };
        let today =
            invoicer_core::jobs::schedules::org_today(&mut *tx, user.org_id, chrono::Utc::now())
                .await?;
        let base = &state.settings.public_url;
        invoicer_core::invoicing::quotes::create(
            tx,
            user.org_id,
            Uuid::now_v7(),
            &source_key,
            &input,
            today,
            base,
        )
        .await
        .map(|q| q.id)
        .map_err(refused)
    })
    .await
    // A refusal goes back with what was typed: without JavaScript the form is refilled from it.
    .map_err(|e| FormError::refilling(e, &input))?;
    // The new quote's page, with or without JavaScript (a repeat lands on the same one).
    leptos_axum::redirect(&format!("/quotes/{}", saved.id));
    Ok(())
}

#[cfg(feature = "ssr")]
fn refused(e: invoicer_core::invoicing::quotes::QuoteError) -> AppError {
    use invoicer_core::invoicing::quotes::QuoteError;
    match e {
        QuoteError::Invalid(fields) => AppError::invalid(fields),
        QuoteError::NotFound => AppError::NotFound,
        QuoteError::Refused(status) => AppError::BadRequest(format!(
            "This quote is {}: it cannot be sent.",
            status.as_str()
        )),
        QuoteError::Db(e) => AppError::from(e),
        QuoteError::Mail(refused) => AppError::from(refused),
    }
}

/// Sends a quote to its customer (opening a draft), once per rendered button, through the mail
/// gate (the member's address verified, within the allowance).
#[server(prefix = "/rpc", endpoint = "send_quote")]
pub async fn send_quote(id: String, idempotency_key: Option<String>) -> Result<(), AppError> {
    use invoicer_core::surfaces::forms::Form;
    let state = state()?;
    let quote = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    let back = format!("/quotes/{quote}");
    SettingsForm {
        form: Form::SendQuote,
        action: model::Action::EditInvoices,
        back: &back,
        idempotency_key,
        content: &quote,
        check: Ok(()),
    }
    .run(async |tx, user| {
        let base = &state.settings.public_url;
        let sender = invoicer_core::mail::gate::Sender::Member {
            verified: user.email_verified,
        };
        let gate = invoicer_core::mail::gate::Gate::new(
            invoicer_core::mail::gate::Allowance::of(&state.settings.limits),
            sender,
        );
        invoicer_core::invoicing::quotes::send(tx, user.org_id, quote, base, gate)
            .await
            .map(|q| q.id)
            .map_err(refused)
    })
    .await
}

/// A draft quote as its edit form shows it, and the form's key.
#[server(prefix = "/rpc", endpoint = "edit_quote_form")]
pub async fn edit_quote_form(id: String) -> Result<QuoteEdit, AppError> {
    let user = super::require(model::Action::Read).await?;
    let id = super::form::parse_id(&id)?;
    invoicer_core::pages::quote_edit(&state()?, &user, id)
        .await
        .map_err(AppError::respond)
}

/// Saves a draft quote's edit, once per rendered form; an open or decided quote is refused.
#[server(prefix = "/rpc", endpoint = "update_quote")]
pub async fn update_quote(
    quote_id: String,
    idempotency_key: Option<String>,
    input: InvoiceForm,
    quote: QuoteForm,
) -> Result<(), AppError> {
    use invoicer_core::surfaces::forms::Form;
    let state = state()?;
    let id = Uuid::try_parse(&quote_id).map_err(|_| AppError::NotFound.respond())?;
    let fields = quote.parse();
    let back = format!("/quotes/{id}");
    SettingsForm {
        form: Form::EditQuote,
        action: model::Action::EditInvoices,
        back: &back,
        idempotency_key,
        content: &(id, &input, &quote),
        check: fields.as_ref().map(|_| ()).map_err(Clone::clone),
    }
    .run(async |tx, user| {
        let fields = fields.clone().map_err(AppError::invalid)?;
        let invoice = input.parse().map_err(AppError::invalid)?;
        let input = model::QuoteInput {
            invoice,
            quote: fields,
        };
        let today =
            invoicer_core::jobs::schedules::org_today(&mut *tx, user.org_id, chrono::Utc::now())
                .await?;
        let base = &state.settings.public_url;
        invoicer_core::invoicing::quotes::edit_draft(tx, user.org_id, id, &input, today, base)
            .await
            .map(|q| q.id)
            .map_err(|e| match e {
                invoicer_core::invoicing::quotes::QuoteError::Refused(status) => {
                    AppError::BadRequest(format!(
                        "This quote is {}: only a draft can be edited.",
                        status.as_str()
                    ))
                }
                other => refused(other),
            })
    })
    .await?;
    leptos_axum::redirect(&back);
    Ok(())
}

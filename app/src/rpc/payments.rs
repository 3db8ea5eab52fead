//! Server functions of an invoice's payments taken by hand: "Record a payment" (once per rendered
//! form), a recorded payment's "Delete" (once per rendered button, owners only), "Credit" and
//! "Apply credit" (once per rendered form each).

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;

use model::error::AppError;
use model::PaymentForm;

#[cfg(feature = "ssr")]
use super::{
    form::{for_this_org, form_attempt, open_form, parse_button_key, parse_id},
    request_id, state,
};

/// Records a payment on the invoice (`form`: amount in the invoice's currency, method, date,
/// reference), once per rendered form however often it is submitted.
#[server(prefix = "/rpc", endpoint = "record_payment")]
pub async fn record_payment(
    invoice_id: String,
    idempotency_key: Option<String>,
    form: PaymentForm,
) -> Result<(), AppError> {
    use invoicer_core::payments::manual::PaymentError;
    use invoicer_core::surfaces::payment_forms::{record_payment, refusal};
    use invoicer_core::surfaces::track;

    let state = state()?;
    let invoice = model::InvoiceId::from(parse_id(&invoice_id)?);
    let attempt = form_attempt(&idempotency_key);
    track(&state.pool, attempt, async |attempt| {
        let user = super::require(model::Action::EditInvoices).await?;
        let currency = invoice_currency(&state.pool, user.org_id, invoice).await?;
        let input = form.parse(&currency);
        // The form's own checks; the date against the org's today is the command's.
        let checked = input.as_ref().map(|_| ()).map_err(Clone::clone);
        let (user, form_key) = open_form(
            &attempt,
            model::Action::EditInvoices,
            &idempotency_key,
            checked,
        )
        .await?;
        let input = input.map_err(|fields| AppError::rejected(idempotency_key.clone(), fields))?;
        record_payment(
            &state.pool,
            &attempt,
            user.org_id,
            user.id,
            form_key,
            invoice,
            &input,
        )
        .await
        .map_err(|e| match e {
            AppError::NotFound => refusal(PaymentError::NotFound),
            // A date the command refused keeps the form's key: the corrected form is the same
            // attempt.
            other => other.keeping(idempotency_key.clone()),
        })
    })
    .await
    .map_err(Respond::respond)?;
    leptos_axum::redirect(&format!("/invoices/{invoice}"));
    Ok(())
}

/// Deletes a payment recorded by hand (owners), once per rendered button; audited.
#[server(prefix = "/rpc", endpoint = "delete_payment")]
pub async fn delete_payment(
    invoice_id: String,
    payment_id: String,
    idempotency_key: String,
) -> Result<(), AppError> {
    use invoicer_core::accounts::audit::Actor;
    use invoicer_core::observe::{Attempt, Surface};
    use invoicer_core::surfaces::payment_forms::delete_payment;
    use invoicer_core::surfaces::track;

    let state = state()?;
    let invoice = model::InvoiceId::from(parse_id(&invoice_id)?);
    let payment = parse_id(&payment_id)?;
    let attempt = Attempt::new(Surface::Form, idempotency_key.clone(), request_id());
    track(&state.pool, attempt, async |attempt| {
        let user = super::require(model::Action::DeletePayments).await?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let key = for_this_org(parse_button_key(&idempotency_key)?, &user)?;
        let actor = Actor::user(user.id, &user.email);
        delete_payment(
            &state.pool,
            &attempt,
            user.org_id,
            &actor,
            key,
            invoice,
            payment,
        )
        .await
    })
    .await
    .map_err(Respond::respond)?;
    leptos_axum::redirect(&format!("/invoices/{invoice}"));
    Ok(())
}

/// The currency of `org`'s `invoice` (the form's amount is typed in it), or NotFound.
#[cfg(feature = "ssr")]
async fn invoice_currency(
    pool: &sqlx::PgPool,
    org: model::OrgId,
    invoice: model::InvoiceId,
) -> Result<String, AppError> {
    invoicer_core::invoicing::invoices::currency(pool, org, invoice)
        .await?
        .ok_or(AppError::NotFound)
}

/// An amount typed in `currency` (empty: none), or the field's message as `amount_cents`.
#[cfg(feature = "ssr")]
fn optional_amount(typed: &str, currency: &str) -> Result<Option<i64>, model::error::FieldErrors> {
    match typed.trim() {
        "" => Ok(None),
        text => model::parse_amount(text, currency)
            .map(Some)
            .map_err(|e| model::error::FieldErrors::from([("amount_cents".to_owned(), e)])),
    }
}

/// Credits the invoice (`amount`, in its currency; empty: all that is left to credit) with a
/// reason: one credit note per rendered form, however often it is submitted.
#[server(prefix = "/rpc", endpoint = "credit_invoice")]
pub async fn credit_invoice(
    invoice_id: String,
    idempotency_key: Option<String>,
    amount: String,
    reason: String,
    refund: Option<String>,
    /// `lines[i][line_id]` and `lines[i][quantity]`: the lines to credit instead of an amount (a
    /// blank quantity credits nothing of its line).
    lines: Option<Vec<model::CreditLineForm>>,
) -> Result<(), AppError> {
    use invoicer_core::invoicing::credit_notes::Credit;
    use invoicer_core::surfaces::track;
    use model::CreditRefund;

    let state = state()?;
    let invoice = model::InvoiceId::from(parse_id(&invoice_id)?);
    let attempt = form_attempt(&idempotency_key);
    track(&state.pool, attempt, async |attempt| {
        let user = super::require(model::Action::EditInvoices).await?;
        let currency = invoice_currency(&state.pool, user.org_id, invoice).await?;
        let amount_cents = optional_amount(&amount, &currency);
        let lines = model::CreditLineForm::parse(lines.as_deref().unwrap_or_default());
        let input = amount_cents
            .and_then(|amount_cents| Ok((amount_cents, lines?)))
            .map(|(amount_cents, lines)| model::CreditNoteInput {
                amount_cents,
                lines,
                reason: reason.clone(),
                refund: match refund.as_deref() {
                    Some("manual") => CreditRefund::Manual,
                    Some("stripe") => CreditRefund::Stripe,
                    _ => CreditRefund::None,
                },
            });
        let checked = match &input {
            Ok(input) => input.check(),
            Err(fields) => Err(fields.clone()),
        };
        let (user, form_key) = open_form(
            &attempt,
            model::Action::EditInvoices,
            &idempotency_key,
            checked,
        )
        .await?;
        let input = input.map_err(|fields| AppError::rejected(idempotency_key.clone(), fields))?;
        let source_key = format!("form:{form_key}");
        let credit = Credit {
            org: user.org_id,
            invoice,
            id: uuid::Uuid::now_v7(),
            source_key: &source_key,
            by: Some(user.id),
        };
        invoicer_core::surfaces::payment_forms::credit_invoice(
            &state.pool,
            &attempt,
            form_key,
            &credit,
            &input,
            &state.settings.public_url,
        )
        .await
    })
    .await
    .map_err(Respond::respond)?;
    leptos_axum::redirect(&format!("/invoices/{invoice}"));
    Ok(())
}

/// Applies the customer's credit balance to the invoice (`amount`, in its currency; empty: as much
/// as is due and available), once per rendered form.
#[server(prefix = "/rpc", endpoint = "apply_credit")]
pub async fn apply_credit(
    invoice_id: String,
    idempotency_key: Option<String>,
    amount: String,
) -> Result<(), AppError> {
    use invoicer_core::surfaces::track;

    let state = state()?;
    let invoice = model::InvoiceId::from(parse_id(&invoice_id)?);
    let attempt = form_attempt(&idempotency_key);
    track(&state.pool, attempt, async |attempt| {
        let user = super::require(model::Action::EditInvoices).await?;
        let currency = invoice_currency(&state.pool, user.org_id, invoice).await?;
        let amount = optional_amount(&amount, &currency);
        let checked = amount
            .clone()
            .and_then(|amount_cents| model::ApplyCreditInput { amount_cents }.check());
        let (user, form_key) = open_form(
            &attempt,
            model::Action::EditInvoices,
            &idempotency_key,
            checked,
        )
        .await?;
        let amount =
            amount.map_err(|fields| AppError::rejected(idempotency_key.clone(), fields))?;
        invoicer_core::surfaces::payment_forms::apply_credit(
            &state.pool,
            &attempt,
            user.org_id,
            user.id,
            form_key,
            invoice,
            amount,
        )
        .await
    })
    .await
    .map_err(Respond::respond)?;
    leptos_axum::redirect(&format!("/invoices/{invoice}"));
    Ok(())
}

//! Server functions of the buttons on an invoice: send, a lifecycle move, duplicate, retry an email,
//! and (development only) a simulated payment. Each applies once per rendered button.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;
use uuid::Uuid;

use model::error::AppError;

#[cfg(feature = "ssr")]
use super::{
    form::{for_this_org, parse_button_key},
    invoices::own_invoice,
    request_id, state,
};

/// "Send invoice": queues the email once per rendered button (`idempotency_key`), however often it
/// is clicked.
#[server(prefix = "/rpc", endpoint = "send_invoice")]
pub async fn send_invoice(invoice_id: String, idempotency_key: String) -> Result<(), AppError> {
    use invoicer_core::observe::{Attempt, Surface};
    use invoicer_core::surfaces::form::queue_invoice_email;
    use invoicer_core::surfaces::track;

    let state = state()?;
    let attempt = Attempt::new(Surface::Form, idempotency_key.clone(), request_id());
    let invoice = model::InvoiceId::from(super::form::parse_id(&invoice_id)?);
    track(&state.pool, attempt, async |attempt| {
        let user = super::require(model::Action::SendEmail).await?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let key = for_this_org(parse_button_key(&idempotency_key)?, &user)?;
        let sender = invoicer_core::mail::gate::Sender::Member {
            verified: user.email_verified,
        };
        let gate = invoicer_core::mail::gate::Gate::new(
            invoicer_core::mail::gate::Allowance::of(&state.settings.limits),
            sender,
        );
        queue_invoice_email(&state.pool, &attempt, user.org_id, key, invoice, gate).await
    })
    .await
    .map_err(AppError::respond)?;
    leptos_axum::redirect(&format!("/invoices/{invoice}"));
    Ok(())
}

/// A lifecycle button (`finalize`, `void`, `mark_uncollectible`, `delete`): applied once per
/// rendered button (`idempotency_key`); a repeat or a lost race shows the invoice as it is now, a move
/// that cannot apply says why.
#[server(prefix = "/rpc", endpoint = "invoice_action")]
pub async fn invoice_action(
    invoice_id: String,
    action: String,
    idempotency_key: String,
) -> Result<(), AppError> {
    use invoicer_core::invoicing::lifecycle::{Action, Moved};
    use invoicer_core::observe::{Attempt, Surface};
    use invoicer_core::surfaces::track;

    let state = state()?;
    let attempt = Attempt::new(Surface::Form, idempotency_key.clone(), request_id());
    let invoice = model::InvoiceId::from(super::form::parse_id(&invoice_id)?);
    let action = Action::parse(&action)
        .ok_or_else(|| AppError::BadRequest("Unknown action.".into()).respond())?;
    let moved = track(&state.pool, attempt, async |attempt| {
        let user = super::require(model::Action::EditInvoices).await?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let key = for_this_org(parse_button_key(&idempotency_key)?, &user)?;
        invoicer_core::surfaces::form::invoice_action(
            &state.pool,
            &attempt,
            user.org_id,
            key,
            invoice,
            action,
        )
        .await
    })
    .await
    .map_err(AppError::respond)?;
    match moved {
        Moved::Refused(status, payment) => {
            return Err(AppError::BadRequest(action.refusal(status, payment)).respond())
        }
        Moved::NotFound if action != Action::DeleteDraft => {
            return Err(AppError::NotFound.respond())
        }
        Moved::NotFound | Moved::Now | Moved::Already => {}
    }
    if action == Action::DeleteDraft {
        leptos_axum::redirect("/invoices");
    } else {
        leptos_axum::redirect(&format!("/invoices/{invoice}"));
    }
    Ok(())
}

/// "Duplicate": a new draft from this invoice, once per rendered button; goes to the draft.
#[server(prefix = "/rpc", endpoint = "duplicate_invoice")]
pub async fn duplicate_invoice(
    invoice_id: String,
    idempotency_key: String,
) -> Result<Uuid, AppError> {
    use invoicer_core::observe::{Attempt, Surface};
    use invoicer_core::surfaces::track;

    let state = state()?;
    let attempt = Attempt::new(Surface::Form, idempotency_key.clone(), request_id());
    let invoice = model::InvoiceId::from(super::form::parse_id(&invoice_id)?);
    let draft = track(&state.pool, attempt, async |attempt| {
        let user = super::require(model::Action::EditInvoices).await?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let key = for_this_org(parse_button_key(&idempotency_key)?, &user)?;
        invoicer_core::surfaces::form::duplicate_invoice(
            &state.pool,
            &attempt,
            user.org_id,
            key,
            invoice,
        )
        .await
    })
    .await
    .map_err(AppError::respond)?
    .invoice_id()
    .ok_or_else(|| AppError::internal("duplicate", "no draft").respond())?;
    leptos_axum::redirect(&format!("/invoices/{draft}"));
    Ok(draft)
}

/// Development only: pays what is due on an invoice the way Stripe would, through the real webhook
/// route (a signed `checkout.session.completed` with a fresh event id).
#[server(prefix = "/rpc", endpoint = "simulate_payment")]
pub async fn simulate_payment(invoice_id: String) -> Result<(), AppError> {
    use invoicer_core::payments::stripe::standin;

    let user = super::require(model::Action::EditInvoices).await?;
    let state = state()?;
    if !state.settings.dev_mode {
        return Err(AppError::NotFound.respond());
    }
    let invoice = own_invoice(&state, user.org_id, &invoice_id).await?;
    let due = invoice.amount_due_cents;
    if due <= 0 {
        return Err(AppError::BadRequest("Nothing is due on this invoice.".into()).respond());
    }
    // Through a session the app created, as a real payment is (simulated: no call to Stripe).
    standin::open_simulated_session(&state.pool, model::InvoiceId::from(invoice.id)).await?;
    let (event_id, payload) =
        standin::checkout_completed(model::InvoiceId::from(invoice.id), due, &invoice.currency);
    let url = format!("{}/webhooks/stripe", state.settings.self_url);
    let secret = state.settings.stripe_webhook_secrets[0].expose();
    match standin::deliver(&url, secret, &payload).await {
        Ok((200, _)) => {}
        Ok((status, body)) => {
            return Err(AppError::internal(
                "simulated payment refused",
                format!("{event_id}: {status} {body}"),
            ))
        }
        Err(e) => return Err(AppError::internal("simulated payment not delivered", e)),
    }
    leptos_axum::redirect(&format!("/invoices/{}", invoice.id));
    Ok(())
}

/// Gives a dead email a fresh set of attempts.
#[server(prefix = "/rpc", endpoint = "retry_email")]
pub async fn retry_email(id: String, invoice_id: String) -> Result<(), AppError> {
    let user = super::require(model::Action::EditInvoices).await?;
    let state = state()?;
    let id = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    // Parsed, not echoed: only a UUID goes back into the Location header.
    let invoice_id = Uuid::try_parse(&invoice_id).map_err(|_| AppError::NotFound.respond())?;
    let sender = invoicer_core::mail::gate::Sender::Member {
        verified: user.email_verified,
    };
    let gate = invoicer_core::mail::gate::Gate::new(
        invoicer_core::mail::gate::Allowance::of(&state.settings.limits),
        sender,
    );
    if !invoicer_core::outbox::revive(&state.pool, user.org_id, id, gate).await?? {
        return Err(AppError::NotFound.respond());
    }
    leptos_axum::redirect(&format!("/invoices/{invoice_id}"));
    Ok(())
}

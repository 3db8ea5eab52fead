//! Server functions: thin. Parse → authorize (the session decides the org) → one domain call.

use leptos::prelude::*;
use uuid::Uuid;

use crate::error::AppError;
use crate::model::{ActivityPage, ApiKeySummary, InvoiceForm, InvoicePage, InvoiceSummary, Viewer};

#[cfg(feature = "ssr")]
fn state() -> Result<crate::ssr::AppState, AppError> {
    use_context::<crate::ssr::AppState>()
        .ok_or_else(|| AppError::internal("server state", "AppState missing from context"))
}

/// Only local paths, so `?next=` cannot send a user to another site after logging in.
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with('/') && !n.starts_with("//") && !n.contains('\\') => n.to_owned(),
        _ => "/invoices".to_owned(),
    }
}

#[server(prefix = "/rpc", endpoint = "current_user")]
pub async fn current_user() -> Result<Option<Viewer>, AppError> {
    let session = crate::ssr::auth::current_session().await?;
    Ok(session.user.map(|u| Viewer {
        email: u.email,
        org_name: u.org_name,
    }))
}

#[server(prefix = "/rpc", endpoint = "signup")]
pub async fn signup(org_name: String, email: String, password: String) -> Result<(), AppError> {
    use crate::ssr::accounts::{create_org_with_owner, SignupError};
    use crate::ssr::auth::Credentials;

    let state = state()?;
    match create_org_with_owner(&state.pool, &org_name, &email, &password).await {
        Ok(_) => {}
        Err(SignupError::EmailTaken) => {
            return Err(AppError::field(
                "email",
                "An account with this email already exists. Log in instead.",
            ))
        }
        Err(SignupError::Invalid(message)) => return Err(AppError::BadRequest(message)),
        Err(e) => return Err(AppError::internal("signup", e)),
    }
    let mut session = crate::ssr::auth::current_session().await?;
    let user = session
        .authenticate(Credentials { email, password })
        .await
        .map_err(|e| AppError::internal("signup: authenticate", e))?
        .ok_or_else(|| AppError::internal("signup", "new user could not log in"))?;
    session
        .login(&user)
        .await
        .map_err(|e| AppError::internal("signup: login", e))?;
    leptos_axum::redirect("/invoices");
    Ok(())
}

#[server(prefix = "/rpc", endpoint = "login")]
pub async fn login(email: String, password: String, next: Option<String>) -> Result<(), AppError> {
    use crate::ssr::auth::Credentials;

    let mut session = crate::ssr::auth::current_session().await?;
    let user = session
        .authenticate(Credentials { email, password })
        .await
        .map_err(|e| AppError::internal("login: authenticate", e))?
        .ok_or_else(|| AppError::BadRequest("Wrong email or password.".into()))?;
    session
        .login(&user)
        .await
        .map_err(|e| AppError::internal("login", e))?;
    leptos_axum::redirect(&safe_next(next.as_deref()));
    Ok(())
}

#[server(prefix = "/rpc", endpoint = "logout")]
pub async fn logout() -> Result<(), AppError> {
    let mut session = crate::ssr::auth::current_session().await?;
    session
        .logout()
        .await
        .map_err(|e| AppError::internal("logout", e))?;
    leptos_axum::redirect("/login");
    Ok(())
}

/// The `x-request-id` of the request being served (set by the HTTP layer), for the attempt's row.
#[cfg(feature = "ssr")]
fn request_id() -> Option<String> {
    use_context::<axum::http::request::Parts>().and_then(|p| {
        p.headers
            .get("x-request-id")?
            .to_str()
            .ok()
            .map(str::to_owned)
    })
}

/// Creates an invoice from the form, once per rendered form: `idempotency_key` is the UUID the
/// server minted when it rendered the form. A repeat returns the first invoice, and either way the
/// browser is sent to it.
#[server(prefix = "/rpc", endpoint = "create_invoice")]
pub async fn create_invoice(
    idempotency_key: Option<String>,
    input: InvoiceForm,
) -> Result<Uuid, AppError> {
    use crate::ssr::observe::{track, Attempt, Surface};
    use crate::ssr::surfaces::form::{invoice_from_form, FormOutcome};

    let state = state()?;
    let key = idempotency_key.clone().unwrap_or_default();
    let attempt = Attempt::new(Surface::Form, key, request_id());
    let outcome = track(&state.pool, attempt, async |attempt| {
        // A refusal keeps the key and the typed values: the corrected resubmit is the same attempt.
        let refuse = |fields| AppError::rejected_form(idempotency_key.clone(), fields, &input);
        let form_key = parse_form_key(idempotency_key.as_deref()).map_err(refuse)?;
        let parsed = input.parse().map_err(refuse)?;
        let user = crate::ssr::auth::require_user().await?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        invoice_from_form(&state.pool, &attempt, user.org_id, form_key, &parsed).await
    })
    .await
    .map_err(AppError::respond)?;
    let id = match outcome {
        FormOutcome::Created(id) | FormOutcome::Replayed(id) => id,
        FormOutcome::KeyReused => {
            return Err(AppError::BadRequest(
                "This form was already used to create an invoice with other details. \
                 Open a new invoice form to create another."
                    .into(),
            )
            .respond())
        }
    };
    leptos_axum::redirect(&format!("/invoices/{id}"));
    Ok(id)
}

/// The key a form was rendered with, or the field error that tells the user to reload.
#[cfg(feature = "ssr")]
fn parse_form_key(key: Option<&str>) -> Result<Uuid, crate::error::FieldErrors> {
    key.and_then(|k| Uuid::try_parse(k.trim()).ok())
        .ok_or_else(|| {
            crate::error::FieldErrors::from([(
                "idempotency_key".to_owned(),
                "This form has no valid submission key. Reload the page and try again.".to_owned(),
            )])
        })
}

#[server(prefix = "/rpc", endpoint = "list_invoices")]
pub async fn list_invoices() -> Result<Vec<InvoiceSummary>, AppError> {
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    Ok(crate::ssr::invoices::list(&state.pool, user.org_id, 200).await?)
}

#[server(prefix = "/rpc", endpoint = "get_invoice")]
pub async fn get_invoice(id: String) -> Result<InvoicePage, AppError> {
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    let invoice = own_invoice(&state, user.org_id, &id).await?;
    let emails = crate::ssr::outbox::for_invoice(&state.pool, user.org_id, invoice.id).await?;
    let only_this = crate::ssr::activity::Filter {
        invoice: Some(invoice.id),
        ..Default::default()
    };
    let history = crate::ssr::activity::list(&state.pool, user.org_id, &only_this, 0)
        .await?
        .rows;
    Ok(InvoicePage {
        invoice,
        simulate_payments: state.settings.dev_mode,
        send_key: Uuid::now_v7(),
        emails,
        history,
    })
}

/// `id` of the session's org, or NotFound (also for another org's id: no leak).
#[cfg(feature = "ssr")]
async fn own_invoice(
    state: &crate::ssr::AppState,
    org: Uuid,
    id: &str,
) -> Result<crate::model::Invoice, AppError> {
    let id = Uuid::try_parse(id).map_err(|_| AppError::NotFound.respond())?;
    let mut conn = state.pool.acquire().await?;
    crate::ssr::invoices::get(&mut conn, org, id)
        .await?
        .ok_or_else(|| AppError::NotFound.respond())
}

/// Development only: pays what is due on an invoice the way Stripe would, through the real webhook
/// route (a signed `checkout.session.completed` with a fresh event id).
#[server(prefix = "/rpc", endpoint = "simulate_payment")]
pub async fn simulate_payment(invoice_id: String) -> Result<(), AppError> {
    use crate::ssr::stripe::standin;

    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    if !state.settings.dev_mode {
        return Err(AppError::NotFound.respond());
    }
    let invoice = own_invoice(&state, user.org_id, &invoice_id).await?;
    let due = invoice.total_cents - invoice.amount_paid_cents;
    if due <= 0 {
        return Err(AppError::BadRequest("Nothing is due on this invoice.".into()).respond());
    }
    let (event_id, payload) = standin::checkout_completed(invoice.id, due, &invoice.currency);
    let url = format!("{}/webhooks/stripe", state.settings.self_url);
    let secret = &state.settings.stripe_webhook_secrets[0];
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

#[server(prefix = "/rpc", endpoint = "list_api_keys")]
pub async fn list_api_keys() -> Result<Vec<ApiKeySummary>, AppError> {
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    Ok(crate::ssr::api_keys::list(&state.pool, user.org_id).await?)
}

/// Creates an API key for the session's org and returns it: the only time it is shown.
#[server(prefix = "/rpc", endpoint = "create_api_key")]
pub async fn create_api_key(name: String) -> Result<String, AppError> {
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    let key = crate::ssr::api_keys::create(&state.pool, user.org_id, Some(user.id), &name).await?;
    Ok(key.plaintext)
}

#[server(prefix = "/rpc", endpoint = "revoke_api_key")]
pub async fn revoke_api_key(id: String) -> Result<(), AppError> {
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    let id = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    if !crate::ssr::api_keys::revoke(&state.pool, user.org_id, id).await? {
        return Err(AppError::NotFound.respond());
    }
    Ok(())
}

/// "Send invoice": queues the email once per rendered button (`idempotency_key`), however often it
/// is clicked.
#[server(prefix = "/rpc", endpoint = "send_invoice")]
pub async fn send_invoice(invoice_id: String, idempotency_key: String) -> Result<(), AppError> {
    use crate::ssr::observe::{track, Attempt, Surface};
    use crate::ssr::surfaces::form::queue_invoice_email;

    let state = state()?;
    let attempt = Attempt::new(Surface::Form, idempotency_key.clone(), request_id());
    let invoice = Uuid::try_parse(&invoice_id).map_err(|_| AppError::NotFound.respond())?;
    track(&state.pool, attempt, async |attempt| {
        let user = crate::ssr::auth::require_user().await?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let key = Uuid::try_parse(&idempotency_key).map_err(|_| {
            AppError::BadRequest("This button has no valid key. Reload the page.".into())
        })?;
        queue_invoice_email(&state.pool, &attempt, user.org_id, key, invoice).await
    })
    .await
    .map_err(AppError::respond)?;
    leptos_axum::redirect(&format!("/invoices/{invoice}"));
    Ok(())
}

/// Gives a dead email a fresh set of attempts.
#[server(prefix = "/rpc", endpoint = "retry_email")]
pub async fn retry_email(id: String, invoice_id: String) -> Result<(), AppError> {
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    let id = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    if !crate::ssr::outbox::revive(&state.pool, user.org_id, id).await? {
        return Err(AppError::NotFound.respond());
    }
    leptos_axum::redirect(&format!("/invoices/{invoice_id}"));
    Ok(())
}

/// The session org's attempts, newest first, filtered; `page` counts from 0.
#[server(prefix = "/rpc", endpoint = "activity")]
pub async fn activity(
    surface: Option<String>,
    outcome: Option<String>,
    q: Option<String>,
    page: Option<u32>,
) -> Result<ActivityPage, AppError> {
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    let filter = crate::ssr::activity::Filter {
        surface: surface.filter(|s| !s.is_empty()),
        outcome: outcome.filter(|s| !s.is_empty()),
        search: q,
        invoice: None,
    };
    Ok(crate::ssr::activity::list(&state.pool, user.org_id, &filter, page.unwrap_or(0)).await?)
}

//! Server functions: thin. Parse → authorize (the session decides the org) → one domain call.

use leptos::prelude::*;
use uuid::Uuid;

use crate::error::AppError;
use crate::model::{ActivityPage, InvoiceForm, InvoicePage, Viewer};

mod team;
pub use team::*;

#[cfg(feature = "ssr")]
fn state() -> Result<crate::ssr::AppState, AppError> {
    use_context::<crate::ssr::AppState>()
        .ok_or_else(|| AppError::internal("server state", "AppState missing from context"))
}

/// Where to go after logging in: `next` only when it is a path on this site, else `/invoices`.
/// A path has one leading `/`, no `//`, and only visible ASCII other than a backslash: browsers drop
/// tabs and newlines from URLs and read a backslash as `/`, so `/<tab>/evil.example` would leave the
/// site, and a control character cannot go in a `Location` header at all.
pub fn safe_next(next: Option<&str>) -> String {
    const FALLBACK: &str = "/invoices";
    let Some(next) = next else {
        return FALLBACK.to_owned();
    };
    let local = next.starts_with('/')
        && next.len() <= 2048
        && !next.contains("//")
        && next.bytes().all(|b| b.is_ascii_graphic() && b != b'\\');
    if local {
        next.to_owned()
    } else {
        FALLBACK.to_owned()
    }
}

#[server(prefix = "/rpc", endpoint = "current_user")]
pub async fn current_user() -> Result<Option<Viewer>, AppError> {
    let session = crate::ssr::auth::current_session().await?;
    Ok(session.user.map(|u| Viewer {
        email: u.email,
        org_name: u.org_name,
        role: u.role,
        verified: u.email_verified,
    }))
}

/// The client address of the server-function request being served.
#[cfg(feature = "ssr")]
fn client_address(state: &crate::ssr::AppState) -> std::net::IpAddr {
    let parts = use_context::<axum::http::request::Parts>();
    let header = state.settings.client_ip_header.as_deref();
    parts.map_or(std::net::IpAddr::from([0, 0, 0, 0]), |p| {
        crate::ssr::throttle::client_address(&p, header)
    })
}

/// What `/signup` and a refused sign-up say on a deployment with SIGNUPS=closed.
pub const SIGNUPS_CLOSED: &str = "Sign-ups are closed here: organisations are created by the \
     operator, and people join one by invitation. Ask an owner of your organisation to invite you.";

/// Whether this deployment takes sign-ups (SIGNUPS=open).
#[server(prefix = "/rpc", endpoint = "signups_open")]
pub async fn signups_open() -> Result<bool, AppError> {
    Ok(state()?.settings.signups_open)
}

#[server(prefix = "/rpc", endpoint = "signup")]
pub async fn signup(org_name: String, email: String, password: String) -> Result<(), AppError> {
    use crate::ssr::accounts::{sign_up, SignupError};

    let state = state()?;
    if !state.settings.signups_open {
        return Err(AppError::Forbidden(SIGNUPS_CLOSED.into()).respond());
    }
    let address = client_address(&state);
    state.throttle.signup(address)?;
    state.throttle.account_email(&email, address)?;
    let payments = state.settings.signup_payments;
    // A new account or an email to the existing one: the same answer, after the same work. The
    // browser is not logged in either way; the person logs in with the password they chose.
    match sign_up(&state.pool, &org_name, &email, &password, payments).await {
        Ok(_) => {}
        Err(SignupError::Invalid(message)) => return Err(AppError::BadRequest(message).respond()),
        Err(SignupError::Hashing(e)) => return Err(AppError::from(e).respond()),
        Err(e) => return Err(AppError::internal("signup", e).respond()),
    }
    leptos_axum::redirect("/signup?sent=1");
    Ok(())
}

/// Where the current request comes from, for the session's row.
#[cfg(feature = "ssr")]
pub(crate) fn login_meta(state: &crate::ssr::AppState) -> crate::ssr::auth::LoginMeta {
    let user_agent = use_context::<axum::http::request::Parts>()
        .and_then(|p| {
            p.headers
                .get(axum::http::header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .unwrap_or_default();
    crate::ssr::auth::LoginMeta {
        user_agent,
        address: client_address(state).to_string(),
    }
}

/// Logs in; failed and successful attempts alike count against the account's allowance from this
/// client address and the address's own (429 with Retry-After when spent), before any hashing.
#[server(prefix = "/rpc", endpoint = "login")]
pub async fn login(email: String, password: String, next: Option<String>) -> Result<(), AppError> {
    use crate::ssr::auth::{BackendError, Credentials};

    let state = state()?;
    state.throttle.login(&email, client_address(&state))?;
    let mut session = crate::ssr::auth::current_session().await?;
    let user = match session.authenticate(Credentials { email, password }).await {
        Ok(Some(user)) => user,
        Ok(None) => return Err(AppError::BadRequest("Wrong email or password.".into())),
        Err(axum_login::Error::Backend(BackendError::Hashing(e))) => return Err(e.into()),
        Err(axum_login::Error::Backend(BackendError::NoOrg)) => {
            return Err(AppError::Forbidden(
                "This account is no longer a member of any organisation. Ask an owner for an \
                 invitation."
                    .into(),
            )
            .respond())
        }
        Err(e) => return Err(AppError::internal("login: authenticate", e)),
    };
    crate::ssr::auth::log_in(&state.pool, &mut session, &user, &login_meta(&state)).await?;
    leptos_axum::redirect(&safe_next(next.as_deref()));
    Ok(())
}

#[server(prefix = "/rpc", endpoint = "logout")]
pub async fn logout() -> Result<(), AppError> {
    let state = state()?;
    let mut session = crate::ssr::auth::current_session().await?;
    crate::ssr::auth::log_out(&state.pool, &mut session).await?;
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
        // Who asks is checked first: nobody without the right gets a rejection built from the
        // values they sent.
        let user = crate::ssr::auth::require(crate::model::Action::EditInvoices).await?;
        let refuse = |fields| AppError::rejected_form(idempotency_key.clone(), fields, &input);
        let form_key = parse_form_key(idempotency_key.as_deref()).map_err(refuse)?;
        let form_key = for_this_org(form_key, &user)?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let parsed = with_customer(&state, user.org_id, &input)
            .await
            .map_err(refuse)?;
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

/// The invoice form parsed, with the picked customer's name and email when one was picked (one of
/// `org`'s, or a field error), and its lines' tax rates checked to be `org`'s.
#[cfg(feature = "ssr")]
async fn with_customer(
    state: &crate::ssr::AppState,
    org: Uuid,
    form: &InvoiceForm,
) -> Result<crate::model::InvoiceInput, crate::error::FieldErrors> {
    let mut form = form.clone();
    let picked = form
        .customer_id
        .as_deref()
        .and_then(|id| Uuid::try_parse(id.trim()).ok());
    if picked.is_some() {
        let (name, email) = (&mut form.customer_name, &mut form.customer_email);
        if let Err(e) =
            crate::ssr::customers::fill_invoice(&state.pool, org, picked, name, email).await
        {
            return Err(e.field_errors().cloned().unwrap_or_else(|| {
                crate::error::FieldErrors::from([(
                    "customer_id".to_owned(),
                    "Your customers could not be read. Try again.".to_owned(),
                )])
            }));
        }
    }
    let parsed = form.parse()?;
    if let Err(e) = crate::ssr::tax_rates::check(&state.pool, org, &parsed).await {
        return Err(e.field_errors().cloned().unwrap_or_else(|| {
            crate::error::FieldErrors::from([(
                "lines".to_owned(),
                "Your tax rates could not be read. Try again.".to_owned(),
            )])
        }));
    }
    Ok(parsed)
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

/// One page of the session org's invoices, filtered; `before` is the cursor the previous page gave.
#[server(prefix = "/rpc", endpoint = "list_invoices")]
pub async fn list_invoices(
    status: Option<String>,
    payment_state: Option<String>,
    q: Option<String>,
    before: Option<String>,
) -> Result<crate::model::InvoiceListPage, AppError> {
    use crate::ssr::invoices::{check_filter, page, ListCursor, ListFilter};

    let user = crate::ssr::auth::require(crate::model::Action::Read).await?;
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
    Ok(crate::model::InvoiceListPage {
        rows,
        next_cursor: next.map(ListCursor::encode),
    })
}

#[server(prefix = "/rpc", endpoint = "get_invoice")]
pub async fn get_invoice(id: String) -> Result<InvoicePage, AppError> {
    let user = crate::ssr::auth::require(crate::model::Action::Read).await?;
    let state = state()?;
    let invoice = own_invoice(&state, user.org_id, &id).await?;
    let only_this = crate::ssr::activity::Filter {
        invoice: Some(invoice.id),
        ..Default::default()
    };
    // Independent reads, side by side on their own connections.
    let (emails, (history, _), (payments, anomalies), payments_enabled) = tokio::try_join!(
        crate::ssr::outbox::for_invoice(&state.reads, user.org_id, invoice.id),
        crate::ssr::activity::rows(&state.reads, user.org_id, &only_this, None),
        crate::ssr::payments::for_invoice(&state.reads, user.org_id, invoice.id),
        crate::ssr::accounts::payments_enabled(&state.reads, user.org_id),
    )?;
    Ok(InvoicePage {
        invoice,
        simulate_payments: state.settings.dev_mode,
        send_key: crate::model::form_key(user.org_id),
        action_key: crate::model::form_key(user.org_id),
        emails,
        payments,
        anomalies,
        history,
        can_edit: user.role.may(crate::model::Action::EditInvoices),
        payments_enabled,
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
    let mut conn = state.reads.acquire().await?;
    crate::ssr::invoices::get(&mut conn, org, id, &state.settings.public_url)
        .await?
        .ok_or_else(|| AppError::NotFound.respond())
}

/// Development only: pays what is due on an invoice the way Stripe would, through the real webhook
/// route (a signed `checkout.session.completed` with a fresh event id).
#[server(prefix = "/rpc", endpoint = "simulate_payment")]
pub async fn simulate_payment(invoice_id: String) -> Result<(), AppError> {
    use crate::ssr::stripe::standin;

    let user = crate::ssr::auth::require(crate::model::Action::EditInvoices).await?;
    let state = state()?;
    if !state.settings.dev_mode {
        return Err(AppError::NotFound.respond());
    }
    let invoice = own_invoice(&state, user.org_id, &invoice_id).await?;
    let due = invoice.total_cents - invoice.amount_paid_cents;
    if due <= 0 {
        return Err(AppError::BadRequest("Nothing is due on this invoice.".into()).respond());
    }
    // Through a session the app created, as a real payment is (simulated: no call to Stripe).
    standin::open_simulated_session(&state.pool, invoice.id).await?;
    let (event_id, payload) = standin::checkout_completed(invoice.id, due, &invoice.currency);
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

#[server(prefix = "/rpc", endpoint = "list_api_keys")]
pub async fn list_api_keys() -> Result<crate::model::ApiKeysView, AppError> {
    let user = crate::ssr::auth::require(crate::model::Action::Read).await?;
    let state = state()?;
    Ok(crate::model::ApiKeysView {
        keys: crate::ssr::api_keys::list(&state.pool, user.org_id).await?,
        form_key: crate::model::form_key(user.org_id),
    })
}

/// Creates an API key for the session's org with a role no higher than the creator's and an
/// optional expiry (`expires_in_days`, empty for none), once per rendered form. The submit that
/// made it gets the key, the only time it is shown; a repeat names the same key without it.
#[server(prefix = "/rpc", endpoint = "create_api_key")]
pub async fn create_api_key(
    idempotency_key: Option<String>,
    name: String,
    role: Option<String>,
    expires_in_days: Option<String>,
) -> Result<crate::model::CreatedApiKey, AppError> {
    use crate::model::{Action, Role};
    use crate::ssr::api_keys::{insert, prefix_of, CreateError, KeyRequest, NewApiKey};

    let role_asked = role.as_deref().map(str::trim).filter(|r| !r.is_empty());
    let role = role_asked.map(|r| Role::parse(r).ok_or(r));
    let days = expires_in_days
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty());
    let days = days.map(|d| d.parse::<i64>().ok().filter(|d| (1..=3650).contains(d)));
    let check = || {
        let mut fields = crate::error::FieldErrors::new();
        if let Some(Err(_)) = role {
            fields.insert("role".into(), "Choose owner, member or viewer.".into());
        }
        if let Some(None) = days {
            fields.insert(
                "expires_in_days".into(),
                "Enter a number of days from 1 to 3650, or leave it empty.".into(),
            );
        }
        if fields.is_empty() {
            Ok(())
        } else {
            Err(fields)
        }
    };
    let content = (&name, role_asked, &expires_in_days);
    let key = NewApiKey::generate();
    let saved = settings_form_saved(
        crate::ssr::claim::Form::CreateApiKey,
        Action::ManageOwnApiKeys,
        "/settings/api-keys",
        idempotency_key.clone(),
        &content,
        check,
        |user| {
            let org = user.org_id;
            let actor = crate::ssr::audit::Actor::user(user.id, &user.email);
            let request = KeyRequest {
                name: &name,
                role: match role {
                    Some(Ok(role)) => role,
                    _ => Role::Member.min(user.role),
                },
                expires_at: days
                    .flatten()
                    .map(|d| chrono::Utc::now() + chrono::Duration::days(d)),
            };
            let (key, own_role) = (&key, user.role);
            move || {
                let (actor, request) = (actor.clone(), request.clone());
                async move |tx: &mut sqlx::PgConnection| match insert(
                    tx, org, &actor, &request, key,
                )
                .await
                {
                    Ok(()) => Ok(key.id),
                    Err(CreateError::RoleTooHigh) => Err(AppError::Forbidden(format!(
                        "Your role ({}) cannot make a key with the role {}.",
                        own_role.as_str(),
                        request.role.as_str()
                    ))),
                    Err(CreateError::Expired) => Err(AppError::field(
                        "expires_in_days",
                        "The expiry is in the past.",
                    )),
                    Err(CreateError::Db(e)) => Err(e.into()),
                }
            }
        },
    )
    .await?;
    if saved.id == key.id {
        return Ok(crate::model::CreatedApiKey {
            id: key.id,
            prefix: key.prefix().to_owned(),
            plaintext: Some(key.plaintext),
        });
    }
    let state = state()?;
    let prefix = prefix_of(&state.pool, saved.org, saved.id)
        .await?
        .ok_or_else(|| AppError::NotFound.respond())?;
    Ok(crate::model::CreatedApiKey {
        id: saved.id,
        prefix,
        plaintext: None,
    })
}

/// Revokes an API key: an owner any of the org's, a member their own.
#[server(prefix = "/rpc", endpoint = "revoke_api_key")]
pub async fn revoke_api_key(id: String) -> Result<(), AppError> {
    use crate::model::Action;
    let user = crate::ssr::auth::require(Action::Read).await?;
    if !user.role.may(Action::ManageOwnApiKeys) {
        user.clone().allowed(Action::ManageOwnApiKeys)?;
    }
    let state = state()?;
    let id = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    let actor = crate::ssr::audit::Actor::user(user.id, &user.email);
    let any = user.role.may(Action::ManageAllApiKeys);
    if !crate::ssr::api_keys::revoke(&state.pool, user.org_id, &actor, any, id).await? {
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
        let user = crate::ssr::auth::require(crate::model::Action::SendEmail).await?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let key = for_this_org(parse_button_key(&idempotency_key)?, &user)?;
        state.throttle.email(user.org_id)?;
        queue_invoice_email(&state.pool, &attempt, user.org_id, key, invoice).await
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
    use crate::ssr::lifecycle::{Action, Moved};
    use crate::ssr::observe::{track, Attempt, Surface};

    let state = state()?;
    let attempt = Attempt::new(Surface::Form, idempotency_key.clone(), request_id());
    let invoice = Uuid::try_parse(&invoice_id).map_err(|_| AppError::NotFound.respond())?;
    let action = Action::parse(&action)
        .ok_or_else(|| AppError::BadRequest("Unknown action.".into()).respond())?;
    let moved = track(&state.pool, attempt, async |attempt| {
        let user = crate::ssr::auth::require(crate::model::Action::EditInvoices).await?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let key = for_this_org(parse_button_key(&idempotency_key)?, &user)?;
        crate::ssr::surfaces::form::invoice_action(
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
    use crate::ssr::observe::{track, Attempt, Surface};

    let state = state()?;
    let attempt = Attempt::new(Surface::Form, idempotency_key.clone(), request_id());
    let invoice = Uuid::try_parse(&invoice_id).map_err(|_| AppError::NotFound.respond())?;
    let draft = track(&state.pool, attempt, async |attempt| {
        let user = crate::ssr::auth::require(crate::model::Action::EditInvoices).await?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let key = for_this_org(parse_button_key(&idempotency_key)?, &user)?;
        crate::ssr::surfaces::form::duplicate_invoice(
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

#[cfg(feature = "ssr")]
fn parse_button_key(key: &str) -> Result<Uuid, AppError> {
    Uuid::try_parse(key)
        .map_err(|_| AppError::BadRequest("This button has no valid key. Reload the page.".into()))
}

/// A form's key, if the form was rendered for the org the session acts for now (see
/// [`crate::model::form_key`]); else the submit is refused before anything is claimed or written.
#[cfg(feature = "ssr")]
pub(crate) fn for_this_org(
    key: Uuid,
    user: &crate::ssr::auth::SessionUser,
) -> Result<Uuid, AppError> {
    if crate::model::form_key_fits(key, user.org_id) {
        return Ok(key);
    }
    Err(AppError::BadRequest(format!(
        "This page was opened for another organisation; you act for {} now. Nothing was saved: \
         reload the page and try again.",
        user.org_name
    ))
    .respond())
}

/// A draft's edit page: its content, its version, and the key this rendering's save is named by.
#[server(prefix = "/rpc", endpoint = "get_draft")]
pub async fn get_draft(id: String) -> Result<crate::model::DraftEdit, AppError> {
    let user = crate::ssr::auth::require(crate::model::Action::Read).await?;
    let state = state()?;
    let invoice = own_invoice(&state, user.org_id, &id).await?;
    if invoice.status != crate::model::InvoiceStatus::Draft {
        return Err(AppError::BadRequest(format!(
            "This invoice is {} and can no longer be edited; duplicate it to start a new draft.",
            invoice.status.as_str()
        ))
        .respond());
    }
    Ok(crate::model::DraftEdit {
        id: invoice.id,
        version: invoice.version,
        key: crate::model::form_key(user.org_id),
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
) -> Result<(), AppError> {
    use crate::ssr::lifecycle::Edited;
    use crate::ssr::observe::{track, Attempt, Surface};
    use crate::ssr::surfaces::form::{edit_draft, DraftSave};

    let state = state()?;
    let invoice = Uuid::try_parse(&invoice_id).map_err(|_| AppError::NotFound.respond())?;
    let attempt = Attempt::new(
        Surface::Form,
        idempotency_key.clone().unwrap_or_default(),
        request_id(),
    );
    let refuse = |fields| AppError::rejected_form(idempotency_key.clone(), fields, &input);
    let saved = track(&state.pool, attempt, async |attempt| {
        // Who asks first: no rejection carrying the values is built for someone without the right.
        let user = crate::ssr::auth::require(crate::model::Action::EditInvoices).await?;
        let form_key = for_this_org(
            parse_form_key(idempotency_key.as_deref()).map_err(refuse)?,
            &user,
        )?;
        let version: i32 = version.trim().parse().map_err(|_| {
            refuse(crate::error::FieldErrors::from([(
                "version".to_owned(),
                "This form has no valid version. Open the draft again.".to_owned(),
            )]))
        })?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let parsed = with_customer(&state, user.org_id, &input)
            .await
            .map_err(refuse)?;
        edit_draft(
            &state.pool,
            &attempt,
            user.org_id,
            form_key,
            invoice,
            version,
            &parsed,
        )
        .await
    })
    .await
    .map_err(AppError::respond)?;
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
        DraftSave::Refused(Edited::NotFound) => return Err(AppError::NotFound.respond()),
        DraftSave::KeyReused => {
            "This form already saved other changes. Open the draft again to edit it further."
        }
    };
    Err(refuse(crate::error::FieldErrors::from([(
        "version".to_owned(),
        message.to_owned(),
    )]))
    .respond())
}

/// The session org's customers, newest first, or those whose name or email starts with `q`.
#[server(prefix = "/rpc", endpoint = "list_customers")]
pub async fn list_customers(q: Option<String>) -> Result<Vec<crate::model::Customer>, AppError> {
    let user = crate::ssr::auth::require(crate::model::Action::Read).await?;
    let state = state()?;
    if q.as_ref()
        .is_some_and(|q| q.chars().count() > 200 || q.contains('\0'))
    {
        return Err(AppError::BadRequest("Search for at most 200 characters.".into()).respond());
    }
    Ok(crate::ssr::customers::list(&state.pool, user.org_id, q.as_deref(), 100).await?)
}

/// The session org's tax rates (archived ones too when `archived`), oldest first.
#[server(prefix = "/rpc", endpoint = "list_tax_rates")]
pub async fn list_tax_rates(archived: bool) -> Result<Vec<crate::model::TaxRate>, AppError> {
    let user = crate::ssr::auth::require(crate::model::Action::Read).await?;
    let state = state()?;
    Ok(crate::ssr::tax_rates::list(&state.pool, user.org_id, archived).await?)
}

/// A customer's page: the customer and the key this rendering's save is named by.
#[server(prefix = "/rpc", endpoint = "get_customer")]
pub async fn get_customer(id: String) -> Result<crate::model::CustomerPage, AppError> {
    let user = crate::ssr::auth::require(crate::model::Action::Read).await?;
    let state = state()?;
    let id = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    let customer = crate::ssr::customers::get(&state.pool, user.org_id, id)
        .await?
        .ok_or_else(|| AppError::NotFound.respond())?;
    Ok(crate::model::CustomerPage {
        customer,
        key: crate::model::form_key(user.org_id),
    })
}

/// Creates a customer (new) or saves one (`customer_id` given), once per rendered form.
#[server(prefix = "/rpc", endpoint = "save_customer")]
pub async fn save_customer(
    idempotency_key: Option<String>,
    customer_id: Option<String>,
    input: crate::model::CustomerInput,
) -> Result<Uuid, AppError> {
    use crate::ssr::observe::{track, Attempt, Surface};
    use crate::ssr::surfaces::form::{customer_from_form, update_customer, Saved};

    let state = state()?;
    let attempt = Attempt::new(
        Surface::Form,
        idempotency_key.clone().unwrap_or_default(),
        request_id(),
    );
    let existing = match customer_id.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(id) => Some(Uuid::try_parse(id).map_err(|_| AppError::NotFound.respond())?),
    };
    let saved = track(&state.pool, attempt, async |attempt| {
        let invalid = |fields| {
            AppError::Invalid(Box::new(crate::error::Rejected {
                idempotency_key: idempotency_key.clone(),
                fields,
                values: None,
            }))
        };
        let user = crate::ssr::auth::require(crate::model::Action::EditInvoices).await?;
        let form_key = parse_form_key(idempotency_key.as_deref()).map_err(invalid)?;
        let form_key = for_this_org(form_key, &user)?;
        input.check().map_err(invalid)?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let pool = &state.pool;
        match existing {
            None => customer_from_form(pool, &attempt, user.org_id, form_key, &input).await,
            Some(id) => update_customer(pool, &attempt, user.org_id, form_key, id, &input).await,
        }
    })
    .await
    .map_err(AppError::respond)?;
    match saved {
        Saved::Created(id) | Saved::Replayed(id) => {
            leptos_axum::redirect(&format!("/customers/{id}"));
            Ok(id)
        }
        Saved::KeyReused => Err(AppError::BadRequest(
            "This form already saved other details. Open the customer again to change more.".into(),
        )
        .respond()),
    }
}

/// The org settings page: the settings, the tax rates, and fresh keys for its forms.
#[server(prefix = "/rpc", endpoint = "get_org_settings")]
pub async fn get_org_settings() -> Result<crate::model::OrgSettingsPage, AppError> {
    let user = crate::ssr::auth::require(crate::model::Action::Read).await?;
    let state = state()?;
    let settings = crate::ssr::orgs::settings(&state.pool, user.org_id).await?;
    let tax_rates = crate::ssr::tax_rates::list(&state.pool, user.org_id, true).await?;
    let year = chrono::Datelike::year(&chrono::Utc::now());
    Ok(crate::model::OrgSettingsPage {
        next_number: settings.preview(1, year),
        settings,
        archive_keys: tax_rates
            .iter()
            .map(|_| crate::model::form_key(user.org_id))
            .collect(),
        tax_rates,
        settings_key: crate::model::form_key(user.org_id),
        tax_rate_key: crate::model::form_key(user.org_id),
        can_manage: user.role.may(crate::model::Action::ManageOrg),
    })
}

/// Runs one settings form of the session org at most once per rendered form (`form_key`), if the
/// session's role allows `action`; a plain form post is sent back to `back`.
#[cfg(feature = "ssr")]
pub(crate) async fn settings_form<F, W>(
    form: crate::ssr::claim::Form,
    action: crate::model::Action,
    back: &str,
    idempotency_key: Option<String>,
    content: &(impl serde::Serialize + Sync),
    check: impl FnOnce() -> Result<(), crate::error::FieldErrors>,
    save: impl Fn(&crate::ssr::auth::SessionUser) -> F,
) -> Result<(), AppError>
where
    F: FnMut() -> W,
    W: AsyncFnOnce(&mut sqlx::PgConnection) -> Result<Uuid, AppError>,
{
    settings_form_saved(form, action, back, idempotency_key, content, check, save).await?;
    Ok(())
}

/// What a settings form saved: by this submit or by the earlier one it repeats.
#[cfg(feature = "ssr")]
pub(crate) struct SavedForm {
    pub org: Uuid,
    pub id: Uuid,
}

/// [`settings_form`], naming what the form saved.
#[cfg(feature = "ssr")]
pub(crate) async fn settings_form_saved<F, W>(
    form: crate::ssr::claim::Form,
    action: crate::model::Action,
    back: &str,
    idempotency_key: Option<String>,
    content: &(impl serde::Serialize + Sync),
    check: impl FnOnce() -> Result<(), crate::error::FieldErrors>,
    save: impl Fn(&crate::ssr::auth::SessionUser) -> F,
) -> Result<SavedForm, AppError>
where
    F: FnMut() -> W,
    W: AsyncFnOnce(&mut sqlx::PgConnection) -> Result<Uuid, AppError>,
{
    use crate::ssr::observe::{track, Attempt, Surface};
    use crate::ssr::surfaces::form::{setting_once, Saved};

    let state = state()?;
    let key = idempotency_key.clone().unwrap_or_default();
    let attempt = Attempt::new(Surface::Form, key, request_id());
    let seen = attempt.clone();
    let saved = track(&state.pool, attempt, async |attempt| {
        let invalid = |fields| {
            AppError::Invalid(Box::new(crate::error::Rejected {
                idempotency_key: idempotency_key.clone(),
                fields,
                values: None,
            }))
        };
        let user = crate::ssr::auth::require(action).await?;
        let form_key = parse_form_key(idempotency_key.as_deref()).map_err(invalid)?;
        let form_key = for_this_org(form_key, &user)?;
        check().map_err(invalid)?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let pool = &state.pool;
        setting_once(
            pool,
            &attempt,
            user.org_id,
            form,
            form_key,
            content,
            save(&user),
        )
        .await
    })
    .await
    .map_err(AppError::respond)?;
    match saved {
        Saved::Created(id) | Saved::Replayed(id) => {
            // Without JavaScript the browser is sent back to the page; with it, the page's actions
            // reload what changed in place (a redirect would remount the page mid-submit).
            if crate::error::plain_form_post() {
                leptos_axum::redirect(back);
            }
            let org = seen
                .org()
                .expect("a saved form was identified with its org");
            Ok(SavedForm { org, id })
        }
        Saved::KeyReused => Err(AppError::BadRequest(
            "This form was already used with other values. Reload the page and try again.".into(),
        )
        .respond()),
    }
}

/// Saves the org's settings, once per rendered form.
#[server(prefix = "/rpc", endpoint = "save_org_settings")]
pub async fn save_org_settings(
    idempotency_key: Option<String>,
    settings: crate::model::OrgSettings,
) -> Result<(), AppError> {
    use crate::ssr::claim::Form;
    let check = || settings.check();
    settings_form(
        Form::EditOrgSettings,
        crate::model::Action::ManageOrg,
        "/settings/org",
        idempotency_key.clone(),
        &settings,
        check,
        |user| {
            let org = user.org_id;
            let settings = &settings;
            move || {
                async move |tx: &mut sqlx::PgConnection| {
                    crate::ssr::orgs::save_settings(tx, org, settings).await?;
                    Ok(org)
                }
            }
        },
    )
    .await
}

/// Adds a tax rate, once per rendered form.
#[server(prefix = "/rpc", endpoint = "add_tax_rate")]
pub async fn add_tax_rate(
    idempotency_key: Option<String>,
    name: String,
    percent: String,
) -> Result<(), AppError> {
    use crate::ssr::claim::Form;
    let parsed = crate::model::TaxRateInput::parse(&name, &percent);
    let check = || parsed.clone().map(|_| ());
    let content = (&name, &percent);
    let source_key = format!(
        "form:{}",
        idempotency_key.as_deref().unwrap_or_default().trim()
    );
    settings_form(
        Form::AddTaxRate,
        crate::model::Action::ManageOrg,
        "/settings/org",
        idempotency_key.clone(),
        &content,
        check,
        |user| {
            let org = user.org_id;
            let (parsed, source_key) = (&parsed, &source_key);
            move || {
                async move |tx: &mut sqlx::PgConnection| {
                    let input = parsed.as_ref().map_err(|f| AppError::invalid(f.clone()))?;
                    let rate =
                        crate::ssr::tax_rates::insert(tx, Uuid::now_v7(), org, source_key, input)
                            .await?;
                    Ok(rate.id)
                }
            }
        },
    )
    .await
}

/// Archives a tax rate (lines that have it keep it), once per rendered button.
#[server(prefix = "/rpc", endpoint = "archive_tax_rate")]
pub async fn archive_tax_rate(idempotency_key: Option<String>, id: String) -> Result<(), AppError> {
    use crate::ssr::claim::Form;
    let rate = Uuid::try_parse(id.trim()).map_err(|_| AppError::NotFound.respond())?;
    settings_form(
        Form::ArchiveTaxRate,
        crate::model::Action::ManageOrg,
        "/settings/org",
        idempotency_key.clone(),
        &rate,
        || Ok(()),
        |user| {
            let org = user.org_id;
            move || {
                async move |tx: &mut sqlx::PgConnection| match crate::ssr::tax_rates::archive(
                    tx, org, rate,
                )
                .await?
                {
                    true => Ok(rate),
                    false => Err(AppError::NotFound),
                }
            }
        },
    )
    .await
}

/// Gives a dead email a fresh set of attempts.
#[server(prefix = "/rpc", endpoint = "retry_email")]
pub async fn retry_email(id: String, invoice_id: String) -> Result<(), AppError> {
    let user = crate::ssr::auth::require(crate::model::Action::EditInvoices).await?;
    let state = state()?;
    let id = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    // Parsed, not echoed: only a UUID goes back into the Location header.
    let invoice_id = Uuid::try_parse(&invoice_id).map_err(|_| AppError::NotFound.respond())?;
    state.throttle.email(user.org_id)?;
    if !crate::ssr::outbox::revive(&state.pool, user.org_id, id).await? {
        return Err(AppError::NotFound.respond());
    }
    leptos_axum::redirect(&format!("/invoices/{invoice_id}"));
    Ok(())
}

/// The session org's attempts, newest first, filtered; `before` is the cursor of the page before.
#[server(prefix = "/rpc", endpoint = "activity")]
pub async fn activity(
    surface: Option<String>,
    outcome: Option<String>,
    q: Option<String>,
    before: Option<String>,
) -> Result<ActivityPage, AppError> {
    use crate::ssr::activity::{list, Cursor, Filter};

    let user = crate::ssr::auth::require(crate::model::Action::Read).await?;
    let state = state()?;
    let before = match before.as_deref().filter(|b| !b.is_empty()) {
        None => None,
        Some(text) => Some(Cursor::parse(text).ok_or_else(|| {
            AppError::BadRequest("This page link is not valid. Start from the first page.".into())
                .respond()
        })?),
    };
    let filter = Filter {
        surface: surface.filter(|s| !s.is_empty()),
        outcome: outcome.filter(|s| !s.is_empty()),
        search: q,
        invoice: None,
    };
    let pool = state.read_pool(filter.has_pattern());
    Ok(list(pool, user.org_id, &filter, before).await?)
}

#[cfg(test)]
mod tests {
    use super::safe_next;

    #[test]
    fn next_is_honoured_only_as_a_path_on_this_site() {
        for ok in ["/invoices/42", "/activity?q=a%20b&page=2", "/"] {
            assert_eq!(safe_next(Some(ok)), ok);
        }
        for bad in [
            "//evil.example",
            "/\t/evil.example",
            "/\n/evil.example",
            "/\\evil.example",
            "\\\\evil.example",
            "https://evil.example",
            "javascript:alert(1)",
            "evil.example",
            "/ok\r\nSet-Cookie: x=1",
            "/a//b",
            "",
        ] {
            assert_eq!(safe_next(Some(bad)), "/invoices", "{bad:?}");
        }
        assert_eq!(safe_next(None), "/invoices");
        assert_eq!(
            safe_next(Some(&format!("/{}", "a".repeat(3000)))),
            "/invoices"
        );
    }
}

//! Server functions (`/rpc/<endpoint>`), one file per domain as in `pages/`: each parses what the
//! browser sent, asks the session who acts (and for which org), and hands the work to the domain or
//! a surface in `ssr`. This file holds what they share about the request being served.

pub mod account;
pub mod activity;
pub mod api_keys;
pub mod auth;
pub mod bank;
pub mod customers;
pub mod dashboard;
#[cfg(feature = "ssr")]
mod form;
pub mod imports;
pub mod inbox;
pub mod invoice_actions;
pub mod invoices;
pub mod payments;
pub mod quotes;
pub mod reports;
pub mod schedules;
pub mod settings;
pub mod team;
pub mod webhooks;

#[cfg(feature = "ssr")]
use leptos::prelude::use_context;

#[cfg(feature = "ssr")]
use model::error::AppError;

#[cfg(feature = "ssr")]
fn state() -> Result<invoicer_core::AppState, AppError> {
    use_context::<invoicer_core::AppState>()
        .ok_or_else(|| AppError::internal("server state", "AppState missing from context"))
}

/// The request being served is a browser's plain form post (no JavaScript): it asks for HTML.
#[cfg(feature = "ssr")]
pub(crate) fn plain_form_post() -> bool {
    use_context::<axum::http::request::Parts>()
        .and_then(|parts| {
            parts
                .headers
                .get(axum::http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.contains("text/html"))
        })
        .unwrap_or(false)
}

/// An error as the answer of the request being served.
#[cfg(feature = "ssr")]
pub(crate) trait Respond {
    /// Gives the error its HTTP status ([`AppError::status_code`]) and `Retry-After` on the
    /// response being rendered: a page whose read failed answers with its status, and so does a
    /// server function called by a script. A plain HTML form post keeps the redirect back to the
    /// form, which is how Leptos shows it the error; the server's `errors_carry_their_status` gives
    /// that redirect the error's `Retry-After`, whoever made the error.
    fn respond(self) -> Self;
}

#[cfg(feature = "ssr")]
impl Respond for AppError {
    fn respond(self) -> Self {
        if plain_form_post() {
            return self;
        }
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(self.status_code());
            if let Some(secs) = self.retry_after() {
                response.insert_header(
                    axum::http::header::RETRY_AFTER,
                    axum::http::HeaderValue::from(secs),
                );
            }
        }
        self
    }
}

#[cfg(feature = "ssr")]
impl<V> Respond for model::error::FormError<V> {
    fn respond(mut self) -> Self {
        self.error = self.error.respond();
        self
    }
}

/// The session of the server-function request being served.
#[cfg(feature = "ssr")]
pub(crate) async fn current_session() -> Result<invoicer_core::accounts::auth::AuthSession, AppError>
{
    leptos_axum::extract::<invoicer_core::accounts::auth::AuthSession>()
        .await
        .map_err(|e| AppError::internal("auth session missing", e))
}

/// The logged-in user of the server-function request being served, or `Unauthorized`.
#[cfg(feature = "ssr")]
pub(crate) async fn require_user() -> Result<invoicer_core::accounts::auth::SessionUser, AppError> {
    current_session()
        .await?
        .user
        .ok_or_else(|| AppError::Unauthorized.respond())
}

/// The logged-in user, if their role allows `action`: `Unauthorized` without a session,
/// `Forbidden` with one whose role does not reach.
#[cfg(feature = "ssr")]
pub(crate) async fn require(
    action: model::Action,
) -> Result<invoicer_core::accounts::auth::SessionUser, AppError> {
    require_user()
        .await?
        .allowed(action)
        .map_err(Respond::respond)
}

/// The client address of the server-function request being served.
#[cfg(feature = "ssr")]
fn client_address(state: &invoicer_core::AppState) -> std::net::IpAddr {
    let parts = use_context::<axum::http::request::Parts>();
    let header = state.settings.client_ip_header.as_deref();
    parts.map_or(std::net::IpAddr::from([0, 0, 0, 0]), |p| {
        invoicer_core::throttle::client_address(&p, header)
    })
}

/// Where the current request comes from, for the session's row.
#[cfg(feature = "ssr")]
pub(crate) fn login_meta(
    state: &invoicer_core::AppState,
) -> invoicer_core::accounts::auth::LoginMeta {
    let user_agent = use_context::<axum::http::request::Parts>()
        .and_then(|p| {
            p.headers
                .get(axum::http::header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .unwrap_or_default();
    invoicer_core::accounts::auth::LoginMeta {
        user_agent,
        address: client_address(state).to_string(),
    }
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

/// The session's user, as the audit log names who acted.
#[cfg(feature = "ssr")]
fn actor(
    user: &invoicer_core::accounts::auth::SessionUser,
) -> invoicer_core::accounts::audit::Actor {
    invoicer_core::accounts::audit::Actor::user(user.id, &user.email)
}

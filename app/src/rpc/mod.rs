//! Server functions (`/rpc/<endpoint>`), one file per domain as in `pages/`: each parses what the
//! browser sent, asks the session who acts (and for which org), and hands the work to the domain or
//! a surface in `ssr`. This file holds what they share about the request being served.

pub mod account;
pub mod activity;
pub mod api_keys;
pub mod auth;
pub mod customers;
pub mod dashboard;
#[cfg(feature = "ssr")]
mod form;
pub mod imports;
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
use crate::error::AppError;

#[cfg(feature = "ssr")]
fn state() -> Result<crate::ssr::AppState, AppError> {
    use_context::<crate::ssr::AppState>()
        .ok_or_else(|| AppError::internal("server state", "AppState missing from context"))
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
fn actor(user: &crate::ssr::auth::SessionUser) -> crate::ssr::audit::Actor {
    crate::ssr::audit::Actor::user(user.id, &user.email)
}

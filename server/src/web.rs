//! HTTP wiring: sessions, the login guard, Leptos pages and server functions, health checks.

use std::time::Duration;

use app::ssr::auth::{AuthSession, Backend};
use app::ssr::AppState;
use app::{shell, App};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use axum_login::AuthManagerLayerBuilder;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower_sessions::cookie::time;
use tower_sessions::cookie::SameSite;
use tower_sessions::session_store::ExpiredDeletion;
use tower_sessions::{Expiry, SessionManagerLayer};
use tower_sessions_sqlx_store::PostgresStore;

/// Builds the whole application router. Starts the expired-session sweep in the background.
pub async fn router(state: AppState, secure_cookies: bool) -> anyhow::Result<Router> {
    let store = PostgresStore::new(state.pool.clone());
    store.migrate().await?;
    tokio::spawn(
        store
            .clone()
            .continuously_delete_expired(Duration::from_secs(600)),
    );
    let sessions = SessionManagerLayer::new(store)
        .with_name("invoicer_session")
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(secure_cookies)
        .with_expiry(Expiry::OnInactivity(time::Duration::days(7)));
    let auth = AuthManagerLayerBuilder::new(Backend::new(state.pool.clone()), sessions).build();

    let routes = generate_route_list(App);
    let leptos_state = state.clone();
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/logout", get(logout).post(logout))
        .leptos_routes_with_context(
            &state,
            routes,
            move || leptos::prelude::provide_context(leptos_state.clone()),
            {
                let options = state.leptos_options.clone();
                move || shell(options.clone())
            },
        )
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(middleware::from_fn(require_login))
        .layer(auth)
        // Added after the session layers: webhooks carry no cookies and need no session.
        .merge(crate::webhook::routes())
        .merge(crate::api::routes())
        .with_state(state);
    Ok(app)
}

/// Pages for logged-in users redirect to the login page, remembering where the user was going.
/// (Server functions check the session themselves.)
async fn require_login(session: AuthSession, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let guarded = ["/invoices", "/settings", "/activity"]
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}/")));
    if guarded && session.user.is_none() {
        let target = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/invoices");
        let query: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("next", target)
            .finish();
        return Redirect::to(&format!("/login?{query}")).into_response();
    }
    next.run(req).await
}

async fn logout(mut session: AuthSession) -> Response {
    if let Err(e) = session.logout().await {
        tracing::error!(error = %e, "logout failed");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    Redirect::to("/login").into_response()
}

async fn readyz(State(state): State<AppState>) -> Response {
    match sqlx::query("select 1").execute(&state.pool).await {
        Ok(_) => "ready".into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "readiness: database unreachable");
            (StatusCode::SERVICE_UNAVAILABLE, "database unreachable").into_response()
        }
    }
}

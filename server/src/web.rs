//! HTTP wiring: sessions, the login guard, Leptos pages and server functions, health checks.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::security::Guard;
use app::{shell, App};
use axum::extract::{FromRef, MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Extension;
use axum::Router;
use axum_login::AuthManagerLayerBuilder;
use invoicer_core::accounts::auth::{AuthSession, Backend};
use invoicer_core::AppState;
use leptos::config::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use tower_sessions::cookie::time;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};

/// Who may read `/metrics` on the public listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetricsAccess {
    /// Anyone (dev).
    Open,
    /// Only `Authorization: Bearer <token>`.
    Token(String),
    /// Nobody: metrics are on their own listener (METRICS_ADDR), or not configured in production.
    Off,
}

/// The state of the pages' routes: the app's, and Leptos' options for rendering them.
#[derive(Clone)]
struct Pages {
    state: AppState,
    options: LeptosOptions,
}

impl FromRef<Pages> for LeptosOptions {
    fn from_ref(pages: &Pages) -> Self {
        pages.options.clone()
    }
}

impl FromRef<Pages> for AppState {
    fn from_ref(pages: &Pages) -> Self {
        pages.state.clone()
    }
}

/// The session cookie's name: `__Host-` prefixed under https, so that it is `Secure`, for this
/// host only and the whole path, and no sibling subdomain can plant one.
pub fn session_cookie_name(https: bool) -> &'static str {
    if https {
        "__Host-invoicer_session"
    } else {
        "invoicer_session"
    }
}

/// Builds the whole application router. Starts the expired-session sweep and the throttle's
/// clean-up in the background.
pub async fn router(
    state: AppState,
    site: LeptosOptions,
    guard: Guard,
    metrics: MetricsAccess,
) -> anyhow::Result<Router> {
    prometheus();
    let store = crate::session_store::PgSessions::new(state.pool.clone());
    tokio::spawn(store.clone().sweep_expired(Duration::from_secs(600)));
    let throttle = state.throttle.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(60));
        loop {
            every.tick().await;
            throttle.forget_idle();
        }
    });
    let sessions = SessionManagerLayer::new(store)
        .with_name(session_cookie_name(guard.https))
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(guard.https)
        .with_path("/")
        .with_expiry(Expiry::OnInactivity(time::Duration::days(7)));
    let auth = AuthManagerLayerBuilder::new(Backend::new(state.pool.clone()), sessions)
        .with_data_key(invoicer_core::accounts::auth::LOGIN_DATA_KEY)
        .build();

    let routes = route_list().to_vec();
    let leptos_state = state.clone();
    let dev_reload = state
        .settings
        .dev_mode
        .then(|| format!("ws://{}:{}", site.site_addr.ip(), site.reload_port));
    let assets = crate::assets::routes(&site);
    let pages = Pages {
        state: state.clone(),
        options: site,
    };
    // The route table decides what is guarded: every page but the visitors' is a signed-in user's.
    let signed_in: Arc<HashSet<String>> = Arc::new(
        (routes.iter().map(|route| route.path().to_owned()))
            .filter(|path| !visitor_page(path))
            .collect(),
    );
    let pages = Router::<Pages>::new()
        .leptos_routes_with_context(
            &pages,
            routes,
            move || {
                leptos::prelude::provide_context(leptos_state.clone());
                page_csp(dev_reload.as_deref());
            },
            {
                let options = pages.options.clone();
                move || shell(options.clone())
            },
        )
        .layer(middleware::from_fn_with_state(signed_in, guard_pages))
        .fallback(leptos_axum::file_and_error_handler::<Pages, _>(shell))
        .with_state(pages);
    // The other routes of a signed-in user (uploads and reports) are guarded as their pages are.
    let signed_in = Router::new()
        .merge(crate::branding::session_routes())
        .merge(crate::reports::routes())
        .merge(crate::imports::routes())
        .route_layer(middleware::from_fn(require_login));
    let mut app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/logout", post(logout))
        .merge(signed_in)
        .merge(crate::exports::routes());
    if metrics != MetricsAccess::Off {
        app = app.route("/metrics", get(metrics_text));
    }
    let app = app
        .with_state(state.clone())
        .merge(pages)
        .layer(middleware::from_fn(errors_carry_their_status))
        .layer(auth)
        // Around the auth layer: the session load's statement also reads the user, and hands it
        // to the auth layer's user load in the same request.
        .layer(middleware::from_fn(|req: Request, next: Next| {
            invoicer_core::accounts::auth::with_session_user(next.run(req))
        }))
        .layer(middleware::from_fn(session_store_unavailable))
        .layer(middleware::from_fn_with_state(
            guard.clone(),
            crate::security::signed_form_errors,
        ))
        .layer(middleware::from_fn_with_state(
            guard.clone(),
            crate::security::same_origin_posts,
        ))
        // Added after the session layers: webhooks and the site's files need no session.
        .merge(assets)
        .merge(crate::webhook::routes().with_state(state.clone()))
        .merge(crate::peppol_webhook::routes().with_state(state.clone()))
        .merge(crate::api::routes().with_state(state.clone()))
        .merge(crate::public::routes().with_state(state.clone()))
        .merge(crate::branding::public_routes().with_state(state.clone()))
        .layer(Extension(metrics))
        .layer(middleware::from_fn_with_state(
            guard,
            crate::security::response_headers,
        ))
        .layer(crate::assets::compression())
        // Every request gets an id (or keeps the caller's x-request-id), carried by the span all its
        // log events are in, and sent back in the response.
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request| {
            let id = req
                .headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-");
            let path = redacted_path(req.uri().path());
            tracing::info_span!("request", request_id = %id, method = %req.method(), path = %path)
        }))
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(middleware::map_request(async |req: Request| {
            clean_request_id(req)
        }));
    Ok(app)
}

/// The largest server function error body read back to find its status.
const ERROR_BODY_MAX: usize = 64 * 1024;

/// A server function's error answers with its own status: a wrong password is a 400, a missing
/// session a 401, a spent allowance a 429 (with `Retry-After`), and only a real failure a 5xx. Leptos
/// answers every `Err` of a server function with 500 unless the function set a status itself; here
/// every such 500 of `/rpc/*` whose body is a client error gets that error's status, in one place
/// rather than at each `return Err(..)`. A plain form post's error keeps its redirect back to the
/// form and gets the error's `Retry-After`.
async fn errors_carry_their_status(req: Request, next: Next) -> Response {
    let rpc = req.uri().path().starts_with("/rpc/");
    let mut response = next.run(req).await;
    if rpc && response.status().is_redirection() {
        // A plain form post's error goes back to its page in the redirect's `__err` (the error's
        // JSON, base64url): the redirect keeps its status and gains the error's Retry-After.
        let after = response
            .headers()
            .get(axum::http::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .and_then(form_error)
            .and_then(|error| error.retry_after());
        if let Some(secs) = after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        return response;
    }
    if !rpc || response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, ERROR_BODY_MAX).await else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "Something went wrong on our side.",
        )
            .into_response();
    };
    if let Some(error) = model::error::AppError::from_body(&bytes) {
        parts.status = error.status_code();
        if let Some(secs) = error.retry_after() {
            parts
                .headers
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
    }
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

/// The error a failed plain form post carries back to its page (`__err` in the redirect's URL).
fn form_error(location: &str) -> Option<model::error::AppError> {
    use base64::Engine as _;
    let query = location.split_once('?')?.1;
    let encoded = form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "__err")?
        .1
        .into_owned();
    let json = base64::engine::general_purpose::URL_SAFE
        .decode(encoded)
        .ok()?;
    model::error::AppError::from_body(&json)
}

/// The app's route table, generated once per process. Generating it runs the whole app with
/// resource loading suppressed by a process-wide flag, and a resource first polled while that flag
/// is up (a page rendering meanwhile, in another router of the same process) waits forever
/// (leptos-rs/leptos#4773): so no render can overlap a generation, every router and every caller
/// takes this one list, which the first caller makes before any of them serves a page.
pub fn route_list() -> &'static [leptos_axum::AxumRouteListing] {
    static ROUTES: OnceLock<Vec<leptos_axum::AxumRouteListing>> = OnceLock::new();
    ROUTES.get_or_init(|| generate_route_list(App))
}

/// Whether `path` (a route of the table, as axum writes it: `/invite/{token}`) is one of
/// [`app::VISITOR_PAGES`] (as the table writes them: `/invite/:token`).
pub fn visitor_page(path: &str) -> bool {
    app::VISITOR_PAGES.iter().any(|page| {
        let mut written = page
            .split('/')
            .map(|segment| match segment.strip_prefix(':') {
                Some(name) => format!("{{{name}}}"),
                None => segment.to_owned(),
            });
        path.split('/')
            .all(|segment| written.next().as_deref() == Some(segment))
            && written.next().is_none()
    })
}

/// The pages of the route table that are a signed-in user's (`signed_in`, matched by the route that
/// answers) go through [`require_login`]; visitors' pages, server functions and files do not.
async fn guard_pages(
    State(signed_in): State<Arc<HashSet<String>>>,
    session: AuthSession,
    req: Request,
    next: Next,
) -> Response {
    let matched = req
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    if matched.is_some_and(|path| signed_in.contains(path)) {
        return require_login(session, req, next).await;
    }
    next.run(req).await
}

/// A signed-in user's routes (every page the route table does not give visitors, the uploads and
/// the reports) redirect a visitor to the login page, remembering where they were going. (Server
/// functions check the session themselves.)
async fn require_login(session: AuthSession, req: Request, next: Next) -> Response {
    if session.user.is_none() {
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

/// The render's Content-Security-Policy, with the nonce leptos_axum made for this render (its
/// hydration scripts carry it).
fn page_csp(dev_reload: Option<&str>) {
    use leptos::prelude::use_context;
    let nonce = leptos::nonce::use_nonce();
    if let (Some(nonce), Some(response)) = (nonce, use_context::<leptos_axum::ResponseOptions>()) {
        let policy = crate::security::page_csp(&nonce.to_string(), dev_reload);
        if let Ok(value) = axum::http::HeaderValue::from_str(&policy) {
            response.insert_header(axum::http::header::CONTENT_SECURITY_POLICY, value);
        }
    }
}

/// Logs out and ends the session's row (the sessions list no longer shows it).
async fn logout(State(state): State<AppState>, mut session: AuthSession) -> Response {
    if let Err(e) = invoicer_core::accounts::auth::log_out(&state.pool, &mut session).await {
        tracing::error!(error = %e, "logout failed");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    Redirect::to("/login").into_response()
}

/// The session and login layers answer a failure of their store (the sessions table, read and
/// written on every signed-in request) with a bare 500, before or after the handler. Their store is
/// the database, and what fails it is the database being away or read-only (a failover, a cut
/// connection): a 503 with Retry-After, whose retry sends the same attempt, which lands once.
/// Handlers' own errors always carry a body and pass untouched.
async fn session_store_unavailable(req: Request, next: Next) -> Response {
    use axum::body::HttpBody;
    let response = next.run(req).await;
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR
        || response.body().size_hint().exact() != Some(0)
    {
        return response;
    }
    tracing::warn!("the session store failed: answered 503, to be retried");
    let after = invoicer_core::surfaces::UNAVAILABLE_RETRY_AFTER.as_secs();
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [
            (axum::http::header::RETRY_AFTER, after.to_string()),
            (axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8".to_owned()),
        ],
        format!(
            "<!doctype html><html lang=\"en\"><title>Try again in a moment</title><h1>Try again in a \
             moment</h1><p>invoicer could not reach its database. Nothing you sent is lost or done \
             twice: go back and send it again in {after} seconds.</p></html>"
        ),
    )
        .into_response()
}

/// Ready only while the pool reaches a primary that takes writes: a standby (or a server in
/// read-only mode) is as useless to this app as none, and the balancer must take it out of rotation.
async fn readyz(State(state): State<AppState>) -> Response {
    let ping = tokio::time::timeout(
        Duration::from_secs(2),
        sqlx::query_scalar::<_, bool>(
            "select not pg_is_in_recovery() and current_setting('transaction_read_only') = 'off'",
        )
        .fetch_one(&state.pool),
    );
    match ping.await {
        Ok(Ok(true)) => "ready".into_response(),
        Ok(Ok(false)) => {
            tracing::warn!(
                "readiness: the database does not take writes (a standby, or read-only)"
            );
            (StatusCode::SERVICE_UNAVAILABLE, "database read-only").into_response()
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: database unreachable");
            (StatusCode::SERVICE_UNAVAILABLE, "database unreachable").into_response()
        }
        Err(_) => {
            tracing::warn!("readiness: database ping timed out");
            (StatusCode::SERVICE_UNAVAILABLE, "database unreachable").into_response()
        }
    }
}

/// The process-wide Prometheus recorder (the `metrics` facade is global by design), installed once.
pub fn prometheus() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            PrometheusBuilder::new()
                .set_buckets(&[
                    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                ])
                .expect("valid buckets")
                .install_recorder()
                .expect("no other metrics recorder")
        })
        .clone()
}

/// Prometheus text. Outbox gauges are read from the database at scrape time, through indexes that
/// hold only pending and dead rows: a scrape costs the same with a million sent emails as with none.
async fn metrics_text(
    State(state): State<AppState>,
    Extension(access): Extension<MetricsAccess>,
    headers: axum::http::HeaderMap,
) -> Response {
    match &access {
        MetricsAccess::Open => {}
        MetricsAccess::Token(token) => {
            let sent = headers
                .get(axum::http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or_default();
            let same: bool =
                subtle::ConstantTimeEq::ct_eq(sent.as_bytes(), token.as_bytes()).into();
            if !same {
                return StatusCode::UNAUTHORIZED.into_response();
            }
        }
        MetricsAccess::Off => return StatusCode::NOT_FOUND.into_response(),
    }
    match invoicer_core::outbox::gauges(&state.pool).await {
        Ok(o) => {
            metrics::gauge!("invoicer_outbox_pending").set(o.pending as f64);
            metrics::gauge!("invoicer_outbox_oldest_due_seconds").set(o.oldest_due_seconds);
            metrics::gauge!("invoicer_outbox_dead").set(o.dead as f64);
        }
        Err(e) => tracing::warn!(error = %e, "metrics: outbox gauges unavailable"),
    }
    match invoicer_core::jobs::schedules::run::backlog(&state.pool, chrono::Utc::now()).await {
        Ok((due, age)) => {
            metrics::gauge!("invoicer_schedule_runs_due").set(due as f64);
            metrics::gauge!("invoicer_schedule_oldest_due_seconds").set(age);
        }
        Err(e) => tracing::warn!(error = %e, "metrics: schedule gauges unavailable"),
    }
    match invoicer_core::jobs::reminders::backlog(&state.pool, chrono::Utc::now()).await {
        Ok(due) => metrics::gauge!("invoicer_reminders_due").set(due as f64),
        Err(e) => tracing::warn!(error = %e, "metrics: reminder gauge unavailable"),
    }
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        prometheus().render(),
    )
        .into_response()
}

/// The metrics on a listener of their own (METRICS_ADDR): `/metrics` only, no token.
pub fn metrics_router(state: AppState) -> Router {
    prometheus();
    Router::new()
        .route("/metrics", get(metrics_text))
        .layer(Extension(MetricsAccess::Open))
        .with_state(state)
}

/// The paths whose next segment is a secret (a customer's link, an invitation, a reset or a
/// verification link): logs and spans show it as `[redacted]`.
const SECRET_SEGMENTS: [&str; 7] = [
    "/i/",
    "/c/",
    "/q/",
    "/s/",
    "/invite/",
    "/reset-password/",
    "/verify-email/",
];

/// `path` as logs may show it: the secret segment of a link replaced.
pub fn redacted_path(path: &str) -> std::borrow::Cow<'_, str> {
    for prefix in SECRET_SEGMENTS {
        if let Some(rest) = path.strip_prefix(prefix) {
            let after = rest.find('/').map_or("", |i| &rest[i..]);
            return format!("{prefix}[redacted]{after}").into();
        }
    }
    path.into()
}

/// The longest request id kept from a caller, in characters.
pub const REQUEST_ID_MAX: usize = 128;

/// A caller's `x-request-id` as it may be stored and logged: its visible ASCII characters, at most
/// [`REQUEST_ID_MAX`] of them; none left, none kept (one is made up for the request).
pub fn clean_request_id(mut req: Request) -> Request {
    let headers = req.headers_mut();
    let cleaned = headers.get("x-request-id").map(|v| {
        v.as_bytes()
            .iter()
            .filter(|b| b.is_ascii_graphic())
            .take(REQUEST_ID_MAX)
            .map(|&b| b as char)
            .collect::<String>()
    });
    headers.remove("x-request-id");
    if let Some(id) = cleaned.filter(|id| !id.is_empty()) {
        headers.insert(
            "x-request-id",
            axum::http::HeaderValue::from_str(&id).expect("visible ASCII is a header value"),
        );
    }
    req
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_path_segments_are_redacted() {
        let token = "a".repeat(64);
        assert_eq!(redacted_path(&format!("/i/{token}")), "/i/[redacted]");
        assert_eq!(
            redacted_path(&format!("/i/{token}/pdf")),
            "/i/[redacted]/pdf"
        );
        assert_eq!(
            redacted_path(&format!("/i/{token}/pay")),
            "/i/[redacted]/pay"
        );
        assert_eq!(
            redacted_path(&format!("/q/{token}/accept")),
            "/q/[redacted]/accept"
        );
        for page in ["invite", "reset-password", "verify-email"] {
            assert_eq!(
                redacted_path(&format!("/{page}/{token}")),
                format!("/{page}/[redacted]")
            );
        }
        assert_eq!(redacted_path("/invoices/42"), "/invoices/42");
        assert_eq!(redacted_path("/rpc/reset_password"), "/rpc/reset_password");
    }

    #[test]
    fn request_ids_are_cut_to_visible_ascii_and_128_characters() {
        let with = |id: &[u8]| {
            let req = Request::builder()
                .header(
                    "x-request-id",
                    axum::http::HeaderValue::from_bytes(id).unwrap(),
                )
                .body(axum::body::Body::empty())
                .unwrap();
            clean_request_id(req)
                .headers()
                .get("x-request-id")
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let long = "r".repeat(5000);
        assert_eq!(with(long.as_bytes()).unwrap().len(), REQUEST_ID_MAX);
        assert_eq!(with(b"req 1\t\xff-2").as_deref(), Some("req1-2"));
        assert_eq!(with(b"   "), None);
        assert_eq!(with(b"ok-7").as_deref(), Some("ok-7"));
    }
}

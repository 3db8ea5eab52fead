//! A local Stripe for development and tests: the subset of Stripe's API invoicer calls, with
//! Stripe's idempotency semantics and error shapes, a hosted checkout page, and signed webhook
//! delivery retried until the app answers 2xx. Not part of the production binary.
//!
//! - `POST /v1/checkout/sessions` (form-encoded, `Authorization: Bearer <key>`, optional
//!   `Idempotency-Key`: the same key and parameters replay the first response with
//!   `Idempotent-Replayed: true`; the same key with other parameters is a 400 `idempotency_error`).
//! - `GET /v1/checkout/sessions/{id}`, `GET /v1/checkout/sessions` (a list, newest first).
//! - `GET /checkout/{id}`: the payment page: "Pay by card" (paid at once), "Pay by bank debit" (unpaid,
//!   then an asynchronous success), "Bank debit that fails" (unpaid, then an asynchronous failure),
//!   "Decline" (nothing happens; the session stays open).
//! - Events (`checkout.session.completed`, `..._async_payment_succeeded`, `..._async_payment_failed`)
//!   are signed with the endpoint secret and POSTed to the webhook URL, retried with backoff until
//!   2xx. With `chaos`, each event goes two or three times, some at once, in shuffled order.
//! - `POST /v1/refunds` (`payment_intent`, optional `amount`, `metadata[...]`; Stripe's idempotency
//!   semantics, and a 409 `idempotency_error` while a request under the same key is still being
//!   made) refunds a paid checkout's payment and sends `charge.refunded` with the cumulative
//!   `amount_refunded`; `GET /v1/refunds` (optional `payment_intent`, `limit`, `starting_after`)
//!   lists the refunds made, metadata included.
//! - `POST /v1/test_helpers/idempotency_keys/forget` (and [`LocalStripe::forget_idempotency_keys`])
//!   forgets every Idempotency-Key, as Stripe does after 24 hours: a key used again makes a new
//!   object.
//! - `POST /v1/test_helpers/checkout/sessions/{id}/hold_settlement` keeps that session's delayed
//!   settlement until `.../release_settlement` sends it, so a test can see a payment processing.
//!
//! Ids, event envelopes and signatures come from the shipped stand-in (`invoicer_core::stripe::standin`,
//! which `server stripe trigger` uses), so both send the same shapes.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use invoicer_core::stripe::standin;
use serde_json::{json, Value};

use delivery::{deliver_all, event, settlement};

mod delivery;
mod refunds;

#[derive(Debug, Clone)]
pub struct Config {
    /// The secret key requests must carry.
    pub api_key: String,
    /// Where events go (`<app>/webhooks/stripe`); none: no events are sent.
    pub webhook_url: Option<String>,
    /// The endpoint's `whsec_...` secret events are signed with.
    pub webhook_secret: String,
    /// Deliver each event two or three times, some concurrently, out of order.
    pub chaos: bool,
    /// Answer the first N session creations with a 500 (to exercise clients' retries).
    pub fail_first: u32,
    /// With it, each session creation waits for one permit of this semaphore before it is answered
    /// (tests hold Stripe's answer to look at the app meanwhile).
    pub hold: Option<Arc<tokio::sync::Semaphore>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            api_key: "sk_test_local".to_owned(),
            webhook_url: None,
            webhook_secret: "whsec_dev_invoicer".to_owned(),
            chaos: false,
            fail_first: 0,
            hold: None,
        }
    }
}

/// What an Idempotency-Key was first used with, and what was answered.
struct Keyed {
    params: Vec<(String, String)>,
    status: u16,
    body: Value,
}

#[derive(Default)]
struct Store {
    /// Sessions by id, with the order they were made in.
    sessions: HashMap<String, Value>,
    order: Vec<String>,
    /// Idempotency-Key → the first request under it.
    keys: HashMap<String, Keyed>,
    /// Idempotency-Keys of refunds whose first request is still being made.
    refunds_in_flight: HashSet<String>,
    /// Session creations answered (failures included), and events sent.
    create_calls: u64,
    expire_calls: u64,
    refund_calls: u64,
    /// Payment intent → the Stripe units refunded of it so far; the refunds made, oldest first.
    refunded: HashMap<String, i64>,
    refunds: Vec<Value>,
    events: Vec<Value>,
    /// Sessions whose delayed settlement waits for `release_settlement` (tests that must see a
    /// payment processing): the settlement events once the session is paid.
    held: HashMap<String, Vec<Value>>,
}

#[derive(Clone)]
struct Shared {
    config: Config,
    /// Where events go now (set at start from the config, or later).
    webhook_url: Arc<Mutex<Option<String>>>,
    base: String,
    store: Arc<Mutex<Store>>,
    http: reqwest::Client,
    /// Session creations received, answered or not.
    arrived: Arc<std::sync::atomic::AtomicU64>,
    /// With it, each refund waits for one permit of this semaphore before it is made (tests hold
    /// Stripe's answer, with the request in progress).
    refund_hold: Arc<Mutex<Option<Arc<tokio::sync::Semaphore>>>>,
}

/// A running local Stripe.
pub struct LocalStripe {
    pub base: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl LocalStripe {
    /// Serves on `addr` (port 0: any free port).
    pub async fn start(addr: SocketAddr, config: Config) -> anyhow::Result<LocalStripe> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let base = format!("http://{}", listener.local_addr()?);
        let shared = Shared {
            webhook_url: Arc::new(Mutex::new(config.webhook_url.clone())),
            config,
            base: base.clone(),
            store: Arc::default(),
            arrived: Arc::default(),
            refund_hold: Arc::default(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()?,
        };
        let api = Router::new()
            .route(
                "/v1/checkout/sessions",
                post(create_session).get(list_sessions),
            )
            .route("/v1/checkout/sessions/{id}", get(get_session))
            .route("/v1/checkout/sessions/{id}/expire", post(expire_session))
            .route(
                "/v1/refunds",
                post(refunds::create_refund).get(refunds::list_refunds),
            )
            .route(
                "/v1/test_helpers/idempotency_keys/forget",
                post(forget_keys),
            )
            .route_layer(axum::middleware::from_fn_with_state(
                shared.clone(),
                require_key,
            ));
        let router = api
            .route("/checkout/{id}", get(checkout_page))
            .route("/checkout/{id}/pay", post(pay))
            .route(
                "/v1/test_helpers/checkout/sessions/{id}/{helper}",
                post(settlement),
            )
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok(LocalStripe { base, shared, task })
    }

    /// Sends events to `url` from now on (an app started after this).
    pub fn send_events_to(&self, url: &str) {
        *self.shared.webhook_url.lock().unwrap() = Some(url.to_owned());
    }

    /// A session's status (`open`, `complete`, `expired`), if it exists.
    pub fn session_status(&self, id: &str) -> Option<String> {
        let store = self.shared.store.lock().unwrap();
        let status = store.sessions.get(id)?["status"].as_str()?.to_owned();
        Some(status)
    }

    /// Forgets every Idempotency-Key, as Stripe does once they are 24 hours old: the same key again
    /// is a new request. Returns how many were forgotten.
    pub fn forget_idempotency_keys(&self) -> usize {
        forget(&self.shared)
    }

    /// Expirations asked for (replays of an Idempotency-Key included).
    pub fn expire_calls(&self) -> u64 {
        self.shared.store.lock().unwrap().expire_calls
    }

    /// Refunds asked for (replays of an Idempotency-Key and refusals included).
    pub fn refund_calls(&self) -> u64 {
        self.shared.store.lock().unwrap().refund_calls
    }

    /// How many session creations were received, answered or not yet.
    pub fn arrived(&self) -> u64 {
        self.shared
            .arrived
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many session creations were answered (successes, replays and failures).
    pub fn create_calls(&self) -> u64 {
        self.shared.store.lock().unwrap().create_calls
    }

    /// The sessions made (replays of a key make none).
    pub fn session_count(&self) -> usize {
        self.shared.store.lock().unwrap().order.len()
    }

    /// The events sent so far (each once, whatever the deliveries).
    pub fn events(&self) -> Vec<Value> {
        self.shared.store.lock().unwrap().events.clone()
    }

    /// Pays session `id` as its page would (`card`, `bank`, `bank_fail`, `decline`).
    pub async fn pay(&self, id: &str, method: &str) -> anyhow::Result<()> {
        let form = [("method", method)];
        // As the page's form would, without following the customer back to the app.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let res = http
            .post(format!("{}/checkout/{id}/pay", self.base))
            .form(&form)
            .send()
            .await?;
        anyhow::ensure!(
            res.status().is_success() || res.status().is_redirection(),
            "paying {id}: {}",
            res.status()
        );
        Ok(())
    }
}

impl Drop for LocalStripe {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `body` with `status`, marked `Idempotent-Replayed` when it is the first answer to a key again.
fn answer(status: u16, body: Value, replayed: bool) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let mut response = (status, Json(body)).into_response();
    if replayed {
        let headers = response.headers_mut();
        headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

/// Runs `work` once per `Idempotency-Key` of the endpoint `scope`, as Stripe does: a repeat with the
/// same parameters gets the first answer (`Idempotent-Replayed: true`), with other parameters a 400
/// `idempotency_error`; without a key it runs every time. `work` answers `Err` with what Stripe does
/// not store under the key (its own 500s): the retry runs anew.
fn once(
    store: &mut Store,
    headers: &HeaderMap,
    scope: &str,
    params: Vec<(String, String)>,
    work: impl FnOnce(&mut Store, &[(String, String)]) -> Result<(u16, Value), (u16, Value)>,
) -> Response {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(|k| format!("{scope}:{k}"));
    if let Some(first) = key.as_ref().and_then(|k| store.keys.get(k)) {
        if first.params != params {
            let key = key.as_deref().unwrap_or_default();
            let key = key.split_once(':').map_or(key, |(_, k)| k);
            return stripe_error(
                StatusCode::BAD_REQUEST,
                "idempotency_error",
                None,
                &format!(
                    "Keys for idempotent requests can only be used with the same parameters \
                     they were first used with. Try using a key other than '{key}' if you \
                     meant to execute a different request."
                ),
            );
        }
        return answer(first.status, first.body.clone(), true);
    }
    let (status, body) = match work(store, &params) {
        Ok(answered) => answered,
        Err((status, body)) => return answer(status, body, false),
    };
    if let Some(key) = key {
        let keyed = Keyed {
            params,
            status,
            body: body.clone(),
        };
        store.keys.insert(key, keyed);
    }
    answer(status, body, false)
}

fn forget(shared: &Shared) -> usize {
    let mut store = shared.store.lock().unwrap();
    let forgotten = store.keys.len();
    store.keys.clear();
    forgotten
}

/// `POST /v1/test_helpers/idempotency_keys/forget`: a day has passed, as far as the keys go.
async fn forget_keys(State(shared): State<Shared>) -> Json<Value> {
    Json(json!({ "forgotten": forget(&shared) }))
}

/// Stripe's error object: `{"error": {"type", "code"?, "message"}}`.
fn error_body(kind: &str, code: Option<&str>, message: &str) -> Value {
    let mut error = json!({ "type": kind, "message": message });
    if let Some(code) = code {
        error["code"] = code.into();
    }
    json!({ "error": error })
}

fn stripe_error(status: StatusCode, kind: &str, code: Option<&str>, message: &str) -> Response {
    answer(status.as_u16(), error_body(kind, code, message), false)
}

/// Lets through only requests that carry the configured key (every `/v1/` route but the test
/// helpers).
async fn require_key(
    State(shared): State<Shared>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match unauthorised(&shared, request.headers()) {
        Some(denied) => denied,
        None => next.run(request).await,
    }
}

/// The refusal of a request without the configured key, or none. As at Stripe, the key comes as a
/// bearer token or as the user name of basic authentication (`curl -u sk_test_...:`).
fn unauthorised(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    use base64::Engine;
    let key = &shared.config.api_key;
    let bearer = format!("Bearer {key}");
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{key}:"))
    );
    match headers.get(header::AUTHORIZATION) {
        Some(v) if v.as_bytes() == bearer.as_bytes() || v.as_bytes() == basic.as_bytes() => None,
        _ => Some(stripe_error(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            None,
            "Invalid API Key provided.",
        )),
    }
}

async fn create_session(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Form(params): Form<Vec<(String, String)>>,
) -> Response {
    shared
        .arrived
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    if let Some(hold) = &shared.config.hold {
        hold.acquire().await.expect("never closed").forget();
    }
    let mut params = params;
    params.sort();
    let mut store = shared.store.lock().unwrap();
    store.create_calls += 1;
    once(&mut store, &headers, "session", params, |store, params| {
        if store.create_calls <= u64::from(shared.config.fail_first) {
            // Not stored under the key, as Stripe does for its own errors: the retry runs anew.
            let message = "An unknown error occurred (the local Stripe's fail_first).";
            return Err((500, error_body("api_error", None, message)));
        }
        Ok(new_session(store, &shared.base, params))
    })
}

/// A checkout session made from `params` (sorted form fields), or Stripe's 400 for missing or
/// invalid ones.
fn new_session(store: &mut Store, base: &str, params: &[(String, String)]) -> (u16, Value) {
    let p: HashMap<&str, &str> = params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let missing = [
        "mode",
        "success_url",
        "line_items[0][price_data][currency]",
        "line_items[0][price_data][unit_amount]",
    ]
    .into_iter()
    .find(|name| !p.contains_key(name));
    match missing {
        Some(name) => {
            let message = format!("Missing required param: {name}.");
            let mut body = error_body("invalid_request_error", Some("parameter_missing"), &message);
            body["error"]["param"] = name.into();
            (400, body)
        }
        None => {
            let unit: i64 = p["line_items[0][price_data][unit_amount]"]
                .parse()
                .unwrap_or(-1);
            let quantity: i64 = p
                .get("line_items[0][quantity]")
                .map_or(Some(1), |q| q.parse().ok())
                .unwrap_or(-1);
            if unit < 0 || quantity < 1 || p["mode"] != "payment" {
                let message = "Invalid mode, unit_amount or quantity.";
                (400, error_body("invalid_request_error", None, message))
            } else {
                let id = standin::stripe_id("cs_test");
                let now = chrono::Utc::now().timestamp();
                let expires_at = p
                    .get("expires_at")
                    .and_then(|e| e.parse::<i64>().ok())
                    .unwrap_or(now + 24 * 3600);
                let metadata: serde_json::Map<String, Value> = params
                    .iter()
                    .filter_map(|(k, v)| {
                        let name = k.strip_prefix("metadata[")?.strip_suffix(']')?;
                        Some((name.to_owned(), Value::from(v.as_str())))
                    })
                    .collect();
                let session = json!({
                    "id": id,
                    "object": "checkout.session",
                    "amount_total": unit * quantity,
                    "currency": p["line_items[0][price_data][currency]"],
                    "client_reference_id": p.get("client_reference_id"),
                    "customer_email": p.get("customer_email"),
                    "metadata": metadata,
                    "mode": "payment",
                    "livemode": false,
                    "status": "open",
                    "payment_status": "unpaid",
                    "payment_intent": Value::Null,
                    "success_url": p["success_url"],
                    "cancel_url": p.get("cancel_url"),
                    "expires_at": expires_at,
                    "created": now,
                    "url": format!("{base}/checkout/{id}"),
                });
                store.sessions.insert(id.clone(), session.clone());
                store.order.push(id);
                (200, session)
            }
        }
    }
}

async fn get_session(State(shared): State<Shared>, Path(id): Path<String>) -> Response {
    match shared.store.lock().unwrap().sessions.get(&id) {
        Some(session) => Json(session.clone()).into_response(),
        None => stripe_error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            Some("resource_missing"),
            &format!("No such checkout.session: '{id}'"),
        ),
    }
}

/// `POST /v1/checkout/sessions/{id}/expire`: an open session is expired (nobody can pay it any
/// more); any other status is refused as Stripe does. A replayed Idempotency-Key gets the first
/// answer.
async fn expire_session(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let mut store = shared.store.lock().unwrap();
    store.expire_calls += 1;
    once(&mut store, &headers, "expire", Vec::new(), |store, _| {
        Ok(match store.sessions.get_mut(&id) {
            None => {
                let message = format!("No such checkout.session: '{id}'");
                let code = Some("resource_missing");
                (404, error_body("invalid_request_error", code, &message))
            }
            Some(session) if session["status"] != "open" => {
                let message = "Only Checkout Sessions with a status in [\"open\"] can be expired.";
                (400, error_body("invalid_request_error", None, message))
            }
            Some(session) => {
                session["status"] = json!("expired");
                (200, session.clone())
            }
        })
    })
}

async fn list_sessions(State(shared): State<Shared>) -> Response {
    let store = shared.store.lock().unwrap();
    let data: Vec<Value> = store
        .order
        .iter()
        .rev()
        .map(|id| store.sessions[id].clone())
        .collect();
    Json(json!({ "object": "list", "data": data, "has_more": false })).into_response()
}

/// The page of a session that does not exist, and the note on one nobody can pay any more.
fn no_such_session() -> Response {
    let page = Html("<h1>No such checkout session</h1>");
    (StatusCode::NOT_FOUND, page).into_response()
}
const CLOSED: &str = "<p class=\"closed\">This checkout session is no longer open.</p>";

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

async fn checkout_page(State(shared): State<Shared>, Path(id): Path<String>) -> Response {
    let Some(session) = shared.store.lock().unwrap().sessions.get(&id).cloned() else {
        return no_such_session();
    };
    let amount = session["amount_total"].as_i64().unwrap_or(0);
    let currency = session["currency"]
        .as_str()
        .unwrap_or("")
        .to_ascii_uppercase();
    let open = session["status"] == "open";
    let buttons = if open {
        let id = escape(&id);
        [
            ("card", "Pay by card"),
            ("bank", "Pay by bank debit"),
            ("bank_fail", "Bank debit that fails"),
            ("decline", "Decline"),
        ]
        .iter()
        .map(|(method, label)| {
            format!(
                "<form method=\"post\" action=\"/checkout/{id}/pay\"><input type=\"hidden\" \
                 name=\"method\" value=\"{method}\"><button type=\"submit\" class=\"{method}\">\
                 {label}</button></form>"
            )
        })
        .collect::<String>()
    } else {
        CLOSED.to_owned()
    };
    Html(format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width, initial-scale=1\"><title>Local Stripe checkout</title></head>\
         <body><main><h1>Local Stripe checkout</h1><p class=\"amount\">{amount} {currency} \
         (minor units)</p>{buttons}</main></body></html>"
    ))
    .into_response()
}

#[derive(serde::Deserialize)]
struct PayForm {
    method: String,
}

async fn pay(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    Form(form): Form<PayForm>,
) -> Response {
    let (session, events) = {
        let mut store = shared.store.lock().unwrap();
        let Some(session) = store.sessions.get_mut(&id) else {
            return no_such_session();
        };
        if session["status"] != "open" {
            return Html(CLOSED).into_response();
        }
        if form.method == "decline" {
            let back = session["cancel_url"].as_str().unwrap_or("/").to_owned();
            return Html(format!(
                "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Declined\
                 </title></head><body><main><h1 class=\"declined\">Your card was declined</h1>\
                 <p><a href=\"{}\">Back to the invoice</a></p></main></body></html>",
                escape(&back)
            ))
            .into_response();
        }
        let (paid_now, later) = match form.method.as_str() {
            "card" => ("paid", None),
            "bank" => ("unpaid", Some("checkout.session.async_payment_succeeded")),
            "bank_fail" => ("unpaid", Some("checkout.session.async_payment_failed")),
            _ => return (StatusCode::BAD_REQUEST, "unknown method").into_response(),
        };
        session["status"] = "complete".into();
        session["payment_status"] = paid_now.into();
        session["payment_intent"] = standin::payment_intent_id().into();
        session["url"] = Value::Null;
        let mut events = vec![event("checkout.session.completed", session.clone())];
        let mut settlement = Vec::new();
        if let Some(kind) = later {
            let mut settled = session.clone();
            settled["payment_status"] = standin::session_payment_status(kind, paid_now).into();
            settlement.push(event(kind, settled));
        }
        let session = session.clone();
        match store.held.get_mut(&id) {
            Some(held) => held.extend(settlement),
            None => events.extend(settlement),
        }
        store.events.extend(events.iter().cloned());
        (session, events)
    };
    deliver_all(shared, events);
    let success = session["success_url"].as_str().unwrap_or("/").to_owned();
    (StatusCode::SEE_OTHER, [(header::LOCATION, success)]).into_response()
}

//! How the local Stripe's API answers, as Stripe does: its error objects, the refusal of a request
//! without the configured key, and each Idempotency-Key's first answer replayed (or refused for
//! other parameters).

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::{Keyed, Shared, Store};

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
pub(super) fn once(
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

pub(super) fn forget(shared: &Shared) -> usize {
    let mut store = shared.store.lock().unwrap();
    let forgotten = store.keys.len();
    store.keys.clear();
    forgotten
}

/// `POST /v1/test_helpers/idempotency_keys/forget`: a day has passed, as far as the keys go.
pub(super) async fn forget_keys(State(shared): State<Shared>) -> Json<Value> {
    Json(json!({ "forgotten": forget(&shared) }))
}

/// The `metadata[...]` fields of a request's form as an object.
pub(super) fn metadata(params: &[(String, String)]) -> serde_json::Map<String, Value> {
    params
        .iter()
        .filter_map(|(k, v)| {
            let name = k.strip_prefix("metadata[")?.strip_suffix(']')?;
            Some((name.to_owned(), Value::from(v.as_str())))
        })
        .collect()
}

/// Stripe's 400 for a parameter the request lacks.
pub(super) fn missing_param(name: &str) -> (u16, Value) {
    let message = format!("Missing required param: {name}.");
    let mut body = error_body("invalid_request_error", Some("parameter_missing"), &message);
    body["error"]["param"] = name.into();
    (400, body)
}

/// Stripe's error object: `{"error": {"type", "code"?, "message"}}`.
pub(super) fn error_body(kind: &str, code: Option<&str>, message: &str) -> Value {
    let mut error = json!({ "type": kind, "message": message });
    if let Some(code) = code {
        error["code"] = code.into();
    }
    json!({ "error": error })
}

pub(super) fn stripe_error(
    status: StatusCode,
    kind: &str,
    code: Option<&str>,
    message: &str,
) -> Response {
    answer(status.as_u16(), error_body(kind, code, message), false)
}

/// Lets through only requests that carry the configured key (every `/v1/` route but the test
/// helpers).
pub(super) async fn require_key(
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
pub(super) fn unauthorised(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
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

/// The page of a checkout session that does not exist.
pub(super) fn no_such_session() -> Response {
    let page = axum::response::Html("<h1>No such checkout session</h1>");
    (StatusCode::NOT_FOUND, page).into_response()
}

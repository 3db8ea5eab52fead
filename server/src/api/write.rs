//! What every idempotent write of the API shares: the attempt, the body read and checked before
//! anything is claimed (an invalid request is not stored, so its key stays usable), and the answer
//! from the surface's outcome (a replay is the stored response, byte for byte).

use std::collections::BTreeMap;

use app::ssr::api_keys::ApiClient;
use app::ssr::claim::StoredResponse;
use app::ssr::observe::{Attempt, Surface};
use app::ssr::surfaces::api::ApiOutcome;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::problem::{internal, problem, ProblemResponse};

/// The attempt of a write by `client`, named by its Idempotency-Key as sent (checked later).
pub(super) fn attempt(client: ApiClient, headers: &HeaderMap) -> Attempt {
    let key = headers
        .get("idempotency-key")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let request_id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let attempt = Attempt::new(Surface::Api, key, request_id);
    attempt.identify(client.key_id.to_string(), Some(client.org_id));
    attempt
}

/// The body as JSON (for the fingerprint) and as a `T` that passes `check`; `what` names it in
/// problems (`invalid-<what>`).
pub(super) fn json_body<T: DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    what: &str,
    check: impl FnOnce(&T) -> Result<(), BTreeMap<String, String>>,
) -> Result<(serde_json::Value, T), ProblemResponse> {
    let value: serde_json::Value = serde_json::from_slice(&body?).map_err(|e| {
        problem(
            StatusCode::BAD_REQUEST,
            "malformed-json",
            "Malformed JSON",
            format!("The body is not JSON: {e}"),
        )
    })?;
    let slug = format!("invalid-{what}");
    let title = format!("Invalid {what}");
    let input: T = serde_json::from_value(value.clone()).map_err(|e| {
        problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            &slug,
            &title,
            e.to_string(),
        )
    })?;
    check(&input).map_err(|fields| invalid(what, fields))?;
    Ok((value, input))
}

/// 422 `invalid-<what>` with the field errors (nothing was claimed: the key stays usable).
pub(super) fn invalid(what: &str, fields: BTreeMap<String, String>) -> ProblemResponse {
    let mut p = problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        &format!("invalid-{what}"),
        &format!("Invalid {what}"),
        "Some fields are invalid; see `errors`.",
    );
    p.problem.errors = Some(fields);
    p
}

/// The HTTP answer of a write's outcome.
pub(super) fn answer(outcome: ApiOutcome) -> Result<Response, ProblemResponse> {
    match outcome {
        ApiOutcome::Created { response, .. } => Ok(stored_to_response(response, false)),
        ApiOutcome::Replayed { response, .. } => Ok(stored_to_response(response, true)),
        ApiOutcome::InFlight { retry_after } => Err(problem(
            StatusCode::CONFLICT,
            "in-flight",
            "Request in flight",
            "A request with this Idempotency-Key is still being processed. Retry later.",
        )
        .retry_after(retry_after)),
        ApiOutcome::Mismatch => Err(problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency-key-reused",
            "Idempotency-Key already used with a different request",
            "This key was used for a request with another method, path or body. Use a new key.",
        )),
    }
}

fn stored_to_response(stored: StoredResponse, replayed: bool) -> Response {
    let mut builder = Response::builder().status(stored.status);
    if let Some(headers) = stored.headers.as_object() {
        for (name, value) in headers {
            if let Some(value) = value.as_str() {
                builder = builder.header(name.as_str(), value);
            }
        }
    }
    if replayed {
        builder = builder.header("idempotent-replayed", "true");
    }
    builder
        .body(Body::from(stored.body))
        .unwrap_or_else(|e| internal("rebuilding a stored response", e).into_response())
}

/// RFC 7396 JSON merge patch: objects merge key by key, `null` removes, anything else replaces.
pub(super) fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    use serde_json::Value;
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    let target = target.as_object_mut().expect("made an object above");
    for (name, value) in fields {
        if value.is_null() {
            target.remove(name);
        } else {
            merge_patch(target.entry(name.clone()).or_insert(Value::Null), value);
        }
    }
}

/// The stored answer of a problem (a lifecycle refusal is as final for its key as a success).
pub(super) fn stored_problem(p: ProblemResponse) -> StoredResponse {
    StoredResponse {
        status: p.status.as_u16(),
        headers: serde_json::json!({ "content-type": "application/problem+json" }),
        body: serde_json::to_vec(&p.problem).expect("problems serialise"),
    }
}

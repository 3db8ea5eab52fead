//! The checkout sessions API: `POST /v1/checkout/sessions` (made from Stripe's form fields, or
//! refused with Stripe's 400), `GET` one or the list, and `POST .../{id}/expire`.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};
use invoicer_core::payments::stripe::standin;
use serde_json::{json, Value};

use super::answers::{error_body, metadata, missing_param, once, stripe_error};
use super::{Shared, Store};

pub(super) async fn create_session(
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
    if p.get("mode") == Some(&"setup") {
        return super::setup::new_setup_session(store, base, params);
    }
    let missing = [
        "mode",
        "success_url",
        "line_items[0][price_data][currency]",
        "line_items[0][price_data][unit_amount]",
    ]
    .into_iter()
    .find(|name| !p.contains_key(name));
    match missing {
        Some(name) => missing_param(name),
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
                let metadata = metadata(params);
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

pub(super) async fn get_session(State(shared): State<Shared>, Path(id): Path<String>) -> Response {
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
pub(super) async fn expire_session(
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

pub(super) async fn list_sessions(State(shared): State<Shared>) -> Response {
    let store = shared.store.lock().unwrap();
    let data: Vec<Value> = store
        .order
        .iter()
        .rev()
        .map(|id| store.sessions[id].clone())
        .collect();
    Json(json!({ "object": "list", "data": data, "has_more": false })).into_response()
}

//! The local Stripe's webhook deliveries: events built and signed by the shipped stand-in, POSTed
//! to the app and retried with backoff until it answers 2xx, or with chaos.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use invoicer_core::payments::stripe::standin;
use serde_json::{json, Value};

use super::answers::no_such_session;
use super::answers::unauthorised;
use super::Shared;

/// A test-mode event of `kind` about `session`, with a fresh id.
pub(super) fn event(kind: &str, session: Value) -> Value {
    standin::event(&standin::event_id(), kind, false, session)
}

/// Sends `events` in the background, in order (a delayed method's settlement after its completion),
/// or with chaos: each two or three times, some at once, in shuffled order.
pub(super) fn deliver_all(shared: Shared, events: Vec<Value>) {
    let Some(url) = shared.webhook_url.lock().unwrap().clone() else {
        return;
    };
    tokio::spawn(async move {
        if !shared.config.chaos {
            for e in events {
                deliver(&shared, &url, &e.to_string()).await;
            }
            return;
        }
        let mut copies: Vec<String> = events
            .iter()
            .flat_map(|e| std::iter::repeat_n(e.to_string(), fastrand::usize(2..=3)))
            .collect();
        fastrand::shuffle(&mut copies);
        let mut sends = Vec::new();
        for payload in copies {
            let (shared, url) = (shared.clone(), url.clone());
            // Half go at once, the others after a short random pause: overlaps and reorderings.
            let pause = if fastrand::bool() {
                Duration::ZERO
            } else {
                Duration::from_millis(fastrand::u64(5..150))
            };
            sends.push(tokio::spawn(async move {
                tokio::time::sleep(pause).await;
                deliver(&shared, &url, &payload).await;
            }));
        }
        for send in sends {
            let _ = send.await;
        }
    });
}

/// One event, signed now, retried with backoff until the app answers 2xx (or ten tries).
async fn deliver(shared: &Shared, url: &str, payload: &str) {
    let mut pause = Duration::from_millis(200);
    for _ in 0..10 {
        let secret = &shared.config.webhook_secret;
        let sent = standin::signed_post(&shared.http, url, secret, payload)
            .send()
            .await;
        if sent.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(10));
    }
    eprintln!("local stripe: gave up delivering an event to {url}");
}

/// Test helpers for session `id`: `hold_settlement` keeps its delayed settlement (a bank debit's
/// success or failure) so a test can see the payment processing first; `release_settlement` sends
/// what was kept and stops holding it.
pub(super) async fn settlement(
    State(shared): State<Shared>,
    Path((id, helper)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(denied) = unauthorised(&shared, &headers) {
        return denied;
    }
    if helper == "hold_settlement" {
        let mut store = shared.store.lock().unwrap();
        if !store.sessions.contains_key(&id) && !store.intents.contains_key(&id) {
            return no_such_session();
        }
        store.held.entry(id.clone()).or_default();
        return Json(json!({ "id": id, "settlement": "held" })).into_response();
    }
    match (helper.as_str(), release(&shared, &id)) {
        ("release_settlement", Some(released)) => {
            Json(json!({ "id": id, "released": released })).into_response()
        }
        _ => no_such_session(),
    }
}

/// Sends what was held for session or PaymentIntent `id` and stops holding it; how many events,
/// or none if nothing was held.
pub(super) fn release(shared: &Shared, id: &str) -> Option<usize> {
    let events = {
        let mut store = shared.store.lock().unwrap();
        let events = store.held.remove(id)?;
        store.events.extend(events.iter().cloned());
        events
    };
    let released = events.len();
    deliver_all(shared.clone(), events);
    Some(released)
}

//! `POST /v1/refunds`: a refund of a paid checkout's payment intent, as Stripe makes one: form
//! encoded, the whole rest or `amount` of it (Stripe's units), Stripe's idempotency semantics (a
//! request under a key whose first request is still being made is a 409 and stores nothing), and a
//! `charge.refunded` event carrying the cumulative `amount_refunded` (and `refunded` once all of it
//! went back), delivered like every other event. `GET /v1/refunds` pages through them as Stripe's
//! lists do.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::{Form, Json};
use invoicer_core::payments::stripe::standin;
use serde_json::{json, Value};

use super::answers::{error_body, once, stripe_error};
use super::delivery::{deliver_all, event};
use super::{Shared, Store};

/// A refund's Idempotency-Key while its first request is being made; given back when it is over
/// (answered, or the request dropped).
struct InFlight {
    store: Arc<Mutex<Store>>,
    key: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Ok(mut store) = self.store.lock() {
            store.refunds_in_flight.remove(&self.key);
        }
    }
}

pub(super) async fn create_refund(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Form(params): Form<Vec<(String, String)>>,
) -> Response {
    let mut params = params;
    params.sort();
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let in_flight = {
        let mut store = shared.store.lock().unwrap();
        store.refund_calls += 1;
        match key {
            None => None,
            Some(key) => {
                // As at Stripe: no answer is stored under the key for this one; try again later.
                if !store.refunds_in_flight.insert(key.clone()) {
                    return in_progress(&key);
                }
                Some(InFlight {
                    store: shared.store.clone(),
                    key,
                })
            }
        }
    };
    let hold = shared.refund_hold.lock().unwrap().clone();
    if let Some(hold) = hold {
        hold.acquire().await.expect("never closed").forget();
    }
    let mut events = Vec::new();
    let response = {
        let mut store = shared.store.lock().unwrap();
        let response = once(&mut store, &headers, "refund", params, |store, params| {
            Ok(refund(store, params, &mut events))
        });
        store.events.extend(events.iter().cloned());
        response
    };
    drop(in_flight);
    deliver_all(shared, events);
    response
}

/// Stripe's answer to a request under an Idempotency-Key whose first request is still being made.
fn in_progress(key: &str) -> Response {
    let message = format!(
        "There is currently another in-progress request using this Idempotency-Key ('{key}'). \
         Please try again later."
    );
    stripe_error(StatusCode::CONFLICT, "idempotency_error", None, &message)
}

/// The refund `params` ask for, or Stripe's 400 saying why not; its event goes to `events`.
fn refund(store: &mut Store, params: &[(String, String)], events: &mut Vec<Value>) -> (u16, Value) {
    let p: HashMap<&str, &str> = params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let invalid = |code: Option<&str>, message: &str| {
        (400, error_body("invalid_request_error", code, message))
    };
    let Some(&intent) = p.get("payment_intent") else {
        return invalid(
            Some("parameter_missing"),
            "Missing required param: payment_intent.",
        );
    };
    let paid = store
        .sessions
        .values()
        .find(|s| s["payment_intent"] == intent && s["payment_status"] == "paid")
        .cloned();
    let Some(session) = paid else {
        let message = format!("No such payment_intent: '{intent}'");
        return invalid(Some("resource_missing"), &message);
    };
    let total = session["amount_total"].as_i64().unwrap_or(0);
    let before = store.refunded.get(intent).copied().unwrap_or(0);
    let left = total - before;
    if left == 0 {
        let message = format!("Charge for payment_intent {intent} has already been refunded.");
        return invalid(Some("charge_already_refunded"), &message);
    }
    let amount = match p.get("amount") {
        None => left,
        Some(text) => text.parse::<i64>().unwrap_or(-1),
    };
    if amount <= 0 || amount > left {
        let message = format!(
            "Refund amount ({amount}) must be above 0 and at most the unrefunded amount on the \
             charge ({left})."
        );
        return invalid(Some("amount_too_large"), &message);
    }
    let refunded = before + amount;
    store.refunded.insert(intent.to_owned(), refunded);
    let metadata = super::answers::metadata(params);
    let currency = session["currency"].clone();
    events.push(event(
        "charge.refunded",
        json!({
            "id": standin::stripe_id("ch"),
            "object": "charge",
            "payment_intent": intent,
            "amount": total,
            "amount_refunded": refunded,
            "currency": currency,
            "refunded": refunded == total,
        }),
    ));
    let made = json!({
        "id": standin::stripe_id("re"),
        "object": "refund",
        "amount": amount,
        "currency": currency,
        "payment_intent": intent,
        "status": "succeeded",
        "reason": p.get("reason"),
        "metadata": metadata,
        "created": chrono::Utc::now().timestamp(),
    });
    store.refunds.push(made.clone());
    (200, made)
}

/// `GET /v1/refunds`: the refunds made (of `payment_intent`, when given), newest first, as
/// Stripe's list object: `limit` of them (10 unless asked, at most 100), after the refund
/// `starting_after` when given, and `has_more` when the list goes on.
pub(super) async fn list_refunds(
    State(shared): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Json<Value> {
    let limit = query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(10)
        .clamp(1, 100);
    let store = shared.store.lock().unwrap();
    let newest_first = store.refunds.iter().rev().filter(|r| {
        query
            .get("payment_intent")
            .is_none_or(|pi| r["payment_intent"] == pi.as_str())
    });
    let mut data: Vec<Value> = match query.get("starting_after") {
        None => newest_first.cloned().collect(),
        Some(after) => newest_first
            .skip_while(|r| r["id"] != after.as_str())
            .skip(1)
            .cloned()
            .collect(),
    };
    let has_more = data.len() > limit;
    data.truncate(limit);
    Json(json!({"object": "list", "url": "/v1/refunds", "has_more": has_more, "data": data}))
}

impl super::LocalStripe {
    /// The refunds made so far (a replayed request makes none), oldest first.
    pub fn refunds(&self) -> Vec<Value> {
        self.shared.store.lock().unwrap().refunds.clone()
    }

    /// From now on each refund waits for a permit of `hold` before it is made, its request in
    /// progress meanwhile (another under the same key is answered 409).
    pub fn hold_refunds(&self, hold: Arc<tokio::sync::Semaphore>) {
        *self.shared.refund_hold.lock().unwrap() = Some(hold);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Config, LocalStripe};

    const KEY: &str = "sk_test_local";

    /// A local Stripe with one checkout of `amount` (cents of usd) paid by card: (stripe, payment
    /// intent).
    async fn paid(amount: i64) -> (LocalStripe, String) {
        let stripe = LocalStripe::start("127.0.0.1:0".parse().unwrap(), Config::default())
            .await
            .unwrap();
        let http = reqwest::Client::new();
        let session: serde_json::Value = http
            .post(format!("{}/v1/checkout/sessions", stripe.base))
            .bearer_auth(KEY)
            .form(&[
                ("mode", "payment".to_owned()),
                ("success_url", "http://example.com/ok".to_owned()),
                ("line_items[0][price_data][currency]", "usd".to_owned()),
                ("line_items[0][price_data][unit_amount]", amount.to_string()),
            ])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = session["id"].as_str().unwrap().to_owned();
        stripe.pay(&id, "card").await.unwrap();
        let intent = http
            .get(format!("{}/v1/checkout/sessions/{id}", stripe.base))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap()
            .json::<serde_json::Value>()
            .await
            .unwrap()["payment_intent"]
            .as_str()
            .unwrap()
            .to_owned();
        (stripe, intent)
    }

    async fn refund(
        stripe: &LocalStripe,
        key: Option<&str>,
        form: &[(&str, &str)],
    ) -> (u16, bool, serde_json::Value) {
        let mut req = reqwest::Client::new()
            .post(format!("{}/v1/refunds", stripe.base))
            .bearer_auth(KEY)
            .form(form);
        if let Some(key) = key {
            req = req.header("idempotency-key", key);
        }
        let res = req.send().await.unwrap();
        let replayed = res.headers().contains_key("idempotent-replayed");
        (res.status().as_u16(), replayed, res.json().await.unwrap())
    }

    fn refunded_events(stripe: &LocalStripe) -> Vec<(i64, bool)> {
        stripe
            .events()
            .iter()
            .filter(|e| e["type"] == "charge.refunded")
            .map(|e| {
                let charge = &e["data"]["object"];
                (
                    charge["amount_refunded"].as_i64().unwrap(),
                    charge["refunded"].as_bool().unwrap(),
                )
            })
            .collect()
    }

    #[tokio::test]
    async fn a_key_refunds_once_and_the_events_carry_the_cumulative_amount() {
        let (stripe, intent) = paid(10_000).await;
        let part = [("payment_intent", intent.as_str()), ("amount", "4000")];
        let (status, replayed, first) = refund(&stripe, Some("cn-1"), &part).await;
        assert_eq!((status, replayed), (200, false), "{first}");
        assert_eq!(first["amount"], 4000);
        // The same key and parameters: the first answer again, and no second refund.
        let (status, replayed, again) = refund(&stripe, Some("cn-1"), &part).await;
        assert_eq!((status, replayed), (200, true));
        assert_eq!(again["id"], first["id"]);
        // The same key with other parameters is Stripe's idempotency error.
        let other = [("payment_intent", intent.as_str()), ("amount", "100")];
        let (status, _, err) = refund(&stripe, Some("cn-1"), &other).await;
        assert_eq!(status, 400);
        assert_eq!(err["error"]["type"], "idempotency_error");
        // More than is left is refused; the rest, without an amount, refunds it all.
        let too_much = [("payment_intent", intent.as_str()), ("amount", "6001")];
        assert_eq!(refund(&stripe, Some("cn-2"), &too_much).await.0, 400);
        let rest = [("payment_intent", intent.as_str())];
        let (status, _, last) = refund(&stripe, Some("cn-3"), &rest).await;
        assert_eq!((status, last["amount"].as_i64()), (200, Some(6000)));
        assert_eq!(refunded_events(&stripe), [(4000, false), (10_000, true)]);
        let (status, _, err) = refund(&stripe, Some("cn-4"), &rest).await;
        assert_eq!(status, 400);
        assert_eq!(err["error"]["code"], "charge_already_refunded");
        assert_eq!(stripe.refund_calls(), 6);
    }

    #[tokio::test]
    async fn a_request_under_a_key_still_in_progress_is_a_409_that_stores_nothing() {
        let (stripe, intent) = paid(10_000).await;
        let hold = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
        stripe.hold_refunds(hold.clone());
        let part = [("payment_intent", intent.as_str()), ("amount", "4000")];
        let (first, second) = tokio::join!(refund(&stripe, Some("cn-1"), &part), async {
            while stripe.refund_calls() == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            let second = refund(&stripe, Some("cn-1"), &part).await;
            hold.add_permits(10);
            second
        });
        let (status, replayed, err) = second;
        assert_eq!((status, replayed), (409, false), "{err}");
        assert_eq!(err["error"]["type"], "idempotency_error");
        let (status, replayed, made) = first;
        assert_eq!((status, replayed), (200, false), "{made}");
        // Once the first is answered, the key replays it: the 409 left nothing under it.
        let (status, replayed, again) = refund(&stripe, Some("cn-1"), &part).await;
        assert_eq!((status, replayed), (200, true));
        assert_eq!(again["id"], made["id"]);
        assert_eq!(stripe.refunds().len(), 1);
    }

    #[tokio::test]
    async fn a_forgotten_key_refunds_again_and_the_list_finds_refunds_by_intent() {
        let (stripe, intent) = paid(10_000).await;
        let part = [
            ("payment_intent", intent.as_str()),
            ("amount", "1000"),
            ("metadata[credit_note_id]", "cn-9"),
        ];
        let (status, _, first) = refund(&stripe, Some("cn-9"), &part).await;
        assert_eq!(status, 200, "{first}");
        assert_eq!(first["metadata"]["credit_note_id"], "cn-9");
        assert_eq!(stripe.forget_idempotency_keys(), 1);
        // A day later the same key is a new request: a second refund, which is what a client
        // that trusts the key past its memory makes.
        let (status, replayed, second) = refund(&stripe, Some("cn-9"), &part).await;
        assert_eq!((status, replayed), (200, false), "{second}");
        assert_ne!(second["id"], first["id"]);

        let list = |query: String| {
            let url = format!("{}/v1/refunds?{query}", stripe.base);
            async move {
                reqwest::Client::new()
                    .get(url)
                    .bearer_auth(KEY)
                    .send()
                    .await
                    .unwrap()
                    .json::<serde_json::Value>()
                    .await
                    .unwrap()
            }
        };
        let page = list(format!("payment_intent={intent}&limit=1")).await;
        assert_eq!(page["has_more"], true);
        assert_eq!(page["data"][0]["id"], second["id"], "newest first");
        let after = second["id"].as_str().unwrap();
        let page = list(format!(
            "payment_intent={intent}&limit=1&starting_after={after}"
        ))
        .await;
        assert_eq!(page["has_more"], false);
        assert_eq!(page["data"][0]["id"], first["id"]);
        assert_eq!(page["data"][0]["metadata"]["credit_note_id"], "cn-9");
        let other = list("payment_intent=pi_other".to_owned()).await;
        assert_eq!(other["data"].as_array().map(Vec::len), Some(0));
    }

    #[tokio::test]
    async fn unknown_intents_and_missing_keys_are_refused() {
        let (stripe, _) = paid(500).await;
        let (status, _, err) = refund(&stripe, None, &[("payment_intent", "pi_nope")]).await;
        assert_eq!(status, 400);
        assert_eq!(err["error"]["code"], "resource_missing");
        let res = reqwest::Client::new()
            .post(format!("{}/v1/refunds", stripe.base))
            .form(&[("payment_intent", "pi_nope")])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401);
        assert!(refunded_events(&stripe).is_empty());
    }
}

//! Charging a saved method off-session: `POST /v1/payment_intents` (`confirm=true`,
//! `off_session=true`), answered by the method's test behaviour as Stripe answers it, with the
//! `payment_intent.*` events it sends; `GET` one or the list; and the page where a customer
//! completes a charge that needs them (3-D Secure).

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::{Form, Json};
use invoicer_core::payments::stripe::standin;
use serde_json::{json, Value};

use super::answers::metadata;
use super::answers::{error_body, once, stripe_error};
use super::delivery::{deliver_all, event};
use super::setup::Behaviour;
use super::{Shared, Store};

/// `POST /v1/payment_intents`: a PaymentIntent confirmed at once with a saved method of the
/// customer. Its answer and events follow the method's behaviour: succeeded; a 402 `card_declined`
/// (`payment_intent.payment_failed`); a 402 `authentication_required` with the intent in
/// `requires_action` and a page to complete it; or, for a SEPA debit, `processing` now and its
/// settlement after (held by the `hold_settlement` helper until released).
pub(super) async fn create_intent(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Form(params): Form<Vec<(String, String)>>,
) -> Response {
    let mut params = params;
    params.sort();
    let mut sent = Vec::new();
    let mut settling = None;
    let answered = {
        let mut store = shared.store.lock().unwrap();
        store.intent_calls += 1;
        let base = shared.base.clone();
        let answered = once(
            &mut store,
            &headers,
            "payment_intent",
            params,
            |store, params| {
                let (status, body, events) = new_intent(store, &base, params);
                sent = events;
                settling = body["id"]
                    .as_str()
                    .filter(|id| store.held.contains_key(*id))
                    .map(str::to_owned);
                Ok((status, body))
            },
        );
        store.events.extend(sent.iter().cloned());
        answered
    };
    if let (Some(id), Some(after)) = (settling, shared.config.debit_settles_after) {
        let shared = shared.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            super::delivery::release(&shared, &id);
        });
    }
    deliver_all(shared, sent);
    answered
}

fn refused(code: &str, message: &str, param: Option<&str>) -> (u16, Value, Vec<Value>) {
    let mut body = error_body("invalid_request_error", Some(code), message);
    if let Some(param) = param {
        body["error"]["param"] = param.into();
    }
    (400, body, Vec::new())
}

/// The intent `params` ask for, what is answered and the events to send (now, or held).
fn new_intent(
    store: &mut Store,
    base: &str,
    params: &[(String, String)],
) -> (u16, Value, Vec<Value>) {
    let p: std::collections::HashMap<&str, &str> = params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    for name in ["amount", "currency", "customer", "payment_method"] {
        if !p.contains_key(name) {
            return refused(
                "parameter_missing",
                &format!("Missing required param: {name}."),
                Some(name),
            );
        }
    }
    let amount: i64 = p["amount"].parse().unwrap_or(0);
    if amount < 1 {
        return refused(
            "parameter_invalid_integer",
            "Invalid amount.",
            Some("amount"),
        );
    }
    let Some(method) = store.payment_methods.get(p["payment_method"]).cloned() else {
        let message = format!("No such PaymentMethod: '{}'", p["payment_method"]);
        return refused("resource_missing", &message, Some("payment_method"));
    };
    if method["customer"].as_str() != Some(p["customer"]) {
        let message =
            "The provided PaymentMethod does not belong to this customer; attach it first.";
        return refused(
            "payment_method_invalid_parameter",
            message,
            Some("payment_method"),
        );
    }
    let behaviour = method["metadata"]["local_behaviour"]
        .as_str()
        .and_then(Behaviour::from_name)
        .unwrap_or(Behaviour::Succeeds);
    let id = standin::payment_intent_id();
    let kind = method["type"].as_str().unwrap_or("card").to_owned();
    let mut intent = json!({
        "id": id,
        "object": "payment_intent",
        "amount": amount,
        "amount_received": 0,
        "currency": p["currency"],
        "customer": p["customer"],
        "payment_method": p["payment_method"],
        "payment_method_types": [kind],
        "off_session": p.get("off_session") == Some(&"true"),
        "metadata": metadata(params),
        "status": "processing",
        "latest_charge": Value::Null,
        "last_payment_error": Value::Null,
        "next_action": Value::Null,
        "livemode": false,
        "created": chrono::Utc::now().timestamp(),
    });
    let mut now = Vec::new();
    let mut later = Vec::new();
    let answer = match behaviour {
        Behaviour::Succeeds => {
            succeed(&mut intent);
            now.push(event("payment_intent.succeeded", intent.clone()));
            (200, intent.clone())
        }
        Behaviour::Declines => {
            let error = decline(&mut intent, "card_declined", "Your card was declined.");
            now.push(event("payment_intent.payment_failed", intent.clone()));
            (402, card_error(error, &intent))
        }
        Behaviour::NeedsAuthentication => {
            intent["status"] = "requires_action".into();
            intent["next_action"] = json!({
                "type": "redirect_to_url",
                "redirect_to_url": { "url": format!("{base}/authenticate/{id}"), "return_url": p.get("return_url") },
            });
            let error = json!({
                "type": "card_error",
                "code": "authentication_required",
                "message": "Your card was declined. This transaction requires authentication.",
            });
            intent["last_payment_error"] = error.clone();
            now.push(event("payment_intent.requires_action", intent.clone()));
            (402, card_error(error, &intent))
        }
        Behaviour::DebitSucceeds | Behaviour::DebitFails => {
            now.push(event("payment_intent.processing", intent.clone()));
            let mut settled = intent.clone();
            if behaviour == Behaviour::DebitSucceeds {
                succeed(&mut settled);
                later.push(event("payment_intent.succeeded", settled));
            } else {
                decline(
                    &mut settled,
                    "insufficient_funds",
                    "The account has insufficient funds.",
                );
                later.push(event("payment_intent.payment_failed", settled));
            }
            (200, intent.clone())
        }
    };
    store.intents.insert(id.clone(), intent);
    store.intent_order.push(id.clone());
    // A debit's settlement waits, as the bank's days do: released by the helper or after the
    // configured delay.
    if !later.is_empty() {
        store.held.insert(id, later);
    }
    (answer.0, answer.1, now)
}

fn succeed(intent: &mut Value) {
    intent["status"] = "succeeded".into();
    intent["amount_received"] = intent["amount"].clone();
    intent["latest_charge"] = standin::stripe_id("ch").into();
    intent["last_payment_error"] = Value::Null;
    intent["next_action"] = Value::Null;
}

/// Marks `intent` failed with `code` and returns its `last_payment_error`.
fn decline(intent: &mut Value, code: &str, message: &str) -> Value {
    let error =
        json!({ "type": "card_error", "code": code, "decline_code": code, "message": message });
    intent["status"] = "requires_payment_method".into();
    intent["last_payment_error"] = error.clone();
    intent["next_action"] = Value::Null;
    error
}

/// Stripe's 402 body: the error, with the intent it happened to.
fn card_error(error: Value, intent: &Value) -> Value {
    let mut error = error;
    error["payment_intent"] = intent.clone();
    json!({ "error": error })
}

pub(super) async fn get_intent(State(shared): State<Shared>, Path(id): Path<String>) -> Response {
    match shared.store.lock().unwrap().intents.get(&id) {
        Some(intent) => Json(intent.clone()).into_response(),
        None => stripe_error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            Some("resource_missing"),
            &format!("No such payment_intent: '{id}'"),
        ),
    }
}

/// `GET /v1/payment_intents`: every intent made, newest first.
pub(super) async fn list_intents(State(shared): State<Shared>) -> Response {
    let store = shared.store.lock().unwrap();
    let data: Vec<Value> = store
        .intent_order
        .iter()
        .rev()
        .map(|id| store.intents[id].clone())
        .collect();
    Json(json!({ "object": "list", "data": data, "has_more": false })).into_response()
}

/// `GET /authenticate/{id}`: the page where the customer completes (or fails) a charge that needs
/// them.
pub(super) async fn authenticate_page(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Response {
    let store = shared.store.lock().unwrap();
    let Some(intent) = store.intents.get(&id) else {
        return (StatusCode::NOT_FOUND, Html("<h1>No such payment</h1>")).into_response();
    };
    let body = if intent["status"] == "requires_action" {
        ["complete", "fail"]
            .iter()
            .map(|outcome| {
                let label = if *outcome == "complete" { "Complete authentication" } else { "Fail authentication" };
                format!(
                    "<form method=\"post\" action=\"/authenticate/{id}\"><input type=\"hidden\" \
                     name=\"outcome\" value=\"{outcome}\"><button type=\"submit\" class=\"{outcome}\">\
                     {label}</button></form>"
                )
            })
            .collect::<String>()
    } else {
        "<p class=\"closed\">Nothing to confirm for this payment.</p>".to_owned()
    };
    Html(format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Local Stripe \
         authentication</title></head><body><main><h1>Confirm your payment</h1><p class=\"amount\">\
         {} {} (minor units)</p>{body}</main></body></html>",
        intent["amount"],
        intent["currency"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_uppercase(),
    ))
    .into_response()
}

#[derive(serde::Deserialize)]
pub(super) struct AuthenticateForm {
    outcome: String,
}

/// `POST /authenticate/{id}`: the customer's answer; the intent succeeds or fails, its event is
/// sent, and the customer goes back to the intent's `return_url` (or sees the outcome).
pub(super) async fn authenticate(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    Form(form): Form<AuthenticateForm>,
) -> Response {
    let answered = {
        let mut store = shared.store.lock().unwrap();
        let Some(intent) = store.intents.get_mut(&id) else {
            return (StatusCode::NOT_FOUND, Html("<h1>No such payment</h1>")).into_response();
        };
        if intent["status"] != "requires_action" {
            return Html("<p class=\"closed\">Nothing to confirm for this payment.</p>")
                .into_response();
        }
        let back = intent["next_action"]["redirect_to_url"]["return_url"]
            .as_str()
            .map(str::to_owned);
        let kind = if form.outcome == "complete" {
            succeed(intent);
            "payment_intent.succeeded"
        } else {
            decline(
                intent,
                "payment_intent_authentication_failure",
                "The customer did not authenticate.",
            );
            "payment_intent.payment_failed"
        };
        let events = vec![event(kind, intent.clone())];
        let intent = intent.clone();
        store.events.extend(events.iter().cloned());
        (intent, events, back)
    };
    let (intent, events, back) = answered;
    deliver_all(shared, events);
    match back {
        Some(back) => (StatusCode::SEE_OTHER, [(header::LOCATION, back)]).into_response(),
        None => Html(format!(
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Done</title></head>\
             <body><main><h1 class=\"outcome\">{}</h1></main></body></html>",
            intent["status"].as_str().unwrap_or_default()
        ))
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Config, LocalStripe};
    use serde_json::Value;

    const KEY: &str = "sk_test_local";

    async fn post(
        stripe: &LocalStripe,
        path: &str,
        key: Option<&str>,
        form: &[(&str, &str)],
    ) -> (u16, bool, Value) {
        let mut req = reqwest::Client::new()
            .post(format!("{}{path}", stripe.base))
            .bearer_auth(KEY)
            .form(form);
        if let Some(key) = key {
            req = req.header("idempotency-key", key);
        }
        let res = req.send().await.unwrap();
        let replayed = res.headers().contains_key("idempotent-replayed");
        (res.status().as_u16(), replayed, res.json().await.unwrap())
    }

    async fn get(stripe: &LocalStripe, path: &str) -> Value {
        reqwest::Client::new()
            .get(format!("{}{path}", stripe.base))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// A local Stripe whose debits settle only when released, a customer, and a method saved
    /// through a setup session as `method` (a value of `setup::SAVABLE`): (stripe, customer,
    /// payment method).
    async fn saved(method: &str) -> (LocalStripe, String, String) {
        let config = Config {
            debit_settles_after: None,
            ..Config::default()
        };
        let stripe = LocalStripe::start("127.0.0.1:0".parse().unwrap(), config)
            .await
            .unwrap();
        let (status, _, customer) = post(
            &stripe,
            "/v1/customers",
            Some("cus-1"),
            &[
                ("email", "ap@example.com"),
                ("metadata[invoicer_customer]", "c1"),
            ],
        )
        .await;
        assert_eq!(status, 200);
        let customer = customer["id"].as_str().unwrap().to_owned();
        let (status, _, session) = post(
            &stripe,
            "/v1/checkout/sessions",
            None,
            &[
                ("mode", "setup"),
                ("customer", &customer),
                ("success_url", "http://example.com/saved"),
                ("metadata[invoicer_customer]", "c1"),
            ],
        )
        .await;
        assert_eq!(status, 200, "{session}");
        assert_eq!(session["mode"], "setup");
        let id = session["id"].as_str().unwrap().to_owned();
        stripe.save(&id, method).await.unwrap();
        let session = get(&stripe, &format!("/v1/checkout/sessions/{id}")).await;
        assert_eq!(session["status"], "complete");
        let intent = session["setup_intent"].as_str().unwrap();
        let intent = get(&stripe, &format!("/v1/setup_intents/{intent}")).await;
        assert_eq!(intent["status"], "succeeded");
        assert_eq!(intent["metadata"]["invoicer_customer"], "c1");
        let pm = intent["payment_method"].as_str().unwrap().to_owned();
        // Both events, about this session and its intent.
        let kinds: Vec<String> = stripe
            .events()
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            kinds,
            ["checkout.session.completed", "setup_intent.succeeded"]
        );
        (stripe, customer, pm)
    }

    fn charge<'a>(customer: &'a str, pm: &'a str, attempt: &'a str) -> Vec<(&'a str, &'a str)> {
        vec![
            ("amount", "12500"),
            ("currency", "eur"),
            ("customer", customer),
            ("payment_method", pm),
            ("confirm", "true"),
            ("off_session", "true"),
            ("metadata[invoice_id]", "inv-1"),
            ("metadata[attempt]", attempt),
        ]
    }

    fn kinds(stripe: &LocalStripe) -> Vec<String> {
        stripe
            .events()
            .iter()
            .skip(2)
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn a_saved_card_is_charged_once_per_key() {
        let (stripe, customer, pm) = saved("card_4242").await;
        let method = get(&stripe, &format!("/v1/payment_methods/{pm}")).await;
        assert_eq!(method["card"]["last4"], "4242");
        let form = charge(&customer, &pm, "1");
        let key = Some("invoicer-charge-inv-1-1");
        let (status, replayed, first) = post(&stripe, "/v1/payment_intents", key, &form).await;
        assert_eq!((status, replayed), (200, false));
        assert_eq!(first["status"], "succeeded");
        assert_eq!(first["metadata"]["attempt"], "1");
        // The same attempt again: the first answer, no second intent.
        let (status, replayed, again) = post(&stripe, "/v1/payment_intents", key, &form).await;
        assert_eq!((status, replayed), (200, true));
        assert_eq!(again["id"], first["id"]);
        assert_eq!(stripe.payment_intents().len(), 1);
        assert_eq!(stripe.intent_calls(), 2);
        assert_eq!(kinds(&stripe), ["payment_intent.succeeded"]);
        // Another attempt's key is another intent.
        let (status, _, _) = post(
            &stripe,
            "/v1/payment_intents",
            Some("invoicer-charge-inv-1-2"),
            &charge(&customer, &pm, "2"),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(stripe.payment_intents().len(), 2);
    }

    #[tokio::test]
    async fn a_card_that_declines_answers_402_with_its_intent() {
        let (stripe, customer, pm) = saved("card_0341").await;
        let (status, _, body) = post(
            &stripe,
            "/v1/payment_intents",
            Some("k"),
            &charge(&customer, &pm, "1"),
        )
        .await;
        assert_eq!(status, 402);
        assert_eq!(body["error"]["type"], "card_error");
        assert_eq!(body["error"]["code"], "card_declined");
        assert_eq!(
            body["error"]["payment_intent"]["status"],
            "requires_payment_method"
        );
        assert_eq!(kinds(&stripe), ["payment_intent.payment_failed"]);
    }

    #[tokio::test]
    async fn a_card_that_needs_its_customer_waits_for_them() {
        let (stripe, customer, pm) = saved("card_3155").await;
        let (status, _, body) = post(
            &stripe,
            "/v1/payment_intents",
            Some("k"),
            &charge(&customer, &pm, "1"),
        )
        .await;
        assert_eq!(status, 402);
        assert_eq!(body["error"]["code"], "authentication_required");
        let intent = &body["error"]["payment_intent"];
        assert_eq!(intent["status"], "requires_action");
        let url = intent["next_action"]["redirect_to_url"]["url"]
            .as_str()
            .unwrap();
        assert!(url.ends_with(&format!("/authenticate/{}", intent["id"].as_str().unwrap())));
        stripe
            .authenticate(intent["id"].as_str().unwrap(), "complete")
            .await
            .unwrap();
        let now = get(
            &stripe,
            &format!("/v1/payment_intents/{}", intent["id"].as_str().unwrap()),
        )
        .await;
        assert_eq!(now["status"], "succeeded");
        assert_eq!(
            kinds(&stripe),
            ["payment_intent.requires_action", "payment_intent.succeeded"]
        );
    }

    #[tokio::test]
    async fn a_sepa_debit_is_processing_until_it_settles() {
        let (stripe, customer, pm) = saved("sepa_3001").await;
        let method = get(&stripe, &format!("/v1/payment_methods/{pm}")).await;
        assert_eq!(method["type"], "sepa_debit");
        let session_intent = get(&stripe, "/v1/checkout/sessions").await["data"][0]["setup_intent"]
            .as_str()
            .unwrap()
            .to_owned();
        let mandate = get(&stripe, &format!("/v1/setup_intents/{session_intent}")).await["mandate"]
            .as_str()
            .unwrap()
            .to_owned();
        let mandate = get(&stripe, &format!("/v1/mandates/{mandate}")).await;
        assert!(mandate["payment_method_details"]["sepa_debit"]["reference"].is_string());
        let (status, _, intent) = post(
            &stripe,
            "/v1/payment_intents",
            Some("k"),
            &charge(&customer, &pm, "1"),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(intent["status"], "processing");
        assert_eq!(kinds(&stripe), ["payment_intent.processing"]);
        let id = intent["id"].as_str().unwrap();
        let (status, _, released) = post(
            &stripe,
            &format!("/v1/test_helpers/payment_intents/{id}/release_settlement"),
            None,
            &[],
        )
        .await;
        assert_eq!((status, released["released"].as_u64()), (200, Some(1)));
        assert_eq!(
            kinds(&stripe),
            ["payment_intent.processing", "payment_intent.payment_failed"]
        );
    }

    /// Without a test holding it, a debit settles by itself after the configured delay.
    #[tokio::test]
    async fn a_sepa_debit_settles_by_itself_after_the_delay() {
        let config = Config {
            debit_settles_after: Some(std::time::Duration::from_millis(50)),
            ..Config::default()
        };
        let stripe = LocalStripe::start("127.0.0.1:0".parse().unwrap(), config)
            .await
            .unwrap();
        let (_, _, customer) = post(
            &stripe,
            "/v1/customers",
            None,
            &[("email", "a@example.com")],
        )
        .await;
        let customer = customer["id"].as_str().unwrap().to_owned();
        let (_, _, session) = post(
            &stripe,
            "/v1/checkout/sessions",
            None,
            &[
                ("mode", "setup"),
                ("customer", &customer),
                ("success_url", "http://example.com/"),
            ],
        )
        .await;
        stripe
            .save(session["id"].as_str().unwrap(), "sepa_3000")
            .await
            .unwrap();
        let pm = stripe.events()[1]["data"]["object"]["payment_method"]
            .as_str()
            .unwrap()
            .to_owned();
        let (status, _, intent) = post(
            &stripe,
            "/v1/payment_intents",
            None,
            &charge(&customer, &pm, "1"),
        )
        .await;
        assert_eq!(
            (status, intent["status"].as_str()),
            (200, Some("processing"))
        );
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while kinds(&stripe).len() < 2 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "never settled: {:?}",
                kinds(&stripe)
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(
            kinds(&stripe),
            ["payment_intent.processing", "payment_intent.succeeded"]
        );
    }

    #[tokio::test]
    async fn a_detached_or_another_customers_method_is_refused() {
        let (stripe, customer, pm) = saved("card_4242").await;
        let (status, _, body) = post(
            &stripe,
            "/v1/payment_intents",
            None,
            &charge("cus_other", &pm, "1"),
        )
        .await;
        assert_eq!(status, 400, "{body}");
        let (status, _, _) = post(
            &stripe,
            &format!("/v1/payment_methods/{pm}/detach"),
            None,
            &[],
        )
        .await;
        assert_eq!(status, 200);
        let (status, _, _) = post(
            &stripe,
            "/v1/payment_intents",
            None,
            &charge(&customer, &pm, "1"),
        )
        .await;
        assert_eq!(status, 400);
        assert!(stripe.payment_intents().is_empty());
    }
}

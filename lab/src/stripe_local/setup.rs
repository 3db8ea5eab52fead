//! Saving a way to pay for later: customers (`POST /v1/customers`), Checkout sessions in `setup`
//! mode and their page, the SetupIntent, PaymentMethod and (for SEPA Direct Debit) Mandate each
//! save makes, and `checkout.session.completed` + `setup_intent.succeeded` sent for it.
//!
//! What can be saved are Stripe's documented test numbers, each with the behaviour Stripe gives it
//! when it is charged later off-session ([`Behaviour`]).

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::{Form, Json};
use invoicer_core::payments::stripe::standin;
use serde_json::{json, Value};

use super::answers::{error_body, metadata, missing_param, no_such_session, once, stripe_error};
use super::delivery::{deliver_all, event};
use super::{Shared, Store};

/// How a saved method behaves when it is charged off-session later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Charged at once (card 4242 4242 4242 4242).
    Succeeds,
    /// Saved, then every charge declined (card 4000 0000 0000 0341).
    Declines,
    /// Every charge needs the customer to authenticate (card 4000 0025 0000 3155).
    NeedsAuthentication,
    /// Processing, then succeeded (IBAN DE89 3704 0044 0532 0130 00).
    DebitSucceeds,
    /// Processing, then failed (IBAN DE62 3704 0044 0532 0130 01).
    DebitFails,
}

/// The methods the setup page offers: (form value, what the button says, behaviour).
pub const SAVABLE: [(&str, &str, Behaviour); 5] = [
    (
        "card_4242",
        "Save card 4242 (succeeds)",
        Behaviour::Succeeds,
    ),
    (
        "card_0341",
        "Save card 0341 (declines later)",
        Behaviour::Declines,
    ),
    (
        "card_3155",
        "Save card 3155 (needs authentication)",
        Behaviour::NeedsAuthentication,
    ),
    (
        "sepa_3000",
        "Save IBAN DE89…3000 (debits succeed)",
        Behaviour::DebitSucceeds,
    ),
    (
        "sepa_3001",
        "Save IBAN DE62…3001 (debits fail)",
        Behaviour::DebitFails,
    ),
];

impl Behaviour {
    fn of(method: &str) -> Option<Behaviour> {
        SAVABLE
            .iter()
            .find(|(value, _, _)| *value == method)
            .map(|(_, _, b)| *b)
    }

    /// The PaymentMethod's `type` and its type-specific part.
    fn details(self) -> (&'static str, Value) {
        let card = |last4: &str| json!({ "brand": "visa", "last4": last4, "exp_month": 12, "exp_year": 2034, "country": "US" });
        let sepa =
            |last4: &str| json!({ "last4": last4, "bank_code": "37040044", "country": "DE" });
        match self {
            Behaviour::Succeeds => ("card", card("4242")),
            Behaviour::Declines => ("card", card("0341")),
            Behaviour::NeedsAuthentication => ("card", card("3155")),
            Behaviour::DebitSucceeds => ("sepa_debit", sepa("3000")),
            Behaviour::DebitFails => ("sepa_debit", sepa("3001")),
        }
    }

    /// What the PaymentMethod's metadata says it does (so a charge knows without a table).
    fn name(self) -> &'static str {
        match self {
            Behaviour::Succeeds => "succeeds",
            Behaviour::Declines => "declines",
            Behaviour::NeedsAuthentication => "needs_authentication",
            Behaviour::DebitSucceeds => "debit_succeeds",
            Behaviour::DebitFails => "debit_fails",
        }
    }

    pub(super) fn from_name(name: &str) -> Option<Behaviour> {
        SAVABLE
            .iter()
            .map(|(_, _, b)| *b)
            .find(|b| b.name() == name)
    }
}

fn lookup(params: &[(String, String)]) -> HashMap<&str, &str> {
    params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

fn resource_missing(kind: &str, id: &str) -> Response {
    stripe_error(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        Some("resource_missing"),
        &format!("No such {kind}: '{id}'"),
    )
}

/// `POST /v1/customers` (`email`, `name`, `metadata[...]`; Stripe's idempotency semantics).
pub(super) async fn create_customer(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Form(params): Form<Vec<(String, String)>>,
) -> Response {
    let mut params = params;
    params.sort();
    let mut store = shared.store.lock().unwrap();
    once(&mut store, &headers, "customer", params, |store, params| {
        let p = lookup(params);
        let id = standin::stripe_id("cus");
        let customer = json!({
            "id": id,
            "object": "customer",
            "email": p.get("email"),
            "name": p.get("name"),
            "metadata": metadata(params),
            "livemode": false,
            "created": chrono::Utc::now().timestamp(),
        });
        store.customers.insert(id, customer.clone());
        Ok((200, customer))
    })
}

pub(super) async fn get_customer(State(shared): State<Shared>, Path(id): Path<String>) -> Response {
    match shared.store.lock().unwrap().customers.get(&id) {
        Some(customer) => Json(customer.clone()).into_response(),
        None => resource_missing("customer", &id),
    }
}

/// A Checkout session in `setup` mode made from `params` (sorted form fields): it needs
/// `success_url` and an existing `customer`; the methods saved through it are that customer's.
pub(super) fn new_setup_session(
    store: &mut Store,
    base: &str,
    params: &[(String, String)],
) -> (u16, Value) {
    let p = lookup(params);
    let Some(customer) = p.get("customer") else {
        return missing_param("customer");
    };
    if !p.contains_key("success_url") {
        return missing_param("success_url");
    }
    if !store.customers.contains_key(*customer) {
        let message = format!("No such customer: '{customer}'");
        return (
            404,
            error_body("invalid_request_error", Some("resource_missing"), &message),
        );
    }
    let id = standin::stripe_id("cs_test");
    let now = chrono::Utc::now().timestamp();
    let session = json!({
        "id": id,
        "object": "checkout.session",
        "mode": "setup",
        "customer": customer,
        "currency": p.get("currency"),
        "client_reference_id": p.get("client_reference_id"),
        "metadata": metadata(params),
        "livemode": false,
        "status": "open",
        "payment_status": "no_payment_required",
        "setup_intent": Value::Null,
        "success_url": p["success_url"],
        "cancel_url": p.get("cancel_url"),
        "expires_at": now + 24 * 3600,
        "created": now,
        "url": format!("{base}/checkout/{id}"),
    });
    store.sessions.insert(id.clone(), session.clone());
    store.order.push(id);
    (200, session)
}

/// The setup page's ways to save, for an open session `id`.
pub(super) fn setup_buttons(id: &str) -> String {
    SAVABLE
        .iter()
        .map(|(method, label, _)| {
            format!(
                "<form method=\"post\" action=\"/checkout/{id}/save\"><input type=\"hidden\" \
                 name=\"method\" value=\"{method}\"><button type=\"submit\" class=\"{method}\">\
                 {label}</button></form>"
            )
        })
        .collect()
}

#[derive(serde::Deserialize)]
pub(super) struct SaveForm {
    method: String,
}

/// `POST /checkout/{id}/save`: the customer saves a method on the setup page. The session
/// completes with a succeeded SetupIntent for a new PaymentMethod attached to its customer (and
/// a Mandate for a SEPA debit); both events are sent; the customer goes back to `success_url`.
pub(super) async fn save(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    Form(form): Form<SaveForm>,
) -> Response {
    let Some(behaviour) = Behaviour::of(&form.method) else {
        return (StatusCode::BAD_REQUEST, "unknown method").into_response();
    };
    let (session, events) = {
        let mut store = shared.store.lock().unwrap();
        let Some(session) = store.sessions.get(&id).cloned() else {
            return no_such_session();
        };
        if session["status"] != "open" || session["mode"] != "setup" {
            return Html("<p class=\"closed\">This checkout session is no longer open.</p>")
                .into_response();
        }
        let customer = session["customer"].as_str().unwrap_or_default().to_owned();
        let (kind, details) = behaviour.details();
        let method_id = standin::stripe_id("pm");
        let mut method = json!({
            "id": method_id,
            "object": "payment_method",
            "type": kind,
            "customer": customer,
            "metadata": { "local_behaviour": behaviour.name() },
            "livemode": false,
            "created": chrono::Utc::now().timestamp(),
        });
        method[kind] = details;
        let mandate = (kind == "sepa_debit").then(|| {
            let mandate_id = standin::stripe_id("mandate");
            let reference = format!("INV-{}", &mandate_id[8..20].to_ascii_uppercase());
            let mandate = json!({
                "id": mandate_id,
                "object": "mandate",
                "payment_method": method_id,
                "status": "active",
                "type": "multi_use",
                "payment_method_details": { "type": "sepa_debit", "sepa_debit": { "reference": reference } },
            });
            store.mandates.insert(mandate_id.clone(), mandate);
            mandate_id
        });
        let intent_id = standin::stripe_id("seti");
        let intent = json!({
            "id": intent_id,
            "object": "setup_intent",
            "status": "succeeded",
            "usage": "off_session",
            "customer": customer,
            "payment_method": method_id,
            "payment_method_types": [kind],
            "mandate": mandate,
            "metadata": session["metadata"].clone(),
            "livemode": false,
            "created": chrono::Utc::now().timestamp(),
        });
        store.payment_methods.insert(method_id, method);
        store
            .setup_intents
            .insert(intent_id.clone(), intent.clone());
        let session = store.sessions.get_mut(&id).expect("read above");
        session["status"] = "complete".into();
        session["setup_intent"] = intent_id.into();
        session["url"] = Value::Null;
        let session = session.clone();
        let events = vec![
            event("checkout.session.completed", session.clone()),
            event("setup_intent.succeeded", intent),
        ];
        store.events.extend(events.iter().cloned());
        (session, events)
    };
    deliver_all(shared, events);
    let success = session["success_url"].as_str().unwrap_or("/").to_owned();
    (StatusCode::SEE_OTHER, [(header::LOCATION, success)]).into_response()
}

pub(super) async fn get_setup_intent(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Response {
    match shared.store.lock().unwrap().setup_intents.get(&id) {
        Some(intent) => Json(intent.clone()).into_response(),
        None => resource_missing("setup_intent", &id),
    }
}

pub(super) async fn get_payment_method(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Response {
    match shared.store.lock().unwrap().payment_methods.get(&id) {
        Some(method) => Json(method.clone()).into_response(),
        None => resource_missing("payment_method", &id),
    }
}

/// `POST /v1/payment_methods/{id}/detach`: the method is no longer its customer's (a later charge
/// with it is refused).
pub(super) async fn detach_payment_method(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let mut store = shared.store.lock().unwrap();
    once(&mut store, &headers, "detach", Vec::new(), |store, _| {
        Ok(match store.payment_methods.get_mut(&id) {
            None => {
                let message = format!("No such PaymentMethod: '{id}'");
                let code = Some("resource_missing");
                (404, error_body("invalid_request_error", code, &message))
            }
            Some(method) => {
                method["customer"] = Value::Null;
                (200, method.clone())
            }
        })
    })
}

pub(super) async fn get_mandate(State(shared): State<Shared>, Path(id): Path<String>) -> Response {
    match shared.store.lock().unwrap().mandates.get(&id) {
        Some(mandate) => Json(mandate.clone()).into_response(),
        None => resource_missing("mandate", &id),
    }
}

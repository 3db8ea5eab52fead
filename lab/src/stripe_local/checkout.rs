//! The hosted checkout page: a session's amount and the ways to pay it, and the payment they make
//! (the session completed, its events recorded and sent, the customer sent back to the app).

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Form;
use invoicer_core::payments::stripe::standin;
use serde_json::Value;

use super::answers::no_such_session;
use super::delivery::{deliver_all, event};
use super::Shared;

/// The note on a session nobody can pay any more.
const CLOSED: &str = "<p class=\"closed\">This checkout session is no longer open.</p>";

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(super) async fn checkout_page(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Response {
    let Some(session) = shared.store.lock().unwrap().sessions.get(&id).cloned() else {
        return no_such_session();
    };
    let amount = session["amount_total"].as_i64().unwrap_or(0);
    let currency = session["currency"]
        .as_str()
        .unwrap_or("")
        .to_ascii_uppercase();
    let open = session["status"] == "open";
    let buttons = if open && session["mode"] == "setup" {
        super::setup::setup_buttons(&escape(&id))
    } else if open {
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
pub(super) struct PayForm {
    method: String,
}

pub(super) async fn pay(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    Form(form): Form<PayForm>,
) -> Response {
    let (session, events) = {
        let mut store = shared.store.lock().unwrap();
        let Some(session) = store.sessions.get_mut(&id) else {
            return no_such_session();
        };
        if session["status"] != "open" || session["mode"] != "payment" {
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

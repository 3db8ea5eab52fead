//! A local stand-in for Stripe (its CLI cannot be fetched here, and people work offline): builds
//! Stripe-shaped events, signs them with the configured secret and delivers them to the real route.

use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use super::signature;

fn stripe_id(prefix: &str) -> String {
    format!("{prefix}_{}", Uuid::new_v4().simple())
}

fn event(kind: &str, object: serde_json::Value) -> (String, String) {
    let id = stripe_id("evt");
    let body = event_with_id(&id, kind, object);
    (id, body)
}

fn event_with_id(id: &str, kind: &str, object: serde_json::Value) -> String {
    json!({
        "id": id,
        "object": "event",
        "api_version": "2024-06-20",
        "created": chrono::Utc::now().timestamp(),
        "livemode": false,
        "pending_webhooks": 1,
        "type": kind,
        "data": { "object": object },
    })
    .to_string()
}

/// `checkout.session.completed` paying `amount_cents` of `invoice` through a fresh payment intent.
pub fn checkout_completed(invoice: Uuid, amount_cents: i64, currency: &str) -> (String, String) {
    let id = stripe_id("evt");
    let body = checkout_event(&id, &stripe_id("pi"), invoice, amount_cents, currency);
    (id, body)
}

/// `checkout.session.completed` with the event and payment intent ids given (load generators name
/// their events so a checker can find them again).
pub fn checkout_event(
    event_id: &str,
    payment_intent: &str,
    invoice: Uuid,
    amount_cents: i64,
    currency: &str,
) -> String {
    event_with_id(
        event_id,
        "checkout.session.completed",
        json!({
            "id": stripe_id("cs_test"),
            "object": "checkout.session",
            "client_reference_id": invoice.to_string(),
            "amount_total": amount_cents,
            "currency": currency,
            "mode": "payment",
            "payment_status": "paid",
            "status": "complete",
            "payment_intent": payment_intent,
        }),
    )
}

/// `charge.refunded` for the whole charge of `payment_intent`.
pub fn charge_refunded(payment_intent: &str) -> (String, String) {
    event(
        "charge.refunded",
        json!({
            "id": stripe_id("ch"),
            "object": "charge",
            "payment_intent": payment_intent,
            "refunded": true,
        }),
    )
}

/// What is still due on an invoice, and its currency: the defaults for a simulated payment.
pub async fn amount_due(pool: &PgPool, invoice: Uuid) -> sqlx::Result<Option<(i64, String)>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        "select total_cents - amount_paid_cents as \"due!\", currency from invoices where id = $1",
        invoice
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| (r.due.max(0), r.currency)))
}

/// The raw payload of a stored event, for `resend`.
pub async fn stored_payload(pool: &PgPool, event_id: &str) -> sqlx::Result<Option<String>> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        "select payload from stripe_events where id = $1 limit 1",
        event_id
    )
    .fetch_optional(pool)
    .await
}

/// Signs `payload` now with `secret` and POSTs it to `url`; returns the HTTP status and body.
pub async fn deliver(
    url: &str,
    secret: &str,
    payload: &str,
) -> Result<(u16, String), reqwest::Error> {
    let header = signature::header(secret, chrono::Utc::now().timestamp(), payload.as_bytes());
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("stripe-signature", header)
        .body(payload.to_owned())
        .send()
        .await?;
    let status = response.status().as_u16();
    Ok((status, response.text().await.unwrap_or_default()))
}

//! A local stand-in for Stripe (its CLI cannot be fetched here, and people work offline): builds
//! Stripe-shaped events, signs them with the configured secret and delivers them to the real route.

use model::InvoiceId;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use super::signature;

/// A fresh Stripe-style id: `prefix` (`evt`, `pi`, `cs_test`, ...), an underscore and a random tail.
pub fn stripe_id(prefix: &str) -> String {
    format!("{prefix}_{}", Uuid::new_v4().simple())
}

/// The event `id` of type `kind` about `object`, as Stripe sends it (created now, our API version).
pub fn event(id: &str, kind: &str, livemode: bool, object: serde_json::Value) -> serde_json::Value {
    json!({
        "id": id,
        "object": "event",
        "api_version": super::client::STRIPE_VERSION,
        "created": chrono::Utc::now().timestamp(),
        "livemode": livemode,
        "pending_webhooks": 1,
        "type": kind,
        "data": { "object": object },
    })
}

fn event_with_id(id: &str, kind: &str, livemode: bool, object: serde_json::Value) -> String {
    event(id, kind, livemode, object).to_string()
}

/// A checkout session's `payment_status` once an event of `kind` is sent about it: the
/// asynchronous settlements decide it, the completion keeps `status` (`paid` for a card, `unpaid`
/// for a bank debit still under way).
pub fn session_payment_status<'a>(kind: &str, status: &'a str) -> &'a str {
    match kind {
        "checkout.session.async_payment_succeeded" => "paid",
        "checkout.session.async_payment_failed" => "unpaid",
        _ => status,
    }
}

/// A fresh `pi_...` id.
pub fn payment_intent_id() -> String {
    stripe_id("pi")
}

/// Our minor units of `code` as Stripe's API counts them (ISK in hundredths).
fn stripe_amount(amount: i64, code: &str) -> i64 {
    model::currency(code).map_or(amount, |c| c.to_stripe(amount))
}

/// A checkout session event (`checkout.session.completed` with its `payment_status`, or
/// `checkout.session.async_payment_succeeded` / `_failed`) paying `amount` (our minor units) of
/// `invoice` through `payment_intent`.
#[derive(Debug, Clone)]
pub struct Session<'a> {
    pub kind: &'a str,
    pub payment_intent: &'a str,
    pub invoice: model::InvoiceId,
    pub amount: i64,
    pub currency: &'a str,
    pub payment_status: &'a str,
    pub livemode: bool,
}

impl Session<'_> {
    pub fn event(&self, event_id: &str) -> String {
        let payment_status = session_payment_status(self.kind, self.payment_status);
        event_with_id(
            event_id,
            self.kind,
            self.livemode,
            json!({
                "id": simulated_session_id(self.invoice),
                "object": "checkout.session",
                "client_reference_id": self.invoice.to_string(),
                "amount_total": stripe_amount(self.amount, self.currency),
                "currency": self.currency,
                "mode": "payment",
                "payment_status": payment_status,
                "status": "complete",
                "payment_intent": self.payment_intent,
            }),
        )
    }
}

/// The session the stand-in's events of `invoice` name: the one [`open_simulated_session`] records.
pub fn simulated_session_id(invoice: InvoiceId) -> String {
    format!("cs_test_sim_{}", invoice.uuid().simple())
}

/// Records the session the stand-in's events of `invoice` pay through, as if the app had created it
/// at Stripe (test mode, in the invoice's currency, for what is due now): the development Simulate
/// button, `server stripe trigger` and tests pay through it. Nothing when the invoice does not exist.
pub async fn open_simulated_session(
    db: impl sqlx::PgExecutor<'_>,
    invoice: InvoiceId,
) -> sqlx::Result<String> {
    let id = simulated_session_id(invoice);
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into checkout_sessions (id, org_id, invoice_id, amount_cents, currency, livemode, url,
                                       expires_at, idempotency_key, simulated)
        select $1, org_id, id, greatest(total_cents - amount_credited_cents - amount_paid_cents, 1), currency, false, '',
               now() + interval '1 day', 'simulated:' || $1, true
        from invoices where id = $2
        on conflict (id) do nothing
        "#,
        id,
        invoice as _
    )
    .execute(db)
    .await?;
    Ok(id)
}

/// `checkout.session.completed` (paid) of `amount_cents` of `invoice` through a fresh payment intent.
pub fn checkout_completed(
    invoice: InvoiceId,
    amount_cents: i64,
    currency: &str,
) -> (String, String) {
    let id = stripe_id("evt");
    let body = checkout_event(&id, &payment_intent_id(), invoice, amount_cents, currency);
    (id, body)
}

/// `checkout.session.completed` (paid) with the event and payment intent ids given (load generators
/// name their events so a checker can find them again).
pub fn checkout_event(
    event_id: &str,
    payment_intent: &str,
    invoice: InvoiceId,
    amount_cents: i64,
    currency: &str,
) -> String {
    Session {
        kind: "checkout.session.completed",
        payment_intent,
        invoice: InvoiceId::from(invoice.uuid()),
        amount: amount_cents,
        currency,
        payment_status: "paid",
        livemode: false,
    }
    .event(event_id)
}

/// `charge.refunded` of the charge of `payment_intent`: `amount_refunded` (our minor units) so far,
/// the whole charge when `full`.
pub fn refund_event(
    event_id: &str,
    payment_intent: &str,
    amount_refunded: i64,
    currency: &str,
    full: bool,
    livemode: bool,
) -> String {
    event_with_id(
        event_id,
        "charge.refunded",
        livemode,
        json!({
            "id": stripe_id("ch"),
            "object": "charge",
            "payment_intent": payment_intent,
            "amount_refunded": stripe_amount(amount_refunded, currency),
            "currency": currency,
            "refunded": full,
        }),
    )
}

/// `charge.dispute.created` (open) or `charge.dispute.closed` (`status`: `won` / `lost`) of
/// `amount` (our minor units) of the charge of `payment_intent`.
#[derive(Debug, Clone)]
pub struct Dispute<'a> {
    pub kind: &'a str,
    pub dispute_id: &'a str,
    pub payment_intent: &'a str,
    pub amount: i64,
    pub currency: &'a str,
    pub status: &'a str,
    pub livemode: bool,
}

impl Dispute<'_> {
    pub fn event(&self, event_id: &str) -> String {
        let status = if self.kind == "charge.dispute.created" {
            "needs_response"
        } else {
            self.status
        };
        event_with_id(
            event_id,
            self.kind,
            self.livemode,
            json!({
                "id": self.dispute_id,
                "object": "dispute",
                "payment_intent": self.payment_intent,
                "amount": stripe_amount(self.amount, self.currency),
                "currency": self.currency,
                "status": status,
            }),
        )
    }
}

/// A fresh `evt_...` id.
pub fn event_id() -> String {
    stripe_id("evt")
}

/// A fresh `dp_...` id.
pub fn dispute_id() -> String {
    stripe_id("dp")
}

/// What is still due on an invoice, and its currency: the defaults for a simulated payment.
pub async fn amount_due(pool: &PgPool, invoice: InvoiceId) -> sqlx::Result<Option<(i64, String)>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        "select total_cents - amount_credited_cents - amount_paid_cents as \"due!\", currency from invoices where id = $1",
        invoice as _
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

/// The POST of `payload` to `url` through `http`, signed now with `secret` as Stripe signs a
/// delivery.
pub fn signed_post(
    http: &reqwest::Client,
    url: &str,
    secret: &str,
    payload: &str,
) -> reqwest::RequestBuilder {
    let header = signature::header(secret, chrono::Utc::now().timestamp(), payload.as_bytes());
    http.post(url)
        .header("content-type", "application/json")
        .header("stripe-signature", header)
        .body(payload.to_owned())
}

/// Signs `payload` now with `secret` and POSTs it to `url`; returns the HTTP status and body.
pub async fn deliver(
    url: &str,
    secret: &str,
    payload: &str,
) -> Result<(u16, String), reqwest::Error> {
    let response = signed_post(&reqwest::Client::new(), url, secret, payload)
        .send()
        .await?;
    let status = response.status().as_u16();
    Ok((status, response.text().await.unwrap_or_default()))
}

//! The Stripe webhook as a surface of the discipline: the key is Stripe's `event.id` (never the
//! object id: one charge produces several events), claimed as `(webhook, stripe account, event id)` in the
//! same transaction that applies the event and stores it. The caller answers 200 only after this
//! returns, that is after commit; any error rolls the claim back with the work, and Stripe retries.

use serde::Deserialize;
use serde_json::Value as JsonValue;
use sqlx::PgPool;

use crate::claim::{ClaimKey, Outcome, Terms};
use crate::observe::{Attempt, AttemptOutcome, Concerns, Tracked};
use crate::payments::{self, DisputeFact, Effect, EffectKind, RefundFact, SessionFact};
use crate::surfaces::{once, Once, Work};
use model::{DisputeStatus, PaymentStatus};

pub const PROVIDER: &str = "stripe";
/// Events of the platform account itself (no Connect `account` field).
pub const DEFAULT_ACCOUNT: &str = "default";

/// The part of a Stripe event every type shares.
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub account: Option<String>,
    /// Live or test mode; an event of the other mode than this deployment's applies nothing.
    #[serde(default)]
    pub livemode: Option<bool>,
    pub data: EventData,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EventData {
    pub object: JsonValue,
}

impl Event {
    pub fn account(&self) -> &str {
        self.account.as_deref().unwrap_or(DEFAULT_ACCOUNT)
    }
}

#[derive(Debug, Deserialize)]
struct CheckoutSession {
    id: Option<String>,
    client_reference_id: Option<String>,
    amount_total: Option<i64>,
    currency: Option<String>,
    payment_intent: Option<String>,
    /// `paid`, `unpaid` (a delayed method under way) or `no_payment_required`.
    payment_status: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Charge {
    payment_intent: Option<String>,
    /// Cumulative, in Stripe's units.
    amount_refunded: Option<i64>,
    /// True once the whole charge is refunded.
    #[serde(default)]
    refunded: Option<bool>,
    currency: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Dispute {
    id: String,
    payment_intent: Option<String>,
    amount: i64,
    currency: String,
    status: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// First delivery: applied (or recorded) and committed.
    Processed(Effect),
    /// Processed before; nothing done again.
    AlreadyProcessed,
}

impl Tracked for Delivery {
    fn outcome(&self) -> AttemptOutcome {
        match self {
            Delivery::Processed(_) => AttemptOutcome::Won,
            Delivery::AlreadyProcessed => AttemptOutcome::Replay,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error("event {0} is being processed by another delivery")]
    InFlight(String),
    #[error("{0}")]
    Internal(&'static str),
}

impl super::Transient for DeliveryError {
    fn is_transient(&self) -> bool {
        matches!(self, DeliveryError::Db(e) if super::Transient::is_transient(e))
    }
}

impl Tracked for DeliveryError {
    fn outcome(&self) -> AttemptOutcome {
        match self {
            DeliveryError::InFlight(_) => AttemptOutcome::InFlight,
            DeliveryError::Db(_) | DeliveryError::Internal(_) => AttemptOutcome::Failed,
        }
    }
}

/// Applies one delivery of `event` (whose raw bytes are `payload`) at most once: the claim, the
/// event's effect, the stored event and the attempt's row commit together.
pub async fn apply_delivery(
    pool: &PgPool,
    attempt: &Attempt,
    event: &Event,
    payload: &str,
    livemode: bool,
) -> Result<Delivery, DeliveryError> {
    let key = ClaimKey::webhook(event.account(), &event.id);
    let ran = once(pool, attempt, &key, &Terms::default(), || async |tx| {
        let effect = apply(tx, event, livemode).await?;
        // language=PostgreSQL
        let stored = sqlx::query!(
            r#"
            insert into stripe_events (account, id, type, payload, outcome, detail, org_id, invoice_id)
            values ($1, $2, $3, $4, $5, $6, $7, $8)
            on conflict do nothing
            "#,
            event.account(),
            event.id,
            event.kind,
            payload,
            effect.outcome.as_str(),
            effect.detail,
            effect.org_id as _,
            effect.invoice_id,
        )
        .execute(&mut *tx)
        .await?;
        if stored.rows_affected() == 0 {
            // The claim row was gone (retention) but the event is on record: still a duplicate.
            return Ok::<_, DeliveryError>(Work::RollBack(None));
        }
        Ok(Work::Commit {
            // The claim records nothing more: the stored event says what it did, and the payment it
            // made names it (`payments.event_id`).
            outcome: Outcome::default(),
            concerns: Concerns {
                org: effect.org_id,
                invoice: effect.invoice_id,
            },
            answer: Some(effect),
        })
    })
    .await?;
    match ran {
        Once::Ran(Some(effect)) => {
            tracing::info!(event = %event.id, kind = %event.kind, outcome = effect.outcome.as_str(),
                detail = effect.detail.as_deref().unwrap_or(""), "stripe event processed");
            Ok(Delivery::Processed(effect))
        }
        Once::Ran(None) | Once::Done(_) => {
            // Its activity row names the org and invoice of the event on record, in one statement.
            if let Err(e) = super::record::replay_of_event(pool, attempt, event.account()).await {
                tracing::warn!(error = %e, "could not store an attempt for the activity page");
            }
            Ok(Delivery::AlreadyProcessed)
        }
        // Not reachable while claim and work share a transaction; never answer it with a 200.
        Once::Busy { .. } => Err(DeliveryError::InFlight(event.id.clone())),
        Once::Mismatch => Err(DeliveryError::Internal(
            "webhook claims carry no fingerprint",
        )),
    }
}

fn anomaly(detail: &str) -> sqlx::Result<Effect> {
    Ok(Effect::new(EffectKind::Anomaly, detail.to_owned()))
}

/// The Stripe event types invoicer acts on; any other is stored and answered, with no effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventType {
    CheckoutCompleted,
    CheckoutAsyncSucceeded,
    CheckoutAsyncFailed,
    ChargeRefunded,
    DisputeCreated,
    DisputeClosed,
    Other,
}

impl EventType {
    fn parse(kind: &str) -> EventType {
        match kind {
            "checkout.session.completed" => EventType::CheckoutCompleted,
            "checkout.session.async_payment_succeeded" => EventType::CheckoutAsyncSucceeded,
            "checkout.session.async_payment_failed" => EventType::CheckoutAsyncFailed,
            "charge.refunded" => EventType::ChargeRefunded,
            "charge.dispute.created" => EventType::DisputeCreated,
            "charge.dispute.closed" => EventType::DisputeClosed,
            _ => EventType::Other,
        }
    }
}

/// What an event means for invoices; every event is keyed by its payment intent, whose facts are
/// merged without regard to order (see `payments`).
async fn apply(tx: &mut sqlx::PgConnection, event: &Event, livemode: bool) -> sqlx::Result<Effect> {
    // A test-mode event at a live deployment (or the reverse) is answered and stored, never applied:
    // a test card must not pay a real invoice.
    if event.livemode.is_some_and(|mode| mode != livemode) {
        let (theirs, ours) = if livemode {
            ("test", "live")
        } else {
            ("live", "test")
        };
        return Ok(Effect::new(
            EffectKind::Anomaly,
            format!("a {theirs}-mode event at this {ours}-mode deployment: nothing applied"),
        ));
    }
    let object = || event.data.object.clone();
    match EventType::parse(&event.kind) {
        kind @ (EventType::CheckoutCompleted
        | EventType::CheckoutAsyncSucceeded
        | EventType::CheckoutAsyncFailed) => {
            let Ok(session) = serde_json::from_value::<CheckoutSession>(object()) else {
                return anomaly("unreadable checkout session");
            };
            let status = match (kind, session.payment_status.as_deref()) {
                (EventType::CheckoutAsyncSucceeded, _) => PaymentStatus::Succeeded,
                (EventType::CheckoutAsyncFailed, _) => PaymentStatus::Failed,
                (_, Some("paid")) => PaymentStatus::Succeeded,
                (_, Some("unpaid")) => PaymentStatus::Pending,
                (_, Some("no_payment_required")) => {
                    return Ok(Effect::new(
                        EffectKind::Ignored,
                        "checkout needed no payment: nothing to record".to_owned(),
                    ))
                }
                (_, other) => return anomaly(&format!("unknown payment_status {other:?}")),
            };
            let (Some(payment_intent), Some(amount), Some(currency)) = (
                session.payment_intent.as_deref(),
                session.amount_total,
                session.currency.as_deref(),
            ) else {
                return anomaly(
                    "checkout session without payment_intent, amount_total or currency",
                );
            };
            payments::record_session(
                tx,
                &SessionFact {
                    provider: PROVIDER,
                    session_id: session.id.as_deref(),
                    livemode,
                    payment_intent,
                    invoice_ref: session.client_reference_id.as_deref(),
                    amount,
                    currency,
                    status,
                    failure: (status == PaymentStatus::Failed)
                        .then_some("the delayed payment failed (Stripe: async_payment_failed)"),
                    event_id: &event.id,
                },
            )
            .await
        }
        EventType::ChargeRefunded => {
            let Ok(charge) = serde_json::from_value::<Charge>(object()) else {
                return anomaly("unreadable charge");
            };
            let (Some(payment_intent), Some(currency)) =
                (charge.payment_intent.as_deref(), charge.currency.as_deref())
            else {
                return anomaly("charge without payment_intent or currency");
            };
            let full = charge.refunded == Some(true);
            payments::record_refund(
                tx,
                &RefundFact {
                    provider: PROVIDER,
                    payment_intent,
                    amount_refunded: charge.amount_refunded.unwrap_or(0),
                    full,
                    currency,
                    event_id: &event.id,
                },
            )
            .await
        }
        kind @ (EventType::DisputeCreated | EventType::DisputeClosed) => {
            let Ok(dispute) = serde_json::from_value::<Dispute>(object()) else {
                return anomaly("unreadable dispute");
            };
            let Some(payment_intent) = dispute.payment_intent.as_deref() else {
                return anomaly("dispute without payment_intent");
            };
            // A closed dispute is won or lost; `warning_closed` (an inquiry that never became a
            // chargeback) keeps the money, as a win does.
            let status = match (kind, dispute.status.as_str()) {
                (EventType::DisputeClosed, "lost") => DisputeStatus::Lost,
                (EventType::DisputeClosed, _) => DisputeStatus::Won,
                _ => DisputeStatus::Open,
            };
            payments::record_dispute(
                tx,
                &DisputeFact {
                    provider: PROVIDER,
                    dispute_id: &dispute.id,
                    payment_intent,
                    amount: dispute.amount,
                    currency: &dispute.currency,
                    status,
                    event_id: &event.id,
                },
            )
            .await
        }
        EventType::Other => Ok(Effect::new(
            EffectKind::Ignored,
            format!("event type {} is not handled", event.kind),
        )),
    }
}

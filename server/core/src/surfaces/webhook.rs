//! The Stripe webhook as a surface of the discipline: the key is Stripe's `event.id` (never the
//! object id: one charge produces several events), claimed as `(webhook, stripe account, event id)` in the
//! same transaction that applies the event and stores it. The caller answers 200 only after this
//! returns, that is after commit; any error rolls the claim back with the work, and Stripe retries.

use serde::Deserialize;
use serde_json::Value as JsonValue;
use sqlx::PgPool;

use crate::claim::{ClaimKey, Outcome, Terms};
use crate::mail::gate::Allowance;
use crate::observe::{Attempt, AttemptOutcome, Concerns, Tracked};
use crate::payments::charges::{self, ChargeFact};
use crate::payments::provider::{MethodDetails, Provider, ProviderError};
use crate::payments::saved::{self, SetupFact};
use crate::payments::{self, DisputeFact, Effect, EffectKind, RefundFact, SessionFact};
use crate::surfaces::{once, Once, Work};
use model::collection::ChargeState;
use model::{DisputeStatus, PaymentStatus};

pub use crate::payments::stripe::PROVIDER;
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
    /// `payment` (an invoice paid) or `setup` (a method saved: its setup intent's event says which).
    #[serde(default)]
    mode: Option<String>,
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

#[derive(Debug, Deserialize)]
struct SetupIntent {
    customer: Option<String>,
    payment_method: Option<String>,
    #[serde(default)]
    payment_method_types: Vec<String>,
    mandate: Option<String>,
}

#[derive(Debug, Deserialize)]
struct PaymentIntent {
    id: String,
    amount: i64,
    currency: String,
    #[serde(default)]
    metadata: std::collections::HashMap<String, String>,
    #[serde(default)]
    last_payment_error: Option<JsonValue>,
    #[serde(default)]
    next_action: Option<JsonValue>,
}

/// What a delivery needs besides its event: the mail allowance (a failed charge may send the
/// invoice), and what the provider says about a method an event saves (the event names it only).
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub allowance: Allowance,
    pub method: Option<MethodDetails>,
}

/// For an event that saves a method: the method (and its mandate) read from the provider, before
/// anything is claimed (a read, repeated harmlessly by a redelivery). `None` for any other event,
/// or when no provider is configured (the method is saved with its type only).
pub async fn method_details(
    provider: &impl Provider,
    event: &Event,
) -> Result<Option<MethodDetails>, ProviderError> {
    if EventType::parse(&event.kind) != EventType::SetupSucceeded || !provider.configured() {
        return Ok(None);
    }
    let Ok(intent) = serde_json::from_value::<SetupIntent>(event.data.object.clone()) else {
        return Ok(None);
    };
    let Some(id) = intent.payment_method.as_deref() else {
        return Ok(None);
    };
    Ok(Some(
        provider
            .describe_method(id, intent.mandate.as_deref())
            .await?,
    ))
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
    context: &Context,
) -> Result<Delivery, DeliveryError> {
    let key = ClaimKey::webhook(event.account(), &event.id);
    let ran = once(pool, attempt, &key, &Terms::default(), || async |tx| {
        let effect = apply(tx, event, livemode, context).await?;
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
    SetupSucceeded,
    /// `payment_intent.*`: a charge's outcome, by rank.
    Charge(ChargeState),
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
            "setup_intent.succeeded" => EventType::SetupSucceeded,
            other => ChargeState::of_event(other).map_or(EventType::Other, EventType::Charge),
        }
    }
}

/// What an event means for invoices; every event is keyed by its payment intent, whose facts are
/// merged without regard to order (see `payments`).
async fn apply(
    tx: &mut sqlx::PgConnection,
    event: &Event,
    livemode: bool,
    context: &Context,
) -> sqlx::Result<Effect> {
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
            if session.mode.as_deref() == Some("setup") {
                return Ok(Effect::new(
                    EffectKind::Ignored,
                    "a setup session completed: its setup intent's event saves the method"
                        .to_owned(),
                ));
            }
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
        EventType::SetupSucceeded => {
            let Ok(intent) = serde_json::from_value::<SetupIntent>(object()) else {
                return anomaly("unreadable setup intent");
            };
            let (Some(customer), Some(method)) =
                (intent.customer.as_deref(), intent.payment_method.as_deref())
            else {
                return anomaly("setup intent without customer or payment_method");
            };
            let details = context.method.clone().unwrap_or_default();
            let kind = match details.kind.as_str() {
                "" => intent
                    .payment_method_types
                    .first()
                    .map(String::as_str)
                    .unwrap_or("card"),
                kind => kind,
            };
            saved::record_setup(
                tx,
                &SetupFact {
                    provider: PROVIDER,
                    provider_customer: customer,
                    provider_method: method,
                    kind,
                    brand: details.brand.as_deref(),
                    last4: details.last4.as_deref(),
                    mandate: intent.mandate.as_deref(),
                    mandate_reference: details.mandate_reference.as_deref(),
                    mandate_status: details.mandate_status.as_deref(),
                    event_id: &event.id,
                },
            )
            .await
        }
        EventType::Charge(state) => {
            let Ok(intent) = serde_json::from_value::<PaymentIntent>(object()) else {
                return anomaly("unreadable payment intent");
            };
            let reason = intent
                .last_payment_error
                .as_ref()
                .and_then(|e| e["message"].as_str().or_else(|| e["code"].as_str()))
                .filter(|_| state != ChargeState::Succeeded);
            let action_url = intent
                .next_action
                .as_ref()
                .and_then(|a| a["redirect_to_url"]["url"].as_str())
                .filter(|_| state == ChargeState::RequiresAction);
            charges::record_charge(
                tx,
                &ChargeFact {
                    provider: PROVIDER,
                    payment_intent: &intent.id,
                    invoice_ref: intent.metadata.get("invoice_id").map(String::as_str),
                    attempt_ref: intent.metadata.get("attempt").map(String::as_str),
                    amount: intent.amount,
                    currency: &intent.currency,
                    state,
                    reason,
                    action_url,
                    event_id: &event.id,
                },
                context.allowance,
            )
            .await
        }
        EventType::Other => Ok(Effect::new(
            EffectKind::Ignored,
            format!("event type {} is not handled", event.kind),
        )),
    }
}

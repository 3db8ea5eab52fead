//! Webhooks out, as the API and the settings pages show them: the endpoints an org registers, and
//! the log of what each delivery attempt got.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::FieldErrors;

/// Every event type an endpoint can ask for, in the order the settings form lists them.
pub const EVENT_TYPES: [&str; 11] = [
    "invoice.finalized",
    "invoice.sent",
    "invoice.paid",
    "invoice.partially_paid",
    "invoice.voided",
    "invoice.overdue",
    "credit_note.issued",
    "payment.recorded",
    "payment.refunded",
    "quote.accepted",
    "customer.created",
];

/// The most endpoints an org may have (each delivery of each event is a call out).
pub const MAX_ENDPOINTS: i64 = 20;

/// What a client sends to register an endpoint.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEndpointInput {
    /// Where events are POSTed: `https://` (plain `http://` only where private targets are allowed,
    /// in development).
    #[cfg_attr(feature = "server", schema(max_length = 2048))]
    pub url: String,
    /// The event types it wants (at least one).
    pub events: Vec<String>,
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_length = 500))]
    pub description: String,
}

impl WebhookEndpointInput {
    /// The rules as `field → message` (the URL's address is checked by the server).
    pub fn check(&self) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        let url = self.url.trim();
        if url.is_empty() || url.len() > 2048 || url.contains(char::is_whitespace) {
            out.insert(
                "url".into(),
                "Enter the endpoint's URL (at most 2048 characters).".into(),
            );
        }
        if self.events.is_empty() {
            out.insert("events".into(), "Choose at least one event.".into());
        } else if let Some(bad) = self
            .events
            .iter()
            .find(|e| !EVENT_TYPES.contains(&e.as_str()))
        {
            out.insert(
                "events".into(),
                format!("{:.40} is not an event type.", bad),
            );
        }
        if self.description.chars().count() > 500 {
            out.insert("description".into(), "Enter at most 500 characters.".into());
        }
        super::text::refuse_control_chars(&mut out, "url", &self.url);
        super::text::refuse_control_chars(&mut out, "description", &self.description);
        crate::error::fields_ok(out)
    }

    /// The event types once each, in [`EVENT_TYPES`] order.
    pub fn events_sorted(&self) -> Vec<String> {
        EVENT_TYPES
            .iter()
            .filter(|t| self.events.iter().any(|e| e == *t))
            .map(|t| t.to_string())
            .collect()
    }
}

/// A registered endpoint.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEndpoint {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub description: String,
    /// `enabled`, or `disabled` (after three days of failed deliveries; register it again).
    pub status: String,
    /// The signing secret (`whsec_<base64>`): in the answer that creates the endpoint or rotates
    /// its secret, and on the owner's endpoint page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// When the previous secret stops signing, after a rotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_secret_until: Option<DateTime<Utc>>,
    /// Since when deliveries have been failing (none: the last one succeeded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// One delivery attempt, as the endpoint's log shows it.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookAttempt {
    pub id: Uuid,
    /// The event's id (`webhook-id` is `msg_` and its simple form).
    pub event_id: Uuid,
    pub event_type: String,
    /// The delivery (an outbox row): redelivering makes a new one of the same event.
    pub delivery_id: Uuid,
    pub attempted_at: DateTime<Utc>,
    /// The answer's status; none when there was no answer (timeout, refused connection).
    pub status_code: Option<i32>,
    pub latency_ms: i32,
    /// The first 1 KB of the answer.
    pub response: String,
    /// What went wrong when there was no answer, in our words.
    pub error: Option<String>,
}

/// An endpoint's page: the endpoint, its recent attempts, and what is still due.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEndpointPage {
    pub endpoint: WebhookEndpoint,
    pub attempts: Vec<WebhookAttempt>,
    /// Deliveries waiting for their next try.
    pub pending: i64,
    /// The key of the page's forms (rotate, delete).
    pub form_key: Uuid,
    /// A key for each attempt's "Deliver again" button, in the order of `attempts`.
    pub redeliver_keys: Vec<Uuid>,
}

/// The `webhook-id` of event `id`.
pub fn message_id(id: Uuid) -> String {
    format!("msg_{}", id.simple())
}

//! What a claim is keyed by: the surface, the owner (an org's form, a provider, an API key, a job
//! queue) and the key that names the attempt. The forms' names are the form surface's
//! (`surfaces::forms`).

use uuid::Uuid;

/// Where an attempt arrives: names claims, log events, metrics and the activity page alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// A form or button of the web app: `(org/form, key minted at render)`.
    Form,
    /// A Stripe webhook delivery: `(stripe account, event id)`.
    Webhook,
    /// The JSON API: `(api client id, Idempotency-Key)`.
    Api,
    /// A background job: `(queue, run id)`.
    Job,
    /// A call out to a third party: `(service/call, the attempt's stable key)`.
    Outbound,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Form => "form",
            Surface::Webhook => "webhook",
            Surface::Api => "api",
            Surface::Job => "job",
            Surface::Outbound => "outbound",
        }
    }
}

/// Names one attempt, scoped to its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimKey {
    pub surface: Surface,
    pub owner: String,
    pub key: String,
}

impl ClaimKey {
    /// A Stripe event, keyed by its event id (never the object id: one charge has several events).
    pub fn webhook(account: &str, event_id: &str) -> Self {
        ClaimKey {
            surface: Surface::Webhook,
            owner: account.to_owned(),
            key: event_id.to_owned(),
        }
    }

    /// An API client's request, keyed by its `Idempotency-Key`.
    pub fn api(api_key_id: Uuid, idempotency_key: &str) -> Self {
        ClaimKey {
            surface: Surface::Api,
            owner: api_key_id.to_string(),
            key: idempotency_key.to_owned(),
        }
    }

    /// A call out to a third party (`stripe/checkout`), keyed by what names the attempt there (the
    /// invoice, the amount due and the session's generation).
    pub fn outbound(call: &str, key: &str) -> Self {
        ClaimKey {
            surface: Surface::Outbound,
            owner: call.to_owned(),
            key: key.to_owned(),
        }
    }

    /// A job run, keyed by its stable run id (an outbox row id, a retention period).
    pub fn job(queue: &str, run_id: &str) -> Self {
        ClaimKey {
            surface: Surface::Job,
            owner: queue.to_owned(),
            key: run_id.to_owned(),
        }
    }
}

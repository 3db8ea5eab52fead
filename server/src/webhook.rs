//! `POST /webhooks/stripe`: raw body (1 MiB at most), signature first, then the claimed transaction.
//! 200 only after commit; already processed is 200 too; any failure is a 5xx so Stripe retries.

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use invoicer_core::observe::{Attempt, AttemptOutcome, Surface, Tracked};
use invoicer_core::payments::stripe::signature;
use invoicer_core::surfaces::track;
use invoicer_core::surfaces::webhook::{self, Delivery, DeliveryError, Event};
use invoicer_core::AppState;

pub const MAX_BODY: usize = 1024 * 1024;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/webhooks/stripe", post(receive))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

fn plain(status: StatusCode, text: impl Into<String>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.into(),
    )
        .into_response()
}

async fn receive(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let settings = &state.settings;
    let request_id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let attempt = Attempt::new(Surface::Webhook, "-", request_id);
    attempt.identify("stripe", None);
    let delivery = track(&state.pool, attempt, async |attempt| {
        let provided = headers
            .get("stripe-signature")
            .and_then(|v| v.to_str().ok());
        let now = chrono::Utc::now().timestamp();
        let secrets = &settings.stripe_webhook_secrets;
        // Counted so that the cost of a refusal can be checked from outside (at most one MAC per
        // configured secret, whatever the header holds).
        signature::verify_with(
            provided,
            &body,
            secrets,
            now,
            settings.stripe_tolerance_secs,
            |secret, t, body| {
                metrics::counter!("invoicer_webhook_signature_macs_total").increment(1);
                signature::mac(secret, t, body)
            },
        )?;
        // Only now, with a genuine sender, is the body worth reading.
        let payload = std::str::from_utf8(&body).map_err(|_| Refusal::Unreadable)?;
        let event: Event = serde_json::from_str(payload).map_err(|_| Refusal::Unreadable)?;
        // The event id is known only now; the attempt is keyed by it from here on.
        attempt
            .rekey(&event.id)
            .identify(format!("stripe/{}", event.account()), None);
        let livemode = settings.stripe_livemode;
        // A method an event saves is described by the provider, read before anything is claimed.
        let method = webhook::method_details(&state.stripe, &event)
            .await
            .map_err(Refusal::Provider)?;
        let context = webhook::Context {
            allowance: invoicer_core::mail::gate::Allowance::of(&settings.limits),
            method,
        };
        Ok(
            webhook::apply_delivery(&state.pool, &attempt, &event, payload, livemode, &context)
                .await?,
        )
    })
    .await;
    match delivery {
        Ok(Delivery::Processed(_)) => plain(StatusCode::OK, "ok"),
        Ok(Delivery::AlreadyProcessed) => plain(StatusCode::OK, "already processed"),
        Err(Refusal::Signature(e)) => {
            tracing::warn!(reason = e.reason(), "stripe webhook refused: {e}");
            metrics::counter!("invoicer_webhook_signature_failures_total", "reason" => e.reason())
                .increment(1);
            // The reason is plain and safe: it names no secret and nothing internal.
            plain(StatusCode::BAD_REQUEST, e.to_string())
        }
        Err(Refusal::Unreadable) => {
            tracing::warn!("stripe webhook: signed but unreadable payload");
            plain(StatusCode::BAD_REQUEST, "invalid payload")
        }
        Err(Refusal::Delivery(DeliveryError::InFlight(_))) => (
            StatusCode::CONFLICT,
            [(header::RETRY_AFTER, "5")],
            "event is being processed",
        )
            .into_response(),
        Err(Refusal::Delivery(DeliveryError::Db(e)))
            if invoicer_core::surfaces::is_unavailable(&e) =>
        {
            tracing::warn!(error = %e, "stripe webhook: database unavailable; Stripe will retry");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(
                    header::RETRY_AFTER,
                    invoicer_core::surfaces::UNAVAILABLE_RETRY_AFTER
                        .as_secs()
                        .to_string(),
                )],
                "database unavailable; retry",
            )
                .into_response()
        }
        Err(Refusal::Provider(e)) => {
            tracing::warn!(error = %e, "stripe webhook: the saved method could not be read; Stripe will retry");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "30")],
                "the provider could not be reached; retry",
            )
                .into_response()
        }
        Err(Refusal::Delivery(e)) => {
            tracing::error!(error = %e, "stripe webhook failed; Stripe will retry");
            plain(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
        }
    }
}

/// Why a delivery got no 200.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error(transparent)]
    Signature(#[from] signature::SignatureError),
    #[error("invalid payload")]
    Unreadable,
    #[error(transparent)]
    Delivery(#[from] DeliveryError),
    #[error("the provider could not describe the saved method: {0}")]
    Provider(invoicer_core::payments::provider::ProviderError),
}

impl Tracked for Refusal {
    fn outcome(&self) -> AttemptOutcome {
        match self {
            Refusal::Signature(_) | Refusal::Unreadable => AttemptOutcome::Rejected,
            Refusal::Delivery(e) => e.outcome(),
            Refusal::Provider(_) => AttemptOutcome::Failed,
        }
    }
}

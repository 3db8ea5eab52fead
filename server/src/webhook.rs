//! `POST /webhooks/stripe`: raw body (1 MiB at most), signature first, then the claimed transaction.
//! 200 only after commit; already processed is 200 too; any failure is a 5xx so Stripe retries.

use app::ssr::stripe::signature;
use app::ssr::stripe::surface::{self, Delivery, Event};
use app::ssr::AppState;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;

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
    use app::ssr::observe::{attempt, record, Attempt, AttemptOutcome::*, Surface::Webhook};
    let started = std::time::Instant::now();
    let settings = &state.settings;
    let provided = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok());
    let now = chrono::Utc::now().timestamp();
    if let Err(e) = signature::verify(
        provided,
        &body,
        &settings.stripe_webhook_secrets,
        now,
        settings.stripe_tolerance_secs,
    ) {
        tracing::warn!(reason = e.reason(), "stripe webhook refused: {e}");
        metrics::counter!("invoicer_webhook_signature_failures_total", "reason" => e.reason())
            .increment(1);
        attempt(Webhook, "stripe", "-", Rejected, started);
        // The reason is plain and safe: it names no secret and nothing internal.
        return plain(StatusCode::BAD_REQUEST, e.to_string());
    }
    // Only now, with a genuine sender, is the body worth reading.
    let event = std::str::from_utf8(&body)
        .ok()
        .and_then(|payload| Some((payload, serde_json::from_str::<Event>(payload).ok()?)));
    let Some((payload, event)) = event else {
        tracing::warn!("stripe webhook: signed but unreadable payload");
        attempt(Webhook, "stripe", "-", Rejected, started);
        return plain(StatusCode::BAD_REQUEST, "invalid payload");
    };
    let owner = format!("stripe/{}", event.account());
    let mut this = Attempt {
        surface: Webhook,
        org: None,
        owner: &owner,
        key: &event.id,
        outcome: Won,
        invoice: None,
        request_id: headers.get("x-request-id").and_then(|v| v.to_str().ok()),
        started,
    };
    let result = surface::process(
        &state.pool,
        &event,
        payload,
        settings.claim_lease,
        Some(&this),
    )
    .await;
    let (outcome, response, concerns) = match result {
        Ok(Delivery::Processed(_)) => {
            // Its row committed with the event.
            attempt(Webhook, &owner, &event.id, Won, started);
            return plain(StatusCode::OK, "ok");
        }
        Ok(Delivery::AlreadyProcessed) => {
            // Stored with the org and invoice of the event on record, in one statement.
            attempt(Webhook, &owner, &event.id, Replay, started);
            this.outcome = Replay;
            if let Err(e) = surface::store_replay(&state.pool, &this, event.account()).await {
                tracing::warn!(error = %e, "could not store an attempt for the activity page");
            }
            return plain(StatusCode::OK, "already processed");
        }
        Err(surface::DeliveryError::InFlight(_)) => (
            InFlight,
            (
                StatusCode::CONFLICT,
                [(header::RETRY_AFTER, "5")],
                "event is being processed",
            )
                .into_response(),
            (None, None),
        ),
        Err(e) => {
            tracing::error!(event = %event.id, error = %e, "stripe webhook failed; Stripe will retry");
            (
                Failed,
                plain(StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
                (None, None),
            )
        }
    };
    (this.outcome, this.org, this.invoice) = (outcome, concerns.0, concerns.1);
    record(&state.pool, this).await;
    response
}

//! `POST /webhooks/peppol`: a received document delivered by the access point (phoss-ap's HTTP
//! forwarding: the SBD as the body, `X-SBDH-Instance-ID`), signed with PEPPOL_INBOUND_SECRET
//! (Standard Webhooks). The signature is checked before the body is read; the document is stored
//! under the claim `(webhook, peppol, instance id)` in one transaction and answered 200 (with
//! phoss-ap's `countryCodeC4`) only after the commit; a repeat is 200 and stores nothing.

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use invoicer_core::observe::{Attempt, Surface};
use invoicer_core::peppol::inbox::{self, Delivered, Refused};
use invoicer_core::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/webhooks/peppol", post(receive))
        .layer(DefaultBodyLimit::max(inbox::MAX_FILE_BYTES))
}

fn plain(status: StatusCode, text: impl Into<String>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.into(),
    )
        .into_response()
}

fn retry(status: StatusCode, after: u64, text: &str) -> Response {
    (
        status,
        [
            (header::RETRY_AFTER, after.to_string()),
            (header::CONTENT_TYPE, "text/plain; charset=utf-8".to_owned()),
        ],
        text.to_owned(),
    )
        .into_response()
}

/// A refusal the access point should not retry (phoss-ap's `retry: none`).
fn refuse(text: String) -> Response {
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        Json(serde_json::json!({"retry": "none", "errorMessage": text})),
    )
        .into_response()
}

async fn receive(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(secret) = state.settings.peppol_inbound_secret.as_ref() else {
        return retry(
            StatusCode::SERVICE_UNAVAILABLE,
            3600,
            "receiving by Peppol is not configured",
        );
    };
    let header_of = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    };
    let id = header_of("webhook-id");
    if let Err(why) = inbox::verify(
        secret.expose(),
        id,
        header_of("webhook-timestamp"),
        header_of("webhook-signature"),
        &body,
        chrono::Utc::now().timestamp(),
    ) {
        tracing::warn!(reason = why, "peppol webhook refused");
        return plain(StatusCode::BAD_REQUEST, format!("bad signature: {why}"));
    }
    let instance = match header_of("x-sbdh-instance-id") {
        "" => id.to_owned(),
        given if given.len() <= 200 => given.to_owned(),
        _ => return plain(StatusCode::BAD_REQUEST, "an overlong X-SBDH-Instance-ID"),
    };
    let opened = match inbox::open_bounded(body.to_vec()).await {
        Err(_) => return retry(StatusCode::SERVICE_UNAVAILABLE, 5, "busy; retry"),
        Ok(Err(e @ (Refused::Unreadable(_) | Refused::PdfWithoutXml | Refused::TooLarge))) => {
            tracing::warn!(%instance, error = %e, "peppol webhook: not an e-invoice");
            return refuse(e.to_string());
        }
        Ok(Ok(opened)) => opened,
    };
    // The org is the participant the document is addressed to, written as the org's id is.
    let receiver = model::peppol::normalize_participant_id(&opened.received.buyer_endpoint);
    let org = match inbox::org_by_peppol_id(&state.pool, &receiver).await {
        Ok(Some(org)) => org,
        Ok(None) => {
            tracing::warn!(%instance, %receiver, "peppol webhook: addressed to no org");
            return refuse(format!("no organisation here receives as {receiver}"));
        }
        Err(e) => return unavailable(e),
    };
    let attempt = Attempt::new(Surface::Webhook, instance.clone(), None);
    attempt.identify("peppol", Some(org));
    match inbox::deliver(&state.pool, &attempt, org, &instance, &opened).await {
        Ok(Delivered::Stored(_)) | Ok(Delivered::Already) => {
            let country = invoicer_core::accounts::orgs::details(&state.pool, org)
                .await
                .map(|d| d.address.country)
                .unwrap_or_default();
            Json(serde_json::json!({"countryCodeC4": country})).into_response()
        }
        Ok(Delivered::Busy(after)) => retry(
            StatusCode::CONFLICT,
            after.as_secs().max(1),
            "this delivery is being stored",
        ),
        Err(e) => unavailable(e),
    }
}

fn unavailable(e: sqlx::Error) -> Response {
    tracing::error!(error = %e, "peppol webhook failed; the access point will retry");
    retry(
        StatusCode::SERVICE_UNAVAILABLE,
        invoicer_core::surfaces::UNAVAILABLE_RETRY_AFTER.as_secs(),
        "temporarily unavailable; retry",
    )
}

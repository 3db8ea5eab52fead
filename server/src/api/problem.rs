//! RFC 9457 problem details: the API's one error type. Internal errors are logged with their whole
//! text and answered with an opaque problem; handlers use a bare `?` through the `From` impls.

use std::collections::BTreeMap;

use axum::extract::rejection::BytesRejection;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use invoicer_core::observe::{AttemptOutcome, Tracked};
use invoicer_core::surfaces::api::KeyError;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// RFC 9457 problem details.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Field path → message, for invalid payloads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<BTreeMap<String, String>>,
}

pub struct ProblemResponse {
    pub(super) status: StatusCode,
    pub(super) problem: Box<Problem>,
    retry_after: Option<u64>,
}

pub(super) fn problem(
    status: StatusCode,
    slug: &str,
    title: &str,
    detail: impl Into<String>,
) -> ProblemResponse {
    ProblemResponse {
        status,
        problem: Box::new(Problem {
            kind: format!("/problems/{slug}"),
            title: title.to_owned(),
            status: status.as_u16(),
            detail: detail.into(),
            errors: None,
        }),
        retry_after: None,
    }
}

pub(super) fn internal(context: &str, err: impl std::fmt::Display + 'static) -> ProblemResponse {
    let any: &dyn std::any::Any = &err;
    if let Some(e) = any.downcast_ref::<sqlx::Error>() {
        if invoicer_core::surfaces::is_unavailable(e) {
            tracing::warn!(error = %e, "api: {context}: database unavailable");
            return unavailable();
        }
    }
    tracing::error!(error = %err, "api: {context}");
    problem(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "Internal error",
        "Something went wrong on our side; nothing was saved twice. Retry with the same Idempotency-Key.",
    )
}

/// 503: the database cannot be reached or take writes now (a failover): retry with the same key.
pub(super) fn unavailable() -> ProblemResponse {
    problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "Database unavailable",
        "The database is switching to another server; nothing was saved twice. Retry with the same Idempotency-Key after Retry-After seconds.",
    )
    .retry_after(invoicer_core::surfaces::UNAVAILABLE_RETRY_AFTER)
}

impl ProblemResponse {
    pub(super) fn retry_after(mut self, after: std::time::Duration) -> Self {
        self.retry_after = Some(after.as_secs().max(1));
        self
    }
}

impl Tracked for ProblemResponse {
    fn outcome(&self) -> AttemptOutcome {
        if self.status.is_client_error() {
            AttemptOutcome::Rejected
        } else {
            AttemptOutcome::Failed
        }
    }
}

/// Logged with its whole text; the client gets the opaque internal problem, or 503 with Retry-After
/// while the database cannot be reached (the same Idempotency-Key is then safe to send again).
impl From<sqlx::Error> for ProblemResponse {
    fn from(err: sqlx::Error) -> Self {
        internal("database error", err)
    }
}

impl From<KeyError> for ProblemResponse {
    fn from(err: KeyError) -> Self {
        problem(
            StatusCode::BAD_REQUEST,
            "idempotency-key",
            "Bad Idempotency-Key",
            err.to_string(),
        )
    }
}

impl From<BytesRejection> for ProblemResponse {
    fn from(rejection: BytesRejection) -> Self {
        let status = rejection.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            problem(
                status,
                "too-large",
                "Payload too large",
                "The body may be at most 1 MiB.",
            )
        } else {
            problem(
                status,
                "unreadable-body",
                "Unreadable body",
                rejection.body_text(),
            )
        }
    }
}

impl IntoResponse for ProblemResponse {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            serde_json::to_vec(&self.problem).unwrap_or_default(),
        )
            .into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

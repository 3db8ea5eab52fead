//! `POST /api/v1/invoices/{id}/checkout`: a Checkout session for the amount due.

use axum::http::StatusCode;
use axum::response::Response;
use invoicer_core::payments::checkout::{self, Checkout, CheckoutError, Urls};
use invoicer_core::surfaces::api;
use serde::Serialize;
use utoipa::ToSchema;

use super::super::documented::{ActionProblems, InvoiceWrite, NotFound};
use super::super::problem::{problem, Problem, ProblemResponse};
use super::super::write::{stored_problem, Write};
use super::{action_body, not_found};

/// A Checkout session to pay an invoice: where to send the payer.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckoutSession {
    /// Stripe's session id (`cs_...`).
    pub id: String,
    /// Stripe's hosted payment page.
    pub url: String,
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// A Checkout session for the amount due, once per `Idempotency-Key`; and one per invoice and amount
/// due whatever the keys: another key (or the customer's Pay button) gets the same open session.
#[utoipa::path(
    post, path = "/api/v1/invoices/{id}/checkout", tag = "invoices", params(InvoiceWrite),
    responses(
        (status = 200, description = "The open session; replays return the stored response with `Idempotent-Replayed: true`", body = CheckoutSession),
        ActionProblems,
        NotFound,
        (status = 409, description = "Nothing is due (draft, paid, void), or the same key (or the session) is still being created: retry after `Retry-After`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Stripe could not be reached (nothing stored: retry with the same key)", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(in crate::api) async fn checkout_invoice(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let id = req.id(not_found)?;
            let value = action_body(body)?;
            // A replay (or a reused key) is answered before anything calls Stripe.
            if let Some(earlier) = req.answered(&value).await? {
                return Ok(earlier);
            }
            let urls = Urls {
                public_base: &req.state().settings.public_url,
            };
            let session = checkout::session(
                &req.state().pool,
                &req.state().stripe,
                &urls,
                req.org(),
                model::InvoiceId::from(id),
            );
            let response = match session.await {
                Ok(Checkout::Session(s)) => api::ok(&CheckoutSession {
                    id: s.id,
                    url: s.url,
                    expires_at: s.expires_at,
                }),
                Ok(Checkout::NothingDue { status }) => stored_problem(problem(
                    StatusCode::CONFLICT,
                    "nothing-due",
                    "Nothing to pay",
                    format!("This invoice is {status} with nothing due."),
                )),
                Ok(Checkout::NotFound) => return Err(not_found()),
                Ok(Checkout::NotEnabled) => stored_problem(problem(
                    StatusCode::CONFLICT,
                    "payments-not-enabled",
                    "Payments not enabled yet",
                    "This organisation may not take card payments yet: the operator enables them.",
                )),
                Err(CheckoutError::Busy(retry_after)) => {
                    return Err(problem(
                        StatusCode::CONFLICT,
                        "in-flight",
                        "Checkout in flight",
                        "The checkout session is being created. Retry later.",
                    )
                    .retry_after(retry_after));
                }
                Err(CheckoutError::Saturated) => return Err(problem(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "payment-unavailable",
                    "Payment temporarily unavailable",
                    "Too many payments are being set up right now. Nothing was stored: retry with \
                     the same key.",
                )
                .retry_after(std::time::Duration::from_secs(5))),
                Err(CheckoutError::Stripe(e)) => {
                    tracing::error!(error = %e, invoice = %id, "creating a checkout session");
                    return Err(problem(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "payment-unavailable",
                        "Payment temporarily unavailable",
                        "Stripe could not be reached. Nothing was stored: retry with the same key.",
                    )
                    .retry_after(std::time::Duration::from_secs(30)));
                }
                Err(CheckoutError::Db(e)) => return Err(e.into()),
            };
            req.once(&value, || {
                let response = response.clone();
                async move |_tx: &mut sqlx::PgConnection| Ok((response, Some(id)))
            })
            .await
        })
        .await
}

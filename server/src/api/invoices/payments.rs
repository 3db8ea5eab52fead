//! An invoice's payments: record one taken by hand (once per Idempotency-Key), and read them,
//! Stripe's and those recorded by hand alike.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use invoicer_core::payments::manual::{self, PaymentError};
use invoicer_core::surfaces::api;
use invoicer_core::AppState;
use model::{Payment, PaymentInput};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::super::client::Client;
use super::super::documented::{
    CreateProblems, InFlight, InvoiceId, InvoiceWrite, NotFound, PaymentId, Unauthorized,
};
use super::super::problem::{problem, Problem, ProblemResponse};
use super::super::write::{self, stored_problem, Write};
use super::not_found;

#[derive(Debug, Serialize, ToSchema)]
pub struct PaymentList {
    /// Oldest first.
    pub data: Vec<Payment>,
}

/// Record a payment taken outside Stripe (a bank transfer, cash, a cheque, a card), once per
/// `Idempotency-Key`. The invoice's paid amount and payment state follow; more than is due is
/// recorded (an overpayment).
#[utoipa::path(
    post, path = "/api/v1/invoices/{id}/payments", tag = "payments",
    request_body = PaymentInput,
    params(InvoiceWrite),
    responses(
        (status = 201, description = "Recorded; replays return the stored response with `Idempotent-Replayed: true`", body = Payment,
            headers(("Location" = String, description = "The payment's URL"))),
        CreateProblems,
        NotFound,
        InFlight,
        (status = 409, description = "A draft or a void invoice takes no payments (stored for the key)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid payment (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(in super::super) async fn post_payment(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (id, org) = (req.id(not_found)?, req.org());
            let (value, input) = write::json_body(body, "payment", |_: &PaymentInput| Ok(()))?;
            // An unknown invoice is answered before anything is claimed, and the org's rules (the
            // date against its today) refuse inside the command, rolling the claim back: either
            // way the key stays usable.
            let pool = &req.state().pool;
            if !invoicer_core::invoicing::invoices::exists(
                &mut *pool.acquire().await?,
                org,
                model::InvoiceId::from(id),
            )
            .await?
            {
                return Err(not_found());
            }
            let name = req.attempt_name();
            req.once(&value, || {
                async |tx| {
                    let payment = Uuid::now_v7();
                    let recorded = manual::record(
                        tx,
                        org,
                        model::InvoiceId::from(id),
                        payment,
                        &name,
                        &input,
                        None,
                    )
                    .await;
                    let response = match recorded {
                        Ok((p, _)) => api::created(&req.location(p.id), &p),
                        Err(PaymentError::Db(e)) => return Err(e.into()),
                        Err(PaymentError::NotFound) => stored_problem(not_found()),
                        Err(PaymentError::Invalid(fields)) => {
                            return Err(write::invalid("payment", fields).into())
                        }
                        Err(e) => stored_problem(problem(
                            StatusCode::CONFLICT,
                            "not-payable",
                            "The invoice takes no payments",
                            e.to_string(),
                        )),
                    };
                    Ok((response, Some(id)))
                }
            })
            .await
        })
        .await
}

/// The invoice's payments, oldest first: Stripe's (`source: stripe`) and those recorded by hand
/// (`source: manual`).
#[utoipa::path(
    get, path = "/api/v1/invoices/{id}/payments", tag = "payments", params(InvoiceId),
    responses(
        (status = 200, body = PaymentList),
        Unauthorized,
        NotFound,
    ),
)]
pub(in super::super) async fn list_payments(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Json<PaymentList>, ProblemResponse> {
    let data = payments_of(&state, client.org_id, &id).await?;
    Ok(Json(PaymentList { data }))
}

/// The payments of `org`'s invoice `id`, or 404.
async fn payments_of(
    state: &AppState,
    org: model::OrgId,
    id: &str,
) -> Result<Vec<Payment>, ProblemResponse> {
    let id = Uuid::try_parse(id).map_err(|_| not_found())?;
    manual::list(&state.pool, org, model::InvoiceId::from(id))
        .await?
        .ok_or_else(not_found)
}

/// One payment of the invoice.
#[utoipa::path(
    get, path = "/api/v1/invoices/{id}/payments/{payment_id}", tag = "payments", params(PaymentId),
    responses(
        (status = 200, body = Payment),
        Unauthorized,
        NotFound,
    ),
)]
pub(in super::super) async fn get_payment(
    State(state): State<AppState>,
    Client(client): Client,
    Path((id, payment)): Path<(String, String)>,
) -> Result<Json<Payment>, ProblemResponse> {
    let payment = Uuid::try_parse(&payment).map_err(|_| not_found())?;
    payments_of(&state, client.org_id, &id)
        .await?
        .into_iter()
        .find(|p| p.id == payment)
        .map(Json)
        .ok_or_else(not_found)
}

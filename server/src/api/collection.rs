//! Collecting without asking: a link where a customer saves a payment method, the methods they
//! saved, and "charge now".

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use invoicer_core::payments::charges::{self, Refusal};
use invoicer_core::payments::saved::{self, LinkError, SetupUrls};
use invoicer_core::surfaces::api;
use invoicer_core::AppState;
use model::collection::SavedMethod;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::client::Client;
use super::documented::{
    CustomerId, CustomerWrite, InFlight, InvoiceWrite, NotFound, Unauthorized,
};
use super::invoices::action_body;
use super::problem::{problem, Problem, ProblemResponse};
use super::write::{self, stored_problem, Write};

/// Where the customer saves a method.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PaymentMethodLink {
    /// The provider's setup page (the local Stripe's in dev and tests).
    pub url: String,
}

/// What a link may name.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkInput {
    /// The currency the methods will be charged in (lower case; default `eur`).
    #[serde(default)]
    pub currency: Option<String>,
}

/// The methods a customer saved.
#[derive(Debug, Serialize, ToSchema)]
pub struct PaymentMethodList {
    pub data: Vec<SavedMethod>,
}

/// An attempt to charge an invoice now.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChargeQueued {
    pub invoice_id: uuid::Uuid,
    /// The attempt's number.
    pub attempt: i16,
}

fn customer_not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such customer.",
    )
}

fn invoice_not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such invoice.",
    )
}

/// A page where the customer saves a card or a SEPA Direct Debit mandate for automatic charges,
/// once per `Idempotency-Key`.
#[utoipa::path(
    post, path = "/api/v1/customers/{id}/payment_method_link", tag = "customers",
    params(CustomerWrite), request_body(content = LinkInput, description = "Optional"),
    responses(
        (status = 201, description = "The setup page; replays return the stored response with `Idempotent-Replayed: true`", body = PaymentMethodLink),
        (status = 400, description = "Missing or malformed Idempotency-Key, or a malformed body", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
        NotFound,
        InFlight,
        (status = 422, description = "An unknown currency, or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The provider could not be reached (nothing stored: retry with the same key)", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn post_payment_method_link(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let id = req.id(customer_not_found)?;
            let value = action_body(body)?;
            let input: LinkInput = if value.is_null() {
                LinkInput::default()
            } else {
                serde_json::from_value(value.clone())
                    .map_err(|e| write::unreadable("payment-method-link", e.to_string()))?
            };
            let currency = input.currency.unwrap_or_else(|| "eur".to_owned());
            if model::currency(&currency).is_none() {
                return Err(write::invalid(
                    "payment-method-link",
                    [(
                        "currency".to_owned(),
                        "An ISO 4217 code in lower case.".to_owned(),
                    )]
                    .into(),
                ));
            }
            if let Some(earlier) = req.answered(&value).await? {
                return Ok(earlier);
            }
            let state = req.state();
            let base = &state.settings.public_url;
            let urls = SetupUrls {
                success: format!("{base}/saved?saved=1"),
                cancel: format!("{base}/saved"),
            };
            let customer = model::CustomerId::from(id);
            let made = saved::setup_link(
                &state.pool,
                &state.stripe,
                req.org(),
                customer,
                &currency,
                &req.attempt_name(),
                &urls,
            )
            .await;
            let url = match made {
                Ok(Some(url)) => url,
                Ok(None) => return Err(customer_not_found()),
                Err(LinkError::Db(e)) => return Err(e.into()),
                Err(e) => {
                    tracing::error!(error = %e, customer = %id, "creating a setup session");
                    return Err(problem(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "payment-unavailable",
                        "Payment provider unavailable",
                        "The payment provider could not be reached. Nothing was stored: retry \
                         with the same key.",
                    )
                    .retry_after(std::time::Duration::from_secs(30)));
                }
            };
            let location = format!("/api/v1/customers/{id}/payment_methods");
            let response = api::created(&location, &PaymentMethodLink { url });
            req.once(&value, || {
                let response = response.clone();
                async move |_tx: &mut sqlx::PgConnection| Ok((response, None))
            })
            .await
        })
        .await
}

/// The payment methods a customer saved (and did not remove), oldest first.
#[utoipa::path(
    get, path = "/api/v1/customers/{id}/payment_methods", tag = "customers", params(CustomerId),
    responses(
        (status = 200, body = PaymentMethodList),
        Unauthorized,
        NotFound,
    ),
)]
pub(super) async fn list_payment_methods(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Json<PaymentMethodList>, ProblemResponse> {
    let id = uuid::Uuid::try_parse(&id).map_err(|_| customer_not_found())?;
    let mut conn = state.pool.acquire().await?;
    saved::list(&mut conn, client.org_id, model::CustomerId::from(id))
        .await?
        .map(|data| Json(PaymentMethodList { data }))
        .ok_or_else(customer_not_found)
}

/// Charge the invoice now, off-session, to its customer's default saved method, once per
/// `Idempotency-Key`: a new attempt that a worker sends; its outcome shows in the invoice's
/// `charge_attempts`.
#[utoipa::path(
    post, path = "/api/v1/invoices/{id}/charge", tag = "invoices", params(InvoiceWrite),
    responses(
        (status = 202, description = "The attempt is queued; replays return the stored response with `Idempotent-Replayed: true`", body = ChargeQueued),
        (status = 400, description = "Missing or malformed Idempotency-Key, or a malformed body", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
        NotFound,
        (status = 409, description = "Nothing is due, a charge is under way, the customer saved no method, or the same key is in flight", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn charge_invoice(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (id, org) = (req.id(invoice_not_found)?, req.org());
            let value = action_body(body)?;
            req.once(&value, || {
                async |tx| {
                    let invoice = model::InvoiceId::from(id);
                    let conflict = |kind: &str, title: &str, detail: String| {
                        Ok((
                            stored_problem(problem(StatusCode::CONFLICT, kind, title, detail)),
                            Some(id),
                        ))
                    };
                    match charges::charge_now(tx, org, invoice).await? {
                        Ok(n) => {
                            let body = ChargeQueued {
                                invoice_id: id,
                                attempt: n,
                            };
                            let mut response = api::ok(&body);
                            response.status = StatusCode::ACCEPTED.as_u16();
                            Ok((response, Some(id)))
                        }
                        Err(Refusal::NotFound) => Err(invoice_not_found().into()),
                        Err(Refusal::NothingDue(status)) => conflict(
                            "nothing-due",
                            "Nothing to charge",
                            format!("This invoice is {status} with nothing due."),
                        ),
                        Err(Refusal::UnderWay) => conflict(
                            "charge-under-way",
                            "A charge is under way",
                            "A charge of this invoice is scheduled or processing.".to_owned(),
                        ),
                        Err(Refusal::NoMethod) => conflict(
                            "no-payment-method",
                            "No saved payment method",
                            "The customer has saved no payment method: send them a payment method \
                         link."
                                .to_owned(),
                        ),
                        Err(Refusal::TooMany) => conflict(
                            "too-many-attempts",
                            "Too many attempts",
                            format!("This invoice was tried {} times.", charges::MAX_ATTEMPTS),
                        ),
                    }
                }
            })
            .await
        })
        .await
}

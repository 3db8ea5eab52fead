//! `POST /api/v1/invoices`: create an invoice, once per Idempotency-Key.

use axum::response::Response;
use invoicer_core::invoicing::invoices;
use model::{Invoice, InvoiceInput};

use super::super::documented::{CreateProblems, NewInvoice};
use super::super::problem::{Problem, ProblemResponse};
use super::super::write::{self, Write};

/// Create an invoice, once per `Idempotency-Key`.
#[utoipa::path(
    post, path = "/api/v1/invoices", tag = "invoices",
    request_body = InvoiceInput,
    params(NewInvoice),
    responses(
        (status = 201, description = "Created; replays return the stored response with `Idempotent-Replayed: true`", body = Invoice,
            headers(("Location" = String, description = "The invoice's URL"))),
        CreateProblems,
        (status = 409, description = "The same key is still in flight; retry after `Retry-After` seconds", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid invoice (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(in crate::api) async fn post_invoice(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (value, input) = write::json_body(body, "invoice", InvoiceInput::check_as_sent)?;
            let (org, public_base) = (req.org(), req.state().settings.public_url.as_str());
            write::create_once!(req, &value, names: true, |tx, id| {
                let new = invoices::NewInvoice {
                    id: model::InvoiceId::from(id),
                    org,
                    source_key: None,
                    public_base,
                };
                invoices::create(tx, new, &input)
            })
        })
        .await
}

//! The invoice endpoints: create, read, edit a draft, the lifecycle actions and checkout. Every write
//! runs once per Idempotency-Key through [`super::write::Write`].

mod actions;
mod checkout;
mod create;
mod edit;
mod payments;
mod read;

pub(super) use actions::*;
pub use checkout::CheckoutSession;
pub(super) use checkout::*;
pub(super) use create::*;
pub(super) use edit::*;
pub use payments::PaymentList;
pub(super) use payments::*;
pub use read::InvoiceList;
pub(super) use read::*;

use axum::http::StatusCode;
use invoicer_core::invoicing::input::InvoiceError;

use super::problem::{internal, problem, ProblemResponse};
use super::write;

fn not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such invoice.",
    )
}

/// What an action on one invoice (finalize, void, delete, duplicate, ...) is asked with: no body or
/// a JSON object (ignored, but part of the fingerprint).
pub(super) fn action_body(body: write::Body) -> Result<serde_json::Value, ProblemResponse> {
    let body = body?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Value::Null);
    }
    match serde_json::from_slice(&body) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(value),
        _ => Err(problem(
            StatusCode::BAD_REQUEST,
            "malformed-json",
            "Malformed JSON",
            "The body must be empty or a JSON object.",
        )),
    }
}

/// An invoice input refused: a 422, before anything is claimed or by the command inside the
/// claimed transaction, which then rolls back with the claim (either way the key stays usable).
fn rejected(err: InvoiceError) -> ProblemResponse {
    match err {
        InvoiceError::Unreadable(reason) => write::unreadable("invoice", reason),
        InvoiceError::Invalid(fields) => write::invalid("invoice", fields),
        InvoiceError::Db(e) => internal("checking an invoice's customer and tax rates", e),
    }
}

impl From<InvoiceError> for write::Failed {
    fn from(err: InvoiceError) -> Self {
        match err {
            InvoiceError::Db(e) => write::Failed::Db(e),
            refused => write::Failed::Refused(rejected(refused)),
        }
    }
}

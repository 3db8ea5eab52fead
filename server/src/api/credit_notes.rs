//! Credit notes: issue one from an invoice (once per Idempotency-Key), read one; and the customer's
//! credit balance applied to an invoice (once per Idempotency-Key).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use invoicer_core::invoicing::credit_notes::{self, Credit, CreditError};
use invoicer_core::payments::credit_balance::{self, BalanceError};
use invoicer_core::surfaces::api;
use invoicer_core::AppState;
use model::{ApplyCreditInput, CreditNote, CreditNoteInput, Invoice};
use uuid::Uuid;

use super::client::Client;
use super::documented::{
    CreateProblems, CreditNoteId, InFlight, InvoiceWrite, NotFound, Unauthorized,
};
use super::problem::{problem, Problem, ProblemResponse};
use super::write::{self, stored_problem, Write};

fn not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such invoice or credit note.",
    )
}

/// Credit an invoice, once per `Idempotency-Key`: a credit note of `amount_cents` (all that is left
/// to credit when left out), or of `lines` (part of each line's quantity), lowers what the invoice
/// asks for. Money already paid beyond that is kept as the customer's credit (`refund: "none"`),
/// recorded as paid back outside the app (`"manual"`), or refunded through Stripe from the
/// invoice's card payments (`"stripe"`: `refund_state` is `pending` until a worker made the refund).
#[utoipa::path(
    post, path = "/api/v1/invoices/{id}/credit_notes", tag = "credit_notes",
    request_body = CreditNoteInput,
    params(InvoiceWrite),
    responses(
        (status = 201, description = "Issued; replays return the stored response with `Idempotent-Replayed: true`", body = CreditNote,
            headers(("Location" = String, description = "The credit note's URL"))),
        CreateProblems,
        NotFound,
        InFlight,
        (status = 409, description = "A draft or a void invoice, more than is left to credit (of the invoice or of a line), a line it does not have, or a Stripe refund of more than its card payments have left (stored for the key)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid credit note (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn post_credit_note(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (id, org) = (req.id(not_found)?, req.org());
            let (value, input) = write::json_body(body, "credit-note", CreditNoteInput::check)?;
            let name = req.attempt_name();
            let base = req.state().settings.public_url.clone();
            req.once(&value, || {
                async |tx| {
                    let credit = Credit {
                        org,
                        invoice: model::InvoiceId::from(id),
                        id: Uuid::now_v7(),
                        source_key: &name,
                        by: None,
                    };
                    let issued = credit_notes::issue(tx, &credit, &input, &base).await;
                    let (response, concerns) = match issued {
                        Ok((n, _)) => (
                            api::created(&format!("{}/{}", api::CREDIT_NOTES_PATH, n.id), &n),
                            Some(id),
                        ),
                        Err(CreditError::Db(e)) => return Err(e.into()),
                        Err(CreditError::NotFound) => (stored_problem(not_found()), None),
                        Err(e) => (
                            stored_problem(problem(
                                StatusCode::CONFLICT,
                                "not-creditable",
                                "The invoice cannot be credited so",
                                e.to_string(),
                            )),
                            Some(id),
                        ),
                    };
                    Ok((response, concerns))
                }
            })
            .await
        })
        .await
}

/// One credit note of the org; another org's id is 404.
#[utoipa::path(
    get, path = "/api/v1/credit_notes/{id}", tag = "credit_notes", params(CreditNoteId),
    responses(
        (status = 200, body = CreditNote),
        Unauthorized,
        NotFound,
    ),
)]
pub(super) async fn get_credit_note(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Json<CreditNote>, ProblemResponse> {
    let id = Uuid::try_parse(&id).map_err(|_| not_found())?;
    credit_notes::get(&state.pool, client.org_id, id, &state.settings.public_url)
        .await?
        .map(Json)
        .ok_or_else(not_found)
}

/// Apply the customer's credit balance (money their other invoices kept beyond what they ask for,
/// in this invoice's currency) to this invoice, once per `Idempotency-Key`: `amount_cents`, or as
/// much as is due and available. 200 with the invoice as it now stands.
#[utoipa::path(
    post, path = "/api/v1/invoices/{id}/apply_credit", tag = "credit_notes",
    request_body = ApplyCreditInput,
    params(InvoiceWrite),
    responses(
        (status = 200, description = "Applied; replays return the stored response with `Idempotent-Replayed: true`", body = Invoice),
        CreateProblems,
        NotFound,
        InFlight,
        (status = 409, description = "Not an open invoice of a saved customer, nothing due, no credit in its currency, or more than can be applied (stored for the key)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid amount (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn post_apply_credit(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (id, org) = (req.id(not_found)?, req.org());
            let (value, input) = write::json_body(body, "credit", ApplyCreditInput::check)?;
            let name = req.attempt_name();
            let base = req.state().settings.public_url.clone();
            req.once(&value, || {
                async |tx| {
                    let applied = credit_balance::apply(
                        tx,
                        org,
                        model::InvoiceId::from(id),
                        input.amount_cents,
                        &name,
                        None,
                    )
                    .await;
                    let (response, concerns) = match applied {
                        Ok(_) => match invoicer_core::invoicing::invoices::get(
                            tx,
                            org,
                            model::InvoiceId::from(id),
                            &base,
                        )
                        .await?
                        {
                            Some(invoice) => (api::ok(&invoice), Some(id)),
                            None => (stored_problem(not_found()), None),
                        },
                        Err(BalanceError::Db(e)) => return Err(e.into()),
                        Err(BalanceError::NotFound) => (stored_problem(not_found()), None),
                        Err(e) => (
                            stored_problem(problem(
                                StatusCode::CONFLICT,
                                "no-credit-applied",
                                "No credit applied",
                                e.to_string(),
                            )),
                            Some(id),
                        ),
                    };
                    Ok((response, concerns))
                }
            })
            .await
        })
        .await
}

//! The lifecycle actions on one invoice (finalize, void, mark uncollectible, delete a draft) and
//! duplicating one, each once per Idempotency-Key.

use axum::http::StatusCode;
use axum::response::Response;
use invoicer_core::claim::StoredResponse;
use invoicer_core::invoicing::invoices;
use invoicer_core::invoicing::lifecycle::{self, Action, Moved};
use invoicer_core::surfaces::api::{self, INVOICES_PATH};
use model::Invoice;

use super::super::documented::{ActionProblems, InFlight, InvoiceWrite, NotFound};
use super::super::problem::{problem, Problem, ProblemResponse};
use super::super::write::{stored_problem, Write};
use super::{action_body, not_found};

/// A lifecycle action, once per `Idempotency-Key`: 200 with the invoice when it moved or was already
/// there (a repeat, or a race someone else won), 409 when it cannot move from where it is.
async fn act(write: Write, action: Action) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (id, org) = (req.id(not_found)?, req.org());
            let value = action_body(body)?;
            // An unknown id is answered before anything is claimed: the key stays usable. Not for a
            // delete, whose retry after success finds no invoice and must get the stored answer.
            if action != Action::DeleteDraft
                && !invoices::exists(
                    &mut *req.state().pool.acquire().await?,
                    org,
                    model::InvoiceId::from(id),
                )
                .await?
            {
                return Err(not_found());
            }
            if action == Action::Finalize {
                // An e-invoicing org finalizes only what makes a valid e-invoice: asked before
                // claiming, so the key stays usable.
                let problems = invoicer_core::documents::einvoice::finalize_problems(
                    &req.state().pool,
                    org,
                    id,
                )
                .await?;
                if !problems.is_empty() {
                    return Err(super::super::write::invalid("einvoice", problems));
                }
            }
            let base = &req.state().settings.public_url;
            req.once(&value, || {
                async |tx| {
                    let moved =
                        lifecycle::apply(tx, org, model::InvoiceId::from(id), action).await?;
                    let response = match moved {
                        Moved::Now if action == Action::DeleteDraft => StoredResponse {
                            status: 204,
                            headers: serde_json::json!({}),
                            body: Vec::new(),
                        },
                        Moved::Now | Moved::Already => {
                            match invoices::get(tx, org, model::InvoiceId::from(id), base).await? {
                                Some(invoice) => api::ok(&invoice),
                                None => stored_problem(not_found()),
                            }
                        }
                        Moved::Refused(status, payment) => stored_problem(problem(
                            StatusCode::CONFLICT,
                            "invalid-transition",
                            "Invalid transition",
                            action.refusal(status, payment),
                        )),
                        Moved::NotFound => stored_problem(not_found()),
                    };
                    // An invoice that is not there (deleted now, or never) cannot be named by the
                    // attempt's row: its foreign key.
                    let concerns = match moved {
                        Moved::NotFound => None,
                        Moved::Now if action == Action::DeleteDraft => None,
                        _ => Some(id),
                    };
                    Ok((response, concerns))
                }
            })
            .await
        })
        .await
}

macro_rules! action_route {
    ($name:ident, $action:expr, $path:literal, $what:literal) => {
        #[doc = $what]
        #[utoipa::path(
            post, path = $path, tag = "invoices", params(InvoiceWrite),
            responses(
                (status = 200, description = "Moved, or already there; replays return the stored response with `Idempotent-Replayed: true`", body = Invoice),
                ActionProblems,
                NotFound,
                (status = 409, description = "The invoice cannot move from its current state, or the same key is still in flight", body = Problem, content_type = "application/problem+json"),
            ),
        )]
        pub(in crate::api) async fn $name(
            write: Write,
        ) -> Result<Response, ProblemResponse> {
            act(write, $action).await
        }
    };
}

action_route!(
    finalize_invoice,
    Action::Finalize,
    "/api/v1/invoices/{id}/finalize",
    "Finalize a draft: it gets its number and public page."
);
action_route!(
    void_invoice,
    Action::Void,
    "/api/v1/invoices/{id}/void",
    "Void an open or uncollectible invoice with no payment; its public page stops working."
);
action_route!(
    stop_charges,
    Action::StopRetries,
    "/api/v1/invoices/{id}/stop_charges",
    "Stop charging an invoice collected automatically (its retries too): it is collected by sending it from now on."
);
action_route!(
    mark_uncollectible,
    Action::MarkUncollectible,
    "/api/v1/invoices/{id}/mark_uncollectible",
    "Mark an open invoice uncollectible (it can still be paid)."
);

/// Delete a draft, once per `Idempotency-Key` (a retry after success gets the stored 204).
#[utoipa::path(
    delete, path = "/api/v1/invoices/{id}", tag = "invoices", params(InvoiceWrite),
    responses(
        (status = 204, description = "Deleted; replays return the stored 204 with `Idempotent-Replayed: true`"),
        ActionProblems,
        (status = 404, description = "No such invoice (stored for the key)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Not a draft (void it instead), or the same key is still in flight", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(in crate::api) async fn delete_invoice(write: Write) -> Result<Response, ProblemResponse> {
    act(write, Action::DeleteDraft).await
}

/// Duplicate any invoice as a new draft, once per `Idempotency-Key`.
#[utoipa::path(
    post, path = "/api/v1/invoices/{id}/duplicate", tag = "invoices", params(InvoiceWrite),
    responses(
        (status = 201, description = "The new draft; replays return the stored response with `Idempotent-Replayed: true`", body = Invoice,
            headers(("Location" = String, description = "The draft's URL"))),
        ActionProblems,
        NotFound,
        InFlight,
    ),
)]
pub(in crate::api) async fn duplicate_invoice(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (id, org) = (req.id(not_found)?, req.org());
            let value = action_body(body)?;
            if !invoices::exists(
                &mut *req.state().pool.acquire().await?,
                org,
                model::InvoiceId::from(id),
            )
            .await?
            {
                return Err(not_found());
            }
            let base = &req.state().settings.public_url;
            req.once(&value, || {
                async |tx| {
                    let copy = uuid::Uuid::now_v7();
                    let source = format!("duplicate:api:{copy}");
                    let response = match lifecycle::duplicate(
                        tx,
                        org,
                        model::InvoiceId::from(id),
                        copy,
                        &source,
                    )
                    .await?
                    {
                        Some(_) => match invoices::get(tx, org, model::InvoiceId::from(copy), base)
                            .await?
                        {
                            Some(draft) => api::created(&format!("{INVOICES_PATH}/{copy}"), &draft),
                            None => stored_problem(not_found()),
                        },
                        None => stored_problem(not_found()),
                    };
                    Ok((response, Some(copy)))
                }
            })
            .await
        })
        .await
}

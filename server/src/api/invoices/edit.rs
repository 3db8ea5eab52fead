//! `PATCH /api/v1/invoices/{id}`: edit a draft at the version `If-Match` names.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use invoicer_core::claim::StoredResponse;
use invoicer_core::invoicing::input;
use invoicer_core::invoicing::invoices;
use invoicer_core::invoicing::lifecycle::{self, Edited};
use invoicer_core::surfaces::api;
use model::Invoice;

use super::super::documented::{InvoiceWrite, NotFound, Unauthorized};
use super::super::problem::{problem, Problem, ProblemResponse};
use super::super::write::{patch_body, stored_problem, Write};
use super::{not_found, rejected};

/// `If-Match: "3"` (or a bare `3`): the draft version the edit was made from.
fn if_match(headers: &HeaderMap) -> Result<i32, ProblemResponse> {
    let Some(value) = headers.get(header::IF_MATCH) else {
        return Err(problem(
            StatusCode::PRECONDITION_REQUIRED,
            "if-match-required",
            "If-Match required",
            "Editing a draft needs If-Match with the version you edited (the invoice's ETag).",
        ));
    };
    value
        .to_str()
        .ok()
        .map(|v| v.trim().trim_matches('"'))
        .and_then(|v| v.parse::<i32>().ok())
        .ok_or_else(|| {
            problem(
                StatusCode::BAD_REQUEST,
                "bad-if-match",
                "Malformed If-Match",
                "If-Match must be the invoice's ETag, e.g. \"3\".",
            )
        })
}

/// Edit a draft: a JSON merge patch (RFC 7396) of the invoice input, applied only if the draft is
/// still at the version `If-Match` names, once per `Idempotency-Key`.
#[utoipa::path(
    patch, path = "/api/v1/invoices/{id}", tag = "invoices",
    request_body(content = serde_json::Value, description = "A JSON merge patch of the invoice input (`lines`, when given, replaces all lines)", content_type = "application/merge-patch+json"),
    params(
        InvoiceWrite,
        ("If-Match" = Option<String>, Header, description = "The draft's version as its ETag, e.g. \"3\". Required: without it the answer is 428."),
    ),
    responses(
        (status = 200, description = "Saved; the new version is in `version` and the ETag", body = Invoice,
            headers(("ETag" = String, description = "The draft's new version"))),
        (status = 400, description = "Missing or malformed Idempotency-Key or If-Match, or a body that is not a JSON object", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
        NotFound,
        (status = 409, description = "Not a draft any more, or the same key is still in flight", body = Problem, content_type = "application/problem+json"),
        (status = 412, description = "The draft is at another version: someone saved since", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The patched invoice is invalid (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
        (status = 428, description = "If-Match is missing", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(in crate::api) async fn patch_invoice(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (id, org) = (req.id(not_found)?, req.org());
            let version = if_match(req.headers())?;
            let patch = patch_body(body, "the invoice input")?;
            let base = &req.state().settings.public_url;
            // Checked before anything is claimed: an unknown id, a stale version or a result that
            // fails its field checks; the org's rules are the command's. Either way a refusal leaves
            // the key usable.
            let current = invoices::get(
                &mut *req.state().pool.acquire().await?,
                org,
                model::InvoiceId::from(id),
                base,
            )
            .await?
            .ok_or_else(not_found)?;
            let input = input::edited(&current, version, &patch).map_err(rejected)?;
            let mut fingerprinted = patch.clone();
            fingerprinted["if-match"] = version.into();
            req.once(&fingerprinted, || {
                async |tx| {
                    let edited =
                        lifecycle::edit_draft(tx, org, model::InvoiceId::from(id), version, &input)
                            .await?;
                    let response = match edited {
                        Edited::Now(_) => {
                            match invoices::get(tx, org, model::InvoiceId::from(id), base).await? {
                                Some(invoice) => with_etag(api::ok(&invoice), invoice.version),
                                None => stored_problem(not_found()),
                            }
                        }
                        Edited::Stale { .. } => stored_problem(stale()),
                        Edited::NotDraft(status) => stored_problem(not_draft(status)),
                        Edited::NotFound => stored_problem(not_found()),
                    };
                    // Deleted since the check: the attempt's row cannot name it.
                    Ok((response, (edited != Edited::NotFound).then_some(id)))
                }
            })
            .await
        })
        .await
}

fn stale() -> ProblemResponse {
    problem(
        StatusCode::PRECONDITION_FAILED,
        "stale-version",
        "Stale version",
        "The draft was saved by someone else since the version you edited. GET it again and reapply your change.",
    )
}

fn not_draft(status: model::InvoiceStatus) -> ProblemResponse {
    problem(
        StatusCode::CONFLICT,
        "not-a-draft",
        "Not a draft",
        format!(
            "This invoice is {}; only drafts can be edited.",
            status.as_str()
        ),
    )
}

fn with_etag(mut stored: StoredResponse, version: i32) -> StoredResponse {
    stored.headers["etag"] = format!("\"{version}\"").into();
    stored
}

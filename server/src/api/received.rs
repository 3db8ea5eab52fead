//! Received e-invoices: a UBL or CII file (or a Factur-X PDF) uploaded once per Idempotency-Key and
//! kept once whatever the key (the same bytes are one document), listed, read, downloaded, marked
//! paid, exported as CSV.

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use invoicer_core::peppol::inbox::{self, ReceivedDocument, Refused};
use invoicer_core::surfaces::api;
use invoicer_core::AppState;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::client::Client;
use super::documented::{InFlight, New, NotFound, Unauthorized};
use super::problem::{problem, Problem, ProblemResponse};
use super::query::ListQuery;
use super::write::Write;

#[derive(Debug, Serialize, ToSchema)]
pub struct ReceivedList {
    /// Newest first.
    pub data: Vec<ReceivedDocument>,
}

/// A received document and what it says (its lines, taxes, payment details).
#[derive(Debug, Serialize, ToSchema)]
pub struct ReceivedDetailView {
    #[serde(flatten)]
    pub document: ReceivedDocument,
    #[schema(value_type = Object)]
    pub content: inbox::Received,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReceivedQuery {
    /// `json` (default) or `csv` (the whole list as a spreadsheet).
    #[param(pattern = "^(json|csv)$")]
    pub format: Option<String>,
}

fn not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such received document.",
    )
}

fn busy() -> ProblemResponse {
    problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy",
        "Busy",
        "Other files are being read; nothing was saved. Retry with the same Idempotency-Key after Retry-After seconds.",
    )
    .retry_after(invoicer_core::bank::READ_WAIT)
}

fn refused(e: Refused) -> ProblemResponse {
    problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        "not-an-einvoice",
        "Not an e-invoice",
        e.to_string(),
    )
}

/// Receive an e-invoice (the file as the body: UBL or CII XML, or a Factur-X PDF), once per
/// `Idempotency-Key`. The same bytes again are the same document (answered 200, nothing stored);
/// the same seller and number with other bytes are kept and name the first in `duplicate_of`.
#[utoipa::path(
    post, path = "/api/v1/received_documents", tag = "received_documents",
    params(New),
    request_body(content = String, description = "The e-invoice (at most 10 MB)", content_type = "application/xml"),
    responses(
        (status = 201, description = "Received; replays return the stored response with `Idempotent-Replayed: true`", body = ReceivedDocument),
        (status = 200, description = "The same file was received before: that document", body = ReceivedDocument),
        (status = 400, description = "Missing or malformed Idempotency-Key", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
        (status = 403, description = "The API key's role may not record payments", body = Problem, content_type = "application/problem+json"),
        InFlight,
        (status = 413, description = "A file over 10 MB", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not an e-invoice (not XML, a DTD, neither UBL nor CII, a PDF without one), or the key was used with a different file", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Every slot that reads files is taken: retry with the same key after Retry-After seconds", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn post_document(write: Write) -> Result<Response, ProblemResponse> {
    write.require(model::Action::EditInvoices)?;
    write
        .run(async |req, body| {
            let bytes = body?.to_vec();
            let opened = inbox::open_bounded(bytes)
                .await
                .map_err(|_| busy())?
                .map_err(refused)?;
            let org = req.org();
            let fingerprint = serde_json::json!({ "sha256": hex::encode(opened.sha256) });
            req.once(&fingerprint, || {
                let opened = &opened;
                async move |tx| {
                    let (detail, created) = inbox::store(tx, org, opened, "upload", None).await?;
                    let id = detail.document.id;
                    let answer = if created {
                        api::created(
                            &format!("/api/v1/received_documents/{id}"),
                            &detail.document,
                        )
                    } else {
                        api::ok(&detail.document)
                    };
                    Ok((answer, None))
                }
            })
            .await
        })
        .await
}

/// The org's received documents, newest first (at most 500); `?format=csv` as a spreadsheet.
#[utoipa::path(
    get, path = "/api/v1/received_documents", tag = "received_documents", params(ReceivedQuery),
    responses(
        (status = 200, description = "The documents (`text/csv` with `?format=csv`)", content(
            (ReceivedList = "application/json"),
            (String = "text/csv"),
        )),
        (status = 400, description = "An unknown format", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
    ),
)]
pub(super) async fn list_documents(
    State(state): State<AppState>,
    Client(client): Client,
    ListQuery(query): ListQuery<ReceivedQuery>,
) -> Result<Response, ProblemResponse> {
    let documents = inbox::list(&state.reads, client.org_id, 500).await?;
    match query.format.as_deref().unwrap_or("json") {
        "json" => Ok(Json(ReceivedList { data: documents }).into_response()),
        "csv" => Ok((
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"received-documents.csv\"",
                ),
            ],
            inbox::csv(&documents),
        )
            .into_response()),
        _ => Err(super::query::bad_query("format must be json or csv")),
    }
}

fn parse_id(id: &str) -> Result<Uuid, ProblemResponse> {
    Uuid::try_parse(id).map_err(|_| not_found())
}

/// One received document with what it says.
#[utoipa::path(
    get, path = "/api/v1/received_documents/{id}", tag = "received_documents",
    params(("id" = Uuid, Path, description = "The document's id")),
    responses((status = 200, body = ReceivedDetailView), Unauthorized, NotFound),
)]
pub(super) async fn get_document(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Json<ReceivedDetailView>, ProblemResponse> {
    let id = parse_id(&id)?;
    let detail = inbox::get(&state.reads, client.org_id, id)
        .await?
        .ok_or_else(not_found)?;
    Ok(Json(ReceivedDetailView {
        document: detail.document,
        content: detail.content,
    }))
}

/// The file as it was received (XML or PDF).
#[utoipa::path(
    get, path = "/api/v1/received_documents/{id}/file", tag = "received_documents",
    params(("id" = Uuid, Path, description = "The document's id")),
    responses((status = 200, description = "The file", content_type = "application/octet-stream", body = String), Unauthorized, NotFound),
)]
pub(super) async fn get_file(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Response, ProblemResponse> {
    let id = parse_id(&id)?;
    let (bytes, kind, number) = inbox::original(&state.reads, client.org_id, id)
        .await?
        .ok_or_else(not_found)?;
    Ok(file_response(bytes, &kind, &number))
}

/// A received file as a download named by its number.
pub fn file_response(bytes: Vec<u8>, kind: &str, number: &str) -> Response {
    let (content_type, extension) = match kind {
        "pdf" => ("application/pdf", "pdf"),
        _ => ("application/xml; charset=utf-8", "xml"),
    };
    let name: String = number
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(80)
        .collect();
    (
        [
            (header::CONTENT_TYPE, content_type.to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}.{extension}\""),
            ),
        ],
        bytes,
    )
        .into_response()
}

/// Mark a received document paid, once per `Idempotency-Key` (marking it again changes nothing).
#[utoipa::path(
    post, path = "/api/v1/received_documents/{id}/paid", tag = "received_documents",
    params(("id" = Uuid, Path, description = "The document's id"), New),
    responses(
        (status = 200, description = "Paid; replays return the stored response with `Idempotent-Replayed: true`", body = ReceivedDocument),
        (status = 400, description = "Missing or malformed Idempotency-Key", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
        (status = 403, description = "The API key's role may not record payments", body = Problem, content_type = "application/problem+json"),
        NotFound,
        InFlight,
        (status = 422, description = "The key was used with a different request", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is switching to another server: retry with the same key after Retry-After seconds", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn mark_paid(write: Write) -> Result<Response, ProblemResponse> {
    write.require(model::Action::EditInvoices)?;
    write
        .run(async |req, _body| {
            let id = req.id(not_found)?;
            let org = req.org();
            req.once(&serde_json::json!({}), || {
                async move |tx| {
                    let _ = inbox::mark_paid(tx, org, id).await?;
                    match inbox::get(&mut *tx, org, id).await? {
                        Some(detail) => Ok((api::ok(&detail.document), None)),
                        None => Err(not_found().into()),
                    }
                }
            })
            .await
        })
        .await
}

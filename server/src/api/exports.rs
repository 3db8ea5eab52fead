//! Exports through the API: `GET /api/v1/exports/{invoices|lines|payments|credit_notes|customers}.csv`,
//! streamed (see [`crate::exports`]).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use invoicer_core::AppState;

use super::client::Client;
use super::documented::Unauthorized;
use super::problem::{problem, Problem, ProblemResponse};
use super::query::{bad_query, ListQuery};
use crate::exports::{self, ExportQuery};

/// A CSV file (RFC 4180, UTF-8, a header record first) of the org's invoices, invoice lines,
/// payments, credit notes or customers, streamed a thousand rows at a time. Invoices and lines take
/// the invoice list's filters and order; payments (by the day paid) and credit notes (by the day
/// issued) take `from`/`to` and go oldest first; customers take `q` and go newest first. Text
/// cells that begin with `=`, `+`, `-`, `@`, a tab or a carriage return get a leading `'`.
#[utoipa::path(
    get, path = "/api/v1/exports/{file}", tag = "exports",
    params(
        ("file" = String, Path, description = "invoices.csv, lines.csv, payments.csv, credit_notes.csv or customers.csv"),
        ExportQuery,
    ),
    responses(
        (status = 200, description = "The CSV file", content_type = "text/csv", body = String),
        (status = 400, description = "A filter that does not parse", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
        (status = 404, description = "No such export", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn get_export(
    State(state): State<AppState>,
    Client(client): Client,
    Path(file): Path<String>,
    ListQuery(query): ListQuery<ExportQuery>,
) -> Result<Response, ProblemResponse> {
    let kind = exports::kind(&file).ok_or_else(|| {
        problem(
            StatusCode::NOT_FOUND,
            "not-found",
            "Not found",
            "Exports are invoices.csv, lines.csv, payments.csv, credit_notes.csv and customers.csv.",
        )
    })?;
    let filter = exports::filter(query).map_err(bad_query)?;
    Ok(exports::download(state, client.org_id, kind, filter))
}

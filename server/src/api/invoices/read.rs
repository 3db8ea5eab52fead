//! Reading invoices: the org's list, filtered and paged, and one invoice with its version.

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use invoicer_core::{invoicing::invoices, AppState};
use model::Invoice;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::super::client::Client;
use super::super::documented::{InvoiceId, ListProblems, NotFound, Unauthorized};
use super::super::problem::ProblemResponse;
use super::super::query::{bad_query, page_limit, ListQuery};
use super::not_found;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InvoiceQuery {
    /// 1..100, default 20.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// draft | open | paid | void | uncollectible | refunded | overdue
    pub status: Option<String>,
    /// unpaid | processing | partially_paid | paid | partially_refunded | refunded | disputed
    pub payment_state: Option<String>,
    /// The start of a number or of the customer's name (case-insensitive).
    #[param(max_length = 200)]
    pub q: Option<String>,
    /// `next_cursor` of the previous page.
    #[param(max_length = 100)]
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InvoiceList {
    /// Newest first; with `status=overdue`, most overdue first (by due date).
    pub data: Vec<Invoice>,
    /// Pass as `cursor` for the next page, with the same filters; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The org's invoices, newest first (overdue ones: most overdue first), filtered, a page at a time.
#[utoipa::path(
    get, path = "/api/v1/invoices", tag = "invoices", params(InvoiceQuery),
    responses(
        (status = 200, body = InvoiceList),
        ListProblems,
    ),
)]
pub(in crate::api) async fn list_invoices(
    State(state): State<AppState>,
    Client(client): Client,
    ListQuery(query): ListQuery<InvoiceQuery>,
) -> Result<Json<InvoiceList>, ProblemResponse> {
    let limit = page_limit(query.limit)?;
    let filter = invoices::ListFilter {
        status: query.status.filter(|s| !s.is_empty()),
        payment_state: query.payment_state.filter(|s| !s.is_empty()),
        q: query.q.filter(|s| !s.is_empty()),
    };
    invoices::check_filter(&filter).map_err(bad_query)?;
    let before = match query.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(text) => Some(
            invoices::ListCursor::parse(text, &filter)
                .ok_or_else(|| bad_query("cursor is not one this API gave out"))?,
        ),
    };
    let mut conn = state.reads.acquire().await?;
    let (page, next) = invoices::page(&mut *conn, client.org_id, &filter, before, limit).await?;
    let ids: Vec<uuid::Uuid> = page.iter().map(|s| s.id).collect();
    let data =
        invoices::get_many(&mut conn, client.org_id, &ids, &state.settings.public_url).await?;
    Ok(Json(InvoiceList {
        data,
        next_cursor: next.map(invoices::ListCursor::encode),
    }))
}

/// One invoice of the org; another org's id is 404.
#[utoipa::path(
    get, path = "/api/v1/invoices/{id}", tag = "invoices", params(InvoiceId),
    responses(
        (status = 200, body = Invoice, headers(("ETag" = String, description = "The version, for If-Match when editing a draft"))),
        Unauthorized,
        NotFound,
    ),
)]
pub(in crate::api) async fn get_invoice(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Response, ProblemResponse> {
    let id = uuid::Uuid::try_parse(&id).map_err(|_| not_found())?;
    let mut conn = state.reads.acquire().await?;
    let invoice = invoices::get(
        &mut conn,
        client.org_id,
        model::InvoiceId::from(id),
        &state.settings.public_url,
    )
    .await?
    .ok_or_else(not_found)?;
    let etag = format!("\"{}\"", invoice.version);
    Ok(([(header::ETAG, etag)], Json(invoice)).into_response())
}

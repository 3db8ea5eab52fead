//! The invoice endpoints: create (once per Idempotency-Key, through the API surface), list, get.

use app::model::{Invoice, InvoiceInput};
use app::ssr::observe::track;
use app::ssr::surfaces::api::{self, IdempotencyKey, INVOICES_PATH};
use app::ssr::{invoices, AppState};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::client::Client;
use super::problem::{problem, Problem, ProblemResponse};
use super::write;

/// Create an invoice, once per `Idempotency-Key`.
#[utoipa::path(
    post,
    path = "/api/v1/invoices",
    tag = "invoices",
    request_body = InvoiceInput,
    params(
        ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Names this attempt: 1..255 visible ASCII characters (a quoted structured-field string is accepted). Retries must reuse it. Keys expire after IDEMPOTENCY_KEY_TTL_HOURS (24)."),
    ),
    responses(
        (status = 201, description = "Created; replays return the stored response with `Idempotent-Replayed: true`", body = Invoice,
            headers(("Location" = String, description = "The invoice's URL"))),
        (status = 400, description = "Missing or malformed Idempotency-Key, or a body that is not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing, unknown or revoked API key", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The same key is still in flight; retry after `Retry-After` seconds", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 1 MiB", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid invoice (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []))
)]
pub(super) async fn post_invoice(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ProblemResponse> {
    let attempt = write::attempt(client, &headers);
    let outcome = track(&state.pool, attempt, async |attempt| {
        let key = IdempotencyKey::parse(headers.get("idempotency-key").map(|v| v.as_bytes()))?;
        let (value, input) = write::json_body(body, "invoice", InvoiceInput::check)?;
        let fingerprint = api::fingerprint("POST", INVOICES_PATH, &value);
        let ttl = state.settings.idempotency_key_ttl;
        let created = api::invoice_from_request(
            &state.pool,
            &attempt,
            client,
            &key,
            &fingerprint,
            &input,
            ttl,
        )
        .await?;
        Ok::<_, ProblemResponse>(created)
    })
    .await?;
    write::answer(outcome)
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// 1..100, default 20.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InvoiceList {
    /// Newest first.
    pub data: Vec<Invoice>,
}

/// The org's invoices, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/invoices",
    tag = "invoices",
    params(ListQuery),
    responses(
        (status = 200, body = InvoiceList),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []))
)]
pub(super) async fn list_invoices(
    State(state): State<AppState>,
    Client(client): Client,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<InvoiceList>, ProblemResponse> {
    let Query(query) = query.map_err(|e| {
        problem(
            StatusCode::BAD_REQUEST,
            "bad-query",
            "Bad query",
            e.body_text(),
        )
    })?;
    let limit = query.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(problem(
            StatusCode::BAD_REQUEST,
            "bad-query",
            "Bad query",
            "limit must be 1..100",
        ));
    }
    let mut conn = state.pool.acquire().await?;
    let data = invoices::list_full(&mut conn, client.org_id, limit).await?;
    Ok(Json(InvoiceList { data }))
}

/// One invoice of the org; another org's id is 404.
#[utoipa::path(
    get,
    path = "/api/v1/invoices/{id}",
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id (UUID)")),
    responses(
        (status = 200, body = Invoice),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []))
)]
pub(super) async fn get_invoice(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Json<Invoice>, ProblemResponse> {
    let not_found = || {
        problem(
            StatusCode::NOT_FOUND,
            "not-found",
            "Not found",
            "No such invoice.",
        )
    };
    let id = uuid::Uuid::try_parse(&id).map_err(|_| not_found())?;
    let mut conn = state.pool.acquire().await?;
    invoices::get(&mut conn, client.org_id, id)
        .await?
        .map(Json)
        .ok_or_else(not_found)
}

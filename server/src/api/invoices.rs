//! The invoice endpoints: create (once per Idempotency-Key, through the API surface), list, get.

use app::model::{Invoice, InvoiceInput};
use app::ssr::claim::StoredResponse;
use app::ssr::observe::{track, Attempt, Surface};
use app::ssr::surfaces::api::{self, ApiOutcome, IdempotencyKey, INVOICES_PATH};
use app::ssr::{invoices, AppState};
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::client::Client;
use super::problem::{internal, problem, Problem, ProblemResponse};

fn stored_to_response(stored: StoredResponse, replayed: bool) -> Response {
    let mut builder = Response::builder().status(stored.status);
    if let Some(headers) = stored.headers.as_object() {
        for (name, value) in headers {
            if let Some(value) = value.as_str() {
                builder = builder.header(name.as_str(), value);
            }
        }
    }
    if replayed {
        builder = builder.header("idempotent-replayed", "true");
    }
    builder
        .body(Body::from(stored.body))
        .unwrap_or_else(|e| internal("rebuilding a stored response", e).into_response())
}

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
    let key = headers
        .get("idempotency-key")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let request_id = header_text(&headers, "x-request-id");
    let attempt = Attempt::new(Surface::Api, key, request_id);
    attempt.identify(client.key_id.to_string(), Some(client.org_id));
    let outcome = track(&state.pool, attempt, async |attempt| {
        let key = IdempotencyKey::parse(headers.get("idempotency-key").map(|v| v.as_bytes()))?;
        let (value, input) = invoice_body(body)?;
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
    match outcome {
        ApiOutcome::Created { response, .. } => Ok(stored_to_response(response, false)),
        ApiOutcome::Replayed { response, .. } => Ok(stored_to_response(response, true)),
        ApiOutcome::InFlight { retry_after } => Err(problem(
            StatusCode::CONFLICT,
            "in-flight",
            "Request in flight",
            "A request with this Idempotency-Key is still being processed. Retry later.",
        )
        .retry_after(retry_after)),
        ApiOutcome::Mismatch => Err(problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency-key-reused",
            "Idempotency-Key already used with a different request",
            "This key was used for a request with another method, path or body. Use a new key.",
        )),
    }
}

/// The body as JSON (for the fingerprint) and as an invoice, checked before claiming: an invalid
/// request is not stored, so its key stays usable.
fn invoice_body(
    body: Result<Bytes, BytesRejection>,
) -> Result<(serde_json::Value, InvoiceInput), ProblemResponse> {
    let value: serde_json::Value = serde_json::from_slice(&body?).map_err(|e| {
        problem(
            StatusCode::BAD_REQUEST,
            "malformed-json",
            "Malformed JSON",
            format!("The body is not JSON: {e}"),
        )
    })?;
    let input: InvoiceInput = serde_json::from_value(value.clone()).map_err(|e| {
        problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid-invoice",
            "Invalid invoice",
            e.to_string(),
        )
    })?;
    if let Err(fields) = input.check() {
        let mut p = problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid-invoice",
            "Invalid invoice",
            "Some fields are invalid; see `errors`.",
        );
        p.problem.errors = Some(fields);
        return Err(p);
    }
    Ok((value, input))
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
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

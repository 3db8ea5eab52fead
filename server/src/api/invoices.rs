//! The invoice endpoints: create (once per Idempotency-Key, through the API surface), list, get.

use app::model::{Invoice, InvoiceInput};
use app::ssr::claim::StoredResponse;
use app::ssr::lifecycle::{self, Action, Moved};
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
            &state.settings.public_url,
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
    let data =
        invoices::list_full(&mut conn, client.org_id, limit, &state.settings.public_url).await?;
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
    let id = uuid::Uuid::try_parse(&id).map_err(|_| not_found())?;
    let mut conn = state.pool.acquire().await?;
    invoices::get(&mut conn, client.org_id, id, &state.settings.public_url)
        .await?
        .map(Json)
        .ok_or_else(not_found)
}

fn not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such invoice.",
    )
}

/// The stored answer of a problem (a lifecycle refusal is as final for its key as a success).
fn stored_problem(p: ProblemResponse) -> StoredResponse {
    StoredResponse {
        status: p.status.as_u16(),
        headers: serde_json::json!({ "content-type": "application/problem+json" }),
        body: serde_json::to_vec(&p.problem).expect("problems serialise"),
    }
}

/// A lifecycle action, once per `Idempotency-Key`: 200 with the invoice when it moved or was already
/// there (a repeat, or a race someone else won), 409 when it cannot move from where it is.
async fn act(
    state: AppState,
    client: app::ssr::api_keys::ApiClient,
    headers: HeaderMap,
    id: String,
    body: Result<Bytes, BytesRejection>,
    action: Action,
) -> Result<Response, ProblemResponse> {
    let attempt = write::attempt(client, &headers);
    let outcome = track(&state.pool, attempt, async |attempt| {
        let key = IdempotencyKey::parse(headers.get("idempotency-key").map(|v| v.as_bytes()))?;
        let id = uuid::Uuid::try_parse(&id).map_err(|_| not_found())?;
        // No body, or a JSON object (ignored): either way it is part of the fingerprint.
        let body = body?;
        let value: serde_json::Value = if body.iter().all(u8::is_ascii_whitespace) {
            serde_json::Value::Null
        } else {
            match serde_json::from_slice(&body) {
                Ok(v @ serde_json::Value::Object(_)) => v,
                _ => {
                    return Err(problem(
                        StatusCode::BAD_REQUEST,
                        "malformed-json",
                        "Malformed JSON",
                        "The body must be empty or a JSON object.",
                    ))
                }
            }
        };
        let path = format!("{INVOICES_PATH}/{id}/{}", action.as_str());
        let fingerprint = api::fingerprint("POST", &path, &value);
        // An unknown id is answered before anything is claimed: the key stays usable.
        if !invoices::exists(&mut *state.pool.acquire().await?, client.org_id, id).await? {
            return Err(not_found());
        }
        let base = &state.settings.public_url;
        let ttl = state.settings.idempotency_key_ttl;
        let pool = &state.pool;
        let ran = api::respond_once(pool, &attempt, client, &key, &fingerprint, ttl, || {
            async |tx| {
                let moved = lifecycle::apply(tx, client.org_id, id, action).await?;
                let response = match moved {
                    Moved::Now | Moved::Already => {
                        match invoices::get(tx, client.org_id, id, base).await? {
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
                Ok((response, Some(id)))
            }
        })
        .await?;
        Ok::<_, ProblemResponse>(ran)
    })
    .await?;
    write::answer(outcome)
}

macro_rules! action_route {
    ($name:ident, $action:expr, $path:literal, $what:literal) => {
        #[doc = $what]
        #[utoipa::path(
            post,
            path = $path,
            tag = "invoices",
            params(
                ("id" = String, Path, description = "Invoice id (UUID)"),
                ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Names this attempt, as for creation."),
            ),
            responses(
                (status = 200, description = "Moved, or already there; replays return the stored response with `Idempotent-Replayed: true`", body = Invoice),
                (status = 400, description = "Missing or malformed Idempotency-Key, or a body that is neither empty nor a JSON object", body = Problem, content_type = "application/problem+json"),
                (status = 401, body = Problem, content_type = "application/problem+json"),
                (status = 404, body = Problem, content_type = "application/problem+json"),
                (status = 409, description = "The invoice cannot move from its current state, or the same key is still in flight", body = Problem, content_type = "application/problem+json"),
                (status = 422, description = "The key was used with a different request", body = Problem, content_type = "application/problem+json"),
            ),
            security(("api_key" = []))
        )]
        pub(super) async fn $name(
            State(state): State<AppState>,
            Client(client): Client,
            headers: HeaderMap,
            Path(id): Path<String>,
            body: Result<Bytes, BytesRejection>,
        ) -> Result<Response, ProblemResponse> {
            act(state, client, headers, id, body, $action).await
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
    mark_uncollectible,
    Action::MarkUncollectible,
    "/api/v1/invoices/{id}/mark_uncollectible",
    "Mark an open invoice uncollectible (it can still be paid)."
);

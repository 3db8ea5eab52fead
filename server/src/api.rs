//! The public JSON API (`/api/v1`), authenticated by API keys, with `Idempotency-Key` on create.
//! Errors are RFC 9457 problem+json and never carry internal text.

use std::collections::BTreeMap;

use app::model::{Invoice, InvoiceInput, InvoiceLine, InvoiceStatus, LineInput};
use app::ssr::api_keys::{self, ApiClient};
use app::ssr::api_surface::{self, ApiOutcome, ApiRules, IdempotencyKey, INVOICES_PATH};
use app::ssr::claim::StoredResponse;
use app::ssr::{invoices, AppState};
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::{OpenApi, ToSchema};

pub const MAX_BODY: usize = 1024 * 1024;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(INVOICES_PATH, get(list_invoices).post(create_invoice))
        .route("/api/v1/invoices/{id}", get(get_invoice))
        .route("/api/v1/openapi.json", get(openapi))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

/// RFC 9457 problem details.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Field path → message, for invalid payloads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<BTreeMap<String, String>>,
}

pub struct ProblemResponse {
    status: StatusCode,
    problem: Problem,
    retry_after: Option<u64>,
}

fn problem(
    status: StatusCode,
    slug: &str,
    title: &str,
    detail: impl Into<String>,
) -> ProblemResponse {
    ProblemResponse {
        status,
        problem: Problem {
            kind: format!("/problems/{slug}"),
            title: title.to_owned(),
            status: status.as_u16(),
            detail: detail.into(),
            errors: None,
        },
        retry_after: None,
    }
}

fn internal(context: &str, err: impl std::fmt::Display) -> ProblemResponse {
    tracing::error!(error = %err, "api: {context}");
    problem(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "Internal error",
        "Something went wrong on our side; nothing was saved twice. Retry with the same Idempotency-Key.",
    )
}

impl IntoResponse for ProblemResponse {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            serde_json::to_vec(&self.problem).unwrap_or_default(),
        )
            .into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// The API client behind `Authorization: Bearer ik_...`.
pub struct Client(pub ApiClient);

impl FromRequestParts<AppState> for Client {
    type Rejection = ProblemResponse;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, ProblemResponse> {
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let unauthorized = |detail: &str| {
            problem(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Unauthorized",
                detail,
            )
        };
        let Some(token) = token else {
            return Err(unauthorized(
                "Send your API key as `Authorization: Bearer ik_...`.",
            ));
        };
        match api_keys::authenticate(&state.pool, token).await {
            Ok(Some(client)) => Ok(Client(client)),
            Ok(None) => Err(unauthorized("The API key is unknown or revoked.")),
            Err(e) => Err(internal("authenticating an API key", e)),
        }
    }
}

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
async fn create_invoice(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ProblemResponse> {
    use app::ssr::observe::{self, AttemptOutcome, Surface};
    let started = std::time::Instant::now();
    let key = headers
        .get("idempotency-key")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let owner = client.key_id.to_string();
    let mut this = observe::Attempt {
        surface: Surface::Api,
        org: Some(client.org_id),
        owner: &owner,
        key: &key,
        outcome: AttemptOutcome::Won,
        invoice: None,
        request_id: headers.get("x-request-id").and_then(|v| v.to_str().ok()),
        started,
    };
    let result = create_invoice_once(&state, client, &headers, body, &this).await;
    this.outcome = match &result {
        Ok(r) if r.headers().contains_key("idempotent-replayed") => AttemptOutcome::Replay,
        Ok(_) => AttemptOutcome::Won,
        Err(p) if p.status == StatusCode::CONFLICT => AttemptOutcome::InFlight,
        Err(p) if p.problem.kind.ends_with("/idempotency-key-reused") => AttemptOutcome::Mismatch,
        Err(p) if p.status.is_client_error() => AttemptOutcome::Rejected,
        Err(_) => AttemptOutcome::Failed,
    };
    if this.outcome == AttemptOutcome::Won {
        // Its row committed with the invoice.
        observe::attempt(Surface::Api, &owner, &key, this.outcome, started);
    } else {
        this.invoice = result
            .as_ref()
            .ok()
            .and_then(|r| r.headers().get("location"))
            .and_then(|l| l.to_str().ok())
            .and_then(|l| l.rsplit('/').next())
            .and_then(|id| uuid::Uuid::try_parse(id).ok());
        observe::record(&state.pool, this).await;
    }
    result
}

async fn create_invoice_once(
    state: &AppState,
    client: ApiClient,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    won: &app::ssr::observe::Attempt<'_>,
) -> Result<Response, ProblemResponse> {
    let key = IdempotencyKey::parse(headers.get("idempotency-key").map(|v| v.as_bytes())).map_err(
        |e| {
            problem(
                StatusCode::BAD_REQUEST,
                "idempotency-key",
                "Bad Idempotency-Key",
                e.to_string(),
            )
        },
    )?;
    let body = body.map_err(|rejection| {
        let status = rejection.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            problem(
                status,
                "too-large",
                "Payload too large",
                "The body may be at most 1 MiB.",
            )
        } else {
            problem(
                status,
                "unreadable-body",
                "Unreadable body",
                rejection.body_text(),
            )
        }
    })?;
    let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
        problem(
            StatusCode::BAD_REQUEST,
            "malformed-json",
            "Malformed JSON",
            format!("The body is not JSON: {e}"),
        )
    })?;
    // Checked before claiming: an invalid request is not stored, so the key stays usable.
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
    let fingerprint = api_surface::fingerprint("POST", INVOICES_PATH, &value);
    let rules = ApiRules {
        lease: state.settings.claim_lease,
        key_ttl: state.settings.idempotency_key_ttl,
    };
    let outcome = api_surface::create_invoice_once(
        &state.pool,
        client,
        &key,
        &fingerprint,
        &input,
        &rules,
        Some(won),
    )
    .await
    .map_err(|e| internal("creating an invoice", e))?;
    match outcome {
        ApiOutcome::Created(stored) => Ok(stored_to_response(stored, false)),
        ApiOutcome::Replayed(stored) => Ok(stored_to_response(stored, true)),
        ApiOutcome::InFlight { retry_after } => {
            let mut p = problem(
                StatusCode::CONFLICT,
                "in-flight",
                "Request in flight",
                "A request with this Idempotency-Key is still being processed. Retry later.",
            );
            p.retry_after = Some(retry_after.as_secs().max(1));
            Err(p)
        }
        ApiOutcome::Mismatch => Err(problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency-key-reused",
            "Idempotency-Key already used with a different request",
            "This key was used for a request with another method, path or body. Use a new key.",
        )),
    }
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
async fn list_invoices(
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
    let mut conn = state
        .pool
        .acquire()
        .await
        .map_err(|e| internal("listing invoices", e))?;
    let data = invoices::list_full(&mut conn, client.org_id, limit)
        .await
        .map_err(|e| internal("listing invoices", e))?;
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
async fn get_invoice(
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
    let mut conn = state
        .pool
        .acquire()
        .await
        .map_err(|e| internal("reading an invoice", e))?;
    invoices::get(&mut conn, client.org_id, id)
        .await
        .map_err(|e| internal("reading an invoice", e))?
        .map(Json)
        .ok_or_else(not_found)
}

#[derive(OpenApi)]
#[openapi(
    info(title = "invoicer API", version = "1", description = "Invoices that never happen twice."),
    paths(create_invoice, list_invoices, get_invoice),
    components(schemas(InvoiceInput, LineInput, Invoice, InvoiceLine, InvoiceStatus, InvoiceList, Problem)),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("ik_...")
                    .build(),
            ),
        );
    }
}

async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

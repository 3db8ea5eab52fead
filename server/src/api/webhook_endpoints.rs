//! Webhook endpoints: register one (once per Idempotency-Key), list, read, delete, rotate its
//! secret, and read its delivery log. Managing them is an owner's (their secret signs what the org
//! tells other systems).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use invoicer_core::surfaces::api;
use invoicer_core::webhooks_out::{self, guard, CreateError};
use invoicer_core::AppState;
use model::webhooks::{WebhookAttempt, WebhookEndpoint, WebhookEndpointInput};
use model::Action;
use serde::Serialize;
use utoipa::ToSchema;

use super::client::Client;
use super::documented::{
    ActionProblems, CreateProblems, EndpointId, EndpointWrite, InFlight, ListProblems, New,
    NotFound, Unauthorized,
};
use super::invoices::action_body;
use super::problem::{problem, Problem, ProblemResponse};
use super::write::{self, stored_problem, Write};

fn not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such webhook endpoint.",
    )
}

/// Register an endpoint, once per `Idempotency-Key`: the answer carries its signing secret. Its URL
/// must be `https` and resolve to public addresses only (unless WEBHOOKS_ALLOW_PRIVATE); at most 20
/// endpoints per org.
#[utoipa::path(
    post, path = "/api/v1/webhook_endpoints", tag = "webhooks",
    request_body = WebhookEndpointInput,
    params(New),
    responses(
        (status = 201, description = "Registered; replays return the stored response with `Idempotent-Replayed: true` and `Idempotent-Redacted: true`, the secret as `[redacted]`", body = WebhookEndpoint,
            headers(("Location" = String, description = "The endpoint's URL"))),
        CreateProblems,
        (status = 403, description = "The API key's role is not owner", body = Problem, content_type = "application/problem+json"),
        InFlight,
        (status = 422, description = "Invalid endpoint (a URL that is not public https, unknown events), 20 endpoints already, or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn post_endpoint(write: Write) -> Result<Response, ProblemResponse> {
    write.require(Action::ManageOrg)?;
    write
        .run(async |req, body| {
            let (value, input) =
                write::json_body(body, "webhook-endpoint", WebhookEndpointInput::check)?;
            let policy = req.state().settings.webhooks;
            if let Err(why) = guard::check_reachable(&input.url, policy).await {
                return Err(write::invalid(
                    "webhook-endpoint",
                    [("url".to_owned(), why)].into(),
                ));
            }
            let (org, source) = (req.org(), req.attempt_name());
            let by = webhooks_out::RegisteredBy::ApiKey(req.client().key_id);
            req.once(&value, || {
                async |tx| {
                    let id = uuid::Uuid::now_v7();
                    let created = webhooks_out::create(tx, id, org, &source, &input, by).await;
                    let response = match created {
                        Ok(endpoint) => api::created(&req.location(id), &endpoint),
                        Err(CreateError::TooMany) => stored_problem(write::invalid(
                            "webhook-endpoint",
                            [(
                                "url".to_owned(),
                                "An org has at most 20 endpoints: delete one first.".to_owned(),
                            )]
                            .into(),
                        )),
                        Err(CreateError::Db(e)) => return Err(e.into()),
                    };
                    Ok((response, None))
                }
            })
            .await
        })
        .await
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointList {
    /// Oldest first; without their secrets.
    pub data: Vec<WebhookEndpoint>,
}

/// The org's endpoints.
#[utoipa::path(
    get, path = "/api/v1/webhook_endpoints", tag = "webhooks",
    responses((status = 200, body = EndpointList), ListProblems),
)]
pub(super) async fn list_endpoints(
    State(state): State<AppState>,
    Client(client): Client,
) -> Result<Json<EndpointList>, ProblemResponse> {
    let data = webhooks_out::list(&state.reads, client.org_id).await?;
    Ok(Json(EndpointList { data }))
}

/// One endpoint (without its secret).
#[utoipa::path(
    get, path = "/api/v1/webhook_endpoints/{id}", tag = "webhooks", params(EndpointId),
    responses((status = 200, body = WebhookEndpoint), Unauthorized, NotFound),
)]
pub(super) async fn get_endpoint(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Json<WebhookEndpoint>, ProblemResponse> {
    let id = uuid::Uuid::try_parse(&id).map_err(|_| not_found())?;
    let mut conn = state.reads.acquire().await?;
    let endpoint = webhooks_out::get(&mut conn, client.org_id, id, false)
        .await?
        .ok_or_else(not_found)?;
    Ok(Json(endpoint))
}

/// Delete an endpoint: nothing more is delivered to it (deliveries still due are given up).
#[utoipa::path(
    delete, path = "/api/v1/webhook_endpoints/{id}", tag = "webhooks", params(EndpointId),
    responses(
        (status = 204, description = "Deleted"),
        Unauthorized,
        (status = 403, description = "The API key's role is not owner", body = Problem, content_type = "application/problem+json"),
        NotFound,
    ),
)]
pub(super) async fn delete_endpoint(
    State(state): State<AppState>,
    key: Client,
    Path(id): Path<String>,
) -> Result<Response, ProblemResponse> {
    key.require(Action::ManageOrg)?;
    let client = key.0;
    let id = uuid::Uuid::try_parse(&id).map_err(|_| not_found())?;
    let mut tx = state.pool.begin().await?;
    if !webhooks_out::delete(&mut tx, client.org_id, id).await? {
        return Err(not_found());
    }
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A new signing secret, once per `Idempotency-Key` (a replay answers it as `[redacted]`). The previous
/// secret keeps signing beside it for 24 hours, so receivers can switch without losing a delivery.
#[utoipa::path(
    post, path = "/api/v1/webhook_endpoints/{id}/rotate_secret", tag = "webhooks", params(EndpointWrite),
    responses(
        (status = 200, description = "The endpoint with its new `secret`", body = WebhookEndpoint),
        ActionProblems,
        (status = 403, description = "The API key's role is not owner", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such endpoint (stored for the key)", body = Problem, content_type = "application/problem+json"),
        InFlight,
    ),
)]
pub(super) async fn rotate_secret(write: Write) -> Result<Response, ProblemResponse> {
    write.require(Action::ManageOrg)?;
    write
        .run(async |req, body| {
            let (id, org) = (req.id(not_found)?, req.org());
            let value = action_body(body)?;
            req.once(&value, || {
                async |tx| {
                    let response = match webhooks_out::rotate(tx, org, id).await? {
                        Some(endpoint) => api::ok(&endpoint),
                        None => stored_problem(not_found()),
                    };
                    Ok((response, None))
                }
            })
            .await
        })
        .await
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptList {
    /// The last 100 attempts, newest first.
    pub data: Vec<WebhookAttempt>,
    /// Deliveries waiting for their next try.
    pub pending: i64,
}

/// The endpoint's delivery log: status, latency and the first 1 KB of each answer.
#[utoipa::path(
    get, path = "/api/v1/webhook_endpoints/{id}/attempts", tag = "webhooks", params(EndpointId),
    responses((status = 200, body = AttemptList), Unauthorized, NotFound),
)]
pub(super) async fn list_attempts(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Json<AttemptList>, ProblemResponse> {
    let id = uuid::Uuid::try_parse(&id).map_err(|_| not_found())?;
    let mut conn = state.reads.acquire().await?;
    webhooks_out::get(&mut conn, client.org_id, id, false)
        .await?
        .ok_or_else(not_found)?;
    drop(conn);
    let (data, pending) = webhooks_out::attempts(&state.reads, client.org_id, id, 100).await?;
    Ok(Json(AttemptList { data, pending }))
}

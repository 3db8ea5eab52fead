//! The customer endpoints: create (once per Idempotency-Key, through the API surface), list with a
//! search, get.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use invoicer_core::customers::{self, CustomerError};
use invoicer_core::surfaces::api;
use invoicer_core::AppState;
use model::{Customer, CustomerInput};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::client::Client;
use super::documented::{
    CreateProblems, CustomerId, CustomerWrite, InFlight, ListProblems, New, NotFound, Unauthorized,
};
use super::problem::{problem, Problem, ProblemResponse};
use super::query::{bad_query, page_limit, ListQuery};
use super::write::{self, Write};

/// Create a customer, once per `Idempotency-Key`.
#[utoipa::path(
    post, path = "/api/v1/customers", tag = "customers",
    request_body = CustomerInput,
    params(New),
    responses(
        (status = 201, description = "Created; replays return the stored response with `Idempotent-Replayed: true`", body = Customer,
            headers(("Location" = String, description = "The customer's URL"))),
        CreateProblems,
        InFlight,
        (status = 422, description = "Invalid customer (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn post_customer(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (value, input) = write::json_body(body, "customer", CustomerInput::check)?;
            write::create_once!(req, &value, names: false, |tx, id| {
                customers::create(tx, model::CustomerId::from(id), req.org(), None, &input)
            })
        })
        .await
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CustomerQuery {
    /// The start of a name or an email (case-insensitive).
    #[param(max_length = 200)]
    pub q: Option<String>,
    /// 1..100, default 20.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CustomerList {
    /// Newest first, or by name when searching.
    pub data: Vec<Customer>,
}

/// The org's customers, newest first, or those whose name or email starts with `q`.
#[utoipa::path(
    get, path = "/api/v1/customers", tag = "customers", params(CustomerQuery),
    responses(
        (status = 200, body = CustomerList),
        ListProblems,
    ),
)]
pub(super) async fn list_customers(
    State(state): State<AppState>,
    Client(client): Client,
    ListQuery(query): ListQuery<CustomerQuery>,
) -> Result<Json<CustomerList>, ProblemResponse> {
    let limit = page_limit(query.limit)?;
    let search = query.q.as_deref();
    if search.is_some_and(|q| q.chars().count() > 200 || q.contains('\0')) {
        return Err(bad_query("q must be at most 200 characters, without NUL"));
    }
    let data = customers::list(&state.pool, client.org_id, search, limit).await?;
    Ok(Json(CustomerList { data }))
}

/// One customer of the org; another org's id is 404.
#[utoipa::path(
    get, path = "/api/v1/customers/{id}", tag = "customers", params(CustomerId),
    responses(
        (status = 200, body = Customer),
        Unauthorized,
        NotFound,
    ),
)]
pub(super) async fn get_customer(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Json<Customer>, ProblemResponse> {
    let id = uuid::Uuid::try_parse(&id).map_err(|_| not_found())?;
    customers::get(&state.pool, client.org_id, model::CustomerId::from(id))
        .await?
        .map(Json)
        .ok_or_else(not_found)
}

fn not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such customer.",
    )
}

/// Update a customer: a JSON merge patch (RFC 7396) of its fields, once per `Idempotency-Key`.
/// Finalized invoices keep the details they were finalized with.
#[utoipa::path(
    patch, path = "/api/v1/customers/{id}", tag = "customers",
    request_body(content = serde_json::Value, description = "A JSON merge patch of the customer's fields", content_type = "application/merge-patch+json"),
    params(CustomerWrite),
    responses(
        (status = 200, description = "Updated; replays return the stored response with `Idempotent-Replayed: true`", body = Customer),
        (status = 400, description = "Missing or malformed Idempotency-Key, or a body that is not a JSON object", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
        NotFound,
        InFlight,
        (status = 422, description = "The result is invalid (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn patch_customer(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (id, org) = (req.id(not_found)?, req.org());
            let patch = write::patch_body(body, "the customer")?;
            let current = customers::get(&req.state().pool, org, model::CustomerId::from(id))
                .await?
                .ok_or_else(not_found)?;
            let input = customers::patched(&current, &patch).map_err(|e| match e {
                CustomerError::Unreadable(reason) => write::unreadable("customer", reason),
                CustomerError::Invalid(fields) => write::invalid("customer", fields),
            })?;
            req.once(&patch, || {
                async |tx| {
                    let response =
                        match customers::update(tx, org, model::CustomerId::from(id), &input)
                            .await?
                        {
                            Some(customer) => api::ok(&customer),
                            None => write::stored_problem(not_found()),
                        };
                    Ok((response, None))
                }
            })
            .await
        })
        .await
}

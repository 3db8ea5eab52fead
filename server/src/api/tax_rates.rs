//! The tax-rate endpoints: add one (once per Idempotency-Key, through the API surface) and list them.
//! A rate's percent never changes; invoices name rates by id on each line.

use app::model::{TaxRate, TaxRateInput};
use app::ssr::surfaces::api;
use app::ssr::{tax_rates, AppState};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::client::Client;
use super::documented::{CreateProblems, InFlight, ListProblems, New};
use super::problem::{problem, Problem, ProblemResponse};
use super::write::{self, Write};

/// Add a tax rate, once per `Idempotency-Key`.
#[utoipa::path(
    post, path = "/api/v1/tax_rates", tag = "tax_rates",
    request_body = TaxRateInput,
    params(New),
    responses(
        (status = 201, description = "Created; replays return the stored response with `Idempotent-Replayed: true`", body = TaxRate,
            headers(("Location" = String, description = "The rate's URL"))),
        CreateProblems,
        (status = 403, description = "The API key's role is not owner", body = Problem, content_type = "application/problem+json"),
        InFlight,
        (status = 422, description = "Invalid rate (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn post_tax_rate(write: Write) -> Result<Response, ProblemResponse> {
    // Tax rates are the org's settings: an owner's key.
    write.require(app::model::Action::ManageOrg)?;
    write
        .run(async |req, body| {
            let (value, input) = write::json_body(body, "tax rate", TaxRateInput::check)?;
            req.once(&value, || {
                async |tx| {
                    let id = uuid::Uuid::now_v7();
                    let source_key = format!("api:{id}");
                    let rate = tax_rates::insert(tx, id, req.org(), &source_key, &input).await?;
                    Ok((api::created(&req.location(id), &rate), None))
                }
            })
            .await
        })
        .await
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TaxRateQuery {
    /// Include archived rates (lines saved with them keep them).
    pub archived: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TaxRateList {
    /// Oldest first.
    pub data: Vec<TaxRate>,
}

/// The org's tax rates, oldest first.
#[utoipa::path(
    get, path = "/api/v1/tax_rates", tag = "tax_rates", params(TaxRateQuery),
    responses(
        (status = 200, body = TaxRateList),
        ListProblems,
    ),
)]
pub(super) async fn list_tax_rates(
    State(state): State<AppState>,
    Client(client): Client,
    query: Result<Query<TaxRateQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<TaxRateList>, ProblemResponse> {
    let Query(query) = query.map_err(|e| {
        problem(
            StatusCode::BAD_REQUEST,
            "bad-query",
            "Bad query",
            e.body_text(),
        )
    })?;
    let archived = query.archived.unwrap_or(false);
    let data = tax_rates::list(&state.pool, client.org_id, archived).await?;
    Ok(Json(TaxRateList { data }))
}

//! The tax-rate endpoints: add one (once per Idempotency-Key, through the API surface) and list them.
//! A rate's percent never changes; invoices name rates by id on each line.

use axum::extract::State;
use axum::response::Response;
use axum::Json;
use invoicer_core::{invoicing::tax_rates, AppState};
use model::{TaxRate, TaxRateInput};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::client::Client;
use super::documented::{CreateProblems, InFlight, ListProblems, New};
use super::problem::{Problem, ProblemResponse};
use super::query::ListQuery;
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
    write.require(model::Action::ManageOrg)?;
    write
        .run(async |req, body| {
            let (value, input) = write::json_body(body, "tax rate", TaxRateInput::check)?;
            write::create_once!(req, &value, names: false, |tx, id| {
                tax_rates::add(tx, id, req.org(), &format!("api:{id}"), &input)
            })
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
    ListQuery(query): ListQuery<TaxRateQuery>,
) -> Result<Json<TaxRateList>, ProblemResponse> {
    let archived = query.archived.unwrap_or(false);
    let data = tax_rates::list(&state.pool, client.org_id, archived).await?;
    Ok(Json(TaxRateList { data }))
}

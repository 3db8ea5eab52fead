//! Reports through the API: `GET /api/v1/reports/aging` and `GET /api/v1/reports/tax`.

use axum::extract::State;
use axum::Json;
use invoicer_core::AppState;
use model::reports::{AgingReport, TaxReport};
use serde::Deserialize;

use super::client::Client;
use super::documented::Unauthorized;
use super::problem::{Problem, ProblemResponse};
use super::query::{bad_query, ListQuery};

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PeriodQuery {
    /// The first day (`YYYY-MM-DD`, the org's date); with `to` left out too, the quarter so far.
    pub from: Option<String>,
    /// The last day, included (default: the org's today).
    pub to: Option<String>,
}

/// Who owes what and for how long, per customer and currency, on the org's date: not yet due,
/// 1–30, 31–60, 61–90 and over 90 days past due; biggest debts first.
#[utoipa::path(
    get, path = "/api/v1/reports/aging", tag = "reports",
    responses(
        (status = 200, body = AgingReport),
        Unauthorized,
    ),
)]
pub(super) async fn get_aging(
    State(state): State<AppState>,
    Client(client): Client,
) -> Result<Json<AgingReport>, ProblemResponse> {
    let mut conn = state.reads.acquire().await?;
    Ok(Json(
        invoicer_core::reports::aging(
            &mut conn,
            client.org_id,
            Some(invoicer_core::reports::MAX_ROWS),
        )
        .await?,
    ))
}

/// The tax summary of a period (at most 3660 days): per currency and VAT rate (category and
/// percent), the taxable base and the tax of the invoices finalized in it (void ones left out) and,
/// separately, of the credit notes issued in it; `net` is the first less the second.
#[utoipa::path(
    get, path = "/api/v1/reports/tax", tag = "reports", params(PeriodQuery),
    responses(
        (status = 200, body = TaxReport),
        (status = 400, description = "A date that is not YYYY-MM-DD, a period that ends before it begins or is longer than 3660 days", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
    ),
)]
pub(super) async fn get_tax(
    State(state): State<AppState>,
    Client(client): Client,
    ListQuery(query): ListQuery<PeriodQuery>,
) -> Result<Json<TaxReport>, ProblemResponse> {
    let mut conn = state.reads.acquire().await?;
    let today = invoicer_core::customers::statements::org_today(&mut conn, client.org_id).await?;
    let period =
        invoicer_core::reports::tax_period(query.from.as_deref(), query.to.as_deref(), today)
            .map_err(bad_query)?;
    Ok(Json(
        invoicer_core::reports::tax(&mut conn, client.org_id, period).await?,
    ))
}

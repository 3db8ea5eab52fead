//! Reports through the API: `GET /api/v1/reports/aging`.

use app::model::reports::AgingReport;
use app::ssr::AppState;
use axum::extract::State;
use axum::Json;

use super::client::Client;
use super::documented::Unauthorized;
use super::problem::ProblemResponse;

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
        app::ssr::reports::aging(&mut conn, client.org_id, Some(app::ssr::reports::MAX_ROWS))
            .await?,
    ))
}

//! Server functions of the reports.

use leptos::prelude::*;

use crate::error::AppError;
use crate::model::reports::AgingReport;

/// The session org's aging report.
#[server(prefix = "/rpc", endpoint = "get_aging_report")]
pub async fn get_aging_report() -> Result<AgingReport, AppError> {
    let user = crate::ssr::auth::require(crate::model::Action::Read).await?;
    let state = super::state()?;
    let mut conn = state.reads.acquire().await?;
    Ok(
        crate::ssr::reports::aging(&mut conn, user.org_id, Some(crate::ssr::reports::MAX_ROWS))
            .await?,
    )
}

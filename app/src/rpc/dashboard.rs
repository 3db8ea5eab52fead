//! The dashboard's server function.

use leptos::prelude::*;

use model::dashboard::Dashboard;
use model::error::AppError;

/// The session org's dashboard.
#[server(prefix = "/rpc", endpoint = "get_dashboard")]
pub async fn get_dashboard() -> Result<Dashboard, AppError> {
    let user = super::require(model::Action::Read).await?;
    let state = super::state()?;
    Ok(invoicer_core::reports::dashboard::cached(&state.reads, user.org_id).await?)
}

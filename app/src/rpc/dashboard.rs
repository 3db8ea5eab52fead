//! The dashboard's server function.

use leptos::prelude::*;

use crate::error::AppError;
use crate::model::dashboard::Dashboard;

/// The session org's dashboard.
#[server(prefix = "/rpc", endpoint = "get_dashboard")]
pub async fn get_dashboard() -> Result<Dashboard, AppError> {
    let user = crate::ssr::auth::require(crate::model::Action::Read).await?;
    let state = super::state()?;
    Ok(crate::ssr::dashboard::cached(&state.reads, user.org_id).await?)
}

//! Server functions of the reports.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;

use model::error::AppError;
use model::reports::{AgingReport, TaxReport};

/// The session org's aging report.
#[server(prefix = "/rpc", endpoint = "get_aging_report")]
pub async fn get_aging_report() -> Result<AgingReport, AppError> {
    let user = super::require(model::Action::Read).await?;
    let state = super::state()?;
    let mut conn = state.reads.acquire().await?;
    Ok(invoicer_core::reports::aging(
        &mut conn,
        user.org_id,
        Some(invoicer_core::reports::MAX_ROWS),
    )
    .await?)
}

/// The session org's tax summary of `from`..=`to` (neither: the quarter so far).
#[server(prefix = "/rpc", endpoint = "get_tax_report")]
pub async fn get_tax_report(
    from: Option<String>,
    to: Option<String>,
) -> Result<TaxReport, AppError> {
    let user = super::require(model::Action::Read).await?;
    invoicer_core::pages::tax_report(&super::state()?, &user, from.as_deref(), to.as_deref())
        .await
        .map_err(AppError::respond)
}

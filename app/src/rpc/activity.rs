//! Server functions of what happened in the org: the activity page (every attempt, by surface and
//! outcome) and the audit log.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;

use model::error::AppError;
use model::{ActivityPage, AuditEntry};

#[cfg(feature = "ssr")]
use super::{form::parse_id, state};

/// The session org's attempts, newest first, filtered; `before` is the cursor of the page before.
#[server(prefix = "/rpc", endpoint = "activity")]
pub async fn activity(
    surface: Option<String>,
    outcome: Option<String>,
    q: Option<String>,
    before: Option<String>,
) -> Result<ActivityPage, AppError> {
    use invoicer_core::activity::{list, Cursor, Filter};

    let user = super::require(model::Action::Read).await?;
    let state = state()?;
    let before = match before.as_deref().filter(|b| !b.is_empty()) {
        None => None,
        Some(text) => Some(Cursor::parse(text).ok_or_else(|| {
            AppError::BadRequest("This page link is not valid. Start from the first page.".into())
                .respond()
        })?),
    };
    let filter = Filter {
        surface: surface.filter(|s| !s.is_empty()),
        outcome: outcome.filter(|s| !s.is_empty()),
        search: q,
        invoice: None,
    };
    let pool = state.read_pool(filter.has_pattern());
    Ok(list(pool, user.org_id, &filter, before).await?)
}

/// A page of the org's audit log (owners), newest first; `before` is the last row's id of the page
/// before.
#[server(prefix = "/rpc", endpoint = "audit_log")]
pub async fn audit_log(before: Option<String>) -> Result<Vec<AuditEntry>, AppError> {
    let user = super::require(model::Action::ReadAudit).await?;
    let state = state()?;
    let before = match before.as_deref().map(str::trim).filter(|b| !b.is_empty()) {
        None => None,
        Some(b) => Some(parse_id(b)?),
    };
    Ok(invoicer_core::accounts::audit::page(&state.pool, user.org_id, before, 50).await?)
}

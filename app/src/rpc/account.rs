//! Server functions of the signed-in account: its page, password, address and its verification,
//! its sessions, and which of its orgs it acts for.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use uuid::Uuid;

use model::error::AppError;
use model::{OrgChoice, SessionSummary};

#[cfg(feature = "ssr")]
use super::{
    form::{parse_account_key, parse_id},
    state,
};

/// The account page's data: the address, whether it is verified, and fresh form keys.
#[server(prefix = "/rpc", endpoint = "account_page")]
pub async fn account_page() -> Result<model::AccountView, AppError> {
    let user = super::require_user().await?;
    let state = state()?;
    Ok(model::AccountView {
        api_keys: invoicer_core::accounts::api_keys::own_live(&state.reads, user.id).await?,
        email: user.email,
        verified: user.email_verified,
        email_key: Uuid::now_v7(),
        verify_key: Uuid::now_v7(),
        revoke_keys_key: Uuid::now_v7(),
    })
}

/// Changes the password (the current one checked): every other session ends, this one stays.
#[server(prefix = "/rpc", endpoint = "change_password")]
pub async fn change_password(current: String, password: String) -> Result<(), AppError> {
    let state = state()?;
    let user = super::require_user().await?;
    // A signed-in user: their own allowances hold, the ceilings everyone shares do not.
    state
        .throttle
        .login(&user.email, super::client_address(&state))?
        .waive();
    if !invoicer_core::accounts::password_matches(&state.pool, user.id, &current).await? {
        return Err(AppError::field("current", "That is not your current password.").respond());
    }
    invoicer_core::accounts::change_password(
        &state.pool,
        user.id,
        &user.email,
        user.session_id,
        &password,
        super::client_address(&state),
    )
    .await
    .map_err(|e| AppError::from(e).respond())?;
    // The session's auth hash was the old password's: log this session in again on its own row.
    let mut session = super::current_session().await?;
    if let Some(fresh) = invoicer_core::accounts::auth::relogin(&state.pool, &user).await? {
        session
            .login(&fresh)
            .await
            .map_err(|e| AppError::internal("change password: login", e))?;
    }
    leptos_axum::redirect("/settings/account?password=1");
    Ok(())
}

/// Asks to change the address: a link to the new one; the change takes effect when it is followed.
#[server(prefix = "/rpc", endpoint = "change_email")]
pub async fn change_email(
    idempotency_key: Option<String>,
    password: String,
    email: String,
) -> Result<(), AppError> {
    let state = state()?;
    let user = super::require_user().await?;
    let key = parse_account_key(idempotency_key.as_deref())?;
    let address = super::client_address(&state);
    state.throttle.login(&user.email, address)?.waive();
    if !invoicer_core::accounts::password_matches(&state.pool, user.id, &password).await? {
        return Err(AppError::field("password", "That is not your current password.").respond());
    }
    state.throttle.account_email(&email, address)?.waive();
    invoicer_core::accounts::request_email_change(
        &state.pool,
        user.id,
        &email,
        &format!("form:{key}"),
    )
    .await
    .map_err(|e| AppError::from(e).respond())?;
    leptos_axum::redirect("/settings/account?email=1");
    Ok(())
}

/// Sends the verification link again (once per rendered button).
#[server(prefix = "/rpc", endpoint = "resend_verification")]
pub async fn resend_verification(idempotency_key: Option<String>) -> Result<(), AppError> {
    let state = state()?;
    let user = super::require_user().await?;
    let key = parse_account_key(idempotency_key.as_deref())?;
    if !user.email_verified {
        state
            .throttle
            .account_email(&user.email, super::client_address(&state))?
            .waive();
        let mut tx = state.pool.begin().await?;
        invoicer_core::accounts::queue_verification(
            &mut tx,
            user.id,
            &user.email,
            Some(&format!("form:{key}")),
        )
        .await?;
        tx.commit().await?;
    }
    leptos_axum::redirect("/settings/account?sent=1");
    Ok(())
}

/// Follows a verification link (from a form on the link's page, not the GET itself: mail scanners
/// open links).
#[server(prefix = "/rpc", endpoint = "confirm_email")]
pub async fn confirm_email(token: String) -> Result<(), AppError> {
    let state = state()?;
    invoicer_core::accounts::verify_email(&state.pool, &token, super::client_address(&state))
        .await
        .map_err(|e| AppError::from(e).respond())?;
    leptos_axum::redirect("/settings/account?verified=1");
    Ok(())
}

/// The user's live sessions, this one first.
#[server(prefix = "/rpc", endpoint = "list_sessions")]
pub async fn list_sessions() -> Result<Vec<SessionSummary>, AppError> {
    let user = super::require_user().await?;
    let state = state()?;
    Ok(invoicer_core::accounts::auth::sessions(&state.pool, user.id, user.session_id).await?)
}

/// Ends one of the user's sessions (this one too, if asked: that is logging out).
#[server(prefix = "/rpc", endpoint = "end_session")]
pub async fn end_session(id: String) -> Result<(), AppError> {
    let user = super::require_user().await?;
    let state = state()?;
    let id = parse_id(&id)?;
    if !invoicer_core::accounts::auth::end_session(&state.pool, user.id, id).await? {
        return Err(AppError::NotFound.respond());
    }
    leptos_axum::redirect(if id == user.session_id {
        "/login"
    } else {
        "/settings/sessions"
    });
    Ok(())
}

/// Ends every session of the user but this one.
#[server(prefix = "/rpc", endpoint = "end_other_sessions")]
pub async fn end_other_sessions() -> Result<(), AppError> {
    let user = super::require_user().await?;
    let state = state()?;
    invoicer_core::accounts::auth::end_other_sessions(&state.pool, user.id, user.session_id)
        .await?;
    leptos_axum::redirect("/settings/sessions");
    Ok(())
}

/// The orgs the user belongs to, for the switcher.
#[server(prefix = "/rpc", endpoint = "list_orgs")]
pub async fn list_orgs() -> Result<Vec<OrgChoice>, AppError> {
    let user = super::require_user().await?;
    let state = state()?;
    Ok(
        invoicer_core::accounts::members::orgs_of(&state.pool, user.id)
            .await?
            .into_iter()
            .map(|(id, name, role)| OrgChoice {
                current: user.org_id == id,
                id,
                name,
                role,
            })
            .collect(),
    )
}

/// Makes this session act for another of the user's orgs.
#[server(prefix = "/rpc", endpoint = "switch_org")]
pub async fn switch_org(org_id: String) -> Result<(), AppError> {
    let user = super::require_user().await?;
    let state = state()?;
    let org = parse_id(&org_id)?;
    if !invoicer_core::accounts::members::switch_org(
        &state.pool,
        user.id,
        user.session_id,
        org.into(),
    )
    .await?
    {
        return Err(AppError::NotFound.respond());
    }
    leptos_axum::redirect(super::auth::HOME);
    Ok(())
}

//! Server functions of the team: members and invitations, the account (verification, password,
//! address), sessions, org switching, the audit log. Every form that changes something runs once
//! per rendered form through the same claim as the other settings forms; every emailed link is
//! used once, in the transaction that does its work.

use leptos::prelude::*;
#[cfg(feature = "ssr")]
use uuid::Uuid;

use crate::error::AppError;
use crate::model::{AuditEntry, MembersPage, OrgChoice, SessionSummary};

#[cfg(feature = "ssr")]
use super::{login_meta, settings_form, state};

#[cfg(feature = "ssr")]
fn actor(user: &crate::ssr::auth::SessionUser) -> crate::ssr::audit::Actor {
    crate::ssr::audit::Actor::user(user.id, &user.email)
}

#[cfg(feature = "ssr")]
fn parse_id(id: &str) -> Result<Uuid, AppError> {
    Uuid::try_parse(id.trim()).map_err(|_| AppError::NotFound.respond())
}

#[cfg(feature = "ssr")]
fn parse_role(role: &str) -> Result<crate::model::Role, AppError> {
    crate::model::Role::parse(role.trim())
        .ok_or_else(|| AppError::field("role", "Choose owner, member or viewer.").respond())
}

#[cfg(feature = "ssr")]
impl From<crate::ssr::members::MemberError> for AppError {
    fn from(e: crate::ssr::members::MemberError) -> Self {
        use crate::ssr::members::MemberError;
        match e {
            MemberError::NotFound => AppError::NotFound,
            MemberError::LastOwner => AppError::BadRequest(
                "An organisation needs an owner: make someone else an owner first.".into(),
            ),
            MemberError::Db(e) => e.into(),
        }
    }
}

#[cfg(feature = "ssr")]
impl From<crate::ssr::invitations::InviteError> for AppError {
    fn from(e: crate::ssr::invitations::InviteError) -> Self {
        use crate::ssr::invitations::InviteError;
        match e {
            InviteError::NotFound => AppError::NotFound,
            InviteError::BadEmail => AppError::field("email", "Enter a valid email address."),
            e @ (InviteError::AlreadyMember(_) | InviteError::AlreadyInvited(_)) => {
                AppError::field("email", &e.to_string())
            }
            e @ InviteError::Accepted => AppError::BadRequest(e.to_string()),
            InviteError::Db(e) => e.into(),
        }
    }
}

#[cfg(feature = "ssr")]
impl From<crate::ssr::accounts::TokenError> for AppError {
    fn from(e: crate::ssr::accounts::TokenError) -> Self {
        use crate::ssr::accounts::TokenError;
        match e {
            TokenError::Db(e) => e.into(),
            TokenError::Hashing(e) => e.into(),
            e => AppError::BadRequest(e.to_string()),
        }
    }
}

/// The members page: members, invitations, and a fresh key for the invite form.
#[server(prefix = "/rpc", endpoint = "team_page")]
pub async fn team_page() -> Result<MembersPage, AppError> {
    use crate::model::Action;
    let user = crate::ssr::auth::require(Action::Read).await?;
    let state = state()?;
    let members = crate::ssr::members::list(&state.pool, user.org_id).await?;
    let invitations = if user.role.may(Action::ManageMembers) {
        crate::ssr::invitations::list(&state.pool, user.org_id).await?
    } else {
        Vec::new()
    };
    let keys = |n: usize| -> Vec<(Uuid, Uuid)> {
        let key = || crate::model::form_key(user.org_id);
        (0..n).map(|_| (key(), key())).collect()
    };
    Ok(MembersPage {
        member_keys: keys(members.len()),
        invitation_keys: keys(invitations.len()),
        me: user.id,
        my_role: user.role,
        org_name: user.org_name,
        members,
        invitations,
        invite_key: crate::model::form_key(user.org_id),
    })
}

/// Invites `email` with `role`: one invitation and one email per rendered form, however often it
/// is submitted.
#[server(prefix = "/rpc", endpoint = "invite_member")]
pub async fn invite_member(
    idempotency_key: Option<String>,
    email: String,
    role: String,
) -> Result<(), AppError> {
    use crate::ssr::claim::Form;
    let state = state()?;
    let parsed_role = parse_role(&role)?;
    let source_key = format!(
        "form:{}",
        idempotency_key.as_deref().unwrap_or_default().trim()
    );
    let content = (email.trim().to_lowercase(), parsed_role.as_str());
    let address = super::client_address(&state);
    settings_form(
        Form::InviteMember,
        crate::model::Action::ManageMembers,
        "/settings/members",
        idempotency_key.clone(),
        &content,
        || Ok(()),
        |user| {
            let (email, source_key, actor, org, throttle, verified) = (
                &email,
                &source_key,
                actor(user),
                user.org_id,
                &state.throttle,
                user.email_verified,
            );
            move || {
                let actor = actor.clone();
                async move |tx: &mut sqlx::PgConnection| {
                    // An invitation is an email sent in the org's name: only from a verified
                    // address, and within the org's email allowance.
                    if !verified {
                        return Err(AppError::Forbidden(
                            "Verify your email address first (the link we sent you) to invite \
                             people."
                                .into(),
                        )
                        .respond());
                    }
                    throttle.email(org)?;
                    throttle.account_email(email, address)?;
                    Ok(crate::ssr::invitations::invite(
                        tx,
                        org,
                        &actor,
                        email,
                        parsed_role,
                        source_key,
                    )
                    .await?)
                }
            }
        },
    )
    .await
}

/// One change to the org's members from the members page: what it is claimed as, and its work in
/// the claim's transaction.
#[cfg(feature = "ssr")]
#[derive(Debug, Clone, Copy, serde::Serialize)]
enum MemberChange {
    ResendInvitation(Uuid),
    RevokeInvitation(Uuid),
    ChangeRole(Uuid, crate::model::Role),
    Remove(Uuid),
    Leave,
}

#[cfg(feature = "ssr")]
impl MemberChange {
    fn form(self) -> crate::ssr::claim::Form {
        use crate::ssr::claim::Form;
        match self {
            MemberChange::ResendInvitation(_) => Form::ResendInvitation,
            MemberChange::RevokeInvitation(_) => Form::RevokeInvitation,
            MemberChange::ChangeRole(..) => Form::ChangeRole,
            MemberChange::Remove(_) => Form::RemoveMember,
            MemberChange::Leave => Form::LeaveOrg,
        }
    }

    async fn apply(
        self,
        tx: &mut sqlx::PgConnection,
        user: &crate::ssr::auth::SessionUser,
    ) -> Result<Uuid, AppError> {
        use crate::ssr::{invitations, members};
        let (actor, org) = (actor(user), user.org_id);
        Ok(match self {
            MemberChange::ResendInvitation(id) => invitations::resend(tx, org, &actor, id).await?,
            MemberChange::RevokeInvitation(id) => invitations::revoke(tx, org, &actor, id).await?,
            MemberChange::ChangeRole(member, role) => {
                members::change_role(tx, org, &actor, member, role).await?;
                member
            }
            MemberChange::Remove(member) => {
                members::remove(tx, org, &actor, member).await?;
                member
            }
            MemberChange::Leave => {
                members::remove(tx, org, &actor, user.id).await?;
                user.id
            }
        })
    }
}

/// Runs `change` once per rendered form, if the session may manage members (anyone may leave).
#[cfg(feature = "ssr")]
async fn members_form(
    idempotency_key: Option<String>,
    change: MemberChange,
) -> Result<(), AppError> {
    use crate::model::Action;
    let (action, back) = match change {
        MemberChange::Leave => (Action::Read, "/login"),
        _ => (Action::ManageMembers, "/settings/members"),
    };
    settings_form(
        change.form(),
        action,
        back,
        idempotency_key,
        &change,
        || Ok(()),
        |user| {
            let user = user.clone();
            move || {
                let user = user.clone();
                async move |tx: &mut sqlx::PgConnection| change.apply(tx, &user).await
            }
        },
    )
    .await
}

/// Sends an open invitation again with a new link.
#[server(prefix = "/rpc", endpoint = "resend_invitation")]
pub async fn resend_invitation(
    idempotency_key: Option<String>,
    id: String,
) -> Result<(), AppError> {
    members_form(
        idempotency_key,
        MemberChange::ResendInvitation(parse_id(&id)?),
    )
    .await
}

/// Withdraws an open invitation: its link then says so.
#[server(prefix = "/rpc", endpoint = "revoke_invitation")]
pub async fn revoke_invitation(
    idempotency_key: Option<String>,
    id: String,
) -> Result<(), AppError> {
    members_form(
        idempotency_key,
        MemberChange::RevokeInvitation(parse_id(&id)?),
    )
    .await
}

/// Gives a member another role (never leaving the org without an owner).
#[server(prefix = "/rpc", endpoint = "change_role")]
pub async fn change_role(
    idempotency_key: Option<String>,
    user_id: String,
    role: String,
) -> Result<(), AppError> {
    let change = MemberChange::ChangeRole(parse_id(&user_id)?, parse_role(&role)?);
    members_form(idempotency_key, change).await
}

/// Removes a member: their sessions in the org end and their API keys stop, at once.
#[server(prefix = "/rpc", endpoint = "remove_member")]
pub async fn remove_member(
    idempotency_key: Option<String>,
    user_id: String,
) -> Result<(), AppError> {
    members_form(idempotency_key, MemberChange::Remove(parse_id(&user_id)?)).await
}

/// Leaves the session's org (any role; not its last owner): this session ends with it.
#[server(prefix = "/rpc", endpoint = "leave_org")]
pub async fn leave_org(idempotency_key: Option<String>) -> Result<(), AppError> {
    members_form(idempotency_key, MemberChange::Leave).await
}

/// What an invitation link shows: the org, the role, whether the address has an account.
#[server(prefix = "/rpc", endpoint = "invitation")]
pub async fn invitation(token: String) -> Result<crate::model::InvitationView, AppError> {
    let state = state()?;
    let preview = crate::ssr::invitations::preview(&state.pool, &token)
        .await
        .map_err(|e| AppError::from(e).respond())?;
    Ok(crate::model::InvitationView {
        org_name: preview.org_name,
        email: preview.email,
        role: preview.role,
        existing_account: preview.existing_account,
    })
}

/// Accepts an invitation (the link's token) with the account's password, or a new account's; logs
/// the browser in acting for the org it joined.
#[server(prefix = "/rpc", endpoint = "accept_invitation")]
pub async fn accept_invitation(token: String, password: String) -> Result<(), AppError> {
    let state = state()?;
    state
        .throttle
        .login(&token, super::client_address(&state))?;
    let accepted = crate::ssr::invitations::accept(&state.pool, &token, &password)
        .await
        .map_err(|e| AppError::from(e).respond())?;
    let user = crate::ssr::auth::for_login(&state.pool, accepted.user, Some(accepted.org))
        .await?
        .ok_or_else(|| AppError::internal("accept invitation", "joined user not found"))?;
    let mut session = crate::ssr::auth::current_session().await?;
    crate::ssr::auth::log_in(&state.pool, &mut session, &user, &login_meta(&state)).await?;
    leptos_axum::redirect("/invoices");
    Ok(())
}

/// Follows a verification link (from a form on the link's page, not the GET itself: mail scanners
/// open links).
#[server(prefix = "/rpc", endpoint = "confirm_email")]
pub async fn confirm_email(token: String) -> Result<(), AppError> {
    let state = state()?;
    crate::ssr::accounts::verify_email(&state.pool, &token, super::client_address(&state))
        .await
        .map_err(|e| AppError::from(e).respond())?;
    leptos_axum::redirect("/settings/account?verified=1");
    Ok(())
}

/// "Forgot password": a reset link to the address if it has an account, once per rendered form; the
/// same answer either way, and throttled per client address and per recipient.
#[server(prefix = "/rpc", endpoint = "forgot_password")]
pub async fn forgot_password(
    idempotency_key: Option<String>,
    email: String,
) -> Result<(), AppError> {
    let state = state()?;
    let key = idempotency_key
        .as_deref()
        .and_then(|k| Uuid::try_parse(k.trim()).ok())
        .ok_or_else(|| {
            AppError::BadRequest("This form has expired. Reload the page and try again.".into())
                .respond()
        })?;
    let email = email.trim();
    if email.is_empty() || email.len() > 254 {
        return Err(AppError::field("email", "Enter your email address.").respond());
    }
    state
        .throttle
        .account_email(email, super::client_address(&state))?;
    crate::ssr::accounts::request_reset(&state.pool, email, &format!("form:{key}")).await?;
    leptos_axum::redirect("/forgot-password?sent=1");
    Ok(())
}

/// Follows a reset link: the new password, every session of the account ended, and this browser
/// logged in afresh.
#[server(prefix = "/rpc", endpoint = "reset_password")]
pub async fn reset_password(token: String, password: String) -> Result<(), AppError> {
    let state = state()?;
    let client = super::client_address(&state);
    state.throttle.reset(&token, client)?;
    let user = crate::ssr::accounts::reset_password(&state.pool, &token, &password, client)
        .await
        .map_err(|e| AppError::from(e).respond())?;
    let mut session = crate::ssr::auth::current_session().await?;
    match crate::ssr::auth::for_login(&state.pool, user, None).await? {
        Some(user) => {
            crate::ssr::auth::log_in(&state.pool, &mut session, &user, &login_meta(&state)).await?;
            leptos_axum::redirect("/invoices");
        }
        // Reset, but in no org any more: nothing to log in to.
        None => leptos_axum::redirect("/login"),
    }
    Ok(())
}

/// The account page's data: the address, whether it is verified, and fresh form keys.
#[server(prefix = "/rpc", endpoint = "account_page")]
pub async fn account_page() -> Result<crate::model::AccountView, AppError> {
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    Ok(crate::model::AccountView {
        api_keys: crate::ssr::api_keys::own_live(&state.reads, user.id).await?,
        email: user.email,
        verified: user.email_verified,
        email_key: Uuid::now_v7(),
        verify_key: Uuid::now_v7(),
        revoke_keys_key: Uuid::now_v7(),
    })
}

/// Revokes every live API key the account made, in all of its orgs, once per rendered button.
#[server(prefix = "/rpc", endpoint = "revoke_own_api_keys")]
pub async fn revoke_own_api_keys(idempotency_key: Option<String>) -> Result<(), AppError> {
    use crate::ssr::claim::Form;
    settings_form(
        Form::RevokeOwnApiKeys,
        crate::model::Action::Read,
        "/settings/account?keys=1",
        idempotency_key,
        &"revoke_own_api_keys",
        || Ok(()),
        |user| {
            let (actor, id) = (actor(user), user.id);
            move || {
                let actor = actor.clone();
                async move |tx: &mut sqlx::PgConnection| {
                    crate::ssr::api_keys::revoke_all_own(tx, &actor).await?;
                    Ok(id)
                }
            }
        },
    )
    .await
}

/// Changes the password (the current one checked): every other session ends, this one stays.
#[server(prefix = "/rpc", endpoint = "change_password")]
pub async fn change_password(current: String, password: String) -> Result<(), AppError> {
    let state = state()?;
    let user = crate::ssr::auth::require_user().await?;
    state
        .throttle
        .login(&user.email, super::client_address(&state))?;
    if !crate::ssr::accounts::password_matches(&state.pool, user.id, &current).await? {
        return Err(AppError::field("current", "That is not your current password.").respond());
    }
    crate::ssr::accounts::change_password(
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
    let mut session = crate::ssr::auth::current_session().await?;
    if let Some(fresh) = crate::ssr::auth::relogin(&state.pool, &user).await? {
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
    let user = crate::ssr::auth::require_user().await?;
    let key = idempotency_key
        .as_deref()
        .and_then(|k| Uuid::try_parse(k.trim()).ok())
        .ok_or_else(|| {
            AppError::BadRequest("This form has expired. Reload the page and try again.".into())
                .respond()
        })?;
    let address = super::client_address(&state);
    state.throttle.login(&user.email, address)?;
    if !crate::ssr::accounts::password_matches(&state.pool, user.id, &password).await? {
        return Err(AppError::field("password", "That is not your current password.").respond());
    }
    state.throttle.account_email(&email, address)?;
    crate::ssr::accounts::request_email_change(
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
    let user = crate::ssr::auth::require_user().await?;
    let key = idempotency_key
        .as_deref()
        .and_then(|k| Uuid::try_parse(k.trim()).ok())
        .ok_or_else(|| {
            AppError::BadRequest("This form has expired. Reload the page and try again.".into())
                .respond()
        })?;
    if !user.email_verified {
        state
            .throttle
            .account_email(&user.email, super::client_address(&state))?;
        let mut tx = state.pool.begin().await?;
        crate::ssr::accounts::queue_verification(
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

/// The user's live sessions, this one first.
#[server(prefix = "/rpc", endpoint = "list_sessions")]
pub async fn list_sessions() -> Result<Vec<SessionSummary>, AppError> {
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    Ok(crate::ssr::auth::sessions(&state.pool, user.id, user.session_id).await?)
}

/// Ends one of the user's sessions (this one too, if asked: that is logging out).
#[server(prefix = "/rpc", endpoint = "end_session")]
pub async fn end_session(id: String) -> Result<(), AppError> {
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    let id = parse_id(&id)?;
    if !crate::ssr::auth::end_session(&state.pool, user.id, id).await? {
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
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    crate::ssr::auth::end_other_sessions(&state.pool, user.id, user.session_id).await?;
    leptos_axum::redirect("/settings/sessions");
    Ok(())
}

/// The orgs the user belongs to, for the switcher.
#[server(prefix = "/rpc", endpoint = "list_orgs")]
pub async fn list_orgs() -> Result<Vec<OrgChoice>, AppError> {
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    Ok(crate::ssr::members::orgs_of(&state.pool, user.id)
        .await?
        .into_iter()
        .map(|(id, name, role)| OrgChoice {
            current: id == user.org_id,
            id,
            name,
            role,
        })
        .collect())
}

/// Makes this session act for another of the user's orgs.
#[server(prefix = "/rpc", endpoint = "switch_org")]
pub async fn switch_org(org_id: String) -> Result<(), AppError> {
    let user = crate::ssr::auth::require_user().await?;
    let state = state()?;
    let org = parse_id(&org_id)?;
    if !crate::ssr::members::switch_org(&state.pool, user.id, user.session_id, org).await? {
        return Err(AppError::NotFound.respond());
    }
    leptos_axum::redirect("/invoices");
    Ok(())
}

/// A page of the org's audit log (owners), newest first; `before` is the last row's id of the page
/// before.
#[server(prefix = "/rpc", endpoint = "audit_log")]
pub async fn audit_log(before: Option<String>) -> Result<Vec<AuditEntry>, AppError> {
    let user = crate::ssr::auth::require(crate::model::Action::ReadAudit).await?;
    let state = state()?;
    let before = match before.as_deref().map(str::trim).filter(|b| !b.is_empty()) {
        None => None,
        Some(b) => Some(parse_id(b)?),
    };
    Ok(crate::ssr::audit::page(&state.pool, user.org_id, before, 50).await?)
}

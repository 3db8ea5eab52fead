//! Server functions of the team: the members page, invitations (sending, following, accepting),
//! role changes, removal and leaving. Every change runs once per rendered form through the same
//! claim as the settings forms; an emailed link is used once, in the transaction that does its work.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use uuid::Uuid;

use model::error::{AppError, FormError};
use model::MembersPage;

#[cfg(feature = "ssr")]
use super::{
    actor,
    form::{parse_id, SettingsForm},
    login_meta, state,
};

#[cfg(feature = "ssr")]
fn parse_role(role: &str) -> Result<model::Role, AppError> {
    model::Role::parse(role.trim())
        .ok_or_else(|| AppError::field("role", "Choose owner, member or viewer.").respond())
}

/// The mail gate of an email a member sends in the org's name.
#[cfg(feature = "ssr")]
fn member_gate(
    state: &invoicer_core::AppState,
    user: &invoicer_core::accounts::auth::SessionUser,
) -> invoicer_core::mail::gate::Gate {
    let sender = invoicer_core::mail::gate::Sender::Member {
        verified: user.email_verified,
    };
    invoicer_core::mail::gate::Gate::new(
        invoicer_core::mail::gate::Allowance::of(&state.settings.limits),
        sender,
    )
}

/// The members page: members, invitations, and a fresh key for the invite form.
#[server(prefix = "/rpc", endpoint = "team_page")]
pub async fn team_page() -> Result<MembersPage, AppError> {
    let user = super::require(model::Action::Read).await?;
    invoicer_core::pages::team(&state()?, &user)
        .await
        .map_err(AppError::respond)
}

/// Invites `email` with `role`: one invitation and one email per rendered form, however often it
/// is submitted.
#[server(prefix = "/rpc", endpoint = "invite_member")]
pub async fn invite_member(
    idempotency_key: Option<String>,
    email: String,
    role: String,
) -> Result<(), FormError<(String, String)>> {
    use invoicer_core::surfaces::forms::Form;
    let state = state()?;
    let parsed_role = parse_role(&role)?;
    let source_key = format!(
        "form:{}",
        idempotency_key.as_deref().unwrap_or_default().trim()
    );
    let content = (email.trim().to_lowercase(), parsed_role.as_str().to_owned());
    let address = super::client_address(&state);
    SettingsForm {
        form: Form::InviteMember,
        action: model::Action::ManageMembers,
        back: "/settings/members",
        idempotency_key,
        content: &content,
        check: Ok(()),
    }
    .run_refilling(async |tx, user| {
        // An invitation is an email sent in the org's name: through the mail gate (a verified
        // address, the org's and the recipient's hourly allowance).
        state.throttle.account_email(&email, address)?.waive();
        let (org, actor) = (user.org_id, actor(user));
        let gate = member_gate(&state, user);
        let invited = invoicer_core::accounts::invitations::invite(
            tx,
            org,
            &actor,
            &email,
            parsed_role,
            &source_key,
            gate,
        );
        Ok(invited.await?)
    })
    .await
}

/// One change to the org's members from the members page: what it is claimed as, and its work in
/// the claim's transaction.
#[cfg(feature = "ssr")]
#[derive(Debug, Clone, Copy, serde::Serialize)]
enum MemberChange {
    ResendInvitation(Uuid),
    RevokeInvitation(Uuid),
    ChangeRole(Uuid, model::Role),
    Remove(Uuid),
    Leave,
}

#[cfg(feature = "ssr")]
impl MemberChange {
    fn form(self) -> invoicer_core::surfaces::forms::Form {
        use invoicer_core::surfaces::forms::Form;
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
        user: &invoicer_core::accounts::auth::SessionUser,
    ) -> Result<Uuid, AppError> {
        use invoicer_core::{accounts::invitations, accounts::members};
        let (actor, org) = (actor(user), user.org_id);
        Ok(match self {
            MemberChange::ResendInvitation(id) => {
                let gate = member_gate(&state()?, user);
                invitations::resend(tx, org, &actor, id, gate).await?
            }
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
    use model::Action;
    let (action, back) = match change {
        MemberChange::Leave => (Action::Read, "/login"),
        _ => (Action::ManageMembers, "/settings/members"),
    };
    SettingsForm {
        form: change.form(),
        action,
        back,
        idempotency_key,
        content: &change,
        check: Ok(()),
    }
    .run(async |tx, user| change.apply(tx, user).await)
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
pub async fn invitation(token: String) -> Result<model::InvitationView, AppError> {
    let state = state()?;
    let preview = invoicer_core::accounts::invitations::preview(&state.pool, &token)
        .await
        .map_err(|e| AppError::from(e).respond())?;
    Ok(model::InvitationView {
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
    // A token of the wrong shape keys nothing: refused before any allowance is counted.
    if invoicer_core::accounts::well_formed_token(&token).is_none() {
        return Err(AppError::from(invoicer_core::accounts::TokenError::Unknown).respond());
    }
    let ceiling = state
        .throttle
        .login(&token, super::client_address(&state))?;
    // An unknown, used or expired link costs this client's allowances, never the shared ceiling.
    invoicer_core::accounts::invitations::preview(&state.pool, &token)
        .await
        .map_err(|e| AppError::from(e).respond())?;
    ceiling.spend()?;
    let accepted = invoicer_core::accounts::invitations::accept(&state.pool, &token, &password)
        .await
        .map_err(|e| AppError::from(e).respond())?;
    let user =
        invoicer_core::accounts::auth::for_login(&state.pool, accepted.user, Some(accepted.org))
            .await?
            .ok_or_else(|| AppError::internal("accept invitation", "joined user not found"))?;
    let mut session = super::current_session().await?;
    invoicer_core::accounts::auth::log_in(&state.pool, &mut session, &user, &login_meta(&state))
        .await?;
    leptos_axum::redirect(super::auth::HOME);
    Ok(())
}

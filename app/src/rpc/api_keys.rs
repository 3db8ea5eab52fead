//! Server functions of API keys: the keys page, creating and revoking one, and revoking all of an
//! account's own.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use uuid::Uuid;

use model::error::AppError;

#[cfg(feature = "ssr")]
use super::{actor, form::SettingsForm, state};
#[cfg(feature = "ssr")]
use invoicer_core::surfaces::forms::Form;
#[cfg(feature = "ssr")]
use model::{Action, Role};

#[server(prefix = "/rpc", endpoint = "list_api_keys")]
pub async fn list_api_keys() -> Result<model::ApiKeysView, AppError> {
    let user = super::require(Action::Read).await?;
    let state = state()?;
    Ok(model::ApiKeysView {
        keys: invoicer_core::accounts::api_keys::list(&state.pool, user.org_id).await?,
        form_key: model::form_key(user.org_id),
    })
}

/// Creates an API key for the session's org with a role no higher than the creator's and an
/// optional expiry (`expires_in_days`, empty for none), once per rendered form. The submit that
/// made it gets the key, the only time it is shown; a repeat names the same key without it.
#[server(prefix = "/rpc", endpoint = "create_api_key")]
pub async fn create_api_key(
    idempotency_key: Option<String>,
    name: String,
    role: Option<String>,
    expires_in_days: Option<String>,
    password: Option<String>,
) -> Result<model::CreatedApiKey, AppError> {
    use invoicer_core::accounts::api_keys::{prefix_of, save, KeyForm, NewApiKey};
    // A key acts as its maker (the org's money included, through the API): a session that proved
    // the password lately makes one.
    super::form::recently_authenticated(
        Action::ManageOwnApiKeys,
        &idempotency_key,
        password.as_deref(),
        "making an API key",
    )
    .await?;

    let asked = KeyForm::new(&name, role.as_deref(), expires_in_days.as_deref());
    let key = NewApiKey::generate();
    let saved = SettingsForm {
        form: Form::CreateApiKey,
        action: Action::ManageOwnApiKeys,
        back: "/settings/api-keys",
        idempotency_key,
        content: &asked.content(),
        check: asked.check(),
    }
    .saved(async |tx, user| {
        let request = asked.request(user.role);
        save(tx, user.org_id, &actor(user), &request, &key)
            .await
            .map_err(|e| refused(e, user.role, request.role))?;
        Ok(key.id)
    })
    .await?;
    if saved.id == key.id {
        return Ok(model::CreatedApiKey {
            id: key.id,
            prefix: key.prefix().to_owned(),
            plaintext: Some(key.plaintext),
        });
    }
    let prefix = prefix_of(&state()?.pool, saved.org, saved.id)
        .await?
        .ok_or_else(|| AppError::NotFound.respond())?;
    Ok(model::CreatedApiKey {
        id: saved.id,
        prefix,
        plaintext: None,
    })
}

/// Why a key was not made, as the form answers it: `own` is the creator's role, `asked` the key's.
#[cfg(feature = "ssr")]
fn refused(e: invoicer_core::accounts::api_keys::CreateError, own: Role, asked: Role) -> AppError {
    use invoicer_core::accounts::api_keys::CreateError;
    match e {
        CreateError::RoleTooHigh => AppError::Forbidden(format!(
            "Your role ({}) cannot make a key with the role {}.",
            own.as_str(),
            asked.as_str()
        )),
        CreateError::Expired => AppError::field("expires_in_days", "The expiry is in the past."),
        CreateError::Db(e) => e.into(),
    }
}

/// Revokes an API key: an owner any of the org's, a member their own.
#[server(prefix = "/rpc", endpoint = "revoke_api_key")]
pub async fn revoke_api_key(id: String) -> Result<(), AppError> {
    let user = super::require(Action::Read).await?;
    if !user.role.may(Action::ManageOwnApiKeys) {
        user.clone()
            .allowed(Action::ManageOwnApiKeys)
            .map_err(Respond::respond)?;
    }
    let state = state()?;
    let id = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    let actor = actor(&user);
    let any = user.role.may(Action::ManageAllApiKeys);
    if !invoicer_core::accounts::api_keys::revoke(&state.pool, user.org_id, &actor, any, id).await?
    {
        return Err(AppError::NotFound.respond());
    }
    Ok(())
}

/// Revokes every live API key the account made, in all of its orgs, once per rendered button.
#[server(prefix = "/rpc", endpoint = "revoke_own_api_keys")]
pub async fn revoke_own_api_keys(idempotency_key: Option<String>) -> Result<(), AppError> {
    SettingsForm {
        form: Form::RevokeOwnApiKeys,
        action: Action::Read,
        back: "/settings/account?keys=1",
        idempotency_key,
        content: &"revoke_own_api_keys",
        check: Ok(()),
    }
    .run(async |tx, user| {
        invoicer_core::accounts::api_keys::revoke_all_own(tx, &actor(user)).await?;
        Ok(user.id)
    })
    .await
}

//! Server functions of API keys: the keys page, creating and revoking one, and revoking all of an
//! account's own.

use leptos::prelude::*;
#[cfg(feature = "ssr")]
use uuid::Uuid;

use crate::error::AppError;

#[cfg(feature = "ssr")]
use super::{
    actor,
    form::{settings_form, settings_form_saved},
    state,
};

#[server(prefix = "/rpc", endpoint = "list_api_keys")]
pub async fn list_api_keys() -> Result<crate::model::ApiKeysView, AppError> {
    let user = crate::ssr::auth::require(crate::model::Action::Read).await?;
    let state = state()?;
    Ok(crate::model::ApiKeysView {
        keys: crate::ssr::api_keys::list(&state.pool, user.org_id).await?,
        form_key: crate::model::form_key(user.org_id),
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
) -> Result<crate::model::CreatedApiKey, AppError> {
    use crate::model::{Action, Role};
    use crate::ssr::api_keys::{insert, prefix_of, CreateError, KeyRequest, NewApiKey};

    let role_asked = role.as_deref().map(str::trim).filter(|r| !r.is_empty());
    let role = role_asked.map(|r| Role::parse(r).ok_or(r));
    let days = expires_in_days
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty());
    let days = days.map(|d| d.parse::<i64>().ok().filter(|d| (1..=3650).contains(d)));
    let check = || {
        let mut fields = crate::error::FieldErrors::new();
        if let Some(Err(_)) = role {
            fields.insert("role".into(), "Choose owner, member or viewer.".into());
        }
        if let Some(None) = days {
            fields.insert(
                "expires_in_days".into(),
                "Enter a number of days from 1 to 3650, or leave it empty.".into(),
            );
        }
        if fields.is_empty() {
            Ok(())
        } else {
            Err(fields)
        }
    };
    let content = (&name, role_asked, &expires_in_days);
    let key = NewApiKey::generate();
    let saved = settings_form_saved(
        crate::ssr::claim::Form::CreateApiKey,
        Action::ManageOwnApiKeys,
        "/settings/api-keys",
        idempotency_key.clone(),
        &content,
        check,
        |user| {
            let org = user.org_id;
            let actor = crate::ssr::audit::Actor::user(user.id, &user.email);
            let request = KeyRequest {
                name: &name,
                role: match role {
                    Some(Ok(role)) => role,
                    _ => Role::Member.min(user.role),
                },
                expires_at: days
                    .flatten()
                    .map(|d| chrono::Utc::now() + chrono::Duration::days(d)),
            };
            let (key, own_role) = (&key, user.role);
            move || {
                let (actor, request) = (actor.clone(), request.clone());
                async move |tx: &mut sqlx::PgConnection| match insert(
                    tx, org, &actor, &request, key,
                )
                .await
                {
                    Ok(()) => Ok(key.id),
                    Err(CreateError::RoleTooHigh) => Err(AppError::Forbidden(format!(
                        "Your role ({}) cannot make a key with the role {}.",
                        own_role.as_str(),
                        request.role.as_str()
                    ))),
                    Err(CreateError::Expired) => Err(AppError::field(
                        "expires_in_days",
                        "The expiry is in the past.",
                    )),
                    Err(CreateError::Db(e)) => Err(e.into()),
                }
            }
        },
    )
    .await?;
    if saved.id == key.id {
        return Ok(crate::model::CreatedApiKey {
            id: key.id,
            prefix: key.prefix().to_owned(),
            plaintext: Some(key.plaintext),
        });
    }
    let state = state()?;
    let prefix = prefix_of(&state.pool, saved.org, saved.id)
        .await?
        .ok_or_else(|| AppError::NotFound.respond())?;
    Ok(crate::model::CreatedApiKey {
        id: saved.id,
        prefix,
        plaintext: None,
    })
}

/// Revokes an API key: an owner any of the org's, a member their own.
#[server(prefix = "/rpc", endpoint = "revoke_api_key")]
pub async fn revoke_api_key(id: String) -> Result<(), AppError> {
    use crate::model::Action;
    let user = crate::ssr::auth::require(Action::Read).await?;
    if !user.role.may(Action::ManageOwnApiKeys) {
        user.clone().allowed(Action::ManageOwnApiKeys)?;
    }
    let state = state()?;
    let id = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    let actor = crate::ssr::audit::Actor::user(user.id, &user.email);
    let any = user.role.may(Action::ManageAllApiKeys);
    if !crate::ssr::api_keys::revoke(&state.pool, user.org_id, &actor, any, id).await? {
        return Err(AppError::NotFound.respond());
    }
    Ok(())
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

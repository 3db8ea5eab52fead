//! Server functions of webhooks out: the endpoints page and one endpoint's page (read by every
//! member; the secret shown to owners), registering, deleting, rotating a secret and redelivering
//! an event, each once per rendered form and an owner's.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use model::error::{AppError, FormError};
use model::webhooks::{WebhookEndpoint, WebhookEndpointPage};

#[cfg(feature = "ssr")]
use super::{form::SettingsForm, state};
#[cfg(feature = "ssr")]
use invoicer_core::surfaces::forms::Form;
#[cfg(feature = "ssr")]
use model::Action;

/// The endpoints page: the org's endpoints, a key for the registration form, and whether the
/// session may manage them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhooksView {
    pub endpoints: Vec<WebhookEndpoint>,
    pub form_key: Uuid,
    pub may_manage: bool,
}

#[server(prefix = "/rpc", endpoint = "webhooks_page")]
pub async fn webhooks_page() -> Result<WebhooksView, AppError> {
    let user = super::require(Action::Read).await?;
    let state = state()?;
    Ok(WebhooksView {
        endpoints: invoicer_core::webhooks_out::list(&state.reads, user.org_id).await?,
        form_key: model::form_key(user.org_id),
        may_manage: user.role.may(Action::ManageOrg),
    })
}

/// One endpoint with its last 50 attempts; its secret only for a session that may manage it.
#[server(prefix = "/rpc", endpoint = "get_webhook_endpoint")]
pub async fn get_webhook_endpoint(id: String) -> Result<WebhookEndpointPage, AppError> {
    let user = super::require(Action::Read).await?;
    let id = super::form::parse_id(&id)?;
    invoicer_core::pages::webhook_endpoint(&state()?, &user, id)
        .await
        .map_err(AppError::respond)
}

/// Registers an endpoint (`events[]`: the event types ticked), once per rendered form.
#[server(prefix = "/rpc", endpoint = "create_webhook_endpoint")]
pub async fn create_webhook_endpoint(
    idempotency_key: Option<String>,
    url: String,
    events: Option<Vec<String>>,
    description: Option<String>,
    password: Option<String>,
) -> Result<(), FormError<model::webhooks::WebhookEndpointInput>> {
    use invoicer_core::webhooks_out::{self, guard, CreateError};
    use model::webhooks::WebhookEndpointInput;

    // The role first: nobody else gets the URL looked up. An endpoint receives the org's data as
    // it changes: a session that proved the password lately registers one.
    let input = WebhookEndpointInput {
        url: url.trim().to_owned(),
        events: events.unwrap_or_default(),
        description: description.unwrap_or_default().trim().to_owned(),
    };
    super::form::recently_authenticated(
        Action::ManageOrg,
        &idempotency_key,
        password.as_deref(),
        "registering a webhook endpoint",
    )
    .await
    .map_err(|e| FormError::refilling(e, &input))?;
    let mut check = input.check();
    if check.is_ok() {
        if let Err(why) = guard::check_reachable(&input.url, state()?.settings.webhooks).await {
            check = Err([("url".to_owned(), why)].into());
        }
    }
    let endpoint = Uuid::now_v7();
    SettingsForm {
        form: Form::CreateWebhookEndpoint,
        action: Action::ManageOrg,
        back: "/settings/webhooks",
        idempotency_key,
        content: &input,
        check,
    }
    .run_refilling(async |tx, user| {
        let source = format!("form:{endpoint}");
        let by = webhooks_out::RegisteredBy::User(user.id);
        match webhooks_out::create(tx, endpoint, user.org_id, &source, &input, by).await {
            Ok(_) => Ok(endpoint),
            Err(CreateError::TooMany) => Err(AppError::field(
                "url",
                "An org has at most 20 endpoints: delete one first.",
            )),
            Err(CreateError::Db(e)) => Err(e.into()),
        }
    })
    .await
}

/// Deletes an endpoint (what is still due to it is given up), once per rendered form.
#[server(prefix = "/rpc", endpoint = "delete_webhook_endpoint")]
pub async fn delete_webhook_endpoint(
    idempotency_key: Option<String>,
    id: String,
) -> Result<(), AppError> {
    let endpoint = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    SettingsForm {
        form: Form::DeleteWebhookEndpoint,
        action: Action::ManageOrg,
        back: "/settings/webhooks",
        idempotency_key,
        content: &endpoint,
        check: Ok(()),
    }
    .run(async |tx, user| {
        if !invoicer_core::webhooks_out::delete(tx, user.org_id, endpoint).await? {
            return Err(AppError::NotFound);
        }
        Ok(endpoint)
    })
    .await
}

/// A new signing secret (the old one signs beside it for 24 hours), once per rendered form.
#[server(prefix = "/rpc", endpoint = "rotate_webhook_secret")]
pub async fn rotate_webhook_secret(
    idempotency_key: Option<String>,
    id: String,
) -> Result<(), AppError> {
    let endpoint = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    let back = format!("/settings/webhooks/{endpoint}");
    SettingsForm {
        form: Form::RotateWebhookSecret,
        action: Action::ManageOrg,
        back: &back,
        idempotency_key,
        content: &endpoint,
        check: Ok(()),
    }
    .run(async |tx, user| {
        match invoicer_core::webhooks_out::rotate(tx, user.org_id, endpoint).await? {
            Some(_) => Ok(endpoint),
            None => Err(AppError::NotFound),
        }
    })
    .await
}

/// Enables a disabled endpoint again (after three days of failures, or a reset of its registrant's
/// password), once per rendered form: the events from now on are delivered to it.
#[server(prefix = "/rpc", endpoint = "enable_webhook_endpoint")]
pub async fn enable_webhook_endpoint(
    idempotency_key: Option<String>,
    id: String,
) -> Result<(), AppError> {
    let endpoint = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    let back = format!("/settings/webhooks/{endpoint}");
    SettingsForm {
        form: Form::EnableWebhookEndpoint,
        action: Action::ManageOrg,
        back: &back,
        idempotency_key,
        content: &endpoint,
        check: Ok(()),
    }
    .run(async |tx, user| {
        let actor = super::actor(user);
        if !invoicer_core::webhooks_out::enable(tx, user.org_id, &actor, endpoint).await? {
            return Err(AppError::NotFound);
        }
        Ok(endpoint)
    })
    .await
}

/// Delivers an event to the endpoint again (same `webhook-id`), once per rendered button.
#[server(prefix = "/rpc", endpoint = "redeliver_webhook")]
pub async fn redeliver_webhook(
    idempotency_key: Option<String>,
    endpoint_id: String,
    event_id: String,
) -> Result<(), AppError> {
    let parse = |v: &str| Uuid::try_parse(v).map_err(|_| AppError::NotFound.respond());
    let (endpoint, event) = (parse(&endpoint_id)?, parse(&event_id)?);
    let back = format!("/settings/webhooks/{endpoint}");
    SettingsForm {
        form: Form::RedeliverWebhook,
        action: Action::ManageOrg,
        back: &back,
        idempotency_key,
        content: &(endpoint, event),
        check: Ok(()),
    }
    .run(async |tx, user| {
        if !invoicer_core::webhooks_out::redeliver(tx, user.org_id, endpoint, event).await? {
            return Err(AppError::NotFound);
        }
        Ok(event)
    })
    .await
}

//! Server functions of the customer pages: the list (and its search), one customer, its form, and
//! its statement.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;
use uuid::Uuid;

use model::error::AppError;

#[cfg(feature = "ssr")]
use super::{
    form::{for_this_org, form_attempt, open_form, parse_button_key},
    request_id, state,
};

/// The session org's customers, newest first, or those whose name or email starts with `q`.
#[server(prefix = "/rpc", endpoint = "list_customers")]
pub async fn list_customers(q: Option<String>) -> Result<Vec<model::Customer>, AppError> {
    let user = super::require(model::Action::Read).await?;
    let state = state()?;
    if q.as_ref()
        .is_some_and(|q| q.chars().count() > 200 || q.contains('\0'))
    {
        return Err(AppError::BadRequest("Search for at most 200 characters.".into()).respond());
    }
    Ok(invoicer_core::customers::list(&state.pool, user.org_id, q.as_deref(), 100).await?)
}

/// A customer's page: the customer and the key this rendering's save is named by.
#[server(prefix = "/rpc", endpoint = "get_customer")]
pub async fn get_customer(id: String) -> Result<model::CustomerPage, AppError> {
    let user = super::require(model::Action::Read).await?;
    let id = super::form::parse_id(&id)?;
    invoicer_core::pages::customer(&state()?, &user, id.into())
        .await
        .map_err(AppError::respond)
}

/// A button on a customer's page (`new_link`: a new statement link, the old one stops at once;
/// `archive`; `unarchive`): applied once per rendered button (`idempotency_key`); a repeat or a
/// lost race shows the customer as it is now, a change that cannot apply says why.
#[server(prefix = "/rpc", endpoint = "customer_action")]
pub async fn customer_action(
    customer_id: String,
    action: String,
    idempotency_key: String,
) -> Result<(), AppError> {
    use invoicer_core::customers::{CustomerChange, CustomerMoved};
    use invoicer_core::observe::{Attempt, Surface};
    use invoicer_core::surfaces::track;

    let state = state()?;
    let attempt = Attempt::new(Surface::Form, idempotency_key.clone(), request_id());
    let customer = Uuid::try_parse(&customer_id).map_err(|_| AppError::NotFound.respond())?;
    let action = CustomerChange::parse(&action)
        .ok_or_else(|| AppError::BadRequest("Unknown action.".into()).respond())?;
    let moved = track(&state.pool, attempt, async |attempt| {
        let user = super::require(model::Action::EditInvoices).await?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let key = for_this_org(parse_button_key(&idempotency_key)?, &user)?;
        invoicer_core::surfaces::customer_forms::customer_action(
            &state.pool,
            &attempt,
            user.org_id,
            &super::actor(&user),
            key,
            model::CustomerId::from(customer),
            action,
        )
        .await
    })
    .await
    .map_err(AppError::respond)?;
    match moved {
        CustomerMoved::Archived => {
            return Err(AppError::BadRequest(
                "An archived customer has no statement link: unarchive them first.".into(),
            )
            .respond())
        }
        CustomerMoved::NotFound => return Err(AppError::NotFound.respond()),
        CustomerMoved::Now(_) | CustomerMoved::Already => {}
    }
    leptos_axum::redirect(&format!("/customers/{customer}"));
    Ok(())
}

/// "Send a payment method link": the customer is emailed a page where they save a card or a SEPA
/// Direct Debit mandate, once per rendered button (`idempotency_key` names both the page at the
/// provider and the email).
#[server(prefix = "/rpc", endpoint = "send_payment_method_link")]
pub async fn send_payment_method_link(
    customer_id: String,
    idempotency_key: String,
) -> Result<(), AppError> {
    use invoicer_core::mail::gate::{Allowance, Gate, Sender};
    use invoicer_core::observe::{Attempt, Surface};
    use invoicer_core::payments::saved::SetupUrls;
    use invoicer_core::surfaces::track;

    let state = state()?;
    let attempt = Attempt::new(Surface::Form, idempotency_key.clone(), request_id());
    let customer = Uuid::try_parse(&customer_id).map_err(|_| AppError::NotFound.respond())?;
    let base = &state.settings.public_url;
    let urls = SetupUrls {
        success: format!("{base}/saved?saved=1"),
        cancel: format!("{base}/saved"),
    };
    track(&state.pool, attempt, async |attempt| {
        let user = super::require(model::Action::SendEmail).await?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let key = for_this_org(parse_button_key(&idempotency_key)?, &user)?;
        let gate = Gate::new(
            Allowance::of(&state.settings.limits),
            Sender::Member {
                verified: user.email_verified,
            },
        );
        let link = invoicer_core::surfaces::customer_forms::MethodLink {
            customer: model::CustomerId::from(customer),
            provider: &state.stripe,
            urls: &urls,
            gate,
        };
        invoicer_core::surfaces::customer_forms::send_method_link(
            &state.pool,
            &attempt,
            user.org_id,
            key,
            link,
        )
        .await
    })
    .await
    .map_err(AppError::respond)?;
    leptos_axum::redirect(&format!("/customers/{customer}?link=sent"));
    Ok(())
}

/// A customer's statement over `from`..=`to` (`YYYY-MM-DD`; left out: the year up to today), with
/// the link to the customer's page of it.
#[server(prefix = "/rpc", endpoint = "get_statement")]
pub async fn get_statement(
    id: String,
    from: Option<String>,
    to: Option<String>,
) -> Result<model::statement::StatementPage, AppError> {
    use invoicer_core::customers::statements::{self, Period};
    let user = super::require(model::Action::Read).await?;
    let state = state()?;
    let id = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    let mut conn = state.reads.acquire().await?;
    let today = statements::org_today(&mut conn, user.org_id).await?;
    let period = Period::parse(from.as_deref(), to.as_deref(), today)
        .map_err(|e| AppError::BadRequest(e).respond())?;
    let (statement, token) =
        statements::statement(&mut conn, user.org_id, model::CustomerId::from(id), period)
            .await?
            .ok_or_else(|| AppError::NotFound.respond())?;
    Ok(model::statement::StatementPage {
        customer_id: id,
        statement,
        public_url: token.map(|t| statements::public_url(&state.settings.public_url, &t, period)),
    })
}

/// Creates a customer (new) or saves one (`customer_id` given), once per rendered form.
#[server(prefix = "/rpc", endpoint = "save_customer")]
pub async fn save_customer(
    idempotency_key: Option<String>,
    customer_id: Option<String>,
    input: model::CustomerInput,
) -> Result<Uuid, AppError> {
    use invoicer_core::surfaces::customer_forms::{customer_from_form, update_customer};
    use invoicer_core::surfaces::form::Saved;
    use invoicer_core::surfaces::track;

    let state = state()?;
    let attempt = form_attempt(&idempotency_key);
    let existing = match customer_id.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(id) => Some(Uuid::try_parse(id).map_err(|_| AppError::NotFound.respond())?),
    };
    let saved = track(&state.pool, attempt, async |attempt| {
        let (user, form_key) = open_form(
            &attempt,
            model::Action::EditInvoices,
            &idempotency_key,
            input.check(),
        )
        .await?;
        let pool = &state.pool;
        match existing {
            None => customer_from_form(pool, &attempt, user.org_id, form_key, &input).await,
            Some(id) => {
                update_customer(
                    pool,
                    &attempt,
                    user.org_id,
                    form_key,
                    model::CustomerId::from(id),
                    &input,
                )
                .await
            }
        }
    })
    .await
    .map_err(AppError::respond)?;
    match saved {
        Saved::Created(id) | Saved::Replayed(id) => {
            leptos_axum::redirect(&format!("/customers/{id}"));
            Ok(id)
        }
        Saved::KeyReused => Err(AppError::BadRequest(
            "This form already saved other details. Open the customer again to change more.".into(),
        )
        .respond()),
    }
}

//! What the form server functions share: the keys a form or button was rendered with, and the
//! once-per-rendered-form run of a settings form.

use uuid::Uuid;

use crate::error::AppError;

use super::{request_id, state};

/// An id from a form or link, or NotFound.
pub(super) fn parse_id(id: &str) -> Result<Uuid, AppError> {
    Uuid::try_parse(id.trim()).map_err(|_| AppError::NotFound.respond())
}

/// The key a form was rendered with, or the field error that tells the user to reload.
pub(super) fn parse_form_key(key: Option<&str>) -> Result<Uuid, crate::error::FieldErrors> {
    key.and_then(|k| Uuid::try_parse(k.trim()).ok())
        .ok_or_else(|| {
            crate::error::FieldErrors::from([(
                "idempotency_key".to_owned(),
                "This form has no valid submission key. Reload the page and try again.".to_owned(),
            )])
        })
}

pub(super) fn parse_button_key(key: &str) -> Result<Uuid, AppError> {
    Uuid::try_parse(key)
        .map_err(|_| AppError::BadRequest("This button has no valid key. Reload the page.".into()))
}

/// A form's key, if the form was rendered for the org the session acts for now (see
/// [`crate::model::form_key`]); else the submit is refused before anything is claimed or written.
pub(super) fn for_this_org(
    key: Uuid,
    user: &crate::ssr::auth::SessionUser,
) -> Result<Uuid, AppError> {
    if crate::model::form_key_fits(key, user.org_id) {
        return Ok(key);
    }
    Err(AppError::BadRequest(format!(
        "This page was opened for another organisation; you act for {} now. Nothing was saved: \
         reload the page and try again.",
        user.org_name
    ))
    .respond())
}

/// Runs one settings form of the session org at most once per rendered form (`form_key`), if the
/// session's role allows `action`; a plain form post is sent back to `back`.
pub(super) async fn settings_form<F, W>(
    form: crate::ssr::claim::Form,
    action: crate::model::Action,
    back: &str,
    idempotency_key: Option<String>,
    content: &(impl serde::Serialize + Sync),
    check: impl FnOnce() -> Result<(), crate::error::FieldErrors>,
    save: impl Fn(&crate::ssr::auth::SessionUser) -> F,
) -> Result<(), AppError>
where
    F: FnMut() -> W,
    W: AsyncFnOnce(&mut sqlx::PgConnection) -> Result<Uuid, AppError>,
{
    settings_form_saved(form, action, back, idempotency_key, content, check, save).await?;
    Ok(())
}

/// What a settings form saved: by this submit or by the earlier one it repeats.
pub(super) struct SavedForm {
    pub org: Uuid,
    pub id: Uuid,
}

/// [`settings_form`], naming what the form saved.
pub(super) async fn settings_form_saved<F, W>(
    form: crate::ssr::claim::Form,
    action: crate::model::Action,
    back: &str,
    idempotency_key: Option<String>,
    content: &(impl serde::Serialize + Sync),
    check: impl FnOnce() -> Result<(), crate::error::FieldErrors>,
    save: impl Fn(&crate::ssr::auth::SessionUser) -> F,
) -> Result<SavedForm, AppError>
where
    F: FnMut() -> W,
    W: AsyncFnOnce(&mut sqlx::PgConnection) -> Result<Uuid, AppError>,
{
    use crate::ssr::observe::{track, Attempt, Surface};
    use crate::ssr::surfaces::form::{setting_once, Saved};

    let state = state()?;
    let key = idempotency_key.clone().unwrap_or_default();
    let attempt = Attempt::new(Surface::Form, key, request_id());
    let seen = attempt.clone();
    let saved = track(&state.pool, attempt, async |attempt| {
        let invalid = |fields| {
            AppError::Invalid(Box::new(crate::error::Rejected {
                idempotency_key: idempotency_key.clone(),
                fields,
                values: None,
            }))
        };
        let user = crate::ssr::auth::require(action).await?;
        let form_key = parse_form_key(idempotency_key.as_deref()).map_err(invalid)?;
        let form_key = for_this_org(form_key, &user)?;
        check().map_err(invalid)?;
        attempt.identify(user.org_id.to_string(), Some(user.org_id));
        let pool = &state.pool;
        setting_once(
            pool,
            &attempt,
            user.org_id,
            form,
            form_key,
            content,
            save(&user),
        )
        .await
    })
    .await
    .map_err(AppError::respond)?;
    match saved {
        Saved::Created(id) | Saved::Replayed(id) => {
            // Without JavaScript the browser is sent back to the page; with it, the page's actions
            // reload what changed in place (a redirect would remount the page mid-submit).
            if crate::error::plain_form_post() {
                leptos_axum::redirect(back);
            }
            let org = seen
                .org()
                .expect("a saved form was identified with its org");
            Ok(SavedForm { org, id })
        }
        Saved::KeyReused => Err(AppError::BadRequest(
            "This form was already used with other values. Reload the page and try again.".into(),
        )
        .respond()),
    }
}

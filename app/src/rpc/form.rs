//! What the form server functions share: the keys a form or button was rendered with, and the
//! once-per-rendered-form run of a settings form ([`SettingsForm`]).

#[cfg(feature = "ssr")]
use super::Respond;
use sqlx::PgConnection;
use uuid::Uuid;

use invoicer_core::accounts::auth::SessionUser;
use invoicer_core::surfaces::forms::Form;
use model::error::{AppError, FieldErrors, FormError};
use model::Action;

use super::{request_id, state};

/// An id from a form or link, or NotFound.
pub(super) fn parse_id(id: &str) -> Result<Uuid, AppError> {
    Uuid::try_parse(id.trim()).map_err(|_| AppError::NotFound.respond())
}

/// The key a form was rendered with, or the field error that tells the user to reload.
pub(super) fn parse_form_key(key: Option<&str>) -> Result<Uuid, FieldErrors> {
    key.and_then(|k| Uuid::try_parse(k.trim()).ok())
        .ok_or_else(|| {
            FieldErrors::from([(
                "idempotency_key".to_owned(),
                "This form has no valid submission key. Reload the page and try again.".to_owned(),
            )])
        })
}

/// The key an account form (password, address, verification) was rendered with, or a refusal that
/// tells the user to reload.
pub(super) fn parse_account_key(key: Option<&str>) -> Result<Uuid, AppError> {
    key.and_then(|k| Uuid::try_parse(k.trim()).ok())
        .ok_or_else(|| {
            AppError::BadRequest("This form has expired. Reload the page and try again.".into())
                .respond()
        })
}

/// The key a button was rendered with, or a refusal that tells the user to reload.
pub(super) fn parse_button_key(key: &str) -> Result<Uuid, AppError> {
    Uuid::try_parse(key)
        .map_err(|_| AppError::BadRequest("This button has no valid key. Reload the page.".into()))
}

/// A form's key, if the form was rendered for the org the session acts for now (see
/// [`model::form_key`]); else the submit is refused before anything is claimed or written.
pub(super) fn for_this_org(
    key: Uuid,
    user: &invoicer_core::accounts::auth::SessionUser,
) -> Result<Uuid, AppError> {
    if model::form_key_fits(key, user.org_id) {
        return Ok(key);
    }
    Err(AppError::BadRequest(format!(
        "This page was opened for another organisation; you act for {} now. Nothing was saved: \
         reload the page and try again.",
        user.org_name
    ))
    .respond())
}

/// The attempt a keyed form's submit is, named by the key it was rendered with (empty: none sent).
pub(super) fn form_attempt(idempotency_key: &Option<String>) -> invoicer_core::observe::Attempt {
    invoicer_core::observe::Attempt::new(
        invoicer_core::observe::Surface::Form,
        idempotency_key.clone().unwrap_or_default(),
        request_id(),
    )
}

/// The first steps of a keyed form's attempt: the session's role must allow `action`, the key must
/// be one rendered for the org it acts for now, and `check` (the content's field errors) is
/// answered only then; the attempt is named by the org. Returns the user and the form's key.
pub(super) async fn open_form(
    attempt: &invoicer_core::observe::Attempt,
    action: Action,
    idempotency_key: &Option<String>,
    check: Result<(), FieldErrors>,
) -> Result<(SessionUser, Uuid), AppError> {
    let invalid = |fields| AppError::rejected(idempotency_key.clone(), fields);
    let user = super::require(action).await?;
    let form_key = parse_form_key(idempotency_key.as_deref()).map_err(invalid)?;
    let form_key = for_this_org(form_key, &user)?;
    check.map_err(invalid)?;
    attempt.identify(user.org_id.to_string(), Some(user.org_id));
    Ok((user, form_key))
}

/// A change that hands out the org's power or money (where it is paid, who it is on its e-invoices,
/// an API key, a webhook endpoint and its secret): the session must have proved the password in
/// the last 10 minutes, or prove it now with `password`. Asked before anything is claimed, so a
/// refused form keeps its key. `what` names the change in the refusal ("making an API key").
pub(super) async fn recently_authenticated(
    action: Action,
    idempotency_key: &Option<String>,
    password: Option<&str>,
    what: &str,
) -> Result<(), AppError> {
    use invoicer_core::accounts::{reauthenticate, Reauth, RECENT_AUTH_MINUTES};
    let user = super::require(action).await?;
    let state = state()?;
    // A signed-in user: their own allowances hold, not the ceilings everyone shares.
    state
        .throttle
        .login(&user.email, super::client_address(&state))?
        .waive();
    let why = match reauthenticate(&state.pool, user.id, user.session_id, password).await? {
        Reauth::Fresh => return Ok(()),
        Reauth::Needed => format!(
            "Enter your password: {what} asks for it when you signed in more than \
             {RECENT_AUTH_MINUTES} minutes ago."
        ),
        Reauth::Wrong => "That is not your password.".to_owned(),
    };
    Err(AppError::rejected(
        idempotency_key.clone(),
        [("password".to_owned(), why)].into(),
    )
    .respond())
}

/// One settings form of the session's org, run at most once per rendered form: the session's role
/// must allow `action` and the form's key must be one rendered for the org it acts for now; then
/// `check` is answered, and the save runs in the claim's transaction. A plain form post is sent
/// back to `back`.
pub(super) struct SettingsForm<'a, C> {
    /// The claim's namespace: a key is claimed once per form.
    pub form: Form,
    /// What the session's role must allow.
    pub action: Action,
    /// Where a plain form post goes once saved.
    pub back: &'a str,
    /// The key the form was rendered with.
    pub idempotency_key: Option<String>,
    /// What was submitted: a repeat of the key with other content is refused.
    pub content: &'a C,
    /// The submitted values' field errors, answered only to a session with the right.
    pub check: Result<(), FieldErrors>,
}

/// What a settings form saved: by this submit or by the earlier one it repeats.
pub(super) struct SavedForm {
    pub org: model::OrgId,
    pub id: Uuid,
}

impl<C: serde::Serialize + Sync> SettingsForm<'_, C> {
    /// Runs the form: `save` does its work on the claim's transaction, as the session's user, and
    /// names what it saved. A copy of it runs again if Postgres aborts the transaction (deadlock or
    /// serialization failure).
    pub async fn run(
        self,
        save: impl AsyncFnOnce(&mut PgConnection, &SessionUser) -> Result<Uuid, AppError> + Clone,
    ) -> Result<(), AppError> {
        self.saved(save).await.map(|_| ())
    }

    /// [`Self::run`], and a refusal carries what was submitted back to the form (a page sent back
    /// without JavaScript refills it).
    pub async fn run_refilling(
        self,
        save: impl AsyncFnOnce(&mut PgConnection, &SessionUser) -> Result<Uuid, AppError> + Clone,
    ) -> Result<(), FormError<C>>
    where
        C: Clone,
    {
        let content = self.content;
        self.run(save)
            .await
            .map_err(|e| FormError::refilling(e, content))
    }

    /// [`Self::run`], naming what the form saved.
    pub async fn saved(
        self,
        save: impl AsyncFnOnce(&mut PgConnection, &SessionUser) -> Result<Uuid, AppError> + Clone,
    ) -> Result<SavedForm, AppError> {
        use invoicer_core::observe::{Attempt, Surface};
        use invoicer_core::surfaces::form::{setting_once, Saved};
        use invoicer_core::surfaces::track;

        let SettingsForm {
            form,
            action,
            back,
            idempotency_key,
            content,
            check,
        } = self;
        let state = state()?;
        let key = idempotency_key.clone().unwrap_or_default();
        let attempt = Attempt::new(Surface::Form, key, request_id());
        let seen = attempt.clone();
        let saved = track(&state.pool, attempt, async |attempt| {
            let (user, form_key) = open_form(&attempt, action, &idempotency_key, check).await?;
            let user = &user;
            setting_once(
                &state.pool,
                &attempt,
                user.org_id,
                form,
                form_key,
                content,
                || {
                    let save = save.clone();
                    async move |tx: &mut PgConnection| save(tx, user).await
                },
            )
            .await
        })
        .await
        .map_err(|e| e.keeping(idempotency_key.clone()).respond())?;
        match saved {
            Saved::Created(id) | Saved::Replayed(id) => {
                // Without JavaScript the browser is sent back to the page; with it, the page's
                // actions reload what changed in place (a redirect would remount the page
                // mid-submit).
                if super::plain_form_post() {
                    leptos_axum::redirect(back);
                }
                let org = seen
                    .org()
                    .expect("a saved form was identified with its org");
                Ok(SavedForm { org, id })
            }
            Saved::KeyReused => Err(AppError::BadRequest(
                "This form was already used with other values. Reload the page and try again."
                    .into(),
            )
            .respond()),
        }
    }
}

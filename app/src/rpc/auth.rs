//! Server functions of signing up, logging in and out, and resetting a forgotten password, with
//! where to send the browser after logging in.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;

use model::error::AppError;
use model::Viewer;

#[cfg(feature = "ssr")]
use super::{client_address, form::parse_account_key, login_meta, state};

/// What `/signup` and a refused sign-up say on a deployment with SIGNUPS=closed.
pub const SIGNUPS_CLOSED: &str = "Sign-ups are closed here: organisations are created by the \
     operator, and people join one by invitation. Ask an owner of your organisation to invite you.";

/// Whether this deployment takes sign-ups (SIGNUPS=open).
#[server(prefix = "/rpc", endpoint = "signups_open")]
pub async fn signups_open() -> Result<bool, AppError> {
    Ok(state()?.settings.signups_open)
}

/// The page after logging in (or resetting a password, accepting an invitation, switching org).
pub const HOME: &str = "/dashboard";

/// Where to go after logging in: `next` only when it is a path on this site, else [`HOME`].
/// A path has one leading `/`, no `//`, and only visible ASCII other than a backslash: browsers drop
/// tabs and newlines from URLs and read a backslash as `/`, so `/<tab>/evil.example` would leave the
/// site, and a control character cannot go in a `Location` header at all.
pub fn safe_next(next: Option<&str>) -> String {
    const FALLBACK: &str = HOME;
    let Some(next) = next else {
        return FALLBACK.to_owned();
    };
    let local = next.starts_with('/')
        && next.len() <= 2048
        && !next.contains("//")
        && next.bytes().all(|b| b.is_ascii_graphic() && b != b'\\');
    if local {
        next.to_owned()
    } else {
        FALLBACK.to_owned()
    }
}

#[server(prefix = "/rpc", endpoint = "current_user")]
pub async fn current_user() -> Result<Option<Viewer>, AppError> {
    let session = super::current_session().await?;
    Ok(session.user.map(|u| Viewer {
        email: u.email,
        org_name: u.org_name,
        role: u.role,
        verified: u.email_verified,
    }))
}

#[server(prefix = "/rpc", endpoint = "signup")]
pub async fn signup(org_name: String, email: String, password: String) -> Result<(), AppError> {
    use invoicer_core::accounts::{sign_up, SignupError};

    let state = state()?;
    if !state.settings.signups_open {
        return Err(AppError::Forbidden(SIGNUPS_CLOSED.into()).respond());
    }
    let address = client_address(&state);
    let (signups, emails) = (
        state.throttle.signup(address)?,
        state.throttle.account_email(&email, address)?,
    );
    signups.spend()?;
    emails.spend()?;
    let payments = state.settings.signup_payments;
    // A new account or an email to the existing one: the same answer, after the same work. The
    // browser is not logged in either way; the person logs in with the password they chose.
    match sign_up(&state.pool, &org_name, &email, &password, payments).await {
        Ok(_) => {}
        Err(SignupError::Invalid(message)) => return Err(AppError::BadRequest(message).respond()),
        Err(SignupError::Hashing(e)) => return Err(AppError::from(e).respond()),
        Err(e) => return Err(AppError::internal("signup", e).respond()),
    }
    leptos_axum::redirect("/signup?sent=1");
    Ok(())
}

/// Logs in; failed and successful attempts alike count against the account's allowance from this
/// client address and the address's own (429 with Retry-After when spent), before any hashing.
#[server(prefix = "/rpc", endpoint = "login")]
pub async fn login(email: String, password: String, next: Option<String>) -> Result<(), AppError> {
    use invoicer_core::accounts::auth::{BackendError, Credentials};

    let state = state()?;
    let ceiling = state.throttle.login(&email, client_address(&state))?;
    // Credentials that cannot be anyone's cost this client's allowances, not the shared ceiling,
    // and no hash.
    if !plausible_credentials(&email, &password) {
        ceiling.waive();
        return Err(AppError::BadRequest("Wrong email or password.".into()));
    }
    ceiling.spend()?;
    let mut session = super::current_session().await?;
    let user = match session.authenticate(Credentials { email, password }).await {
        Ok(Some(user)) => user,
        Ok(None) => return Err(AppError::BadRequest("Wrong email or password.".into())),
        Err(axum_login::Error::Backend(BackendError::Hashing(e))) => return Err(e.into()),
        Err(axum_login::Error::Backend(BackendError::NoOrg)) => {
            return Err(AppError::Forbidden(
                "This account is no longer a member of any organisation. Ask an owner for an \
                 invitation."
                    .into(),
            )
            .respond())
        }
        Err(e) => return Err(AppError::internal("login: authenticate", e)),
    };
    invoicer_core::accounts::auth::log_in(&state.pool, &mut session, &user, &login_meta(&state))
        .await?;
    leptos_axum::redirect(&safe_next(next.as_deref()));
    Ok(())
}

/// An address an account could have and a password that could be its (not empty, not beyond what
/// a password may be).
#[cfg(feature = "ssr")]
fn plausible_credentials(email: &str, password: &str) -> bool {
    use validator::ValidateEmail;
    let email = email.trim();
    email.len() <= 254 && email.validate_email() && !password.is_empty() && password.len() <= 1024
}

#[server(prefix = "/rpc", endpoint = "logout")]
pub async fn logout() -> Result<(), AppError> {
    let state = state()?;
    let mut session = super::current_session().await?;
    invoicer_core::accounts::auth::log_out(&state.pool, &mut session).await?;
    leptos_axum::redirect("/login");
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
    let key = parse_account_key(idempotency_key.as_deref())?;
    let email = email.trim();
    if email.is_empty() || email.len() > 254 {
        return Err(AppError::field("email", "Enter your email address.").respond());
    }
    state
        .throttle
        .account_email(email, super::client_address(&state))?
        .spend()?;
    invoicer_core::accounts::request_reset(&state.pool, email, &format!("form:{key}")).await?;
    leptos_axum::redirect("/forgot-password?sent=1");
    Ok(())
}

/// Follows a reset link: the new password, every session of the account ended, and this browser
/// logged in afresh.
#[server(prefix = "/rpc", endpoint = "reset_password")]
pub async fn reset_password(token: String, password: String) -> Result<(), AppError> {
    let state = state()?;
    let client = super::client_address(&state);
    let ceiling = state.throttle.reset(&token, client)?;
    // A junk, spent or expired link costs this client's allowances, never the shared ceiling.
    invoicer_core::accounts::reset_link_usable(&state.pool, &token)
        .await
        .map_err(|e| AppError::from(e).respond())?;
    ceiling.spend()?;
    let user = invoicer_core::accounts::reset_password(&state.pool, &token, &password, client)
        .await
        .map_err(|e| AppError::from(e).respond())?;
    let mut session = super::current_session().await?;
    match invoicer_core::accounts::auth::for_login(&state.pool, user, None).await? {
        Some(user) => {
            invoicer_core::accounts::auth::log_in(
                &state.pool,
                &mut session,
                &user,
                &login_meta(&state),
            )
            .await?;
            leptos_axum::redirect(HOME);
        }
        // Reset, but in no org any more: nothing to log in to.
        None => leptos_axum::redirect("/login"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::safe_next;

    #[test]
    fn next_is_honoured_only_as_a_path_on_this_site() {
        for ok in ["/invoices/42", "/activity?q=a%20b&page=2", "/"] {
            assert_eq!(safe_next(Some(ok)), ok);
        }
        for bad in [
            "//evil.example",
            "/\t/evil.example",
            "/\n/evil.example",
            "/\\evil.example",
            "\\\\evil.example",
            "https://evil.example",
            "javascript:alert(1)",
            "evil.example",
            "/ok\r\nSet-Cookie: x=1",
            "/a//b",
            "",
        ] {
            assert_eq!(safe_next(Some(bad)), "/dashboard", "{bad:?}");
        }
        assert_eq!(safe_next(None), "/dashboard");
        assert_eq!(
            safe_next(Some(&format!("/{}", "a".repeat(3000)))),
            "/dashboard"
        );
    }
}

//! The team and the account: `/settings/members` (members, roles, invitations), `/invite/{token}`,
//! `/verify-email/{token}`, `/forgot-password`, `/reset-password/{token}`, `/settings/account`,
//! `/settings/sessions`, `/settings/orgs` (switch), `/settings/audit`. Forms that change a session
//! (accepting, resetting, switching) are plain posts: the page reloads as the new session.
//! One file per job; the date format and the token and query readers they share are here.

mod account;
mod audit;
mod members;
mod orgs;
mod password;

pub use account::{AccountSettingsPage, SessionsPage};
pub use audit::AuditPage;
pub use members::{InvitationPage, MembersSettingsPage};
pub use orgs::OrgsPage;
pub use password::{ForgotPasswordPage, ResetPasswordPage, VerifyEmailPage};

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

fn when(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

fn token_param() -> String {
    use_params_map().with_untracked(|p| p.get("token").unwrap_or_default())
}

fn query_flag(name: &'static str) -> bool {
    use_query_map().with_untracked(|q| q.get(name).is_some())
}

//! The Leptos pages of the owner's app, one file (or folder) per area; the routes are in lib.rs.

pub mod activity;
pub mod auth;
pub mod bank;
pub mod branding;
pub mod collecting;
pub mod customers;
pub mod dashboard;
pub mod filters;
pub mod imports;
pub mod inbox;
pub mod invoices;
pub mod layout;
pub mod party;
pub mod quotes;
pub mod reminders;
pub mod reports;
pub mod schedules;
pub mod settings;
pub mod statement;
pub mod team;
pub mod webhooks;

/// A key for a form rendered now: on the server, for the org the session acts for (see
/// [`model::form_key`]); the page is server HTML, so the browser submits what was rendered.
pub fn rendered_form_key() -> uuid::Uuid {
    #[cfg(feature = "ssr")]
    {
        use leptos::prelude::use_context;
        let org = use_context::<axum::http::request::Parts>().and_then(|parts| {
            let session = parts
                .extensions
                .get::<invoicer_core::accounts::auth::AuthSession>()?;
            session.user.as_ref().map(|user| user.org_id)
        });
        if let Some(org) = org {
            return model::form_key(org);
        }
    }
    uuid::Uuid::now_v7()
}

//! Server-only code: the claim primitive, the domain functions, sessions.

pub mod accounts;
pub mod activity;
pub mod api_keys;
pub mod audit;
pub mod auth;
pub mod checkout;
pub mod claim;
pub mod customers;
pub mod demo;
pub mod failpoint;
pub mod invitations;
pub mod invoices;
pub mod lifecycle;
pub mod mail;
pub mod members;
pub mod observe;
pub mod orgs;
pub mod outbox;
pub mod payments;
pub mod public;
pub mod retention;
pub mod state;
pub mod stripe;
pub mod surfaces;
pub mod tax_rates;
pub mod throttle;
pub mod worker;

pub use state::AppState;

/// A `like` pattern matching values that start with `text`, taken literally: `%`, `_` and the
/// backslash are escaped (Postgres' default escape character is the backslash).
pub fn like_prefix(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("{escaped}%")
}

/// Migrations, embedded so the binary and the database tests apply the same files.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

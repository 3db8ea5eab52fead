//! invoicer's server-side core: the domain, the delivery machinery (claim, surfaces, outbox, workers)
//! and the integrations (Stripe, mail, webhooks out). No UI framework: the pages and server functions
//! (`app`) and the binary (`server`) build on it.

pub mod accounts;
pub mod activity;
pub mod bank;
pub mod claim;
pub mod customers;
pub mod demo;
pub mod documents;
pub mod failpoint;
pub mod hostile_xml;
pub mod invoicing;
pub mod jobs;
pub mod mail;
pub mod observe;
pub mod outbox;
pub mod pages;
pub mod patch;
pub mod payments;
pub mod peppol;
pub mod reports;
pub mod search;
pub mod secret;
pub mod state;
pub mod surfaces;
pub mod throttle;
pub mod webhooks_out;
pub mod worker;

pub use state::AppState;

/// Migrations, embedded so the binary and the database tests apply the same files.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

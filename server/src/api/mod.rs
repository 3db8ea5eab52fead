//! The public JSON API (`/api/v1`), authenticated by API keys, with `Idempotency-Key` on create.
//! Errors are RFC 9457 problem+json and never carry internal text.

mod client;
mod invoices;
mod openapi;
mod problem;

use app::ssr::surfaces::api::INVOICES_PATH;
use app::ssr::AppState;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::Router;

pub use client::Client;
pub use openapi::ApiDoc;
pub use problem::{Problem, ProblemResponse};

pub const MAX_BODY: usize = 1024 * 1024;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            INVOICES_PATH,
            get(invoices::list_invoices).post(invoices::post_invoice),
        )
        .route("/api/v1/invoices/{id}", get(invoices::get_invoice))
        .route("/api/v1/openapi.json", get(openapi::openapi))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

//! The public JSON API (`/api/v1`), authenticated by API keys, with `Idempotency-Key` on create.
//! Errors are RFC 9457 problem+json and never carry internal text.

mod client;
mod customers;
mod invoices;
mod openapi;
mod problem;
mod tax_rates;
mod write;

use app::ssr::surfaces::api::{CUSTOMERS_PATH, INVOICES_PATH, TAX_RATES_PATH};
use app::ssr::AppState;
use axum::extract::DefaultBodyLimit;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post, MethodRouter};
use axum::Router;

pub use client::Client;
pub use openapi::ApiDoc;
pub use problem::{Problem, ProblemResponse};

pub const MAX_BODY: usize = 1024 * 1024;

/// Every answer under `/api/` is the API's: an unknown path is a 404 problem and a known path with
/// another method a 405 problem (with `Allow`), never the web app's HTML.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            INVOICES_PATH,
            allowing(
                get(invoices::list_invoices).post(invoices::post_invoice),
                "GET, HEAD, POST",
            ),
        )
        .route(
            "/api/v1/invoices/{id}",
            allowing(
                get(invoices::get_invoice)
                    .patch(invoices::patch_invoice)
                    .delete(invoices::delete_invoice),
                "GET, HEAD, PATCH, DELETE",
            ),
        )
        .route(
            "/api/v1/invoices/{id}/finalize",
            allowing(post(invoices::finalize_invoice), "POST"),
        )
        .route(
            "/api/v1/invoices/{id}/void",
            allowing(post(invoices::void_invoice), "POST"),
        )
        .route(
            "/api/v1/invoices/{id}/duplicate",
            allowing(post(invoices::duplicate_invoice), "POST"),
        )
        .route(
            "/api/v1/invoices/{id}/checkout",
            allowing(post(invoices::checkout_invoice), "POST"),
        )
        .route(
            "/api/v1/invoices/{id}/mark_uncollectible",
            allowing(post(invoices::mark_uncollectible), "POST"),
        )
        .route(
            CUSTOMERS_PATH,
            allowing(
                get(customers::list_customers).post(customers::post_customer),
                "GET, HEAD, POST",
            ),
        )
        .route(
            "/api/v1/customers/{id}",
            allowing(
                get(customers::get_customer).patch(customers::patch_customer),
                "GET, HEAD, PATCH",
            ),
        )
        .route(
            TAX_RATES_PATH,
            allowing(
                get(tax_rates::list_tax_rates).post(tax_rates::post_tax_rate),
                "GET, HEAD, POST",
            ),
        )
        .route(
            "/api/v1/openapi.json",
            allowing(get(openapi::openapi), "GET, HEAD"),
        )
        .route("/api", any(not_found))
        .route("/api/{*rest}", any(not_found))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

fn allowing(route: MethodRouter<AppState>, allow: &'static str) -> MethodRouter<AppState> {
    route.fallback(move || async move {
        let mut response = problem::problem(
            StatusCode::METHOD_NOT_ALLOWED,
            "method-not-allowed",
            "Method not allowed",
            format!("This resource answers {allow}."),
        )
        .into_response();
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
        response
    })
}

async fn not_found() -> Response {
    problem::problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "There is no API resource at this path.",
    )
    .into_response()
}

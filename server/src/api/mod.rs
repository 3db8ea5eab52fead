//! The public JSON API (`/api/v1`), authenticated by API keys, with `Idempotency-Key` on create.
//! Errors are RFC 9457 problem+json and never carry internal text.

mod bank;
mod client;
mod collection;
mod credit_notes;
mod customers;
mod documented;
mod einvoice;
mod exports;
mod invoices;
mod openapi;
mod org;
mod problem;
mod query;
mod quotes;
mod received;
pub use received::file_response as received_file;
mod reports;
mod schedules;
mod tax_rates;
mod webhook_endpoints;
mod write;

use std::collections::BTreeSet;

use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, on, MethodFilter, MethodRouter};
use axum::Router;
use invoicer_core::surfaces::api::{CUSTOMERS_PATH, INVOICES_PATH, TAX_RATES_PATH};
use invoicer_core::AppState;

pub use client::Client;
pub use openapi::ApiDoc;
pub use problem::{Problem, ProblemResponse};

pub const MAX_BODY: usize = 1024 * 1024;

/// Every answer under `/api/` is the API's: an unknown path is a 404 problem and a known path with
/// another method a 405 problem (with `Allow`), never the web app's HTML.
pub fn routes() -> Router<AppState> {
    api()
        .router
        .route("/api", any(not_found))
        .route("/api/{*rest}", any(not_found))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

/// Each (method, path) the API serves, as its router registers them (a GET answers HEAD too).
pub fn served() -> BTreeSet<(String, &'static str)> {
    api().served
}

fn api() -> Api {
    use Method as M;
    Api::default()
        .route(
            INVOICES_PATH,
            [
                to(M::GET, invoices::list_invoices),
                to(M::POST, invoices::post_invoice),
            ],
        )
        .route(
            "/api/v1/invoices/{id}",
            [
                to(M::GET, invoices::get_invoice),
                to(M::PATCH, invoices::patch_invoice),
                to(M::DELETE, invoices::delete_invoice),
            ],
        )
        .route(
            "/api/v1/invoices/{id}/einvoice",
            [to(M::GET, einvoice::get_invoice_einvoice)],
        )
        .post("/api/v1/invoices/{id}/finalize", invoices::finalize_invoice)
        .post("/api/v1/invoices/{id}/void", invoices::void_invoice)
        .post(
            "/api/v1/invoices/{id}/duplicate",
            invoices::duplicate_invoice,
        )
        .post("/api/v1/invoices/{id}/checkout", invoices::checkout_invoice)
        .post("/api/v1/invoices/{id}/charge", collection::charge_invoice)
        .post("/api/v1/invoices/{id}/stop_charges", invoices::stop_charges)
        .post(
            "/api/v1/invoices/{id}/mark_uncollectible",
            invoices::mark_uncollectible,
        )
        .route(
            "/api/v1/invoices/{id}/payments",
            [
                to(M::GET, invoices::list_payments),
                to(M::POST, invoices::post_payment),
            ],
        )
        .route(
            "/api/v1/invoices/{id}/payments/{payment_id}",
            [to(M::GET, invoices::get_payment)],
        )
        .post(
            "/api/v1/invoices/{id}/credit_notes",
            credit_notes::post_credit_note,
        )
        .post(
            "/api/v1/invoices/{id}/apply_credit",
            credit_notes::post_apply_credit,
        )
        .route(
            "/api/v1/credit_notes/{id}",
            [to(M::GET, credit_notes::get_credit_note)],
        )
        .route(
            "/api/v1/credit_notes/{id}/einvoice",
            [to(M::GET, einvoice::get_credit_note_einvoice)],
        )
        .route("/api/v1/reports/aging", [to(M::GET, reports::get_aging)])
        .route("/api/v1/reports/tax", [to(M::GET, reports::get_tax)])
        .route("/api/v1/exports/{file}", [to(M::GET, exports::get_export)])
        .route(
            "/api/v1/webhook_endpoints",
            [
                to(M::GET, webhook_endpoints::list_endpoints),
                to(M::POST, webhook_endpoints::post_endpoint),
            ],
        )
        .route(
            "/api/v1/webhook_endpoints/{id}",
            [
                to(M::GET, webhook_endpoints::get_endpoint),
                to(M::DELETE, webhook_endpoints::delete_endpoint),
            ],
        )
        .post(
            "/api/v1/webhook_endpoints/{id}/rotate_secret",
            webhook_endpoints::rotate_secret,
        )
        .route(
            "/api/v1/webhook_endpoints/{id}/attempts",
            [to(M::GET, webhook_endpoints::list_attempts)],
        )
        .route(
            "/api/v1/quotes",
            [
                to(M::GET, quotes::list_quotes),
                to(M::POST, quotes::post_quote),
            ],
        )
        .route("/api/v1/quotes/{id}", [to(M::GET, quotes::get_quote)])
        .post("/api/v1/quotes/{id}/send", quotes::send_quote)
        .route(
            "/api/v1/schedules",
            [
                to(M::GET, schedules::list_schedules),
                to(M::POST, schedules::post_schedule),
            ],
        )
        .route(
            "/api/v1/schedules/{id}",
            [
                to(M::GET, schedules::get_schedule),
                to(M::PATCH, schedules::patch_schedule),
            ],
        )
        .post("/api/v1/schedules/{id}/pause", schedules::pause_schedule)
        .post("/api/v1/schedules/{id}/resume", schedules::resume_schedule)
        .route(
            CUSTOMERS_PATH,
            [
                to(M::GET, customers::list_customers),
                to(M::POST, customers::post_customer),
            ],
        )
        .route(
            "/api/v1/customers/{id}",
            [
                to(M::GET, customers::get_customer),
                to(M::PATCH, customers::patch_customer),
            ],
        )
        .post(
            "/api/v1/customers/{id}/payment_method_link",
            collection::post_payment_method_link,
        )
        .route(
            "/api/v1/customers/{id}/payment_methods",
            [to(M::GET, collection::list_payment_methods)],
        )
        .route(
            TAX_RATES_PATH,
            [
                to(M::GET, tax_rates::list_tax_rates),
                to(M::POST, tax_rates::post_tax_rate),
            ],
        )
        .route(
            "/api/v1/org",
            [to(M::GET, org::get_org), to(M::PATCH, org::patch_org)],
        )
        .route(
            "/api/v1/bank_statements",
            // A statement file may be larger than any JSON body: up to 10 MB (the route's own limit
            // overrides the API's 1 MiB).
            [To(
                M::POST,
                on(MethodFilter::POST, bank::post_statement)
                    .layer(DefaultBodyLimit::max(invoicer_core::bank::MAX_FILE_BYTES)),
            )],
        )
        .route("/api/v1/bank_entries", [to(M::GET, bank::list_entries)])
        .post("/api/v1/bank_entries/{id}/match", bank::match_entry)
        .post("/api/v1/bank_entries/{id}/ignore", bank::ignore_entry)
        .route(
            "/api/v1/received_documents",
            // A received file may be a PDF larger than any JSON body: up to 10 MB.
            [
                To(
                    M::POST,
                    on(MethodFilter::POST, received::post_document).layer(DefaultBodyLimit::max(
                        invoicer_core::peppol::inbox::MAX_FILE_BYTES,
                    )),
                ),
                to(M::GET, received::list_documents),
            ],
        )
        .route(
            "/api/v1/received_documents/{id}",
            [to(M::GET, received::get_document)],
        )
        .route(
            "/api/v1/received_documents/{id}/file",
            [to(M::GET, received::get_file)],
        )
        .post("/api/v1/received_documents/{id}/paid", received::mark_paid)
        .route("/api/v1/openapi.json", [to(M::GET, openapi::openapi)])
}

/// The router and what it serves, built together so neither can drift from the other.
#[derive(Default)]
struct Api {
    router: Router<AppState>,
    served: BTreeSet<(String, &'static str)>,
}

/// One method of a path and its handler.
struct To(Method, MethodRouter<AppState>);

fn to<H: Handler<T, AppState>, T: 'static>(method: Method, handler: H) -> To {
    let filter = MethodFilter::try_from(method.clone()).expect("a method axum routes");
    To(method, on(filter, handler))
}

impl Api {
    /// `path` answered by a POST alone.
    fn post<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, handler: H) -> Self {
        self.route(path, [to(Method::POST, handler)])
    }

    /// `path` answered by `methods`; any other method is a 405 problem whose `Allow` lists them.
    fn route<const N: usize>(mut self, path: &'static str, methods: [To; N]) -> Self {
        let mut allow = Vec::new();
        let mut route = MethodRouter::new();
        for To(method, handler) in methods {
            allow.push(method.as_str().to_owned());
            if method == Method::GET {
                allow.push("HEAD".to_owned());
            }
            route = route.merge(handler);
            self.served.insert((method.as_str().to_owned(), path));
        }
        self.router = self.router.route(path, allowing(route, allow.join(", ")));
        self
    }
}

fn allowing(route: MethodRouter<AppState>, allow: String) -> MethodRouter<AppState> {
    let allow_value = HeaderValue::from_str(&allow).expect("method names are header-safe");
    route.fallback(move || {
        let detail = format!("This resource answers {allow}.");
        let allow_value = allow_value.clone();
        async move {
            let mut response = problem::problem(
                StatusCode::METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "Method not allowed",
                detail,
            )
            .into_response();
            response.headers_mut().insert(header::ALLOW, allow_value);
            response
        }
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

//! The customer's pages: `/i/{token}` (the invoice, no login) and `/i/{token}/pdf`, a credit
//! note's (`/c/{token}`) and a statement's (`/s/{token}`). Plain HTML, no script: they open fast on
//! a phone, work without JavaScript, and are never indexed.

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use invoicer_core::invoicing::public;
use invoicer_core::throttle::Ceiling;
use invoicer_core::AppState;
use leptos::prelude::*;

use crate::pdf::Paper;

mod credit_note;
mod einvoice;
mod invoice;
mod look;
mod quote;
mod statement;

/// The client's address as the throttles see it (the trusted proxy's header, else the peer).
pub struct Client(pub std::net::IpAddr);

impl axum::extract::FromRequestParts<AppState> for Client {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Client, Self::Rejection> {
        let header = state.settings.client_ip_header.as_deref();
        Ok(Client(invoicer_core::throttle::client_address(
            parts, header,
        )))
    }
}

/// The page's token from the path, once the client's own page allowances let it through (else
/// 429), with the shared ceiling to spend once the link is found ([`drawn`]).
struct PageToken(String, Ceiling);

impl axum::extract::FromRequestParts<AppState> for PageToken {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<PageToken, Response> {
        let Ok(Client(client)) = Client::from_request_parts(parts, state).await;
        let Path(token) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let ceiling = state
            .throttle
            .public_page(&token, client)
            .map_err(throttled)?;
        Ok(PageToken(token, ceiling))
    }
}

/// What a link's lookup found, once the shared ceiling lets it be drawn: an unknown link is 404 and
/// costs only the client's own allowances, a found one spends the ceiling (429 past it), a failed
/// lookup is 503.
// The refusal is the answer itself, returned straight to axum: boxing it buys nothing.
#[allow(clippy::result_large_err)]
fn drawn<T>(ceiling: Ceiling, what: &str, found: sqlx::Result<Option<T>>) -> Result<T, Response> {
    match found {
        Ok(Some(found)) => ceiling.spend().map(|()| found).map_err(throttled),
        Ok(None) => Err(not_found()),
        Err(e) => Err(unavailable(what, e)),
    }
}

/// 429 with Retry-After, before anything is looked up or drawn.
fn throttled(t: invoicer_core::throttle::Throttled) -> Response {
    let secs = t.retry_after.as_secs().max(1).to_string();
    private(
        (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, secs)],
            "Too many requests for this page. Try again in a moment.",
        )
            .into_response(),
    )
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/i/{token}", get(invoice::page))
        .route("/i/{token}/pdf", get(pdf))
        .route("/i/{token}/pay", axum::routing::post(pay))
        .route("/i/{token}/save_method", axum::routing::post(save_method))
        .route(
            "/i/{token}/methods/{method}/remove",
            axum::routing::post(remove_method),
        )
        .route("/i/{token}/einvoice.xml", get(einvoice::invoice))
        .route("/c/{token}/einvoice.xml", get(einvoice::credit_note))
        .route("/c/{token}", get(credit_note::page))
        .route("/c/{token}/pdf", get(credit_note::pdf))
        .route("/q/{token}", get(quote::page))
        .route("/q/{token}/accept", axum::routing::post(quote::accept))
        .route("/q/{token}/decline", axum::routing::post(quote::decline))
        .route("/s/{token}", get(statement::page))
        .route("/s/{token}/pdf", get(statement::pdf))
        .route("/saved", get(saved))
}

/// Where the provider's setup page sends the customer back: what happened, in plain words.
async fn saved(
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    let (title, text) = if q.get("saved").map(String::as_str) == Some("1") {
        (
            "Payment method saved",
            "Your payment method is saved: your invoices will be charged to it automatically \
             when they are issued. You can close this page.",
        )
    } else {
        (
            "Nothing saved",
            "No payment method was saved. You can close this page, or open the link you were \
             sent again.",
        )
    };
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title></head><body><main><h1>{title}</h1><p class=\"saved\">{text}</p>\
         </main></body></html>"
    );
    private(axum::response::Html(html).into_response())
}

/// Headers of every answer under `/i/`: not indexed, not cached by anyone but the browser, the
/// token never sent onwards in a Referer, no script at all.
fn private(response: Response) -> Response {
    private_paying(response, "")
}

/// As [`private`], letting the page's Pay form end at `checkout` (origins the 303 may lead to: a
/// form's redirects are held to `form-action` too).
fn private_paying(mut response: Response, checkout: &str) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        "x-robots-tag",
        HeaderValue::from_static("noindex, nofollow"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    let policy = format!(
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'{}{checkout}; \
         base-uri 'none'; frame-ancestors 'none'",
        if checkout.is_empty() { "" } else { " " }
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_str(&policy).expect("origins are header-safe"),
    );
    response
}

/// Where a checkout session's page may be: Stripe's, and the configured API's host (the local
/// Stripe serves its own checkout page).
pub(super) fn checkout_origins(state: &AppState) -> String {
    let mut origins = vec!["https://checkout.stripe.com".to_owned()];
    if let Ok(origin) = crate::security::origin_of(&state.settings.stripe_api_base) {
        if !origin.contains(['"', ';', ' ']) && origin != "https://api.stripe.com" {
            origins.push(origin);
        }
    }
    origins.join(" ")
}

/// The Pay button: the invoice's checkout session (made once per amount due, however often it is
/// pressed), then 303 to Stripe's page. A second press while the first is still talking to Stripe
/// waits for it and lands on the same session.
async fn pay(State(state): State<AppState>, PageToken(token, ceiling): PageToken) -> Response {
    use invoicer_core::payments::checkout::{self, Checkout, CheckoutError, Urls};
    let found = match drawn(
        ceiling,
        "public pay",
        checkout::by_token(&state.pool, &token).await,
    ) {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let urls = Urls {
        public_base: &state.settings.public_url,
    };
    let (org, invoice) = (model::OrgId::from(found.0), found.1);
    let waited = std::time::Duration::from_secs(10);
    let see_other = |to: &str| {
        private((StatusCode::SEE_OTHER, [(header::LOCATION, to.to_owned())]).into_response())
    };
    match checkout::session_waiting(
        &state.pool,
        &state.stripe,
        &urls,
        org,
        model::InvoiceId::from(invoice),
        waited,
    )
    .await
    {
        Ok(Checkout::Session(session)) => see_other(&session.url),
        Ok(Checkout::NothingDue { .. } | Checkout::NotEnabled) => see_other(&format!("/i/{token}")),
        Ok(Checkout::NotFound) => not_found(),
        Err(CheckoutError::Busy(_)) => payment_unavailable("checkout still being created", "busy"),
        Err(CheckoutError::Saturated) => {
            payment_unavailable("paying", "every place for a call to Stripe is taken")
        }
        Err(CheckoutError::Stripe(e)) => payment_unavailable("creating a checkout session", e),
        Err(CheckoutError::Db(e)) => unavailable("public pay", e),
    }
}

#[derive(serde::Deserialize)]
struct SaveMethodForm {
    key: String,
}

/// The invoice of `token` with its org and customer (none without a customer record).
async fn invoice_customer(
    pool: &sqlx::PgPool,
    token: &str,
) -> sqlx::Result<Option<(model::OrgId, uuid::Uuid, Option<uuid::Uuid>, String)>> {
    if !invoicer_core::invoicing::link_token::well_formed(token) {
        return Ok(None);
    }
    // language=PostgreSQL
    let row = sqlx::query!(
        "select org_id, id, customer_id, currency from invoices where public_token = $1",
        token
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| {
        (
            model::OrgId::from(r.org_id),
            r.id,
            r.customer_id,
            r.currency,
        )
    }))
}

/// "Pay automatically next time": the provider's setup page for the invoice's customer. The form's
/// key, minted when the page was drawn, names the attempt: a double submit gets the same page.
async fn save_method(
    State(state): State<AppState>,
    PageToken(token, ceiling): PageToken,
    axum::Form(form): axum::Form<SaveMethodForm>,
) -> Response {
    use invoicer_core::payments::saved::{self, LinkError, SetupUrls};
    let Ok(key) = uuid::Uuid::try_parse(&form.key) else {
        return private((StatusCode::BAD_REQUEST, "invalid form key").into_response());
    };
    let found = match drawn(
        ceiling,
        "public save method",
        invoice_customer(&state.pool, &token).await,
    ) {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let (org, invoice, Some(customer), currency) = found else {
        return not_found();
    };
    let page = format!("{}/i/{token}", state.settings.public_url);
    let urls = SetupUrls {
        success: format!("{page}?saved=1"),
        cancel: page,
    };
    let made = saved::setup_link(
        &state.pool,
        &state.stripe,
        org,
        customer.into(),
        &currency,
        &format!("page:{invoice}/{key}"),
        &urls,
    )
    .await;
    match made {
        Ok(Some(url)) => {
            private((StatusCode::SEE_OTHER, [(header::LOCATION, url)]).into_response())
        }
        Ok(None) => not_found(),
        Err(LinkError::Db(e)) => unavailable("public save method", e),
        Err(e) => payment_unavailable("creating a setup session", e),
    }
}

/// The customer removes a method they saved: it is charged no more.
async fn remove_method(
    State(state): State<AppState>,
    Client(client): Client,
    Path((token, method)): Path<(String, String)>,
) -> Response {
    let ceiling = match state.throttle.public_page(&token, client) {
        Ok(ceiling) => ceiling,
        Err(t) => return throttled(t),
    };
    let Ok(method) = uuid::Uuid::try_parse(&method) else {
        return not_found();
    };
    let found = match drawn(
        ceiling,
        "public remove method",
        invoice_customer(&state.pool, &token).await,
    ) {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let (org, _, Some(customer), _) = found else {
        return not_found();
    };
    let removed = async {
        let mut tx = state.pool.begin().await?;
        let removed =
            invoicer_core::payments::saved::remove(&mut tx, org, customer.into(), method).await?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(removed)
    };
    match removed.await {
        Ok(_) => private(
            (
                StatusCode::SEE_OTHER,
                [(header::LOCATION, format!("/i/{token}"))],
            )
                .into_response(),
        ),
        Err(e) => unavailable("public remove method", e),
    }
}

/// What the customer sees when Stripe cannot be reached: try again; the detail goes to the log.
fn payment_unavailable(context: &str, e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "{context}");
    let body = document(
        "Payment temporarily unavailable",
        view! {
            <main class="public">
                <h1>"Payment is temporarily unavailable"</h1>
                <p>"Nothing was charged. Please go back and try again in a minute."</p>
            </main>
        }
        .to_html(),
    );
    private(
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "30")],
            axum::response::Html(body),
        )
            .into_response(),
    )
}

/// The same answer for a malformed, unknown or revoked token: nothing tells them apart.
fn not_found() -> Response {
    let body = document(
        "Invoice not found",
        view! {
            <main class="public">
                <h1>"Invoice not found"</h1>
                <p>"This link is not valid. Ask the sender for a new one."</p>
            </main>
        }
        .to_html(),
    );
    private((StatusCode::NOT_FOUND, axum::response::Html(body)).into_response())
}

fn document(title: &str, body: String) -> String {
    document_styled(title, body, None, "en")
}

/// As [`document`], in language `lang`, with one inline `style` (the org's accent; see
/// `look::page`).
fn document_styled(title: &str, body: String, style: Option<&str>, lang: &str) -> String {
    let title = view! { <title>{title.to_owned()}</title> }.to_html();
    let style = style
        .map(|s| format!("<style>{s}</style>"))
        .unwrap_or_default();
    let css = crate::assets::stylesheet();
    format!(
        "<!DOCTYPE html><html lang=\"{lang}\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"icon\" href=\"data:,\">\
         <meta name=\"robots\" content=\"noindex, nofollow\">{title}\
         <link rel=\"stylesheet\" href=\"{css}\">{style}</head><body>{body}</body></html>"
    )
}

#[derive(Debug, serde::Deserialize)]
struct PdfQuery {
    /// `a4` (default) or `letter`.
    paper: Option<String>,
}

async fn pdf(
    State(state): State<AppState>,
    Client(client): Client,
    Path(token): Path<String>,
    Query(query): Query<PdfQuery>,
) -> Response {
    let ceiling = match state.throttle.pdf(&token, client) {
        Ok(ceiling) => ceiling,
        Err(t) => return throttled(t),
    };
    let paper = match query.paper.as_deref() {
        None | Some("a4") => Paper::A4,
        Some("letter") => Paper::Letter,
        Some(_) => return not_found(),
    };
    let opened = public::open(&state.pool, &token, &state.settings.public_url).await;
    let found = match drawn(ceiling, "public invoice pdf", opened) {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let name = format!(
        "invoice-{}",
        found.invoice.number.as_deref().unwrap_or_default()
    );
    // An e-invoicing org's invoice is a Factur-X PDF when its data makes a valid e-invoice (it does
    // for every invoice finalized since e-invoicing was on: finalizing checks it).
    let wait = std::time::Duration::from_secs(5);
    match crate::pdf::stored::invoice(&state.pool, found, paper, wait).await {
        Ok(bytes) => attachment(bytes, &name),
        Err(e) => unavailable("public invoice pdf", e),
    }
}

/// `bytes` as a PDF download named `name` (only characters that need no quoting are kept).
fn attachment(bytes: Vec<u8>, name: &str) -> Response {
    let file: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    private(
        (
            [
                (header::CONTENT_TYPE, "application/pdf".to_owned()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{file}.pdf\""),
                ),
            ],
            bytes,
        )
            .into_response(),
    )
}

fn unavailable(context: &str, e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "{context}");
    private(
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "5")],
            "This page is temporarily unavailable. Try again in a moment.",
        )
            .into_response(),
    )
}

//! The org's own look on its customer's pages: the logo beside its name, the accent colour (an
//! inline style that the page's Content-Security-Policy allows by its hash, and nothing else), and
//! the footer under the page.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use leptos::prelude::*;
use model::Branding;
use sha2::{Digest, Sha256};

use super::private_paying;

/// The sender: logo (when there is one), name and address.
pub(super) fn header(org_name: &str, address: &str, branding: &Branding) -> AnyView {
    let logo = branding.logo.clone().map(|logo| {
        view! {
            <img class="logo" src=logo.path() alt=format!("{org_name} logo")
                width=logo.width.to_string() height=logo.height.to_string() />
        }
    });
    view! {
        <header class="from">
            {logo}
            <p class="org">{org_name.to_owned()}</p>
            {(!address.is_empty()).then(|| view! { <p class="address">{address.to_owned()}</p> })}
        </header>
    }
    .into_any()
}

/// The head of a document's items table (the invoice's and the quote's pages).
pub(super) fn items_head(tr: &invoicer_core::documents::i18n::Tr) -> AnyView {
    view! {
        <thead>
            <tr>
                <th scope="col">{tr.t("col-description")}</th>
                <th scope="col" class="num">{tr.t("col-qty")}</th>
                <th scope="col" class="num">{tr.t("col-unit-price")}</th>
                <th scope="col">{tr.t("col-tax")}</th>
                <th scope="col" class="num">{tr.t("col-amount")}</th>
            </tr>
        </thead>
    }
    .into_any()
}

/// The org's footer text, under the page.
pub(super) fn footer(branding: &Branding) -> Option<AnyView> {
    (!branding.footer_text.is_empty()).then(|| {
        view! { <footer class="brand-footer"><p>{branding.footer_text.clone()}</p></footer> }
            .into_any()
    })
}

/// `body` as the customer's page titled `title`, in the org's look; `checkout`: the origins its Pay
/// form may lead to (see [`private_paying`]).
pub(super) fn page(
    title: &str,
    body: String,
    branding: &Branding,
    checkout: &str,
    locale: model::Locale,
) -> Response {
    let style = branding.css();
    let html = super::document_styled(title, body, style.as_deref(), locale.as_str());
    let mut response = private_paying(axum::response::Html(html).into_response(), checkout);
    if let Some(style) = style {
        allow_style(&mut response, &style);
    }
    response
}

/// Lets the page's one inline `<style>` (exactly `style`) apply: its hash joins `style-src`.
fn allow_style(response: &mut Response, style: &str) {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(style.as_bytes()));
    let headers = response.headers_mut();
    let Some(policy) = headers
        .get(header::CONTENT_SECURITY_POLICY)
        .and_then(|v| v.to_str().ok())
    else {
        return;
    };
    let policy = policy.replacen(
        "style-src 'self'",
        &format!("style-src 'self' 'sha256-{hash}'"),
        1,
    );
    if let Ok(value) = HeaderValue::from_str(&policy) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
}

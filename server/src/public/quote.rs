//! A quote's customer page, `/q/{token}`: what is proposed, until when, and two plain forms, Accept
//! and Decline, each with a key minted when the page was rendered (`POST /q/{token}/accept`,
//! `/decline`). A double submit, a resubmit after Back or a second tab decides once: the answer is
//! always a redirect to the page, which shows where the quote is. The rules of the invoice's page:
//! an unguessable token, throttled, plain HTML with no script, never indexed.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use invoicer_core::documents::i18n::Tr;
use invoicer_core::invoicing::quotes::{self, PublicQuote};
use invoicer_core::observe::{Attempt, Surface};
use invoicer_core::surfaces::quote_forms::{self, Decision};
use invoicer_core::surfaces::track;
use invoicer_core::AppState;
use leptos::prelude::*;
use model::{QuoteStatus, Words};

use super::{drawn, not_found, private, unavailable, PageToken};

/// `GET /q/{token}`.
pub(super) async fn page(
    State(state): State<AppState>,
    PageToken(token, ceiling): PageToken,
) -> Response {
    let found = quotes::by_token(&state.pool, &token, &state.settings.public_url).await;
    match drawn(ceiling, "public quote page", found) {
        Ok(found) => {
            let tr = Tr::new(found.locale);
            let number = found.quote.number.clone().unwrap_or_default();
            let title = tr.t_args(
                "quote-title",
                &[("number", &number), ("org", &found.org_name)],
            );
            let branding = found.branding.clone();
            super::look::page(&title, render(found, &token, &tr), &branding, "", tr.locale)
        }
        Err(answer) => answer,
    }
}

fn status_text(q: &model::Quote, tr: &Tr) -> String {
    let date = tr.date(q.expires_on);
    match q.status {
        QuoteStatus::Open => tr.t_args("quote-valid-until", &[("date", &date)]),
        QuoteStatus::Expired => tr.t_args("quote-expired-on", &[("date", &date)]),
        QuoteStatus::Accepted => tr.t("quote-accepted"),
        QuoteStatus::Declined => tr.t("quote-declined"),
        QuoteStatus::Draft => String::new(),
    }
}

fn render(found: PublicQuote, token: &str, tr: &Tr) -> String {
    let PublicQuote {
        org_id,
        org_name,
        org_address,
        quote: q,
        preview: inv,
        invoice_url,
        branding,
        ..
    } = found;
    let status = status_text(&q, tr);
    let mentions = inv.tax_mentions(tr);
    let open = q.status == QuoteStatus::Open;
    // One key per button, minted now: every submit of this rendering is the same attempt.
    let (accept_key, decline_key) = (
        model::form_key(org_id.into()),
        model::form_key(org_id.into()),
    );
    view! {
        <main class="public quote">
            {super::look::header(&org_name, &org_address, &branding)}
            <h1>{tr.t("quote")} " " <span class="number">{q.number.clone().unwrap_or_default()}</span></h1>
            <p class=format!("public-status {}", q.status.as_str())>{status}</p>
            <section class="bill-to" aria-label=tr.t("quote-for")>
                <h2>{tr.t("quote-for")}</h2>
                <p class="customer">{q.customer_name.clone()}</p>
                <p>{q.customer_email.clone()}</p>
            </section>
            // Wider than a phone in some languages: the region scrolls, and the keyboard reaches it.
            <div class="table-scroll" tabindex="0" role="region" aria-label=tr.t("items")>
                <table>
                    <caption>{tr.t("items")}</caption>
                    {super::look::items_head(tr)}
                    <tbody>{app::line_rows(&inv, tr)}</tbody>
                    <tfoot>{app::totals_rows(&inv, 4, tr)}</tfoot>
                </table>
            </div>
            {mentions.into_iter().map(|m| view! { <p class="tax-mention">{m}</p> }).collect_view()}
            {(!inv.notes.is_empty()).then(|| view! { <p class="notes">{inv.notes.clone()}</p> })}
            {open.then(|| view! {
                <div class="decide">
                    // Plain forms: deciding works without JavaScript.
                    <form method="post" action=format!("/q/{token}/accept") class="accept">
                        <input type="hidden" name="key" value=accept_key.to_string() />
                        <button type="submit" class="button primary accept">
                            {tr.t_args("quote-accept", &[("amount", &tr.money(inv.total_cents, &inv.currency))])}
                        </button>
                    </form>
                    <form method="post" action=format!("/q/{token}/decline") class="decline">
                        <input type="hidden" name="key" value=decline_key.to_string() />
                        <button type="submit" class="button secondary decline">{tr.t("quote-decline")}</button>
                    </form>
                </div>
            })}
            {invoice_url.map(|url| view! {
                <p><a class="button invoice-link" href=url>{tr.t("quote-view-invoice")}</a></p>
            })}
            {super::look::footer(&branding)}
        </main>
    }
    .to_html()
}

#[derive(Debug, serde::Deserialize)]
pub(super) struct DecideForm {
    #[serde(default)]
    key: String,
}

/// `POST /q/{token}/accept`.
pub(super) async fn accept(
    state: State<AppState>,
    token: PageToken,
    form: axum::Form<DecideForm>,
) -> Response {
    decide(state, token, form, true).await
}

/// `POST /q/{token}/decline`.
pub(super) async fn decline(
    state: State<AppState>,
    token: PageToken,
    form: axum::Form<DecideForm>,
) -> Response {
    decide(state, token, form, false).await
}

async fn decide(
    State(state): State<AppState>,
    PageToken(token, ceiling): PageToken,
    axum::Form(form): axum::Form<DecideForm>,
    accept: bool,
) -> Response {
    let found = quotes::by_token(&state.pool, &token, &state.settings.public_url).await;
    let found = match drawn(ceiling, "public quote decision", found) {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let (org, quote) = (model::OrgId::from(found.org_id), found.quote.id);
    let tr = Tr::new(found.locale);
    // A key this org's page minted (version 8, naming the org), or the page was not ours:
    // nothing is claimed.
    let Some(key) = uuid::Uuid::try_parse(form.key.trim())
        .ok()
        .filter(|k| k.get_version_num() == 8 && model::form_key_fits(*k, org))
    else {
        return answer(
            StatusCode::BAD_REQUEST,
            "This form has expired",
            "Nothing was recorded. Open the quote again and answer from there.",
            &token,
            &tr,
        );
    };
    let attempt = Attempt::new(Surface::Form, key.to_string(), None);
    let base = &state.settings.public_url;
    let decided = track(&state.pool, attempt, async |attempt| {
        let allowance = invoicer_core::mail::gate::Allowance::of(&state.settings.limits);
        quote_forms::decide(
            &state.pool,
            &attempt,
            org,
            quote,
            key,
            accept,
            base,
            allowance,
        )
        .await
    })
    .await;
    let back = format!("/q/{token}");
    match decided {
        // Decided now, earlier by this very button, or by another tab: the page says which.
        Ok(Decision::Now(_) | Decision::Repeated)
        | Ok(Decision::Refused(QuoteStatus::Accepted | QuoteStatus::Declined)) => {
            private((StatusCode::SEE_OTHER, [(header::LOCATION, back)]).into_response())
        }
        Ok(Decision::Refused(QuoteStatus::Expired)) => answer(
            StatusCode::CONFLICT,
            &tr.t("quote-expired"),
            &tr.t_args(
                "quote-expired-text",
                &[
                    ("date", &tr.date(found.quote.expires_on)),
                    ("org", &found.org_name),
                ],
            ),
            &token,
            &tr,
        ),
        Ok(Decision::Refused(_)) => not_found(),
        Err(model::error::AppError::NotFound) => not_found(),
        Err(model::error::AppError::BadRequest(why)) => {
            // Another submit of this button is being recorded right now.
            let mut response = answer(StatusCode::CONFLICT, "One moment", &why, &token, &tr);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            response
        }
        Err(e) => unavailable("public quote decision", e),
    }
}

/// A short page saying what happened, with the way back to the quote.
fn answer(status: StatusCode, title: &str, text: &str, token: &str, tr: &Tr) -> Response {
    let body = super::document_styled(
        title,
        view! {
            <main class="public">
                <h1>{title.to_owned()}</h1>
                <p>{text.to_owned()}</p>
                <p><a href=format!("/q/{token}")>{tr.t("quote-back")}</a></p>
            </main>
        }
        .to_html(),
        None,
        tr.locale.as_str(),
    );
    private((status, axum::response::Html(body)).into_response())
}

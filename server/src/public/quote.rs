//! A quote's customer page, `/q/{token}`: what is proposed, until when, and two plain forms, Accept
//! and Decline, each with a key minted when the page was rendered (`POST /q/{token}/accept`,
//! `/decline`). A double submit, a resubmit after Back or a second tab decides once: the answer is
//! always a redirect to the page, which shows where the quote is. The rules of the invoice's page:
//! an unguessable token, throttled, plain HTML with no script, never indexed.

use app::model::{format_money, QuoteStatus};
use app::ssr::observe::{track, Attempt, Surface};
use app::ssr::quotes::{self, PublicQuote};
use app::ssr::surfaces::quote_forms::{self, Decision};
use app::ssr::AppState;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use leptos::prelude::*;

use super::{document, not_found, private, unavailable, PageToken};

/// `GET /q/{token}`.
pub(super) async fn page(State(state): State<AppState>, PageToken(token): PageToken) -> Response {
    match quotes::by_token(&state.pool, &token, &state.settings.public_url).await {
        Ok(Some(found)) => {
            let number = found.quote.number.clone().unwrap_or_default();
            let title = format!("Quote {number} from {}", found.org_name);
            let branding = found.branding.clone();
            super::look::page(&title, render(found, &token), &branding, "")
        }
        Ok(None) => not_found(),
        Err(e) => unavailable("public quote page", e),
    }
}

fn status_text(q: &app::model::Quote) -> String {
    match q.status {
        QuoteStatus::Open => format!("Valid until {}", q.expires_on),
        QuoteStatus::Expired => format!("Expired on {}", q.expires_on),
        QuoteStatus::Accepted => "Accepted: thank you".to_owned(),
        QuoteStatus::Declined => "Declined".to_owned(),
        QuoteStatus::Draft => String::new(),
    }
}

fn render(found: PublicQuote, token: &str) -> String {
    let PublicQuote {
        org_id,
        org_name,
        org_address,
        quote: q,
        preview: inv,
        invoice_url,
        branding,
    } = found;
    let status = status_text(&q);
    let mentions = inv.tax_mentions();
    let open = q.status == QuoteStatus::Open;
    // One key per button, minted now: every submit of this rendering is the same attempt.
    let (accept_key, decline_key) = (app::model::form_key(org_id), app::model::form_key(org_id));
    view! {
        <main class="public quote">
            {super::look::header(&org_name, &org_address, &branding)}
            <h1>"Quote " <span class="number">{q.number.clone().unwrap_or_default()}</span></h1>
            <p class=format!("public-status {}", q.status.as_str())>{status}</p>
            <section class="bill-to" aria-label="For">
                <h2>"For"</h2>
                <p class="customer">{q.customer_name.clone()}</p>
                <p>{q.customer_email.clone()}</p>
            </section>
            <div class="table-scroll">
                <table>
                    <caption>"Items"</caption>
                    <thead>
                        <tr>
                            <th scope="col">"Description"</th>
                            <th scope="col" class="num">"Qty"</th>
                            <th scope="col" class="num">"Unit price"</th>
                            <th scope="col">"Tax"</th>
                            <th scope="col" class="num">"Amount"</th>
                        </tr>
                    </thead>
                    <tbody>{app::line_rows(&inv)}</tbody>
                    <tfoot>{app::totals_rows(&inv, 4)}</tfoot>
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
                            {format!("Accept {}", format_money(inv.total_cents, &inv.currency))}
                        </button>
                    </form>
                    <form method="post" action=format!("/q/{token}/decline") class="decline">
                        <input type="hidden" name="key" value=decline_key.to_string() />
                        <button type="submit" class="button secondary decline">"Decline"</button>
                    </form>
                </div>
            })}
            {invoice_url.map(|url| view! {
                <p><a class="button invoice-link" href=url>"View your invoice"</a></p>
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
    PageToken(token): PageToken,
    axum::Form(form): axum::Form<DecideForm>,
    accept: bool,
) -> Response {
    let found = match quotes::by_token(&state.pool, &token, &state.settings.public_url).await {
        Ok(Some(found)) => found,
        Ok(None) => return not_found(),
        Err(e) => return unavailable("public quote decision", e),
    };
    let (org, quote) = (found.org_id, found.quote.id);
    // A key this org's page minted (version 8, naming the org), or the page was not ours:
    // nothing is claimed.
    let Some(key) = uuid::Uuid::try_parse(form.key.trim())
        .ok()
        .filter(|k| k.get_version_num() == 8 && app::model::form_key_fits(*k, org))
    else {
        return answer(
            StatusCode::BAD_REQUEST,
            "This form has expired",
            "Nothing was recorded. Open the quote again and answer from there.",
            &token,
        );
    };
    let attempt = Attempt::new(Surface::Form, key.to_string(), None);
    let base = &state.settings.public_url;
    let decided = track(&state.pool, attempt, async |attempt| {
        quote_forms::decide(&state.pool, &attempt, org, quote, key, accept, base).await
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
            "This quote has expired",
            &format!(
                "It was valid until {}. Nothing was accepted: ask {} for a new quote.",
                found.quote.expires_on, found.org_name
            ),
            &token,
        ),
        Ok(Decision::Refused(_)) => not_found(),
        Err(app::error::AppError::NotFound) => not_found(),
        Err(app::error::AppError::BadRequest(why)) => {
            // Another submit of this button is being recorded right now.
            let mut response = answer(StatusCode::CONFLICT, "One moment", &why, &token);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            response
        }
        Err(e) => unavailable("public quote decision", e),
    }
}

/// A short page saying what happened, with the way back to the quote.
fn answer(status: StatusCode, title: &str, text: &str, token: &str) -> Response {
    let body = document(
        title,
        view! {
            <main class="public">
                <h1>{title.to_owned()}</h1>
                <p>{text.to_owned()}</p>
                <p><a href=format!("/q/{token}")>"Back to the quote"</a></p>
            </main>
        }
        .to_html(),
    );
    private((status, axum::response::Html(body)).into_response())
}

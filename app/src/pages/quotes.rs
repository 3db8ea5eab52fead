//! Quotes: the list (`/quotes`), the new-quote form (`/quotes/new`: the invoice form with its live
//! totals, plus the expiry and what accepting does; claimed once per rendering) and a quote's page
//! (`/quotes/{id}`: what it proposes, its customer page, Send, and the invoice once accepted), and a
//! draft's edit form (`/quotes/{id}/edit`).

use leptos::prelude::*;

use crate::pages::invoices::form::InvoiceFields;
use crate::pages::invoices::{line_rows, totals_rows};
use crate::pages::layout::{
    error_banner, field_error, loaded, route_resource, Head, NotFound, Table,
};
use crate::rpc::quotes::{
    edit_quote_form, get_quote, list_quotes, new_quote_form, CreateQuote, SendQuote, UpdateQuote,
};
use model::error::{AppError, FieldErrors};
use model::{format_money, Quote, QuoteStatus};

fn status_label(status: QuoteStatus) -> &'static str {
    match status {
        QuoteStatus::Draft => "Draft",
        QuoteStatus::Open => "Open",
        QuoteStatus::Accepted => "Accepted",
        QuoteStatus::Declined => "Declined",
        QuoteStatus::Expired => "Expired",
    }
}

const QUOTES: Table = Table {
    class: "quotes",
    label: "Quotes",
    cols: &["Number", "Customer", "Total", "Expires", "Status"],
    num: &["Total"],
    empty: "No quotes yet.",
};

#[component]
pub fn QuotesPage() -> impl IntoView {
    let list = Resource::new(|| (), |_| list_quotes());
    view! {
        <section class="card">
            <div class="heading">
                <h1>"Quotes"</h1>
                <a class="button" href="/quotes/new">"New quote"</a>
            </div>
            {loaded(list, move |rows| QUOTES.rows(rows, |q: Quote| view! {
                <tr class="quote-row">
                    <td><a href=format!("/quotes/{}", q.id)>{q.number.clone().unwrap_or_else(|| "Draft".into())}</a></td>
                    <td>{q.customer_name.clone()}</td>
                    <td class="num">{format_money(q.total_cents, &q.currency)}</td>
                    <td>{q.expires_on.to_string()}</td>
                    <td class=format!("status {}", q.status.as_str())>{status_label(q.status)}</td>
                </tr>
            }))}
        </section>
    }
}

#[component]
pub fn NewQuotePage() -> impl IntoView {
    let form = Resource::new(|| (), |_| new_quote_form());
    let create = ServerAction::<CreateQuote>::new();
    // Without JavaScript a refused submit comes back through the URL with its key and values.
    let rejected = match create.value().get_untracked() {
        Some(Err(e)) => Some(e),
        _ => None,
    };
    let errors = Signal::derive(move || match create.value().get() {
        Some(Err(e)) => e.error.field_errors().cloned().unwrap_or_default(),
        _ => FieldErrors::new(),
    });
    view! {
        <section class="card">
            <h1>"New quote"</h1>
            <Suspense fallback=|| view! { <p>"Loading…"</p> }>
                {move || {
                    let rejected = rejected.clone();
                    Suspend::new(async move {
                        match form.await {
                            Ok(p) => {
                                let key = (rejected.as_ref())
                                    .and_then(|e| e.error.attempt()?.idempotency_key.clone())
                                    .unwrap_or_else(|| p.key.to_string());
                                let values = rejected.and_then(|e| e.values).unwrap_or_default();
                                let expires = (p.today + chrono::Days::new(30)).to_string();
                                view! {
                                    {move || create.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e.error))}
                                    <ActionForm action=create attr:class="new-quote" attr:aria-label="New quote">
                                        <input type="hidden" name="idempotency_key" value=key />
                                        <InvoiceFields values errors more_lines="/quotes/new".to_owned() />
                                        {quote_fields(expires, "finalize", p.today, errors)}
                                        <button type="submit" class="primary create-quote" data-pending="Creating…">
                                            "Create quote"
                                        </button>
                                        " "
                                        <button type="submit" class="secondary save-draft" name="input[draft]" value="true" data-pending="Saving…">
                                            "Save draft"
                                        </button>
                                    </ActionForm>
                                }
                                    .into_any()
                            }
                            Err(e) => error_banner(&e).into_any(),
                        }
                    })
                }}
            </Suspense>
        </section>
    }
}

#[component]
pub fn QuotePage() -> impl IntoView {
    let send = ServerAction::<SendQuote>::new();
    let page = route_resource(get_quote);
    view! {
        {loaded(page, move |p| {
                        let q = p.quote;
                        let inv = p.preview;
                        let sendable = p.can_edit && matches!(q.status, QuoteStatus::Draft | QuoteStatus::Open);
                        view! {
                            <section class="card quote">
                                <div class="heading">
                                    <h1>{format!("Quote {}", q.number.clone().unwrap_or_else(|| "(draft)".into()))}</h1>
                                    <span class=format!("status {}", q.status.as_str())>{status_label(q.status)}</span>
                                </div>
                                {move || send.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                <dl>
                                    <dt>"Customer"</dt>
                                    <dd class="customer">{q.customer_name.clone()}</dd>
                                    <dt>"Email"</dt>
                                    <dd>{q.customer_email.clone()}</dd>
                                    <dt>"Valid until"</dt>
                                    <dd class="expires">{q.expires_on.to_string()}</dd>
                                    <dt>"When accepted"</dt>
                                    <dd>{match q.on_accept {
                                        model::RunAction::Draft => "a draft invoice is made",
                                        model::RunAction::Finalize => "the invoice is issued",
                                        model::RunAction::Send => "the invoice is issued and emailed",
                                    }}</dd>
                                    {q.public_url.clone().map(|url| {
                                        let text = url.clone();
                                        view! {
                                        <dt>"Customer's page"</dt>
                                        <dd><a class="public-link" href=url>{text}</a></dd>
                                        }
                                    })}
                                    {q.invoice_id.map(|id| view! {
                                        <dt>"Invoice"</dt>
                                        <dd><a class="quote-invoice" href=format!("/invoices/{id}")>{p.invoice_number.clone().unwrap_or_else(|| id.to_string())}</a></dd>
                                    })}
                                </dl>
                                {(p.can_edit && q.status == QuoteStatus::Draft).then(|| view! {
                                    <p><a class="edit-quote" href=format!("/quotes/{}/edit", q.id)>"Edit the draft"</a></p>
                                })}
                                {sendable.then(|| view! {
                                    <ActionForm action=send attr:class="send-quote">
                                        <input type="hidden" name="id" value=q.id.to_string() />
                                        <input type="hidden" name="idempotency_key" value=p.send_key.to_string() />
                                        <button type="submit" class="primary">
                                            {if q.status == QuoteStatus::Draft { "Open and send" } else { "Send again" }}
                                        </button>
                                    </ActionForm>
                                })}
                                <div class="table-scroll">
                                    <table>
                                        <Head cols=&["Description", "Qty", "Unit", "Tax", "Amount"] num=&["Qty", "Unit", "Amount"]/>
                                        <tbody>{line_rows(&inv, &model::English)}</tbody>
                                        <tfoot>{totals_rows(&inv, 4, &model::English)}</tfoot>
                                    </table>
                                </div>
                                {(!inv.notes.is_empty()).then(|| view! { <p class="notes">{inv.notes.clone()}</p> })}
                            </section>
                        }
                            .into_any()
                    })}
    }
}

/// The fields beside the invoice's: until when, and what accepting does.
fn quote_fields(
    expires: String,
    on_accept: &str,
    today: chrono::NaiveDate,
    errors: Signal<FieldErrors>,
) -> impl IntoView {
    let error_for = move |field: &'static str| field_error(errors, field);
    let option = |value: &'static str, label: &'static str| {
        view! { <option value=value selected=on_accept == value>{label}</option> }
    };
    view! {
        <fieldset>
            <legend>"The quote"</legend>
            <div class="grid">
                <label>
                    "Valid until"
                    <input type="date" name="quote[expires_on]" value=expires min=today.to_string() required />
                    {error_for("expires_on")}
                </label>
                <label>
                    "When the customer accepts"
                    <select name="quote[on_accept]">
                        {option("draft", "make a draft invoice")}
                        {option("finalize", "issue the invoice")}
                        {option("send", "issue and email the invoice")}
                    </select>
                    {error_for("on_accept")}
                </label>
            </div>
        </fieldset>
    }
}

/// A draft quote's edit form: its key comes with the draft; a double submit saves once.
#[component]
pub fn EditQuotePage() -> impl IntoView {
    let action = ServerAction::<UpdateQuote>::new();
    let draft = route_resource(edit_quote_form);
    let errors = Signal::derive(move || match action.value().get() {
        Some(Err(e)) => e.field_errors().cloned().unwrap_or_default(),
        _ => FieldErrors::new(),
    });
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match draft.await {
                    Ok(model::QuoteEdit { id, key, form, quote, today }) => view! {
                        <section class="card">
                            <h1>"Edit draft quote"</h1>
                            {move || action.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                            <ActionForm action>
                                <input type="hidden" name="quote_id" value=id.to_string() />
                                <input type="hidden" name="idempotency_key" value=key.to_string() />
                                <InvoiceFields values=form errors more_lines=format!("/quotes/{id}/edit") />
                                {quote_fields(quote.expires_on.clone(), &quote.on_accept, today, errors)}
                                <button type="submit" class="primary save-quote" data-pending="Saving…">
                                    "Save draft"
                                </button>
                                " "
                                <a href=format!("/quotes/{id}")>"Cancel"</a>
                            </ActionForm>
                        </section>
                    }
                        .into_any(),
                    Err(AppError::NotFound) => view! { <NotFound /> }.into_any(),
                    Err(e) => error_banner(&e).into_any(),
                }
            })}
        </Suspense>
    }
}

//! Customers: the list (searched by the start of a name or email), a new one, one to edit.

use leptos::prelude::*;

use super::filters::{query_param, ExportLink, FilterSearch};
use uuid::Uuid;

use super::layout::{error_banner, field_error, field_errors, loaded, route_resource, Table};
use crate::rpc::customers::{
    get_customer, list_customers, CustomerAction, SaveCustomer, SendPaymentMethodLink,
};
use model::Customer;

const CUSTOMERS: Table = Table {
    class: "customers",
    label: "Customers",
    cols: &["Name", "Email", "Tax id"],
    num: &[],
    empty: "No customers match.",
};

#[component]
pub fn CustomersPage() -> impl IntoView {
    let param = query_param();
    let customers = Resource::new(move || param("q"), list_customers);
    view! {
        <section class="card">
            <div class="heading">
                <h1>"Customers"</h1>
                <a class="button" href="/customers/new">"New customer"</a>
            </div>
            <form method="get" action="/customers" class="filters" role="search">
                <FilterSearch label="Name or email" placeholder="Name or email starts with…" />
                <button type="submit">"Search"</button>
            </form>
            <p class="exports">
                <ExportLink kind="customers" label="Download these as CSV" />
                " · "
                <a href="/customers/import">"Import from a CSV file"</a>
            </p>
            {loaded(customers, move |list| CUSTOMERS.rows(list, |c| view! {
                <tr class="customer-row">
                    <td><a href=format!("/customers/{}", c.id)>{c.name}</a></td>
                    <td>{c.email}</td>
                    <td>{c.vat_id.unwrap_or_default()}</td>
                </tr>
            }))}
        </section>
    }
}

#[component]
pub fn NewCustomerPage() -> impl IntoView {
    // Minted on the server at render: every submit of this rendered form is the same attempt.
    let minted = super::rendered_form_key();
    view! {
        <section class="card">
            <h1>"New customer"</h1>
            <CustomerForm key=minted customer=None />
        </section>
    }
}

#[component]
pub fn CustomerPage() -> impl IntoView {
    let act = ServerAction::<CustomerAction>::new();
    let page = route_resource(get_customer);
    view! {
        {loaded(page, move |p| view! {
                        <section class="card">
                            <h1 class="customer-name">{p.customer.name.clone()}</h1>
                            <p>
                                <a href=format!("/invoices?q={}", urlencoding_min(&p.customer.name))>"Their invoices"</a>
                                " · "
                                <a class="statement" href=format!("/customers/{}/statement", p.customer.id)>"Statement"</a>
                            </p>
                            {(!p.credit_balance.is_empty()).then(|| {
                                let shown = p
                                    .credit_balance
                                    .iter()
                                    .map(|(currency, cents)| model::format_money(*cents, currency))
                                    .collect::<Vec<_>>()
                                    .join(", ");
                                view! {
                                    <p class="credit-balance">
                                        {format!("Credit balance: {shown}. Apply it from an open invoice's page.")}
                                    </p>
                                }
                            })}
                            {statement_link(&p, act)}
                            {payment_methods(&p)}
                            <crate::pages::reminders::RemindersToggle what="customer" id=p.customer.id off=p.reminders_off key=p.reminders_key />
                            <CustomerForm key=p.key customer=Some(p.customer) />
                            <crate::pages::invoices::CreditNotes notes=p.credit_notes />
                        </section>
                    }.into_any())}
    }
}

/// The customer's statement link and the buttons their state allows: a new link (the old one stops
/// at once) while not archived, and archive or unarchive. One key, minted when the page was
/// rendered, names every button's attempt; a double click applies once.
fn statement_link(p: &model::CustomerPage, act: ServerAction<CustomerAction>) -> impl IntoView {
    let id = p.customer.id;
    let key = p.action_key;
    let archived = p.archived_at.is_some();
    let state = match (&p.archived_at, &p.statement_url) {
        (Some(at), _) => view! {
            <p class="notice archived" role="status">
                {format!(
                    "Archived {}: their statement link no longer works. Unarchiving does not bring it back; make a new one then.",
                    at.format("%Y-%m-%d"),
                )}
            </p>
        }
        .into_any(),
        (None, Some(url)) => view! {
            <p class="statement-link">
                "Their statement page: " <a class="public-statement" href=url.clone()>{url.clone()}</a>
            </p>
        }
        .into_any(),
        (None, None) => view! {
            <p class="statement-link none">"No statement link: make a new one to share their statement."</p>
        }
        .into_any(),
    };
    let allowed: Vec<(&str, &str)> = if archived {
        vec![("unarchive", "Unarchive")]
    } else {
        vec![("new_link", "New statement link"), ("archive", "Archive")]
    };
    let buttons = p.can_edit.then(|| {
        view! {
            <div class="actions">
                {allowed
                    .into_iter()
                    .map(|(action, label)| {
                        view! {
                            <ActionForm action=act>
                                <input type="hidden" name="customer_id" value=id.to_string() />
                                <input type="hidden" name="action" value=action />
                                <input type="hidden" name="idempotency_key" value=key.to_string() />
                                <button type="submit" class=format!("action {action}")>
                                    {label}
                                </button>
                            </ActionForm>
                        }
                    })
                    .collect_view()}
            </div>
        }
    });
    view! {
        {state}
        {buttons}
        {move || act.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
    }
}

/// What the customer saved for automatic charges (brand and last four digits, or the mandate's
/// reference), and the button that emails them a link to save one.
fn payment_methods(p: &model::CustomerPage) -> impl IntoView {
    let send = ServerAction::<SendPaymentMethodLink>::new();
    let rows = p
        .payment_methods
        .iter()
        .map(|m| {
            let what = match m.kind.as_str() {
                "card" => format!(
                    "{} card ending {}",
                    m.brand.as_deref().unwrap_or("A"),
                    m.last4.as_deref().unwrap_or("")
                ),
                _ => format!(
                    "SEPA Direct Debit, mandate {} ({})",
                    m.mandate_reference.as_deref().unwrap_or(""),
                    m.mandate_status.as_deref().unwrap_or("status unknown")
                ),
            };
            view! {
                <li class="payment-method">
                    {what}
                    {m.default.then_some(" (default: charged automatically)")}
                </li>
            }
        })
        .collect_view();
    let empty = p.payment_methods.is_empty();
    let (id, key) = (p.customer.id, p.link_key);
    view! {
        <section class="payment-methods" aria-labelledby="methods-heading">
            <h2 id="methods-heading">"Payment methods"</h2>
            {empty.then(|| view! { <p class="none">"None saved: invoices collected automatically fall back to being sent."</p> })}
            <ul>{rows}</ul>
            {p.can_edit.then(|| view! {
                <ActionForm action=send>
                    <input type="hidden" name="customer_id" value=id.to_string() />
                    <input type="hidden" name="idempotency_key" value=key.to_string() />
                    <button type="submit" class="action send-method-link">"Email a link to save a payment method"</button>
                </ActionForm>
            })}
            {move || send.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
        </section>
    }
}

/// Percent-encodes what a query value cannot carry as is.
fn urlencoding_min(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The customer's fields; saving creates (no `customer`) or replaces (with one) its details.
#[component]
fn CustomerForm(key: Uuid, customer: Option<Customer>) -> impl IntoView {
    let action = ServerAction::<SaveCustomer>::new();
    let errors = field_errors(action.value());
    let error_for = move |field: &'static str| field_error(errors, field);
    let id = customer
        .as_ref()
        .map(|c| c.id.to_string())
        .unwrap_or_default();
    let label = if customer.is_some() {
        "Save customer"
    } else {
        "Create customer"
    };
    let c = customer.map(|c| c.input()).unwrap_or_default();
    view! {
        {move || action.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
        <ActionForm action>
            <input type="hidden" name="idempotency_key" value=key.to_string() />
            <input type="hidden" name="customer_id" value=id />
            <div class="grid">
                <label>
                    "Name"
                    <input type="text" name="input[name]" value=c.name maxlength="200" />
                    {error_for("name")}
                </label>
                <label>
                    "Email"
                    <input type="text" inputmode="email" name="input[email]" value=c.email maxlength="254" />
                    {error_for("email")}
                </label>
                <label>
                    "VAT number"
                    <input type="text" name="input[vat_id]" value=c.vat_id.unwrap_or_default() maxlength="30" />
                    {error_for("vat_id")}
                </label>
                <label>
                    "Buyer reference"
                    <input type="text" name="input[buyer_reference]" value=c.buyer_reference maxlength="200" />
                    <span class="hint">"What their invoices must quote, e.g. a Leitweg-ID."</span>
                    {error_for("buyer_reference")}
                </label>
                <label>
                    "Peppol id"
                    <input type="text" name="input[peppol_id]" value=c.peppol_id.unwrap_or_default() maxlength="60" placeholder="0208:0123456749" />
                    <span class="hint">"Scheme, colon, value: 0208 Belgian enterprise number, 0088 GLN, 9930 German VAT number, 0204 Leitweg-ID…"</span>
                    {error_for("peppol_id")}
                </label>
                <label>
                    "Invoices reach them by"
                    <select name="input[einvoice_channel]">
                        <option value="email" selected=c.einvoice_channel == model::peppol::EinvoiceChannel::Email>"Email"</option>
                        <option value="peppol" selected=c.einvoice_channel == model::peppol::EinvoiceChannel::Peppol>"Peppol (sent when finalized)"</option>
                    </select>
                    {error_for("einvoice_channel")}
                </label>
                <label>
                    "Language"
                    <select name="input[locale]">
                        <option value="" selected=c.locale.is_none()>"The organisation's"</option>
                        {model::Locale::ALL.into_iter().map(|l| view! {
                            <option value=l.as_str() selected=c.locale == Some(l)>{l.name()}</option>
                        }).collect_view()}
                    </select>
                    <span class="hint">"Of their pages, PDFs and emails."</span>
                </label>
            </div>
            <crate::pages::party::AddressFields form="input" address=c.address errors />
            <label>
                "Notes"
                <textarea name="input[notes]" rows="2" maxlength="2000">{c.notes}</textarea>
                {error_for("notes")}
            </label>
            <button type="submit" class="primary">{label}</button>
        </ActionForm>
    }
}

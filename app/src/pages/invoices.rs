//! Invoice list, detail and the create form.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};
use uuid::Uuid;

use super::layout::{error_banner, NotFound};
use crate::error::{AppError, FieldErrors};
use crate::model::{
    format_money, Discount, Invoice, InvoiceForm, InvoicePage, InvoiceStatus, LineForm,
    COMMON_CURRENCIES, MAX_LINES, PAYMENT_TERMS,
};
use crate::rpc::customers::list_customers;
use crate::rpc::invoice_actions::{
    DuplicateInvoice, InvoiceAction, RetryEmail, SendInvoice, SimulatePayment,
};
use crate::rpc::invoices::{get_draft, get_invoice, list_invoices, CreateInvoice, UpdateDraft};
use crate::rpc::settings::list_tax_rates;

const STATUSES: &[&str] = &[
    "draft",
    "open",
    "overdue",
    "paid",
    "uncollectible",
    "void",
    "refunded",
];
const PAYMENT_STATES: &[&str] = &[
    "unpaid",
    "processing",
    "partially_paid",
    "paid",
    "partially_refunded",
    "refunded",
    "disputed",
];

#[component]
pub fn InvoiceListPage() -> impl IntoView {
    let query = use_query_map();
    let param = move |name: &str| query.with(|q| q.get(name)).filter(|v| !v.is_empty());
    let invoices = Resource::new(
        move || {
            (
                param("status"),
                param("payment_state"),
                param("q"),
                param("before"),
            )
        },
        |(status, payment_state, q, before)| list_invoices(status, payment_state, q, before),
    );
    let selected =
        move |name: &'static str, value: &'static str| param(name).as_deref() == Some(value);
    view! {
        <section class="card">
            <div class="heading">
                <h1>"Invoices"</h1>
                <a class="button" href="/invoices/new">"New invoice"</a>
            </div>
            <form method="get" action="/invoices" class="filters" role="search">
                <label class="sr-only" for="filter-status">"Status"</label>
                <select id="filter-status" name="status">
                    <option value="">"Any status"</option>
                    {STATUSES
                        .iter()
                        .map(|s| view! { <option value=*s selected=move || selected("status", s)>{*s}</option> })
                        .collect_view()}
                </select>
                <label class="sr-only" for="filter-payment">"Payment"</label>
                <select id="filter-payment" name="payment_state">
                    <option value="">"Any payment"</option>
                    {PAYMENT_STATES
                        .iter()
                        .map(|s| view! { <option value=*s selected=move || selected("payment_state", s)>{s.replace('_', " ")}</option> })
                        .collect_view()}
                </select>
                <label class="sr-only" for="filter-q">"Number or customer"</label>
                <input id="filter-q" type="search" name="q" placeholder="INV-… or customer" value=move || param("q") />
                <button type="submit">"Filter"</button>
            </form>
            <Suspense fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match invoices.await {
                        Ok(page) if page.rows.is_empty() => {
                            let filtered = ["status", "payment_state", "q", "before"]
                                .into_iter()
                                .any(|name| param(name).is_some());
                            let text = if filtered { "No invoices match." } else { "No invoices yet." };
                            view! { <p class="empty">{text}</p> }.into_any()
                        }
                        Ok(page) => {
                            let next = page.next_cursor.clone();
                            view! {
                                <div class="table-scroll">
                                <table class="invoices">
                                    <thead>
                                        <tr>
                                            <th>"Number"</th>
                                            <th>"Customer"</th>
                                            <th>"Due"</th>
                                            <th>"Status"</th>
                                            <th class="num">"Total"</th>
                                            <th class="num">"Paid"</th>
                                        </tr>
                                    </thead>
                                    <tbody>
                                        {page
                                            .rows
                                            .into_iter()
                                            .map(|inv| {
                                                view! {
                                                    <tr class="invoice-row">
                                                        <td>
                                                            <a href=format!("/invoices/{}", inv.id)>{inv.number.unwrap_or_else(|| "Draft".to_owned())}</a>
                                                        </td>
                                                        <td>{inv.customer_name}</td>
                                                        <td>{inv.due_date.to_string()}</td>
                                                        <td>
                                                            <span class=format!(
                                                                "status {}",
                                                                inv.status.as_str(),
                                                            )>{inv.status.as_str()}</span>
                                                            {inv.overdue.then(|| view! { " " <span class="status overdue">"overdue"</span> })}
                                                        </td>
                                                        <td class="num">
                                                            {format_money(inv.total_cents, &inv.currency)}
                                                        </td>
                                                        <td class="num">
                                                            {format_money(inv.amount_paid_cents, &inv.currency)}
                                                        </td>
                                                    </tr>
                                                }
                                            })
                                            .collect_view()}
                                    </tbody>
                                </table>
                                </div>
                                {next
                                    .map(|cursor| {
                                        view! {
                                            <p>
                                                <a
                                                    class="older"
                                                    href=move || {
                                                        let mut q = query.get();
                                                        q.replace("before", cursor.clone());
                                                        format!("/invoices{}", q.to_query_string())
                                                    }
                                                >
                                                    {move || {
                                                        // The overdue list runs most overdue first, not newest first.
                                                        if query.get().get_str("status") == Some("overdue") {
                                                            "Next page →"
                                                        } else {
                                                            "Older invoices →"
                                                        }
                                                    }}
                                                </a>
                                            </p>
                                        }
                                    })}
                            }
                                .into_any()
                        }
                        Err(e) => error_banner(&e).into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
pub fn InvoicePage() -> impl IntoView {
    let params = use_params_map();
    let simulate = ServerAction::<SimulatePayment>::new();
    let send = ServerAction::<SendInvoice>::new();
    let retry = ServerAction::<RetryEmail>::new();
    let act = ServerAction::<InvoiceAction>::new();
    let duplicate = ServerAction::<DuplicateInvoice>::new();
    // Refetched after each action on the page.
    let invoice = Resource::new(
        move || {
            (
                params.with(|p| p.get("id").unwrap_or_default()),
                simulate.version().get()
                    + send.version().get()
                    + retry.version().get()
                    + act.version().get(),
            )
        },
        |(id, _)| get_invoice(id),
    );
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match invoice.await {
                    Ok(InvoicePage { invoice: inv, simulate_payments, send_key, action_key, emails, payments, anomalies, history, can_edit, payments_enabled }) => {
                        let currency = inv.currency.clone();
                        let can_simulate = can_edit && simulate_payments && inv.status == InvoiceStatus::Open;
                        let can_send = can_edit && !matches!(inv.status, InvoiceStatus::Draft | InvoiceStatus::Void);
                        let invoice_id = inv.id.to_string();
                        let (simulate_id, send_id) = (invoice_id.clone(), invoice_id.clone());
                        let buttons = lifecycle_buttons(&inv, action_key, act, duplicate);
                        view! {
                            <section class="card invoice">
                                <div class="heading">
                                    <h1 class="number">{inv.number.clone().unwrap_or_else(|| "Draft".to_owned())}</h1>
                                    <span class=format!(
                                        "status {}",
                                        inv.status.as_str(),
                                    )>{inv.status.as_str()}</span>
                                    {inv.overdue.then(|| view! { <span class="status overdue">"overdue"</span> })}
                                    <span class="payment-state">{inv.payment_state.label()}</span>
                                </div>
                                {can_edit.then_some(buttons)}
                                {move || act.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                {move || duplicate.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                {inv.public_url.clone().map(|url| view! {
                                    <p class="public-link">
                                        "Customer's page: " <a href=url.clone()>{url.clone()}</a>
                                        " · " <a href=format!("{url}/pdf") class="pdf">"Download PDF"</a>
                                        {match inv.viewed_at {
                                            Some(at) => format!(" · viewed {}", at.format("%Y-%m-%d %H:%M UTC")),
                                            None => " · not viewed yet".to_owned(),
                                        }}
                                    </p>
                                })}
                                {(!payments_enabled && inv.public_url.is_some()).then(|| view! {
                                    <p class="notice payments-disabled" role="status">
                                        "Payments not enabled yet: the customer's page shows the invoice \
                                         without a Pay button until the operator of this site enables \
                                         card payments for your organisation."
                                    </p>
                                })}
                                <dl>
                                    <dt>"Customer"</dt>
                                    <dd class="customer">{inv.customer_name.clone()}</dd>
                                    <dt>"Email"</dt>
                                    <dd>{inv.customer_email.clone()}</dd>
                                    <dt>"Due"</dt>
                                    <dd>{due_text(&inv)}</dd>
                                </dl>
                                <table>
                                    <thead>
                                        <tr>
                                            <th>"Description"</th>
                                            <th class="num">"Qty"</th>
                                            <th class="num">"Unit"</th>
                                            <th>"Tax"</th>
                                            <th class="num">"Amount"</th>
                                        </tr>
                                    </thead>
                                    <tbody>
                                        {inv
                                            .lines
                                            .iter()
                                            .map(|l| {
                                                view! {
                                                    <tr>
                                                        <td>{l.description.clone()}</td>
                                                        <td class="num">{l.quantity.to_string()}</td>
                                                        <td class="num">
                                                            {format_money(l.unit_amount_cents, &currency)}
                                                        </td>
                                                        <td class="tax">
                                                            {l.tax_name.clone().zip(l.tax_percent).map(|(n, p)| format!("{n} {p}%"))}
                                                        </td>
                                                        <td class="num">{format_money(l.amount_cents, &currency)}</td>
                                                    </tr>
                                                }
                                            })
                                            .collect_view()}
                                    </tbody>
                                    <tfoot>
                                        {totals_rows(&inv, 4)}
                                        <tr>
                                            <td colspan="4">"Paid"</td>
                                            <td class="num">{format_money(inv.amount_paid_cents, &currency)}</td>
                                        </tr>
                                    </tfoot>
                                </table>
                                {(!inv.notes.is_empty()).then(|| view! { <p class="notes">{inv.notes.clone()}</p> })}
                                {(!anomalies.is_empty())
                                    .then(|| {
                                        view! {
                                            <ul class="anomalies" role="alert">
                                                {anomalies
                                                    .into_iter()
                                                    .map(|a| view! { <li class="anomaly">{a}</li> })
                                                    .collect_view()}
                                            </ul>
                                        }
                                    })}
                                {(!payments.is_empty())
                                    .then(|| {
                                        let currency = currency.clone();
                                        view! {
                                            <h2>"Payments"</h2>
                                            <table class="payments">
                                                <tbody>
                                                    {payments
                                                        .into_iter()
                                                        .map(|p| {
                                                            let shown = match p.status.as_str() {
                                                                "pending" => "processing".to_owned(),
                                                                other => other.to_owned(),
                                                            };
                                                            view! {
                                                                <tr class=format!("payment {}", p.status)>
                                                                    <td><code>{p.payment_intent}</code></td>
                                                                    <td class="num">{format_money(p.amount_cents, &currency)}</td>
                                                                    <td class="payment-status">{shown}</td>
                                                                    <td>
                                                                        {(p.refunded_cents > 0)
                                                                            .then(|| format!("refunded {}", format_money(p.refunded_cents, &currency)))}
                                                                        {p.dispute.map(|d| format!(" dispute {d}"))}
                                                                        {p.failure}
                                                                    </td>
                                                                </tr>
                                                            }
                                                        })
                                                        .collect_view()}
                                                </tbody>
                                            </table>
                                        }
                                    })}
                                {can_simulate
                                    .then(|| {
                                        view! {
                                            <ActionForm action=simulate>
                                                <input type="hidden" name="invoice_id" value=simulate_id.clone() />
                                                <button type="submit" class="simulate" disabled=move || simulate.pending().get()>
                                                    "Simulate payment (dev)"
                                                </button>
                                                " A signed Stripe checkout.session.completed, sent to /webhooks/stripe."
                                            </ActionForm>
                                        }
                                    })}
                                {move || {
                                    simulate
                                        .value()
                                        .get()
                                        .and_then(|r| r.err())
                                        .and_then(|e| error_banner(&e))
                                }}
                                {can_send.then(|| view! {
                                    <ActionForm action=send>
                                        <input type="hidden" name="invoice_id" value=send_id.clone() />
                                        <input type="hidden" name="idempotency_key" value=send_key.to_string() />
                                        <button type="submit" class="send" disabled=move || send.pending().get()>
                                            "Send invoice to " {inv.customer_email.clone()}
                                        </button>
                                    </ActionForm>
                                })}
                                {move || send.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                {(!emails.is_empty())
                                    .then(|| {
                                        view! {
                                            <h2>"Emails"</h2>
                                            <table class="emails">
                                                <tbody>
                                                    {emails
                                                        .into_iter()
                                                        .map(|e| {
                                                            let dead = can_edit && e.status == "dead";
                                                            let (email_id, inv_id) = (e.id.to_string(), invoice_id.clone());
                                                            view! {
                                                                <tr class=format!("email {}", e.status)>
                                                                    <td>{if e.kind == "payment_receipt" { "Payment receipt" } else { "Invoice" }}</td>
                                                                    <td><span class=format!("status {}", e.status)>{e.status.clone()}</span></td>
                                                                    <td>{format!("{} attempt(s)", e.attempts)}</td>
                                                                    <td class="error">{e.last_error.unwrap_or_default()}</td>
                                                                    <td>
                                                                        {dead.then(|| view! {
                                                                            <ActionForm action=retry>
                                                                                <input type="hidden" name="id" value=email_id.clone() />
                                                                                <input type="hidden" name="invoice_id" value=inv_id.clone() />
                                                                                <button type="submit" class="link">"Retry"</button>
                                                                            </ActionForm>
                                                                        })}
                                                                    </td>
                                                                </tr>
                                                            }
                                                        })
                                                        .collect_view()}
                                                </tbody>
                                            </table>
                                        }
                                    })}
                                {(!history.is_empty())
                                    .then(|| {
                                        view! {
                                            <h2>"History"</h2>
                                            <table class="activity history">
                                                <tbody>
                                                    {history.into_iter().map(super::activity::activity_row).collect_view()}
                                                </tbody>
                                            </table>
                                        }
                                    })}
                                <p>
                                    <a href="/invoices">"All invoices"</a>
                                </p>
                            </section>
                        }
                            .into_any()
                    }
                    Err(AppError::NotFound) => view! { <NotFound /> }.into_any(),
                    Err(e) => error_banner(&e).into_any(),
                }
            })}
        </Suspense>
    }
}

/// The lifecycle buttons this invoice's state allows. One key, minted when the page was rendered,
/// names every button's attempt (each claims it in its own namespace); a double click applies once.
fn lifecycle_buttons(
    inv: &crate::model::Invoice,
    key: Uuid,
    act: ServerAction<InvoiceAction>,
    duplicate: ServerAction<DuplicateInvoice>,
) -> impl IntoView {
    let unpaid = inv.payment_state == crate::model::PaymentState::Unpaid;
    let allowed: Vec<(&str, &str)> = match inv.status {
        InvoiceStatus::Draft => vec![("finalize", "Finalize"), ("delete", "Delete draft")],
        InvoiceStatus::Open if unpaid => vec![
            ("void", "Void"),
            ("mark_uncollectible", "Mark uncollectible"),
        ],
        InvoiceStatus::Open => vec![("mark_uncollectible", "Mark uncollectible")],
        InvoiceStatus::Uncollectible if unpaid => vec![("void", "Void")],
        _ => vec![],
    };
    // Any finalized invoice's customer link can be replaced (the old one stops at once).
    let mut allowed = allowed;
    if !matches!(inv.status, InvoiceStatus::Draft | InvoiceStatus::Void) {
        allowed.push(("new_link", "New customer link"));
    }
    let id = inv.id;
    let draft = inv.status == InvoiceStatus::Draft;
    view! {
        <div class="actions">
            {draft.then(|| view! { <a class="button edit" href=format!("/invoices/{id}/edit")>"Edit"</a> })}
            {allowed
                .into_iter()
                .map(|(action, label)| {
                    view! {
                        <ActionForm action=act>
                            <input type="hidden" name="invoice_id" value=id.to_string() />
                            <input type="hidden" name="action" value=action />
                            <input type="hidden" name="idempotency_key" value=key.to_string() />
                            <button type="submit" class=format!("action {action}") disabled=move || act.pending().get()>
                                {label}
                            </button>
                        </ActionForm>
                    }
                })
                .collect_view()}
            <ActionForm action=duplicate>
                <input type="hidden" name="invoice_id" value=id.to_string() />
                <input type="hidden" name="idempotency_key" value=key.to_string() />
                <button type="submit" class="action duplicate" disabled=move || duplicate.pending().get()>
                    "Duplicate"
                </button>
            </ActionForm>
        </div>
    }
}

/// "2027-01-31", with the terms when it has them: "2027-01-31 (net 30)".
pub fn due_text(inv: &Invoice) -> String {
    match inv.payment_terms_days {
        Some(0) => format!("{} (due on receipt)", inv.due_date),
        Some(days) => format!("{} (net {days})", inv.due_date),
        None => inv.due_date.to_string(),
    }
}

/// The rows under an invoice's lines: subtotal, discount, each tax, total (`span` cells before the
/// amounts). The owner's page and the customer's page show the same.
pub fn totals_rows(inv: &Invoice, span: usize) -> impl IntoView {
    let currency = inv.currency.clone();
    let money = move |cents: i64| format_money(cents, &currency);
    let discount = inv.discount.map(|d| {
        let label = match d {
            Discount::Percent(p) => format!("Discount ({p}%)"),
            Discount::AmountCents(_) => "Discount".to_owned(),
        };
        view! {
            <tr class="discount">
                <th scope="row" colspan=span>{label}</th>
                <td class="num">{format!("−{}", money(inv.discount_cents))}</td>
            </tr>
        }
    });
    let taxes = inv
        .taxes
        .iter()
        .map(|t| {
            view! {
                <tr class="tax-total">
                    <th scope="row" colspan=span>{format!("{} {}%", t.name, t.percent)}</th>
                    <td class="num">{money(t.amount_cents)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <tr class="subtotal">
            <th scope="row" colspan=span>"Subtotal"</th>
            <td class="num">{money(inv.subtotal_cents)}</td>
        </tr>
        {discount}
        {taxes}
        <tr>
            <th scope="row" colspan=span>"Total"</th>
            <td class="num total">{money(inv.total_cents)}</td>
        </tr>
    }
}

/// The create form. Its `idempotency_key` is minted once, on the server, when the form is rendered,
/// and carried into the browser by `SharedValue` so hydration keeps the same value: every submit of
/// this rendered form is the same attempt.
#[component]
pub fn NewInvoicePage() -> impl IntoView {
    let action = ServerAction::<CreateInvoice>::new();
    // Positional hydration id: create it first, outside any Suspense.
    let minted = SharedValue::new_str(super::rendered_form_key).into_inner();

    // Without JavaScript a refused submit comes back through the URL; reuse its key and values so
    // the corrected resubmit is the same attempt and nothing typed is lost.
    let rejected = match action.value().get_untracked() {
        Some(Err(AppError::Invalid(r))) => Some(r),
        _ => None,
    };
    let key = rejected
        .as_ref()
        .and_then(|r| r.idempotency_key.clone())
        .unwrap_or_else(|| minted.to_string());
    let values = rejected.and_then(|r| r.values).unwrap_or_default();

    let errors = Signal::derive(move || match action.value().get() {
        Some(Err(e)) => e.field_errors().cloned().unwrap_or_default(),
        _ => FieldErrors::new(),
    });
    let pending = action.pending();

    view! {
        <section class="card">
            <h1>"New invoice"</h1>
            {move || action.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            <ActionForm action>
                <input type="hidden" name="idempotency_key" value=key />
                <InvoiceFields values errors more_lines="/invoices/new".to_owned() offer_save_customer=true />
                <button type="submit" class="primary" disabled=move || pending.get()>
                    {move || if pending.get() { "Creating…" } else { "Create invoice" }}
                </button>
                " "
                <button type="submit" class="secondary save-draft" name="input[draft]" value="true" disabled=move || pending.get()>
                    "Save draft"
                </button>
            </ActionForm>
        </section>
    }
}

/// A draft's edit form. Its key comes with the draft (minted by the server when it rendered the page,
/// and carried through hydration with the resource), and so does the version it edits: a double
/// click saves once, and a save from a page someone else has saved since is refused, the typed values
/// kept on the page.
#[component]
pub fn EditInvoicePage() -> impl IntoView {
    let params = use_params_map();
    let action = ServerAction::<UpdateDraft>::new();
    let draft = Resource::new(
        move || params.with(|p| p.get("id").unwrap_or_default()),
        get_draft,
    );
    // Without JavaScript a refused save comes back through the URL with its key and values.
    let rejected = match action.value().get_untracked() {
        Some(Err(AppError::Invalid(r))) => Some(r),
        _ => None,
    };
    let errors = Signal::derive(move || match action.value().get() {
        Some(Err(e)) => e.field_errors().cloned().unwrap_or_default(),
        _ => FieldErrors::new(),
    });
    let pending = action.pending();
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || {
                let rejected = rejected.clone();
                Suspend::new(async move {
                    match draft.await {
                        Ok(crate::model::DraftEdit { id, version, key, form }) => {
                            let key = rejected
                                .as_ref()
                                .and_then(|r| r.idempotency_key.clone())
                                .unwrap_or_else(|| key.to_string());
                            let values = rejected.and_then(|r| r.values).unwrap_or(form);
                            view! {
                                <section class="card">
                                    <h1>"Edit draft"</h1>
                                    {move || action.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                    <ActionForm action>
                                        <input type="hidden" name="invoice_id" value=id.to_string() />
                                        <input type="hidden" name="idempotency_key" value=key />
                                        <input type="hidden" name="version" value=version.to_string() />
                                        <InvoiceFields values errors more_lines=format!("/invoices/{id}/edit") />
                                        <button type="submit" class="primary save" disabled=move || pending.get()>
                                            {move || if pending.get() { "Saving…" } else { "Save draft" }}
                                        </button>
                                        " "
                                        <a href=format!("/invoices/{id}")>"Cancel"</a>
                                    </ActionForm>
                                </section>
                            }
                                .into_any()
                        }
                        Err(AppError::NotFound) => view! { <NotFound /> }.into_any(),
                        Err(e) => error_banner(&e).into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

/// The invoice's fields and line rows, shared by the new-invoice and edit-draft forms. Spare rows
/// come from `?lines=N` (so "+ Add line" works without JavaScript: `more_lines` is the page's path).
#[component]
fn InvoiceFields(
    values: InvoiceForm,
    errors: Signal<FieldErrors>,
    more_lines: String,
    /// The create form offers "Save as a new customer"; a draft's edit form does not.
    #[prop(optional)]
    offer_save_customer: bool,
) -> impl IntoView {
    let wanted_rows = use_query_map()
        .with_untracked(|q| q.get("lines").and_then(|n| n.parse::<usize>().ok()))
        .unwrap_or(1);
    let row_count = wanted_rows.max(values.lines.len()).clamp(1, MAX_LINES);
    let rows = RwSignal::new(
        (0..row_count)
            .map(|i| (i, values.lines.get(i).cloned().unwrap_or_default()))
            .collect::<Vec<(usize, LineForm)>>(),
    );
    let next_row_id = StoredValue::new(row_count);

    let errors = move || errors.get();
    let error_for = move |field: String| {
        move || {
            errors()
                .get(&field)
                .cloned()
                .map(|m| view! { <span class="error">{m}</span> })
        }
    };
    let InvoiceForm {
        customer_name,
        customer_email,
        currency,
        due_date,
        customer_id,
        save_customer,
        payment_terms_days,
        discount_kind,
        discount,
        notes,
        ..
    } = values;
    let customers = Resource::new(|| (), |_| list_customers(None));
    // Archived rates too: a draft saved with one keeps it; new picks see only the active ones.
    let tax_rates = Resource::new(|| (), |_| list_tax_rates(true));
    let picked = customer_id.unwrap_or_default();
    let currency = if currency.is_empty() {
        "usd".to_owned()
    } else {
        currency
    };
    let add_row = move |ev: leptos::ev::MouseEvent| {
        ev.prevent_default();
        if rows.with(|r| r.len()) < MAX_LINES {
            let id = next_row_id.get_value();
            next_row_id.set_value(id + 1);
            rows.update(|r| r.push((id, LineForm::default())));
        }
    };

    view! {
        <label>
            "Customer"
            <Suspense fallback=|| view! { <select disabled=true><option>"Loading…"</option></select> }>
                {move || {
                    let picked = picked.clone();
                    Suspend::new(async move {
                        let list = customers.await.unwrap_or_default();
                        view! {
                            <select name="input[customer_id]">
                                <option value="">"None: type the customer's name and email below"</option>
                                {list
                                    .into_iter()
                                    .map(|c| {
                                        let id = c.id.to_string();
                                        let selected = id == picked;
                                        view! { <option value=id selected=selected>{format!("{} <{}>", c.name, c.email)}</option> }
                                    })
                                    .collect_view()}
                            </select>
                        }
                    })
                }}
            </Suspense>
            <span class="hint">"A picked customer's name, email, address and tax id go on the invoice."</span>
            {error_for("customer_id".into())}
        </label>
                <div class="grid">
            <label>
                "Customer name"
                <input type="text" name="input[customer_name]" value=customer_name maxlength="200" />
                {error_for("customer_name".into())}
            </label>
            <label>
                "Customer email"
                // Text, not type=email: the server's message, not the browser's, explains what is wrong.
                <input
                    type="text"
                    inputmode="email"
                    autocomplete="off"
                    name="input[customer_email]"
                    value=customer_email
                />
                {error_for("customer_email".into())}
            </label>
            <label>
                "Currency"
                <select name="input[currency]">
                    {COMMON_CURRENCIES
                        .iter()
                        .map(|c| {
                            view! {
                                <option value=*c selected=*c == currency>
                                    {c.to_ascii_uppercase()}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
                {error_for("currency".into())}
            </label>
            <label>
                "Due date"
                <input type="date" name="input[due_date]" value=due_date />
                {error_for("due_date".into())}
            </label>
            <label>
                "Payment terms"
                <select name="input[payment_terms_days]">
                    <option value="" selected=payment_terms_days.is_empty()>"Due on the date above"</option>
                    {PAYMENT_TERMS
                        .iter()
                        .map(|days| {
                            let value = days.to_string();
                            let selected = value == payment_terms_days;
                            let label = if *days == 0 { "Due on receipt".to_owned() } else { format!("Net {days}") };
                            view! { <option value=value selected=selected>{label}</option> }
                        })
                        .collect_view()}
                </select>
                <span class="hint">"Terms set the due date when the invoice is issued."</span>
                {error_for("payment_terms_days".into())}
            </label>
        </div>
        {offer_save_customer
            .then(|| {
                view! {
                    <label class="checkbox">
                        <input type="checkbox" name="input[save_customer]" value="true" checked=save_customer.is_some() />
                        "Save as a new customer (name and email above)"
                    </label>
                }
            })}
        <table class="lines">
            <thead>
                <tr>
                    <th>"Description"</th>
                    <th>"Quantity"</th>
                    <th>"Unit price"</th>
                    <th>"Tax"</th>
                    <th></th>
                </tr>
            </thead>
            <tbody>
                <For
                    each=move || rows.get()
                    key=|(id, _)| *id
                    children=move |(id, line)| {
                        let index = move || rows.with(|r| r.iter().position(|(i, _)| *i == id).unwrap_or(0));
                        let name = move |field: &'static str| move || format!("input[lines][{}][{field}]", index());
                        let line_error = move |field: &'static str| {
                            move || {
                                let key = format!("lines[{}].{field}", index());
                                errors().get(&key).cloned().map(|m| view! { <span class="error">{m}</span> })
                            }
                        };
                        view! {
                            <tr class="line">
                                <td>
                                    <input type="text" name=name("description") value=line.description maxlength="500" aria-label=move || format!("Line {} description", index() + 1) />
                                    {line_error("description")}
                                </td>
                                <td>
                                    <input type="text" inputmode="decimal" name=name("quantity") value=line.quantity placeholder="1" aria-label=move || format!("Line {} quantity", index() + 1) />
                                    {line_error("quantity")}
                                </td>
                                <td>
                                    <input type="text" inputmode="decimal" name=name("unit_amount") value=line.unit_amount placeholder="0.00" aria-label=move || format!("Line {} unit price", index() + 1) />
                                    {line_error("unit_amount_cents")}
                                </td>
                                <td>
                                    <Suspense fallback=|| view! { <select disabled=true aria-label="Tax"><option>"…"</option></select> }>
                                        {move || {
                                            let picked = line.tax_rate_id.clone();
                                            Suspend::new(async move {
                                                let rates = tax_rates.await.unwrap_or_default();
                                                view! {
                                                    <select name=name("tax_rate_id") aria-label=move || format!("Line {} tax", index() + 1)>
                                                        <option value="">"No tax"</option>
                                                        {rates
                                                            .into_iter()
                                                            // An archived rate is offered only to the line that has it.
                                                            .filter(|r| !r.archived || r.id.to_string() == picked)
                                                            .map(|r| {
                                                                let id = r.id.to_string();
                                                                let selected = id == picked;
                                                                view! { <option value=id selected=selected>{format!("{} {}%", r.name, r.percent)}</option> }
                                                            })
                                                            .collect_view()}
                                                    </select>
                                                }
                                            })
                                        }}
                                    </Suspense>
                                    {line_error("tax_rate_id")}
                                </td>
                                <td>
                                    <button
                                        type="button"
                                        class="link remove-line"
                                        on:click=move |_| rows.update(|r| if r.len() > 1 { r.retain(|(i, _)| *i != id) })
                                    >
                                        "Remove"
                                    </button>
                                </td>
                            </tr>
                        }
                    }
                />
            </tbody>
        </table>
        {move || errors().get("lines").cloned().map(|m| view! { <p class="error">{m}</p> })}
        // Works without JavaScript too: the link re-renders the form with one more row.
        <p>
            <a class="add-line" href=move || format!("{more_lines}?lines={}", rows.with(|r| r.len()) + 1) on:click=add_row>
                "+ Add line"
            </a>
        </p>
        <div class="grid">
            <label>
                "Discount"
                <input type="text" inputmode="decimal" name="input[discount]" value=discount placeholder="none" />
                {error_for("discount".into())}
            </label>
            <label>
                "Discount is"
                <select name="input[discount_kind]">
                    <option value="percent" selected=discount_kind != "amount">"a percentage of the subtotal"</option>
                    <option value="amount" selected=discount_kind == "amount">"an amount"</option>
                </select>
            </label>
        </div>
        <label>
            "Notes (shown on the invoice)"
            <textarea name="input[notes]" maxlength="2000" rows="3">{notes}</textarea>
            {error_for("notes".into())}
        </label>
        <p class="hint">"Totals, taxes and the discount are computed when you save (see the invoice page)."</p>
    }
}

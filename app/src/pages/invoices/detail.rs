//! One invoice's page: its lines and totals, payments, emails and history, and the buttons its
//! state allows.

use leptos::prelude::*;
use uuid::Uuid;

use super::{due_text, line_rows, totals_rows};
use crate::pages::layout::{error_banner, route_resource, Head, NotFound};
use crate::rpc::invoice_actions::{
    DuplicateInvoice, InvoiceAction, RetryEmail, SendInvoice, SimulatePayment,
};
use crate::rpc::invoices::get_invoice;
use crate::rpc::payments::{ApplyCredit, CreditInvoice, DeletePayment, RecordPayment};
use model::error::AppError;
use model::{format_money, EmailStatus, InvoicePage, InvoiceStatus};

use super::payments::Payments;

#[component]
pub fn InvoicePage() -> impl IntoView {
    let simulate = ServerAction::<SimulatePayment>::new();
    let send = ServerAction::<SendInvoice>::new();
    let retry = ServerAction::<RetryEmail>::new();
    let act = ServerAction::<InvoiceAction>::new();
    let duplicate = ServerAction::<DuplicateInvoice>::new();
    let record = ServerAction::<RecordPayment>::new();
    let delete_payment = ServerAction::<DeletePayment>::new();
    let credit = ServerAction::<CreditInvoice>::new();
    let apply = ServerAction::<ApplyCredit>::new();
    let invoice = route_resource(get_invoice);
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match invoice.await {
                    Ok(InvoicePage { invoice: inv, simulate_payments, send_key, action_key, emails, payments, anomalies, history, can_edit, payments_enabled, einvoicing, payment_forms }) => {
                        let currency = inv.currency.clone();
                        let can_simulate = can_edit && simulate_payments && inv.status == InvoiceStatus::Open;
                        let can_send = can_edit && !matches!(inv.status, InvoiceStatus::Draft | InvoiceStatus::Void);
                        let invoice_id = inv.id.to_string();
                        let (simulate_id, send_id) = (invoice_id.clone(), invoice_id.clone());
                        // Sending is the next step of an invoice never emailed; sending again waits under "More actions".
                        let sent = emails.iter().any(|e| e.kind == "invoice");
                        let to = inv.customer_email.clone();
                        let send_form = can_send.then(|| view! {
                            <ActionForm action=send>
                                <input type="hidden" name="invoice_id" value=send_id.clone() />
                                <input type="hidden" name="idempotency_key" value=send_key.to_string() />
                                <button type="submit" class=if sent { "send" } else { "primary send" }>
                                    {if sent { "Send again to " } else { "Send invoice to " }} {to}
                                </button>
                            </ActionForm>
                        }.into_any());
                        let (send_first, send_later) = if sent { (None, send_form) } else { (send_form, None) };
                        let simulate_form = can_simulate.then(|| view! {
                            <ActionForm action=simulate attr:class="simulate">
                                <input type="hidden" name="invoice_id" value=simulate_id.clone() />
                                <button type="submit" class="simulate">"Simulate payment (dev)"</button>
                                " A signed Stripe checkout.session.completed, sent to /webhooks/stripe."
                            </ActionForm>
                        });
                        let more = (send_later.is_some() || simulate_form.is_some())
                            .then(|| view! { {send_later} {simulate_form} }.into_any());
                        let record_first = can_edit && inv.status == InvoiceStatus::Open && inv.amount_due_cents > 0;
                        let buttons = lifecycle_buttons(&inv, action_key, act, duplicate, send_first, more);
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
                                {move || simulate.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                {inv.public_url.clone().map(|url| view! {
                                    <p class="public-link">
                                        "Customer's page: " <a href=url.clone()>{url.clone()}</a>
                                        " · " <a href=format!("{url}/pdf") class="pdf">"Download PDF"</a>
                                        {einvoicing.then(|| view! {
                                            " · e-invoice: "
                                            <a href=format!("{url}/einvoice.xml?syntax=cii") class="einvoice-cii">"Factur-X XML (CII)"</a>
                                            " · "
                                            <a href=format!("{url}/einvoice.xml?syntax=ubl") class="einvoice-ubl">"UBL (EN 16931)"</a>
                                        })}
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
                                    <dd>{due_text(&inv, &model::English)}</dd>
                                </dl>
                                <table>
                                    <Head cols=&["Description", "Qty", "Unit", "Tax", "Amount"] num=&["Qty", "Unit", "Amount"]/>
                                    <tbody>
                                        {line_rows(&inv, &model::English)}
                                    </tbody>
                                    <tfoot>
                                        {totals_rows(&inv, 4, &model::English)}
                                        {(inv.amount_credited_cents > 0).then(|| view! {
                                            <tr>
                                                <td colspan="4">"Credited"</td>
                                                <td class="num credited">{format!("-{}", format_money(inv.amount_credited_cents, &currency))}</td>
                                            </tr>
                                        })}
                                        <tr>
                                            <td colspan="4">"Paid"</td>
                                            <td class="num">{format_money(inv.amount_paid_cents, &currency)}</td>
                                        </tr>
                                    </tfoot>
                                </table>
                                {(!inv.notes.is_empty()).then(|| view! { <p class="notes">{inv.notes.clone()}</p> })}
                                {collection(&inv)}
                                {transmissions(&inv)}
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
                                <Payments
                                    invoice=inv.id
                                    currency=currency.clone()
                                    status=inv.status
                                    due_cents=inv.amount_due_cents
                                    payments
                                    forms=payment_forms
                                    can_edit
                                    record
                                    delete=delete_payment
                                    credit
                                    apply
                                    creditable_cents=inv.total_cents - inv.amount_credited_cents
                                    lines=inv.lines.clone()
                                    record_first
                                />
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
                                                            let dead = can_edit && e.status == EmailStatus::Dead;
                                                            let (email_id, inv_id) = (e.id.to_string(), invoice_id.clone());
                                                            view! {
                                                                <tr class=format!("email {}", e.status)>
                                                                    <td>{if e.kind == "payment_receipt" { "Payment receipt" } else { "Invoice" }}</td>
                                                                    <td><span class=format!("status {}", e.status)>{e.status.as_str()}</span></td>
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
                                                    {history.into_iter().map(crate::pages::activity::activity_row).collect_view()}
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

/// Each sending of the invoice (and its credit notes) over Peppol, oldest first.
fn transmissions(inv: &model::Invoice) -> Option<impl IntoView> {
    if inv.transmissions.is_empty() {
        return None;
    }
    let rows = inv
        .transmissions
        .iter()
        .map(|t| {
            let what = match (t.document.as_str(), t.profile.as_str()) {
                ("credit_note", "xrechnung") => "Credit note (XRechnung)",
                ("credit_note", _) => "Credit note (Peppol BIS)",
                (_, "xrechnung") => "Invoice (XRechnung)",
                _ => "Invoice (Peppol BIS)",
            };
            view! {
                <tr class=format!("transmission {}", t.state)>
                    <td>{what}</td>
                    <td class="state">{t.state.clone()}</td>
                    <td class="reason">{t.reason.clone().unwrap_or_default()}</td>
                    <td><code>{t.instance_id.to_string()}</code></td>
                    <td>{t.at.format("%Y-%m-%d %H:%M UTC").to_string()}</td>
                </tr>
            }
        })
        .collect_view();
    Some(view! {
        <section class="transmissions" aria-labelledby="transmissions-heading">
            <h2 id="transmissions-heading">"Sent by Peppol"</h2>
            <table class="transmissions">
                <Head cols=&["Document", "State", "Reason", "Instance id", "When"] num=&[]/>
                <tbody>{rows}</tbody>
            </table>
        </section>
    })
}

/// How the invoice is collected and each automatic charge's outcome, first first.
fn collection(inv: &model::Invoice) -> Option<impl IntoView> {
    use model::collection::CollectionMethod;
    let automatic = inv.collection_method == CollectionMethod::ChargeAutomatically;
    if !automatic && inv.charge_attempts.is_empty() {
        return None;
    }
    let rows = inv
        .charge_attempts
        .iter()
        .map(|a| {
            view! {
                <tr class=format!("charge-attempt {}", a.state.as_str())>
                    <td class="num">{a.n}</td>
                    <td class="state">{a.state.as_str().replace('_', " ")}</td>
                    <td class="reason">{a.reason.clone().unwrap_or_default()}</td>
                    <td>{a.at.format("%Y-%m-%d %H:%M UTC").to_string()}</td>
                </tr>
            }
        })
        .collect_view();
    Some(view! {
        <section class="collection" aria-labelledby="collection-heading">
            <h2 id="collection-heading">"Automatic charges"</h2>
            <p class="collection-method">
                {if automatic {
                    "Charged automatically to the customer's saved payment method, retried on your retry days."
                } else {
                    "Sent for the customer to pay."
                }}
            </p>
            {(!inv.charge_attempts.is_empty()).then(|| view! {
                <table class="charge-attempts">
                    <Head cols=&["Attempt", "State", "Reason", "When"] num=&["Attempt"]/>
                    <tbody>{rows}</tbody>
                </table>
            })}
        </section>
    })
}

/// The buttons this invoice's state allows, the next step first (finalize a draft, send an open
/// invoice not sent yet) and the rest behind "More actions". One key, minted when the page was
/// rendered, names every button's attempt (each claims it in its own namespace); a double click
/// applies once.
fn lifecycle_buttons(
    inv: &model::Invoice,
    key: Uuid,
    act: ServerAction<InvoiceAction>,
    duplicate: ServerAction<DuplicateInvoice>,
    send: Option<AnyView>,
    more: Option<AnyView>,
) -> impl IntoView {
    let unpaid = inv.payment_state == model::PaymentState::Unpaid;
    let mut allowed: Vec<(&'static str, &'static str)> = match inv.status {
        InvoiceStatus::Draft => vec![("finalize", "Finalize"), ("delete", "Delete draft")],
        InvoiceStatus::Open if unpaid => vec![
            ("void", "Void"),
            ("mark_uncollectible", "Mark uncollectible"),
        ],
        InvoiceStatus::Open => vec![("mark_uncollectible", "Mark uncollectible")],
        InvoiceStatus::Uncollectible if unpaid => vec![("void", "Void")],
        _ => vec![],
    };
    if inv.collection_method == model::collection::CollectionMethod::ChargeAutomatically
        && matches!(
            inv.status,
            InvoiceStatus::Open | InvoiceStatus::Uncollectible
        )
    {
        allowed.push(("stop_retries", "Stop automatic charges"));
    }
    // Any finalized invoice's customer link can be replaced (the old one stops at once).
    if !matches!(inv.status, InvoiceStatus::Draft | InvoiceStatus::Void) {
        allowed.push(("new_link", "New customer link"));
    }
    let id = inv.id;
    let draft = inv.status == InvoiceStatus::Draft;
    let button = move |(action, label): (&'static str, &'static str)| {
        let class = if action == "finalize" {
            "action primary finalize".to_owned()
        } else {
            format!("action {action}")
        };
        view! {
            <ActionForm action=act>
                <input type="hidden" name="invoice_id" value=id.to_string() />
                <input type="hidden" name="action" value=action />
                <input type="hidden" name="idempotency_key" value=key.to_string() />
                <button type="submit" class=class>{label}</button>
            </ActionForm>
        }
    };
    let (first, rest): (Vec<_>, Vec<_>) = allowed
        .into_iter()
        .partition(|(action, _)| *action == "finalize");
    view! {
        <div class="actions">
            {first.into_iter().map(button).collect_view()}
            {draft.then(|| view! { <a class="button edit" href=format!("/invoices/{id}/edit")>"Edit"</a> })}
            {send}
            <details class="more-actions">
                <summary>"More actions"</summary>
                <div class="actions">
                    {rest.into_iter().map(button).collect_view()}
                    <ActionForm action=duplicate>
                        <input type="hidden" name="invoice_id" value=id.to_string() />
                        <input type="hidden" name="idempotency_key" value=key.to_string() />
                        <button type="submit" class="action duplicate">"Duplicate"</button>
                    </ActionForm>
                </div>
                {more}
            </details>
        </div>
    }
}

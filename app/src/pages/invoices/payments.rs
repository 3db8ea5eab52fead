//! An invoice's money on its page: its payments (Stripe's and those recorded by hand, each recorded
//! one with a "Delete" button for owners), the "Record a payment" form (bank transfer, cash, cheque,
//! a card taken elsewhere), its credit notes and the "Credit" form.

use leptos::prelude::*;
use uuid::Uuid;

use crate::pages::layout::{error_banner, field_error, field_errors};
use crate::rpc::payments::{ApplyCredit, CreditInvoice, DeletePayment, RecordPayment};
use model::{
    format_money, InvoiceLine, InvoiceStatus, PaymentForms, PaymentMethod, PaymentRow,
    PaymentSource, PaymentStatus, Thousandths,
};

/// The payments table and, for a finalized invoice that is not void, the form that records one.
#[component]
pub fn Payments(
    invoice: Uuid,
    currency: String,
    status: InvoiceStatus,
    /// What is still due (the form's default amount).
    due_cents: i64,
    payments: Vec<PaymentRow>,
    forms: PaymentForms,
    can_edit: bool,
    record: ServerAction<RecordPayment>,
    delete: ServerAction<DeletePayment>,
    credit: ServerAction<CreditInvoice>,
    apply: ServerAction<ApplyCredit>,
    /// What is left to credit (total − credited).
    creditable_cents: i64,
    /// The invoice's lines (the Credit form credits some of them).
    lines: Vec<InvoiceLine>,
    /// Recording a payment is the invoice's next step (it is open, sent and not paid): its form
    /// and the credit that could pay it are unfolded; the rest stays behind a disclosure.
    record_first: bool,
) -> impl IntoView {
    // Each line with what is left uncredited of its quantity.
    let credit_lines: Vec<(i16, String, Thousandths)> = lines
        .into_iter()
        .map(|l| {
            let credited: i64 = forms
                .credit_notes
                .iter()
                .flat_map(|n| &n.lines)
                .filter(|c| c.line_id == l.line_id)
                .map(|c| c.quantity.0)
                .sum();
            (
                l.line_id,
                l.description,
                Thousandths(l.quantity.0 - credited),
            )
        })
        .filter(|(_, _, left)| left.0 > 0)
        .collect();
    let takes_payments = can_edit && !matches!(status, InvoiceStatus::Draft | InvoiceStatus::Void);
    let rows = payments
        .into_iter()
        .zip(
            forms
                .delete_keys
                .iter()
                .copied()
                .chain(std::iter::repeat(Uuid::nil())),
        )
        .map(|(p, key)| {
            // A bank payment is the statement's: it goes with its entry, not by hand.
            let deletable = forms.can_delete && p.source == PaymentSource::Manual;
            payment_row(p, &currency, invoice, deletable.then_some(key), delete)
        })
        .collect::<Vec<_>>();
    let has_rows = !rows.is_empty();
    view! {
        {has_rows.then(|| view! {
            <h2>"Payments"</h2>
            {move || delete.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            <table class="payments">
                <tbody>{rows}</tbody>
            </table>
        })}
        {takes_payments.then(|| view! {
            <RecordForm invoice currency=currency.clone() due_cents forms=forms.clone() record open=record_first />
        })}
        {(takes_payments && forms.credit_available > 0).then(|| view! {
            <ApplyCreditForm invoice currency=currency.clone() available=forms.credit_available key=forms.apply_key apply open=record_first />
        })}
        {takes_payments.then(|| view! {
            <crate::pages::reminders::RemindersToggle what="invoice" id=invoice off=forms.reminders_off key=forms.reminders_key />
        })}
        <CreditNotes notes=forms.credit_notes.clone() />
        {(takes_payments && creditable_cents > 0).then(|| view! {
            <CreditForm invoice currency=currency.clone() creditable_cents lines=credit_lines key=forms.credit_key credit open=false />
        })}
    }
}

/// Credit notes (an invoice's, a customer's), each linking to its customer page.
#[component]
pub fn CreditNotes(notes: Vec<model::CreditNote>) -> impl IntoView {
    (!notes.is_empty()).then(|| {
        view! {
            <h2>"Credit notes"</h2>
            <table class="credit-notes">
                <tbody>
                    {notes
                        .into_iter()
                        .map(|n| view! {
                            <tr class="credit-note">
                                <td><a href=n.public_url.clone()>{n.number.clone()}</a></td>
                                <td>{n.created_at.date_naive().to_string()}</td>
                                <td class="reason">{n.reason.clone()}</td>
                                <td class="num">{format!("-{}", format_money(n.total_cents, &n.currency))}</td>
                            </tr>
                        })
                        .collect_view()}
                </tbody>
            </table>
        }
    })
}

/// "Apply credit": the customer's credit balance (money their other invoices kept beyond what
/// they ask for) pays this one, once per rendered form.
#[component]
fn ApplyCreditForm(
    invoice: Uuid,
    currency: String,
    available: i64,
    key: Uuid,
    apply: ServerAction<ApplyCredit>,
    /// Shown unfolded: the invoice's next step (a refused submit unfolds too).
    open: bool,
) -> impl IntoView {
    let open = open || apply.value().get_untracked().is_some_and(|r| r.is_err());
    let errors = field_errors(apply.value());
    let error_for = move |field: &'static str| field_error(errors, field);
    let shown = format_money(available, &currency);
    view! {
        <details class="invoice-action apply" open=open>
            <summary><h2 id="apply-credit">"The customer's credit"</h2></summary>
        <p>{format!("The customer has credit that can pay {shown} of this invoice.")}</p>
        {move || apply.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
        <ActionForm action=apply attr:class="apply-credit" attr:aria-labelledby="apply-credit">
            <input type="hidden" name="invoice_id" value=invoice.to_string() />
            <input type="hidden" name="idempotency_key" value=key.to_string() />
            <label>
                {format!("Amount ({}, empty: {shown})", currency.to_uppercase())}
                <input type="text" inputmode="decimal" name="amount" />
                {error_for("amount_cents")}
            </label>
            <button type="submit" class="apply">
                "Apply credit"
            </button>
        </ActionForm>
        </details>
    }
}

/// "Credit": a credit note of an amount (empty: all that is left to credit) or of some lines, with
/// a reason and what happens to money already paid, once per rendered form.
#[component]
fn CreditForm(
    invoice: Uuid,
    currency: String,
    creditable_cents: i64,
    /// (line id, description, quantity left to credit).
    lines: Vec<(i16, String, Thousandths)>,
    key: Uuid,
    credit: ServerAction<CreditInvoice>,
    /// Shown unfolded: the invoice's next step (a refused submit unfolds too).
    open: bool,
) -> impl IntoView {
    let open = open || credit.value().get_untracked().is_some_and(|r| r.is_err());
    let line_rows = lines
        .into_iter()
        .enumerate()
        .map(|(i, (id, description, left))| {
            let label = format!("Quantity of \"{description}\" to credit (at most {left})");
            view! {
                <tr class="credit-line">
                    <td>{description}</td>
                    <td class="num">{left.to_string()}</td>
                    <td>
                        <input type="hidden" name=format!("lines[{i}][line_id]") value=id.to_string() />
                        <input type="text" inputmode="decimal" name=format!("lines[{i}][quantity]") aria-label=label />
                    </td>
                </tr>
            }
        })
        .collect_view();
    let errors = field_errors(credit.value());
    let error_for = move |field: &'static str| field_error(errors, field);
    let most = model::plain_amount(creditable_cents, &currency);
    view! {
        <details class="invoice-action credit" open=open>
            <summary><h2 id="credit-invoice">"Credit this invoice"</h2></summary>
        {move || credit.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
        <ActionForm action=credit attr:class="credit-invoice" attr:aria-labelledby="credit-invoice">
            <input type="hidden" name="invoice_id" value=invoice.to_string() />
            <input type="hidden" name="idempotency_key" value=key.to_string() />
            <div class="grid">
                <label>
                    {format!("Amount ({}, at most {most}; empty: all of it)", currency.to_uppercase())}
                    <input type="text" inputmode="decimal" name="amount" />
                    {error_for("amount_cents")}
                </label>
                <label>
                    "Reason"
                    <input type="text" name="reason" maxlength="500" required />
                    {error_for("reason")}
                </label>
            </div>
            <details class="credit-lines">
                <summary>"Or credit some lines"</summary>
                <table>
                    <thead>
                        <tr><th scope="col">"Line"</th><th scope="col" class="num">"Left"</th><th scope="col">"Quantity to credit"</th></tr>
                    </thead>
                    <tbody>{line_rows}</tbody>
                </table>
                {error_for("lines")}
            </details>
            <label>
                "Money already paid beyond what is then due"
                <select name="refund">
                    <option value="none">"Keep it as the customer's credit"</option>
                    <option value="manual">"I paid it back outside the app"</option>
                    <option value="stripe">"Refund it through Stripe (card payments)"</option>
                </select>
            </label>
            <button type="submit" class="credit">
                "Issue credit note"
            </button>
        </ActionForm>
        </details>
    }
}

fn payment_row(
    p: PaymentRow,
    currency: &str,
    invoice: Uuid,
    delete_key: Option<Uuid>,
    delete: ServerAction<DeletePayment>,
) -> impl IntoView {
    let shown = match p.status {
        PaymentStatus::Pending => "processing",
        other => other.as_str(),
    };
    let (what, when, reference) = match (&p.manual, p.source) {
        (Some(m), PaymentSource::Bank) => (
            "Bank statement".to_owned(),
            format!("booked {}", m.paid_on),
            m.reference.clone(),
        ),
        (Some(m), _) => (
            m.method.label().to_owned(),
            m.paid_on.to_string(),
            m.reference.clone(),
        ),
        (None, _) => ("Stripe".to_owned(), String::new(), p.payment_intent.clone()),
    };
    let source = match p.source {
        PaymentSource::Manual => "manual",
        PaymentSource::Bank => "bank",
        PaymentSource::Stripe => "stripe",
    };
    view! {
        <tr class=format!("payment {} {source}", p.status)>
            <td class="method">{what}</td>
            <td class="paid-on">{when}</td>
            <td><code>{reference}</code></td>
            <td class="num">{format_money(p.amount_cents, currency)}</td>
            <td class="payment-status">{shown}</td>
            <td>
                {(p.refunded_cents > 0)
                    .then(|| format!("refunded {}", format_money(p.refunded_cents, currency)))}
                {p.dispute.map(|d| format!(" dispute {d}"))}
                {p.failure}
                {delete_key.map(|key| view! {
                    <ActionForm action=delete attr:class="inline">
                        <input type="hidden" name="invoice_id" value=invoice.to_string() />
                        <input type="hidden" name="payment_id" value=p.id.to_string() />
                        <input type="hidden" name="idempotency_key" value=key.to_string() />
                        <button type="submit" class="link delete-payment">"Delete"</button>
                    </ActionForm>
                })}
            </td>
        </tr>
    }
}

/// "Record a payment": the amount (what is due, by default), the day it arrived (today), how, and a
/// reference. Named by the key it was rendered with: submitting it twice records one payment.
#[component]
fn RecordForm(
    invoice: Uuid,
    currency: String,
    due_cents: i64,
    forms: PaymentForms,
    record: ServerAction<RecordPayment>,
    /// Shown unfolded: the invoice's next step (a refused submit unfolds too).
    open: bool,
) -> impl IntoView {
    let open = open || record.value().get_untracked().is_some_and(|r| r.is_err());
    let errors = field_errors(record.value());
    let error_for = move |field: &'static str| field_error(errors, field);
    let due = model::plain_amount(due_cents.max(0), &currency);
    let today = forms.today.to_string();
    view! {
        <details class="invoice-action record" open=open>
            <summary><h2 id="record-payment">"Record a payment"</h2></summary>
        {move || record.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
        <ActionForm action=record attr:class="record-payment" attr:aria-labelledby="record-payment">
            <input type="hidden" name="invoice_id" value=invoice.to_string() />
            <input type="hidden" name="idempotency_key" value=forms.key.to_string() />
            <div class="grid">
                <label>
                    {format!("Amount ({})", currency.to_uppercase())}
                    <input type="text" inputmode="decimal" name="form[amount]" value=due required />
                    {error_for("amount_cents")}
                </label>
                <label>
                    "Received on"
                    <input type="date" name="form[paid_on]" value=today.clone() max=today required />
                    {error_for("paid_on")}
                </label>
                <label>
                    "Method"
                    <select name="form[method]">
                        {PaymentMethod::ALL
                            .iter()
                            .map(|m| view! { <option value=m.as_str()>{m.label()}</option> })
                            .collect_view()}
                    </select>
                    {error_for("method")}
                </label>
                <label>
                    "Reference"
                    <input type="text" name="form[reference]" maxlength="200" placeholder="Bank reference, cheque number…" />
                    {error_for("reference")}
                </label>
            </div>
            <button type="submit" class="primary record">
                "Record payment"
            </button>
        </ActionForm>
        </details>
    }
}

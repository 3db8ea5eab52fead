//! The invoice pages: the list, one invoice, and the new and edit forms; and the due line and
//! totals rows that an invoice's page and the customer's page share.

mod detail;
pub(crate) mod form;
mod list;
mod payments;

pub use payments::CreditNotes;

pub use detail::InvoicePage;
pub use form::{EditInvoicePage, NewInvoicePage};
pub use list::InvoiceListPage;

use leptos::prelude::*;

use model::{Discount, Invoice, Words};

/// "2027-01-31", with the terms when it has them: "2027-01-31 (net 30)".
pub fn due_text(inv: &Invoice, w: &dyn Words) -> String {
    let date = w.date(inv.due_date);
    match inv.payment_terms_days {
        Some(0) => w.phrase(
            "due-on-receipt",
            "{ $date } (due on receipt)",
            &[("date", &date)],
        ),
        Some(days) => w.phrase(
            "due-net",
            "{ $date } (net { $days })",
            &[("date", &date), ("days", &days.to_string())],
        ),
        None => date,
    }
}

/// An invoice's lines as table rows: description, quantity, unit price, tax, amount. The owner's
/// page and the customer's page show the same.
pub fn line_rows(inv: &Invoice, w: &dyn Words) -> impl IntoView {
    let currency = inv.currency.clone();
    inv.lines
        .iter()
        .map(|l| {
            view! {
                <tr>
                    <td>{l.description.clone()}</td>
                    <td class="num">{w.number(l.quantity)}</td>
                    <td class="num">{w.money(l.unit_amount_cents, &currency)}</td>
                    <td class="tax">
                        {l.tax_name.clone().zip(l.tax_percent).map(|(n, p)| format!("{n} {}%", w.number(p)))}
                    </td>
                    <td class="num">{w.money(l.amount_cents, &currency)}</td>
                </tr>
            }
        })
        .collect_view()
}

/// The rows under an invoice's lines: subtotal, discount, each tax, total (`span` cells before the
/// amounts). The owner's page and the customer's page show the same.
pub fn totals_rows(inv: &Invoice, span: usize, w: &dyn Words) -> impl IntoView {
    let currency = inv.currency.clone();
    let money = move |cents: i64| w.money(cents, &currency);
    let discount = inv.discount.map(|d| {
        let label = match d {
            Discount::Percent(p) => w.phrase(
                "discount-percent",
                "Discount ({ $percent }%)",
                &[("percent", &w.number(p))],
            ),
            Discount::AmountCents(_) => w.label("discount", "Discount"),
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
                    <th scope="row" colspan=span>{format!("{} {}%", t.name, w.number(t.percent))}</th>
                    <td class="num">{money(t.amount_cents)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <tr class="subtotal">
            <th scope="row" colspan=span>{w.label("subtotal", "Subtotal")}</th>
            <td class="num">{money(inv.subtotal_cents)}</td>
        </tr>
        {discount}
        {taxes}
        <tr>
            <th scope="row" colspan=span>{w.label("total", "Total")}</th>
            <td class="num total">{money(inv.total_cents)}</td>
        </tr>
    }
}

//! The invoice list: filters by status, payment state and text, one page at a time.

use crate::pages::filters::{
    query_param, query_params, ExportLink, FilterSearch, FilterSelect, NextPage,
};
use crate::pages::layout::{error_banner, Table};
use crate::rpc::invoices::list_invoices;
use leptos::prelude::*;
use model::format_money;

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

const INVOICES: Table = Table {
    class: "invoices",
    label: "Invoices",
    cols: &["Number", "Customer", "Due", "Status", "Total", "Paid"],
    num: &["Total", "Paid"],
    empty: "No invoices yet.",
};

#[component]
pub fn InvoiceListPage() -> impl IntoView {
    let param = query_param();
    let invoices = Resource::new(
        query_params(["status", "payment_state", "q", "before"]),
        |[status, payment_state, q, before]| list_invoices(status, payment_state, q, before),
    );
    view! {
        <section class="card">
            <div class="heading">
                <h1>"Invoices"</h1>
                <a class="button" href="/invoices/new">"New invoice"</a>
            </div>
            <form method="get" action="/invoices" class="filters" role="search">
                <FilterSelect id="status" name="status" label="Status" any="Any status" options=STATUSES />
                <FilterSelect id="payment" name="payment_state" label="Payment" any="Any payment" options=PAYMENT_STATES />
                <FilterSearch label="Number or customer" placeholder="INV-… or customer" />
                <button type="submit">"Filter"</button>
            </form>
            <p class="exports">
                "Download these as CSV: "
                <ExportLink kind="invoices" label="invoices" />
                " · "
                <ExportLink kind="lines" label="their lines" />
            </p>
            <Suspense fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match invoices.await {
                        Ok(page) => {
                            let filtered = ["status", "payment_state", "q", "before"]
                                .into_iter()
                                .any(|name| param(name).is_some());
                            let empty = if filtered { "No invoices match." } else { "No invoices yet." };
                            let next = page.next_cursor.clone();
                            view! {
                                {Table { empty, ..INVOICES }.rows(page.rows, |inv| view! {
                                    <tr class="invoice-row">
                                        <td>
                                            <a href=format!("/invoices/{}", inv.id)>{inv.number.unwrap_or_else(|| "Draft".to_owned())}</a>
                                        </td>
                                        <td>{inv.customer_name}</td>
                                        <td>{inv.due_date.to_string()}</td>
                                        <td>
                                            <span class=format!("status {}", inv.status.as_str())>{inv.status.as_str()}</span>
                                            {inv.overdue.then(|| view! { " " <span class="status overdue">"overdue"</span> })}
                                        </td>
                                        <td class="num">{format_money(inv.total_cents, &inv.currency)}</td>
                                        <td class="num">{format_money(inv.amount_paid_cents, &inv.currency)}</td>
                                    </tr>
                                })}
                                {next.map(|cursor| {
                                    // The overdue list runs most overdue first, not newest first.
                                    let label = if param("status").as_deref() == Some("overdue") {
                                        "Next page →"
                                    } else {
                                        "Older invoices →"
                                    };
                                    view! { <NextPage path="/invoices" cursor label /> }
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

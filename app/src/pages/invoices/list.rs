//! The invoice list: filters by status, payment state and text, one page at a time.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::model::format_money;
use crate::pages::layout::{error_banner, Head};
use crate::rpc::invoices::list_invoices;

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
                                    <Head cols=&["Number", "Customer", "Due", "Status", "Total", "Paid"] num=&["Total", "Paid"]/>
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

//! The reports, each a page and a CSV file: `/reports/aging` (who owes what and for how long, per
//! customer and currency) and `/reports/tax?from=..&to=..` (the taxable base and tax per rate, what
//! a VAT return needs; its period form is a plain GET).

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::pages::layout::{customer_link, error_banner, loaded, Table};
use crate::rpc::reports::{get_aging_report, get_tax_report};
use model::format_money;
use model::reports::{TaxDocuments, TaxRow};

const AGING: Table = Table {
    class: "aging-report",
    label: "Aging by customer",
    cols: &[
        "Customer", "Current", "1–30", "31–60", "61–90", "Over 90", "Total",
    ],
    num: &["Current", "1–30", "31–60", "61–90", "Over 90", "Total"],
    empty: "Nobody owes you anything.",
};

const NET: Table = Table {
    class: "tax-net",
    label: "Invoices less credit notes, per currency",
    cols: &["Currency", "Taxable", "Tax"],
    num: &["Taxable", "Tax"],
    empty: "Nothing was invoiced or credited in this period.",
};

/// The reports' own links: each report and its file.
fn report_links() -> impl IntoView {
    view! {
        <nav class="report-links" aria-label="Reports">
            <a href="/reports/aging">"Aging"</a>
            " · "
            <a href="/reports/tax">"Tax summary"</a>
            " · "
            <a href="/reports/exports">"Exports"</a>
        </nav>
    }
}

#[component]
pub fn AgingReportPage() -> impl IntoView {
    let report = Resource::new(|| (), |_| get_aging_report());
    view! {
        <section class="card">
            <div class="heading">
                <h1>"Aging by customer"</h1>
                <a class="button download-csv" href="/reports/aging.csv" download>"Download CSV"</a>
            </div>
            {report_links()}
            {loaded(report, move |r| view! {
                <p class="hint">{format!("On {}: days past each invoice's due date.", r.today)}</p>
                {AGING.rows(r.data, |row| {
                    let c = row.currency.clone();
                    let money = move |cents: i64| format_money(cents, &c);
                    view! {
                        <tr class="aging-row">
                            <th scope="row">{customer_link(row.customer_id, row.name.clone())}</th>
                            <td class="num">{money(row.current_cents)}</td>
                            <td class="num">{money(row.days_1_30_cents)}</td>
                            <td class="num">{money(row.days_31_60_cents)}</td>
                            <td class="num">{money(row.days_61_90_cents)}</td>
                            <td class="num">{money(row.over_90_cents)}</td>
                            <td class="num total">{money(row.total_cents)}</td>
                        </tr>
                    }
                })}
            })}
        </section>
    }
}

#[component]
pub fn TaxReportPage() -> impl IntoView {
    let query = use_query_map();
    let period = move || (query.with(|q| q.get("from")), query.with(|q| q.get("to")));
    let report = Resource::new(period, |(from, to)| get_tax_report(from, to));
    view! {
        <section class="card">
            <h1>"Tax summary"</h1>
            {report_links()}
            <Suspense fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let (from, to) = period();
                    match report.await {
                        Ok(r) => {
                            let csv = format!("/reports/tax.csv?from={}&to={}", r.from, r.to);
                            let (invoices, credits): (Vec<TaxRow>, Vec<TaxRow>) = r
                                .data
                                .into_iter()
                                .partition(|row| row.documents == TaxDocuments::Invoices);
                            view! {
                                {period_form(r.from.to_string(), r.to.to_string())}
                                <p><a class="button download-csv" href=csv download>"Download CSV"</a></p>
                                {tax_table("Invoices", "Invoices finalized in the period (void ones left out)", invoices)}
                                {tax_table("Credit notes", "Credit notes issued in the period", credits)}
                                <h2>"Net"</h2>
                                {NET.rows(r.net, |n| view! {
                                    <tr class="tax-net-row">
                                        <th scope="row">{n.currency.to_uppercase()}</th>
                                        <td class="num">{format_money(n.taxable_cents, &n.currency)}</td>
                                        <td class="num">{format_money(n.tax_cents, &n.currency)}</td>
                                    </tr>
                                })}
                            }.into_any()
                        }
                        Err(e) => view! {
                            {period_form(from.unwrap_or_default(), to.unwrap_or_default())}
                            {error_banner(&e)}
                        }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

fn period_form(from: String, to: String) -> impl IntoView {
    view! {
        <form method="get" class="period" aria-label="Period">
            <label>"From" <input type="date" name="from" value=from /></label>
            <label>"To" <input type="date" name="to" value=to /></label>
            <button type="submit" class="secondary">"Show"</button>
        </form>
    }
}

fn tax_table(title: &'static str, label: &'static str, rows: Vec<TaxRow>) -> impl IntoView {
    let table = Table {
        class: "tax-report",
        label,
        cols: &["Rate", "Currency", "Taxable", "Tax", "Documents"],
        num: &["Taxable", "Tax", "Documents"],
        empty: "None in this period.",
    };
    view! {
        <h2>{title}</h2>
        {table.rows(rows, |row| {
            let rate = match &row.category {
                Some(category) => format!(
                    "{} {} % ({category})",
                    row.names.join(", "),
                    model::Thousandths(row.percent_milli),
                ),
                None => "No tax rate".to_owned(),
            };
            view! {
                <tr class="tax-row">
                    <th scope="row">{rate}</th>
                    <td>{row.currency.to_uppercase()}</td>
                    <td class="num">{format_money(row.taxable_cents, &row.currency)}</td>
                    <td class="num">{format_money(row.tax_cents, &row.currency)}</td>
                    <td class="num">{row.count}</td>
                </tr>
            }
        })}
    }
}

/// `/reports/exports`: every CSV export. Payments and credit notes take a period (plain GET forms
/// whose answer is the file); invoices, their lines and customers are also on their lists, with the
/// list's filters.
#[component]
pub fn ExportsPage() -> impl IntoView {
    let period_form = |kind: &'static str, title: &'static str| {
        view! {
            <form method="get" action=format!("/exports/{kind}.csv") class="period" aria-label=title>
                <h2>{title}</h2>
                <label>"From" <input type="date" name="from" /></label>
                <label>"To" <input type="date" name="to" /></label>
                <button type="submit" class="secondary">"Download CSV"</button>
            </form>
        }
    };
    view! {
        <section class="card">
            <h1>"Exports"</h1>
            {report_links()}
            <p class="hint">"CSV files (UTF-8) for a spreadsheet or your bookkeeping. Leave the dates empty for everything."</p>
            <ul class="export-list">
                <li><a class="export export-invoices" href="/exports/invoices.csv" download>"All invoices"</a></li>
                <li><a class="export export-lines" href="/exports/lines.csv" download>"All invoice lines"</a></li>
                <li><a class="export export-customers" href="/exports/customers.csv" download>"All customers"</a></li>
            </ul>
            {period_form("payments", "Payments, by the day paid")}
            {period_form("credit_notes", "Credit notes, by the day issued")}
        </section>
    }
}

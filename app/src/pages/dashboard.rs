//! `/dashboard`, the page after login: what is owed (per currency, by age), what came in this
//! month and quarter, twelve months of invoicing as a chart (plain server-rendered SVG, a table
//! beside it for screen readers and for exact figures), and who owes the most.

use leptos::prelude::*;

use crate::pages::layout::{customer_link, loaded, Table};
use crate::rpc::dashboard::get_dashboard;
use model::dashboard::{Dashboard, MonthRevenue, AGING};
use model::format_money;

const HOW_LATE: Table = Table {
    class: "aging",
    label: "How late",
    cols: &["Currency", AGING[0], AGING[1], AGING[2], AGING[3], AGING[4]],
    num: &AGING,
    empty: "No open invoices.",
};

const DEBTORS: Table = Table {
    class: "debtors",
    label: "Who owes the most",
    cols: &["Customer", "Owed", "Overdue", "Oldest due"],
    num: &["Owed", "Overdue"],
    empty: "Nobody owes you anything.",
};

const MONTHS: Table = Table {
    class: "revenue-table",
    label: "Invoiced per month",
    cols: &["Month", "Invoiced", "Credited"],
    num: &["Invoiced", "Credited"],
    empty: "",
};

#[component]
pub fn DashboardPage() -> impl IntoView {
    let page = Resource::new(|| (), |_| get_dashboard());
    view! {
        {loaded(page, move |d| view! { <DashboardView d /> }.into_any())}
    }
}

#[component]
fn DashboardView(d: Dashboard) -> impl IntoView {
    let nothing_owed = d.owed.is_empty();
    view! {
        <section class="card dashboard">
            <h1>"Dashboard"</h1>
            <p class="hint as-of">{format!("Figures as of {} UTC.", d.as_of.format("%H:%M:%S"))}</p>
            <div class="figures">
                {nothing_owed.then(|| view! { <p class="figure empty">"Nothing is owed to you."</p> })}
                {d.owed.iter().map(|o| view! {
                    <div class="figure outstanding">
                        <h2>{format!("Outstanding ({})", o.currency.to_uppercase())}</h2>
                        <p class="amount">{format_money(o.outstanding_cents, &o.currency)}</p>
                        <p class="overdue">{format!("{} overdue", format_money(o.overdue_cents, &o.currency))}</p>
                    </div>
                }).collect_view()}
                {d.received.iter().map(|r| view! {
                    <div class="figure received">
                        <h2>{format!("Received ({})", r.currency.to_uppercase())}</h2>
                        <p class="amount month">{format!("{} this month", format_money(r.this_month_cents, &r.currency))}</p>
                        <p class="quarter">{format!("{} this quarter", format_money(r.this_quarter_cents, &r.currency))}</p>
                    </div>
                }).collect_view()}
            </div>
        </section>
        <section class="card" aria-labelledby="aging-heading">
            <h2 id="aging-heading">"How late"</h2>
            {HOW_LATE.rows(d.owed.iter(), |o| view! {
                <tr>
                    <th scope="row">{o.currency.to_uppercase()}</th>
                    {o.aging_cents.iter().map(|c| view! { <td class="num">{format_money(*c, &o.currency)}</td> }).collect_view()}
                </tr>
            })}
            {(!nothing_owed).then(|| view! { <p><a href="/reports/aging">"Aging by customer"</a></p> })}
        </section>
        <RevenueChart revenue=d.revenue.clone() />
        <section class="card" aria-labelledby="debtors-heading">
            <h2 id="debtors-heading">"Who owes the most"</h2>
            {DEBTORS.rows(d.debtors.iter(), |x| view! {
                <tr class="debtor">
                    <td>{customer_link(x.customer_id, x.name.clone())}</td>
                    <td class="num owed">{format_money(x.owed_cents, &x.currency)}</td>
                    <td class="num">{format_money(x.overdue_cents, &x.currency)}</td>
                    <td>{x.oldest_due.to_string()}</td>
                </tr>
            })}
        </section>
    }
}

/// The last twelve months' invoicing in the currency invoiced most: bars in plain SVG (scaled by
/// the viewBox, so it fits a phone), and the same figures as a table.
#[component]
fn RevenueChart(revenue: Vec<MonthRevenue>) -> impl IntoView {
    let mut currencies: Vec<(String, i64)> = Vec::new();
    for r in &revenue {
        match currencies.iter_mut().find(|(c, _)| *c == r.currency) {
            Some((_, sum)) => *sum += r.invoiced_cents,
            None => currencies.push((r.currency.clone(), r.invoiced_cents)),
        }
    }
    currencies.sort_by_key(|(_, sum)| std::cmp::Reverse(*sum));
    let Some((currency, _)) = currencies.first().cloned() else {
        return view! {
            <section class="card" aria-labelledby="revenue-heading">
                <h2 id="revenue-heading">"Invoiced per month"</h2>
                <p class="empty">"Nothing invoiced in the last twelve months."</p>
            </section>
        }
        .into_any();
    };
    let months: Vec<&MonthRevenue> = revenue.iter().filter(|r| r.currency == currency).collect();
    let net = |r: &MonthRevenue| (r.invoiced_cents - r.credited_cents).max(0);
    let top = months.iter().map(|r| net(r)).max().unwrap_or(0).max(1);
    let (width, height, bar) = (600.0_f64, 200.0_f64, 600.0_f64 / 12.0);
    let bars = months
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let h = net(r) as f64 / top as f64 * (height - 20.0);
            let label = r.month.format("%b").to_string();
            view! {
                <g>
                    <rect x=format!("{:.1}", i as f64 * bar + 4.0) y=format!("{:.1}", height - 20.0 - h)
                        width=format!("{:.1}", bar - 8.0) height=format!("{h:.1}") class="bar" />
                    <text x=format!("{:.1}", i as f64 * bar + bar / 2.0) y=format!("{:.1}", height - 4.0)
                        text-anchor="middle" class="month">{label}</text>
                </g>
            }
        })
        .collect_view();
    let title = format!("Invoiced per month ({})", currency.to_uppercase());
    view! {
        <section class="card revenue" aria-labelledby="revenue-heading">
            <h2 id="revenue-heading">{title.clone()}</h2>
            <div class="chart-and-table">
                <svg viewBox=format!("0 0 {width} {height}") class="chart" role="img" aria-labelledby="revenue-heading"
                    preserveAspectRatio="none">
                    {bars}
                </svg>
                {MONTHS.rows(months.iter(), |r| view! {
                    <tr class="month-row">
                        <th scope="row">{r.month.format("%Y-%m").to_string()}</th>
                        <td class="num invoiced">{format_money(r.invoiced_cents, &r.currency)}</td>
                        <td class="num">{format_money(r.credited_cents, &r.currency)}</td>
                    </tr>
                })}
            </div>
        </section>
    }
    .into_any()
}

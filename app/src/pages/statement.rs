//! A customer's statement: the owner's page (`/customers/{id}/statement?from=..&to=..`, a period
//! form that is a plain GET) and the table the customer's page `/s/{token}` renders too.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::pages::layout::loaded;
use crate::rpc::customers::get_statement;
use model::Statement;

#[component]
pub fn StatementPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let page = Resource::new(
        move || {
            (
                params.with(|p| p.get("id").unwrap_or_default()),
                query.with(|q| q.get("from")),
                query.with(|q| q.get("to")),
            )
        },
        |(id, from, to)| get_statement(id, from, to),
    );
    view! {
        {loaded(page, move |p| view! {
                        <section class="card statement">
                            <h1>{format!("Statement of {}", p.statement.customer_name)}</h1>
                            <form method="get" class="period" aria-label="Period">
                                <label>"From" <input type="date" name="from" value=p.statement.from.to_string() /></label>
                                <label>"To" <input type="date" name="to" value=p.statement.to.to_string() /></label>
                                <button type="submit" class="secondary">"Show"</button>
                            </form>
                            <p>
                                {match p.public_url.clone() {
                                    Some(url) => view! {
                                        <a class="public-statement" href=url.clone()>"The customer's page of this statement"</a>
                                        " · "
                                        <a class="statement-pdf" href=pdf_url(&url)>"PDF"</a>
                                        " · "
                                    }
                                    .into_any(),
                                    None => view! {
                                        <span class="no-statement-link">"No customer's page: this customer has no statement link (make one on their page)."</span>
                                        " · "
                                    }
                                    .into_any(),
                                }}
                                <a href=format!("/customers/{}", p.customer_id)>"Back to the customer"</a>
                            </p>
                            {statement_tables(p.statement, &model::English)}
                        </section>
                    }.into_any())}
    }
}

/// `/s/{token}?from=..` → `/s/{token}/pdf?from=..`.
pub fn pdf_url(public_url: &str) -> String {
    match public_url.split_once('?') {
        Some((page, query)) => format!("{page}/pdf?{query}"),
        None => format!("{public_url}/pdf"),
    }
}

/// One table per currency: the opening balance, the period's entries with the balance running,
/// and what is owed at its end.
pub fn statement_tables(statement: Statement, w: &dyn model::Words) -> impl IntoView {
    let period = w.phrase(
        "statement-period",
        "Period: { $from } to { $to }",
        &[
            ("from", &w.date(statement.from)),
            ("to", &w.date(statement.to)),
        ],
    );
    let empty = statement.sections.is_empty();
    let label = |id: &str, english: &str| w.label(id, english);
    view! {
        <p class="period-shown">{period}</p>
        {empty.then(|| view! { <p class="empty">{label("statement-empty", "Nothing invoiced, paid or owed in this period.")}</p> })}
        {statement.truncated.then(|| view! {
            <p class="truncated" role="status">
                {format!("Only the first {} entries are listed: choose a shorter period.", model::statement::MAX_ENTRIES)}
            </p>
        })}
        {statement
            .sections
            .into_iter()
            .map(|s| {
                let c = s.currency.clone();
                let money = move |cents: i64| w.money(cents, &c);
                let rows = s
                    .entries
                    .iter()
                    .map(|e| view! {
                        <tr class=format!("entry {}", e.kind)>
                            <td>{w.date(e.day)}</td>
                            <td>{e.reference.clone()}</td>
                            <td>{e.description.clone()}</td>
                            <td class="num">{(e.debit_cents != 0).then(|| money(e.debit_cents))}</td>
                            <td class="num">{(e.credit_cents != 0).then(|| money(e.credit_cents))}</td>
                            <td class="num balance">{money(e.balance_cents)}</td>
                        </tr>
                    })
                    .collect_view();
                let caption = w.phrase(
                    "statement-in",
                    "In { $currency }",
                    &[("currency", &s.currency.to_uppercase())],
                );
                let region = format!("Statement in {}", s.currency.to_uppercase());
                // Wider than a phone: the region scrolls, and the keyboard can reach it.
                view! {
                    <div class="table-scroll" tabindex="0" role="region" aria-label=region>
                        <table class="statement-table">
                            <caption>{caption}</caption>
                            <thead>
                                <tr>
                                    <th scope="col">{label("col-date", "Date")}</th>
                                    <th scope="col">{label("col-reference", "Reference")}</th>
                                    <th scope="col">{label("col-what", "What")}</th>
                                    <th scope="col" class="num">{label("col-charged", "Charged")}</th>
                                    <th scope="col" class="num">{label("col-paid-or-credited", "Paid or credited")}</th>
                                    <th scope="col" class="num">{label("col-balance", "Balance")}</th>
                                </tr>
                            </thead>
                            <tbody>
                                <tr class="opening">
                                    <td>{s.entries.first().map(|e| w.date(e.day)).unwrap_or_default()}</td>
                                    <td></td>
                                    <td>{label("balance-forward", "Balance brought forward")}</td>
                                    <td></td>
                                    <td></td>
                                    <td class="num balance">{money(s.opening_cents)}</td>
                                </tr>
                                {rows}
                            </tbody>
                            <tfoot>
                                <tr class="closing">
                                    <th scope="row" colspan="5">{label("balance-due", "Balance due")}</th>
                                    <td class="num balance closing-balance">{money(s.closing_cents)}</td>
                                </tr>
                            </tfoot>
                        </table>
                    </div>
                }
            })
            .collect_view()}
    }
}

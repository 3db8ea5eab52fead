//! `/activity`: every attempt of the org, what became of it, and proof (stored payloads/responses).

use super::filters::{query_params, FilterSearch, FilterSelect, NextPage};
use super::layout::{loaded, Table};
use crate::rpc::activity::activity;
use leptos::prelude::*;
use model::ActivityRow;

const SURFACES: &[&str] = &["form", "webhook", "api", "job"];
const OUTCOMES: &[&str] = &[
    "won",
    "replay",
    "in_flight",
    "mismatch",
    "rejected",
    "failed",
];

const ATTEMPTS: Table = Table {
    class: "activity",
    label: "Attempts",
    cols: &[
        "When (UTC)",
        "Surface",
        "Outcome",
        "Key / event",
        "Invoice",
        "ms",
    ],
    num: &["ms"],
    empty: "No attempts match.",
};

#[component]
pub fn ActivityPage() -> impl IntoView {
    let page = Resource::new(
        query_params(["surface", "outcome", "q", "before"]),
        |[surface, outcome, q, before]| activity(surface, outcome, q, before),
    );
    view! {
        <section class="card">
            <h1>"Activity"</h1>
            <p class="empty">"Every attempt on every surface: who asked, with which key, and what happened."</p>
            <form method="get" action="/activity" class="filters" role="search">
                <FilterSelect id="surface" name="surface" label="Surface" any="All surfaces" options=SURFACES />
                <FilterSelect id="outcome" name="outcome" label="Outcome" any="All outcomes" options=OUTCOMES />
                <FilterSearch label="Key, event id or number" placeholder="key, event id or INV-…" />
                <button type="submit">"Filter"</button>
            </form>
            {loaded(page, move |p| {
                            let next = p.next_cursor.clone();
                            view! {
                                <p class="counters">
                                    "Last 24 h: "
                                    {if p.counts.is_empty() {
                                        "nothing yet".to_owned()
                                    } else {
                                        p.counts
                                            .iter()
                                            .map(|c| format!("{} {} {}", c.count, c.surface, c.outcome))
                                            .collect::<Vec<_>>()
                                            .join(" · ")
                                    }}
                                </p>
                                {ATTEMPTS.rows(p.rows, activity_row)}
                                {next.map(|cursor| view! { <NextPage path="/activity" cursor label="Older →" /> })}
                            }
                                .into_any()
                        })}
        </section>
    }
}

/// One attempt as a table row (also used for an invoice's history).
pub fn activity_row(row: ActivityRow) -> impl IntoView {
    view! {
        <tr class=format!("attempt {} {}", row.surface, row.outcome)>
            <td>{row.created_at.format("%Y-%m-%d %H:%M:%S").to_string()}</td>
            <td class="surface">{row.surface.clone()}</td>
            <td>
                <span class=format!("outcome {}", row.outcome)>{row.outcome.clone()}</span>
            </td>
            <td>
                <code class="key">{row.key.clone()}</code>
                {row
                    .detail
                    .map(|d| {
                        view! {
                            <details>
                                <summary>"stored"</summary>
                                <pre>{d}</pre>
                            </details>
                        }
                    })}
            </td>
            <td>
                {match (row.invoice_id, row.invoice_number) {
                    (Some(id), Some(n)) => view! { <a href=format!("/invoices/{id}")>{n}</a> }.into_any(),
                    _ => "—".into_any(),
                }}
            </td>
            <td class="num">{format!("{:.1}", row.duration_ms)}</td>
        </tr>
    }
}

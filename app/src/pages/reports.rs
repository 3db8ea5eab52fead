//! `/reports/aging`: who owes what and for how long, per customer and currency, and the same as a
//! CSV file (`/reports/aging.csv`).

use leptos::prelude::*;

use crate::model::format_money;
use crate::pages::layout::error_banner;
use crate::rpc::reports::get_aging_report;

#[component]
pub fn AgingReportPage() -> impl IntoView {
    let report = Resource::new(|| (), |_| get_aging_report());
    view! {
        <section class="card">
            <div class="heading">
                <h1>"Aging by customer"</h1>
                <a class="button download-csv" href="/reports/aging.csv" download>"Download CSV"</a>
            </div>
            <Suspense fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match report.await {
                        Ok(r) if r.data.is_empty() => view! { <p class="empty">"Nobody owes you anything."</p> }.into_any(),
                        Ok(r) => view! {
                            <p class="hint">{format!("On {}: days past each invoice's due date.", r.today)}</p>
                            <div class="table-scroll" tabindex="0" role="region" aria-label="Aging by customer">
                                <table class="aging-report">
                                    <thead>
                                        <tr>
                                            <th scope="col">"Customer"</th>
                                            <th scope="col" class="num">"Current"</th>
                                            <th scope="col" class="num">"1–30"</th>
                                            <th scope="col" class="num">"31–60"</th>
                                            <th scope="col" class="num">"61–90"</th>
                                            <th scope="col" class="num">"Over 90"</th>
                                            <th scope="col" class="num">"Total"</th>
                                        </tr>
                                    </thead>
                                    <tbody>
                                        {r.data.into_iter().map(|row| {
                                            let c = row.currency.clone();
                                            let money = move |cents: i64| format_money(cents, &c);
                                            view! {
                                                <tr class="aging-row">
                                                    <th scope="row">{match row.customer_id {
                                                        Some(id) => view! { <a href=format!("/customers/{id}")>{row.name.clone()}</a> }.into_any(),
                                                        None => row.name.clone().into_any(),
                                                    }}</th>
                                                    <td class="num">{money(row.current_cents)}</td>
                                                    <td class="num">{money(row.days_1_30_cents)}</td>
                                                    <td class="num">{money(row.days_31_60_cents)}</td>
                                                    <td class="num">{money(row.days_61_90_cents)}</td>
                                                    <td class="num">{money(row.over_90_cents)}</td>
                                                    <td class="num total">{money(row.total_cents)}</td>
                                                </tr>
                                            }
                                        }).collect_view()}
                                    </tbody>
                                </table>
                            </div>
                        }.into_any(),
                        Err(e) => error_banner(&e).into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

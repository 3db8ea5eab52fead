//! The audit log page (`/settings/audit`), one page of rows at a time.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::when;
use crate::pages::layout::{error_banner, Head};
use crate::rpc::activity::audit_log;

/// The audit log (owners): membership, role, key and password changes, newest first.
#[component]
pub fn AuditPage() -> impl IntoView {
    let before = use_query_map().with_untracked(|q| q.get("before"));
    let rows = Resource::new(move || (), move |_| audit_log(before.clone()));
    view! {
        <section class="card">
            <h1>"Audit log"</h1>
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match rows.await {
                        Ok(rows) => {
                            let next = (rows.len() == 50).then(|| rows.last().map(|r| r.id)).flatten();
                            view! {
                                <table class="audit">
                                    <Head cols=&["When", "Who", "What", "Subject"]/>
                                    <tbody>
                                        {rows
                                            .into_iter()
                                            .map(|r| view! {
                                                <tr class="audit-row">
                                                    <td>{when(r.at)}</td>
                                                    <td>{r.actor}</td>
                                                    <td class="audit-action">{r.action}</td>
                                                    <td>{r.subject}</td>
                                                </tr>
                                            })
                                            .collect_view()}
                                    </tbody>
                                </table>
                                {next.map(|id| view! { <a href=format!("/settings/audit?before={id}")>"Older"</a> })}
                            }
                                .into_any()
                        }
                        Err(e) => error_banner(&e).into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

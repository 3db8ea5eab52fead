//! The organisations page (`/settings/orgs`): the orgs the user belongs to, and switching.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use crate::pages::layout::error_banner;
use crate::rpc::account::{list_orgs, SwitchOrg};

/// The orgs the user belongs to; switching is a plain post (the page reloads as the other org).
#[component]
pub fn OrgsPage() -> impl IntoView {
    let orgs = Resource::new(|| (), |_| list_orgs());
    view! {
        <section class="card narrow">
            <h1>"Your organisations"</h1>
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match orgs.await {
                        Ok(list) => {
                            view! {
                                <ul class="orgs">
                                    {list
                                        .into_iter()
                                        .map(|o| {
                                            let name = o.name.clone();
                                            view! {
                                                <li class="org" data-name=name>
                                                    <strong>{o.name}</strong> " (" {o.role.as_str()} ") "
                                                    {if o.current {
                                                        view! { <span class="status paid">"current"</span> }.into_any()
                                                    } else {
                                                        view! {
                                                            <form method="post" action=SwitchOrg::PATH class="inline">
                                                                <input type="hidden" name="org_id" value=o.id.to_string() />
                                                                <button type="submit" class="link switch-org">"Switch"</button>
                                                            </form>
                                                        }
                                                            .into_any()
                                                    }}
                                                </li>
                                            }
                                        })
                                        .collect_view()}
                                </ul>
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

//! `/settings/api-keys`: create (shown once), list, revoke.

use leptos::prelude::*;

use super::layout::error_banner;
use crate::api::{list_api_keys, CreateApiKey, RevokeApiKey};

#[component]
pub fn ApiKeysPage() -> impl IntoView {
    let create = ServerAction::<CreateApiKey>::new();
    let revoke = ServerAction::<RevokeApiKey>::new();
    let keys = Resource::new(
        move || (create.version().get(), revoke.version().get()),
        |_| list_api_keys(),
    );
    view! {
        <section class="card">
            <h1>"API keys"</h1>
            <p>
                "Use a key as " <code>"Authorization: Bearer ik_..."</code>
                " with the JSON API; see " <a href="/api/v1/openapi.json">"the OpenAPI document"</a> "."
            </p>
            <ActionForm action=create>
                <label>
                    "Name" <input type="text" name="name" maxlength="100" placeholder="e.g. billing script" />
                </label>
                <button type="submit" class="primary" disabled=move || create.pending().get()>
                    "Create key"
                </button>
            </ActionForm>
            {move || match create.value().get() {
                Some(Ok(key)) => {
                    view! {
                        <div class="new-key" role="status">
                            <p>"Copy this key now: it will not be shown again."</p>
                            <code class="key">{key}</code>
                        </div>
                    }
                        .into_any()
                }
                Some(Err(e)) => error_banner(&e).into_any(),
                None => ().into_any(),
            }}
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match keys.await {
                        Ok(list) if list.is_empty() => view! { <p class="empty">"No API keys yet."</p> }.into_any(),
                        Ok(list) => {
                            view! {
                                <table class="api-keys">
                                    <thead>
                                        <tr>
                                            <th>"Name"</th>
                                            <th>"Key"</th>
                                            <th>"Created"</th>
                                            <th>"Last used"</th>
                                            <th></th>
                                        </tr>
                                    </thead>
                                    <tbody>
                                        {list
                                            .into_iter()
                                            .map(|k| {
                                                let id = k.id.to_string();
                                                view! {
                                                    <tr class="api-key">
                                                        <td>{k.name}</td>
                                                        <td><code>{k.prefix} "…"</code></td>
                                                        <td>{k.created_at.format("%Y-%m-%d %H:%M UTC").to_string()}</td>
                                                        <td>
                                                            {k.last_used_at
                                                                .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
                                                                .unwrap_or_else(|| "never".into())}
                                                        </td>
                                                        <td>
                                                            {match k.revoked_at {
                                                                Some(_) => view! { <span class="status void">"revoked"</span> }.into_any(),
                                                                None => {
                                                                    view! {
                                                                        <ActionForm action=revoke>
                                                                            <input type="hidden" name="id" value=id />
                                                                            <button type="submit" class="link">"Revoke"</button>
                                                                        </ActionForm>
                                                                    }
                                                                        .into_any()
                                                                }
                                                            }}
                                                        </td>
                                                    </tr>
                                                }
                                            })
                                            .collect_view()}
                                    </tbody>
                                </table>
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

//! Webhooks out: `/settings/webhooks` (the org's endpoints and the form that registers one) and
//! `/settings/webhooks/{id}` (an endpoint: its secret for owners, rotate, delete, and its delivery
//! log with "Deliver again").

use leptos::prelude::*;

use crate::pages::layout::{
    error_banner, field_error, field_errors, loaded, refused, route_resource, Table,
};
use crate::rpc::webhooks::{
    get_webhook_endpoint, webhooks_page, CreateWebhookEndpoint, DeleteWebhookEndpoint,
    EnableWebhookEndpoint, RedeliverWebhook, RotateWebhookSecret,
};
use model::webhooks::{WebhookEndpointPage, EVENT_TYPES};

fn when(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

#[component]
pub fn WebhooksPage() -> impl IntoView {
    let create = ServerAction::<CreateWebhookEndpoint>::new();
    let page = Resource::new(|| (), |_| webhooks_page());
    let errors = field_errors(create.value());
    // Without JavaScript a refused form comes back through the URL: its key and what was typed.
    let (typed_key, typed) = refused(create.value().get_untracked());
    view! {
        <section class="card">
            <h1>"Webhooks"</h1>
            <p>
                "Tell your shop, CRM or bookkeeping when something happens here. Each event is POSTed as JSON, signed as the "
                <a href="https://www.standardwebhooks.com/">"Standard Webhooks"</a>
                " specification says (" <code>"webhook-id"</code> ", " <code>"webhook-timestamp"</code> ", "
                <code>"webhook-signature"</code> "), and retried for three days until your endpoint answers 2xx."
            </p>
            {loaded(page, move |view| {
                            let form_key = typed_key.clone().unwrap_or_else(|| view.form_key.to_string());
                            let typed = typed.clone().unwrap_or_else(|| model::webhooks::WebhookEndpointInput {
                                url: String::new(),
                                events: Vec::new(),
                                description: String::new(),
                            });
                            let list = if view.endpoints.is_empty() {
                                view! { <p class="empty">"No endpoints yet."</p> }.into_any()
                            } else {
                                view! {
                                    <ul class="endpoints">
                                        {view.endpoints.into_iter().map(|e| view! {
                                            <li class="endpoint">
                                                <a href=format!("/settings/webhooks/{}", e.id)>{e.url.clone()}</a>
                                                <span class=format!("status status-{}", e.status)>{e.status.clone()}</span>
                                                <span class="hint">{e.events.join(", ")}</span>
                                                {(!e.description.is_empty()).then(|| view! { <span class="hint">{e.description.clone()}</span> })}
                                            </li>
                                        }).collect_view()}
                                    </ul>
                                }.into_any()
                            };
                            view! {
                                {list}
                                {view.may_manage.then(|| view! {
                                    <h2>"Add an endpoint"</h2>
                                    <ActionForm action=create attr:class="webhook-form">
                                        <input type="hidden" name="idempotency_key" value=form_key />
                                        <label>
                                            "URL"
                                            <input type="url" name="url" required maxlength="2048" placeholder="https://example.com/webhooks/invoicer" value=typed.url />
                                            {field_error(errors, "url")}
                                        </label>
                                        <fieldset>
                                            <legend>"Events"</legend>
                                            {EVENT_TYPES.iter().map(|t| view! {
                                                <label class="check">
                                                    <input type="checkbox" name="events[]" value=*t checked=typed.events.iter().any(|e| e == t) />
                                                    <code>{*t}</code>
                                                </label>
                                            }).collect_view()}
                                            {field_error(errors, "events")}
                                        </fieldset>
                                        <label>
                                            "Description"
                                            <input type="text" name="description" maxlength="500" placeholder="optional" value=typed.description />
                                        </label>
                                        <label>
                                            "Your password"
                                            <input type="password" name="password" autocomplete="current-password" maxlength="1024" />
                                            <span class="hint">"Needed when you signed in more than 10 minutes ago."</span>
                                            {field_error(errors, "password")}
                                        </label>
                                        <button type="submit" class="primary">"Add endpoint"</button>
                                    </ActionForm>
                                })}
                            }.into_any()
                        })}
            {move || match create.value().get() {
                Some(Err(e)) => error_banner(&e),
                _ => None,
            }}
        </section>
    }
}

#[component]
pub fn WebhookEndpointPageView() -> impl IntoView {
    let rotate = ServerAction::<RotateWebhookSecret>::new();
    let delete = ServerAction::<DeleteWebhookEndpoint>::new();
    let redeliver = ServerAction::<RedeliverWebhook>::new();
    let enable = ServerAction::<EnableWebhookEndpoint>::new();
    let page = route_resource(get_webhook_endpoint);
    view! {
        {loaded(page, move |p| endpoint_view(p, Actions { rotate, delete, redeliver, enable }).into_any())}
        {move || [rotate.value().get(), delete.value().get(), redeliver.value().get(), enable.value().get()]
            .into_iter()
            .flatten()
            .find_map(|r| r.err())
            .and_then(|e| error_banner(&e))}
    }
}

/// What an endpoint's page can do.
#[derive(Clone, Copy)]
struct Actions {
    rotate: ServerAction<RotateWebhookSecret>,
    delete: ServerAction<DeleteWebhookEndpoint>,
    redeliver: ServerAction<RedeliverWebhook>,
    enable: ServerAction<EnableWebhookEndpoint>,
}

fn endpoint_view(p: WebhookEndpointPage, actions: Actions) -> impl IntoView {
    let Actions {
        rotate,
        delete,
        redeliver,
        enable,
    } = actions;
    let e = p.endpoint;
    let (id, key) = (e.id, p.form_key);
    let owner = e.secret.is_some();
    let log = Table {
        class: "attempts",
        label: "Delivery log",
        cols: if owner {
            &["When", "Event", "Answer", "ms", "Response", ""]
        } else {
            &["When", "Event", "Answer", "ms", "Response"]
        },
        num: &["ms"],
        empty: "Nothing delivered yet.",
    };
    view! {
        <section class="card endpoint-page">
            <h1>"Webhook endpoint"</h1>
            <p><code class="endpoint-url">{e.url.clone()}</code> " "
                <span class=format!("status status-{}", e.status)>{e.status.clone()}</span></p>
            {(!e.description.is_empty()).then(|| view! { <p>{e.description.clone()}</p> })}
            <p class="hint">"Events: " {e.events.join(", ")}</p>
            {e.failing_since.map(|t| view! { <p class="warning">{format!("Deliveries have failed since {}. After three days of failures the endpoint is disabled.", when(t))}</p> })}
            <p>{format!("{} deliveries waiting for their next try.", p.pending)}</p>
            {e.secret.clone().map(|secret| view! {
                <h2>"Signing secret"</h2>
                <p><code class="secret">{secret}</code></p>
                {e.previous_secret_until.map(|t| view! { <p class="hint">{format!("The previous secret signs too until {}.", when(t))}</p> })}
                <div class="actions">
                    {(e.status == "disabled").then(|| view! {
                        <ActionForm action=enable>
                            <input type="hidden" name="idempotency_key" value=key.to_string() />
                            <input type="hidden" name="id" value=id.to_string() />
                            <button type="submit" class="primary enable-endpoint">"Enable again"</button>
                        </ActionForm>
                    })}
                    <ActionForm action=rotate>
                        <input type="hidden" name="idempotency_key" value=key.to_string() />
                        <input type="hidden" name="id" value=id.to_string() />
                        <button type="submit" class="secondary">"Rotate secret"</button>
                    </ActionForm>
                    <ActionForm action=delete>
                        <input type="hidden" name="idempotency_key" value=key.to_string() />
                        <input type="hidden" name="id" value=id.to_string() />
                        <button type="submit" class="danger">"Delete endpoint"</button>
                    </ActionForm>
                </div>
            })}
            <h2>"Delivery log"</h2>
            {log.rows(p.attempts.into_iter().zip(p.redeliver_keys), |(a, key)| {
                let answer = match a.status_code {
                    Some(s) => s.to_string(),
                    None => a.error.clone().unwrap_or_default(),
                };
                let ok = a.status_code.is_some_and(|s| (200..300).contains(&s));
                view! {
                    <tr class=if ok { "attempt ok" } else { "attempt failed" }>
                        <td>{when(a.attempted_at)}</td>
                        <td><code>{a.event_type.clone()}</code></td>
                        <td>{answer}</td>
                        <td class="num">{a.latency_ms}</td>
                        <td><code class="response">{a.response.clone()}</code></td>
                        {owner.then(|| view! {
                            <td>
                                <ActionForm action=redeliver>
                                    <input type="hidden" name="idempotency_key" value=key.to_string() />
                                    <input type="hidden" name="endpoint_id" value=id.to_string() />
                                    <input type="hidden" name="event_id" value=a.event_id.to_string() />
                                    <button type="submit" class="secondary">"Deliver again"</button>
                                </ActionForm>
                            </td>
                        })}
                    </tr>
                }
            })}
            <p><a href="/settings/webhooks">"All endpoints"</a></p>
        </section>
    }
}

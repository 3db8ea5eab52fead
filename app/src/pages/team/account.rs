//! The account settings page (`/settings/account`: verification, the API keys the user created,
//! password, address) and the sessions page (`/settings/sessions`).

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use super::{query_flag, when};
use crate::pages::layout::{error_banner, Head};
use crate::rpc::account::{
    account_page, list_sessions, ChangeEmail, ChangePassword, EndOtherSessions, EndSession,
    ResendVerification,
};
use crate::rpc::api_keys::RevokeOwnApiKeys;

/// The account: verification, password, address.
#[component]
pub fn AccountSettingsPage() -> impl IntoView {
    let password = ServerAction::<ChangePassword>::new();
    let email = ServerAction::<ChangeEmail>::new();
    let resend = ServerAction::<ResendVerification>::new();
    let revoke_keys = ServerAction::<RevokeOwnApiKeys>::new();
    let page = Resource::new(|| (), |_| account_page());
    let (verified, changed, asked, sent) = (
        query_flag("verified"),
        query_flag("password"),
        query_flag("email"),
        query_flag("sent"),
    );
    view! {
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => {
                        view! {
                            <section class="card">
                                <h1>"Your account"</h1>
                                {verified.then(|| view! { <p class="notice" role="status">"Your email address is confirmed."</p> })}
                                {changed.then(|| view! { <p class="notice" role="status">"Password changed. Your other sessions were signed out."</p> })}
                                {asked.then(|| view! { <p class="notice" role="status">"We sent a link to the new address: the change takes effect when you follow it."</p> })}
                                {sent.then(|| view! { <p class="notice" role="status">"We sent you a new link."</p> })}
                                <p>
                                    "Email: " <strong class="account-email">{p.email.clone()}</strong>
                                    {if p.verified {
                                        view! { <span class="status paid">" verified"</span> }.into_any()
                                    } else {
                                        view! {
                                            <span class="status open unverified">" not verified"</span>
                                            <span class="hint">" — until it is, you cannot email invoices or create API keys."</span>
                                            <form method="post" action=ResendVerification::PATH class="inline">
                                                <input type="hidden" name="idempotency_key" value=p.verify_key.to_string() />
                                                <button type="submit" class="link resend-verification">"Send the link again"</button>
                                            </form>
                                        }
                                            .into_any()
                                    }}
                                </p>
                                <p><a href="/settings/sessions">"Your sessions"</a> " · " <a href="/settings/orgs">"Your organisations"</a></p>
                            </section>
                            <section class="card own-api-keys">
                                <h2>"API keys you created"</h2>
                                {move || revoke_keys.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                {if p.api_keys.is_empty() {
                                    view! { <p class="hint">"None is live."</p> }.into_any()
                                } else {
                                    view! {
                                        <p class="hint">
                                            "They keep working after a password reset or change. If you did not make one of them, revoke them all."
                                        </p>
                                        <ul class="own-keys">
                                            {p.api_keys
                                                .iter()
                                                .map(|k| view! {
                                                    <li class="own-key">
                                                        <strong>{k.name.clone()}</strong> " " <code>{k.prefix.clone()}</code>
                                                        " · " {k.org_name.clone()} " · " {k.created_at.format("%Y-%m-%d").to_string()}
                                                    </li>
                                                })
                                                .collect_view()}
                                        </ul>
                                        <ActionForm action=revoke_keys>
                                            <input type="hidden" name="idempotency_key" value=p.revoke_keys_key.to_string() />
                                            <button type="submit" class="danger revoke-own-keys">"Revoke them all"</button>
                                        </ActionForm>
                                    }
                                        .into_any()
                                }}
                            </section>
                            <section class="card">
                                <h2>"Change password"</h2>
                                {move || password.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                <form method="post" action=ChangePassword::PATH>
                                    <label>"Current password" <input type="password" name="current" required autocomplete="current-password" /></label>
                                    <label>"New password" <input type="password" name="password" required minlength="8" autocomplete="new-password" /></label>
                                    <button type="submit" class="primary change-password">"Change password"</button>
                                </form>
                            </section>
                            <section class="card">
                                <h2>"Change email address"</h2>
                                {move || email.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                <form method="post" action=ChangeEmail::PATH>
                                    <input type="hidden" name="idempotency_key" value=p.email_key.to_string() />
                                    <label>"New address" <input type="email" name="email" required maxlength="254" /></label>
                                    <label>"Password" <input type="password" name="password" required autocomplete="current-password" /></label>
                                    <button type="submit" class="primary change-email">"Send a confirmation link"</button>
                                </form>
                            </section>
                        }
                            .into_any()
                    }
                    Err(e) => error_banner(&e).into_any(),
                }
            })}
            {move || resend.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
        </Transition>
    }
}

/// The user's sessions: where and when, and ending them.
#[component]
pub fn SessionsPage() -> impl IntoView {
    let end = ServerAction::<EndSession>::new();
    let others = ServerAction::<EndOtherSessions>::new();
    let list = Resource::new(|| (), |_| list_sessions());
    view! {
        <section class="card">
            <h1>"Your sessions"</h1>
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match list.await {
                        Ok(rows) => {
                            view! {
                                <table class="sessions">
                                    <Head cols=&["Since", "Last seen", "Browser", "Address", "Organisation", ""]/>
                                    <tbody>
                                        {rows
                                            .into_iter()
                                            .map(|s| {
                                                let id = s.id.to_string();
                                                view! {
                                                    <tr class="session" class:current=s.current>
                                                        <td>{when(s.created_at)}</td>
                                                        <td>{when(s.last_seen_at)}</td>
                                                        <td class="user-agent">{s.user_agent}</td>
                                                        <td>{s.address}</td>
                                                        <td>{s.org_name}</td>
                                                        <td>
                                                            {if s.current {
                                                                view! { <span class="status paid">"this one"</span> }.into_any()
                                                            } else {
                                                                view! {
                                                                    <ActionForm action=end attr:class="inline">
                                                                        <input type="hidden" name="id" value=id />
                                                                        <button type="submit" class="link end-session">"End"</button>
                                                                    </ActionForm>
                                                                }
                                                                    .into_any()
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
            <ActionForm action=others>
                <button type="submit" class="end-others">"Sign out every other session"</button>
            </ActionForm>
        </section>
    }
}

//! The team and the account: `/settings/members` (members, roles, invitations), `/invite/{token}`,
//! `/verify-email/{token}`, `/forgot-password`, `/reset-password/{token}`, `/settings/account`,
//! `/settings/sessions`, `/settings/orgs` (switch), `/settings/audit`. Forms that change a session
//! (accepting, resetting, switching) are plain posts: the page reloads as the new session.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::hooks::{use_params_map, use_query_map};

use super::layout::{error_banner, Head};
use crate::rpc::account::{
    account_page, list_orgs, list_sessions, ChangeEmail, ChangePassword, ConfirmEmail,
    EndOtherSessions, EndSession, ResendVerification, SwitchOrg,
};
use crate::rpc::activity::audit_log;
use crate::rpc::api_keys::RevokeOwnApiKeys;
use crate::rpc::auth::{ForgotPassword, ResetPassword};
use crate::rpc::team::{
    invitation, team_page, AcceptInvitation, ChangeRole, InviteMember, LeaveOrg, RemoveMember,
    ResendInvitation, RevokeInvitation,
};
use model::{Action, Role};

fn when(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

fn token_param() -> String {
    use_params_map().with_untracked(|p| p.get("token").unwrap_or_default())
}

fn query_flag(name: &'static str) -> bool {
    use_query_map().with_untracked(|q| q.get(name).is_some())
}

/// Members with their roles (owners change them and remove members), and invitations.
#[component]
pub fn MembersSettingsPage() -> impl IntoView {
    let invite = ServerAction::<InviteMember>::new();
    let role = ServerAction::<ChangeRole>::new();
    let remove = ServerAction::<RemoveMember>::new();
    let resend = ServerAction::<ResendInvitation>::new();
    let revoke = ServerAction::<RevokeInvitation>::new();
    let page = Resource::new(
        move || {
            invite.version().get()
                + role.version().get()
                + remove.version().get()
                + resend.version().get()
                + revoke.version().get()
        },
        |_| team_page(),
    );
    let banner = move || {
        [
            invite.value().get(),
            role.value().get(),
            remove.value().get(),
            resend.value().get(),
            revoke.value().get(),
        ]
        .into_iter()
        .flatten()
        .find_map(|r| r.err())
        .and_then(|e| error_banner(&e))
    };
    view! {
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => {
                        let owner = p.my_role.may(Action::ManageMembers);
                        let me = p.me;
                        view! {
                            <section class="card">
                                <h1>"Members of " {p.org_name.clone()}</h1>
                                {banner}
                                <table class="members">
                                    <Head cols=&["Email", "Role", "Joined", ""]/>
                                    <tbody>
                                        {p.members
                                            .into_iter()
                                            .zip(p.member_keys)
                                            .map(|(m, (role_key, remove_key))| {
                                                let id = m.user_id.to_string();
                                                let id2 = id.clone();
                                                let is_me = m.user_id == me;
                                                view! {
                                                    <tr class="member" data-email=m.email.clone()>
                                                        <td>
                                                            {m.email.clone()}
                                                            {(!m.verified).then(|| view! { <span class="hint">" (unverified)"</span> })}
                                                        </td>
                                                        <td class="member-role">
                                                            {if owner {
                                                                view! {
                                                                    <ActionForm action=role attr:class="inline">
                                                                        <input type="hidden" name="idempotency_key" value=role_key.to_string() />
                                                                        <input type="hidden" name="user_id" value=id />
                                                                        <select name="role">
                                                                            {Role::ALL
                                                                                .into_iter()
                                                                                .map(|r| view! { <option value=r.as_str() selected=r == m.role>{r.label()}</option> })
                                                                                .collect_view()}
                                                                        </select>
                                                                        <button type="submit" class="link change-role">"Change"</button>
                                                                    </ActionForm>
                                                                }
                                                                    .into_any()
                                                            } else {
                                                                m.role.label().into_any()
                                                            }}
                                                        </td>
                                                        <td>{when(m.joined)}</td>
                                                        <td>
                                                            {if is_me {
                                                                // A plain post: leaving ends this session.
                                                                view! {
                                                                    <form method="post" action=LeaveOrg::PATH class="inline">
                                                                        <input type="hidden" name="idempotency_key" value=remove_key.to_string() />
                                                                        <button type="submit" class="link leave-org">"Leave"</button>
                                                                    </form>
                                                                }
                                                                    .into_any()
                                                            } else if owner {
                                                                view! {
                                                                    <ActionForm action=remove attr:class="inline">
                                                                        <input type="hidden" name="idempotency_key" value=remove_key.to_string() />
                                                                        <input type="hidden" name="user_id" value=id2 />
                                                                        <button type="submit" class="link remove-member">"Remove"</button>
                                                                    </ActionForm>
                                                                }
                                                                    .into_any()
                                                            } else {
                                                                ().into_any()
                                                            }}
                                                        </td>
                                                    </tr>
                                                }
                                            })
                                            .collect_view()}
                                    </tbody>
                                </table>
                            </section>
                            {owner.then(|| view! {
                                <section class="card">
                                    <h2>"Invite someone"</h2>
                                    <ActionForm action=invite>
                                        <input type="hidden" name="idempotency_key" value=p.invite_key.to_string() />
                                        <div class="grid">
                                            <label>"Email" <input type="email" name="email" required maxlength="254" /></label>
                                            <label>
                                                "Role"
                                                <select name="role">
                                                    <option value="member" selected>"Member"</option>
                                                    <option value="viewer">"Viewer"</option>
                                                    <option value="owner">"Owner"</option>
                                                </select>
                                            </label>
                                        </div>
                                        <button type="submit" class="primary send-invitation" disabled=move || invite.pending().get()>
                                            "Send invitation"
                                        </button>
                                    </ActionForm>
                                    <p class="hint">"The link in the email works once, for 7 days."</p>
                                    <table class="invitations">
                                        <tbody>
                                            {p.invitations
                                                .into_iter()
                                                .zip(p.invitation_keys)
                                                .map(|(i, (resend_key, revoke_key))| {
                                                    let state = i.state.as_str();
                                                    let (id, id2) = (i.id.to_string(), i.id.to_string());
                                                    let open = i.state.may_resend();
                                                    let email = i.email.clone();
                                                    view! {
                                                        <tr class="invitation" data-email=email>
                                                            <td>{i.email}</td>
                                                            <td>{i.role.label()}</td>
                                                            <td><span class=format!("status {state}")>{state}</span></td>
                                                            <td>"until " {when(i.expires_at)}</td>
                                                            <td>
                                                                {open.then(|| view! {
                                                                    <ActionForm action=resend attr:class="inline">
                                                                        <input type="hidden" name="idempotency_key" value=resend_key.to_string() />
                                                                        <input type="hidden" name="id" value=id />
                                                                        <button type="submit" class="link resend">"Resend"</button>
                                                                    </ActionForm>
                                                                    <ActionForm action=revoke attr:class="inline">
                                                                        <input type="hidden" name="idempotency_key" value=revoke_key.to_string() />
                                                                        <input type="hidden" name="id" value=id2 />
                                                                        <button type="submit" class="link revoke">"Revoke"</button>
                                                                    </ActionForm>
                                                                })}
                                                            </td>
                                                        </tr>
                                                    }
                                                })
                                                .collect_view()}
                                        </tbody>
                                    </table>
                                    <p><a href="/settings/audit">"Audit log"</a></p>
                                </section>
                            })}
                        }
                            .into_any()
                    }
                    Err(e) => error_banner(&e).into_any(),
                }
            })}
        </Transition>
    }
}

/// An invitation link: what it invites to, and the form that accepts it.
#[component]
pub fn InvitationPage() -> impl IntoView {
    let accept = ServerAction::<AcceptInvitation>::new();
    let token = token_param();
    let view_of = Resource::new(move || (), {
        let token = token.clone();
        move |_| invitation(token.clone())
    });
    view! {
        <section class="card narrow">
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || {
                    let token = token.clone();
                    Suspend::new(async move {
                        match view_of.await {
                            Ok(v) => {
                                view! {
                                    <h1>"Join " {v.org_name.clone()}</h1>
                                    <p>"You are invited to " {v.org_name} " as " {v.role.as_str()} "."</p>
                                    {move || accept.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                    <form method="post" action=AcceptInvitation::PATH>
                                        <input type="hidden" name="token" value=token />
                                        <label>"Email" <input type="email" value=v.email readonly autocomplete="username" /></label>
                                        <label>
                                            {if v.existing_account { "Your password" } else { "Choose a password (8 characters or more)" }}
                                            <input type="password" name="password" required autocomplete=if v.existing_account { "current-password" } else { "new-password" } />
                                        </label>
                                        <button type="submit" class="primary accept-invitation">"Accept invitation"</button>
                                    </form>
                                }
                                    .into_any()
                            }
                            Err(e) => {
                                view! {
                                    <h1>"Invitation"</h1>
                                    <p class="error banner invitation-state" role="alert">{e.to_string()}</p>
                                    <p><a href="/login">"Log in"</a></p>
                                }
                                    .into_any()
                            }
                        }
                    })
                }}
            </Transition>
        </section>
    }
}

/// A verification link: one button confirms (a mail scanner's GET does not).
#[component]
pub fn VerifyEmailPage() -> impl IntoView {
    let confirm = ServerAction::<ConfirmEmail>::new();
    let token = token_param();
    view! {
        <section class="card narrow">
            <h1>"Confirm your email address"</h1>
            {move || confirm.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            <form method="post" action=ConfirmEmail::PATH>
                <input type="hidden" name="token" value=token />
                <button type="submit" class="primary confirm-email">"Confirm"</button>
            </form>
        </section>
    }
}

#[component]
pub fn ForgotPasswordPage() -> impl IntoView {
    let forgot = ServerAction::<ForgotPassword>::new();
    let sent = query_flag("sent");
    // Minted where the page is rendered and carried through hydration: a resubmit is one email.
    let key = SharedValue::new_str(uuid::Uuid::now_v7).into_inner();
    view! {
        <section class="card narrow">
            <h1>"Forgot your password?"</h1>
            {sent.then(|| view! {
                <p class="notice" role="status">
                    "If an account uses that address, we have emailed it a link to choose a new password. The link works once, for an hour."
                </p>
            })}
            {move || forgot.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            <form method="post" action=ForgotPassword::PATH>
                <input type="hidden" name="idempotency_key" value=key.to_string() />
                <label>"Email" <input type="email" name="email" required autocomplete="username" /></label>
                <button type="submit" class="primary send-reset">"Email me a link"</button>
            </form>
            <p><a href="/login">"Back to log in"</a></p>
        </section>
    }
}

#[component]
pub fn ResetPasswordPage() -> impl IntoView {
    let reset = ServerAction::<ResetPassword>::new();
    let token = token_param();
    view! {
        <section class="card narrow">
            <h1>"Choose a new password"</h1>
            <p class="hint">"Every other session of your account will be signed out."</p>
            {move || reset.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            <form method="post" action=ResetPassword::PATH>
                <input type="hidden" name="token" value=token />
                <label>
                    "New password (8 characters or more)"
                    <input type="password" name="password" required minlength="8" autocomplete="new-password" />
                </label>
                <button type="submit" class="primary reset-password">"Set password"</button>
            </form>
        </section>
    }
}

/// The account: verification, password, address.
#[component]
pub fn AccountSettingsPage() -> impl IntoView {
    let password = ServerAction::<ChangePassword>::new();
    let email = ServerAction::<ChangeEmail>::new();
    let resend = ServerAction::<ResendVerification>::new();
    let revoke_keys = ServerAction::<RevokeOwnApiKeys>::new();
    let page = Resource::new(move || revoke_keys.version().get(), |_| account_page());
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
    let list = Resource::new(
        move || (end.version().get(), others.version().get()),
        |_| list_sessions(),
    );
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

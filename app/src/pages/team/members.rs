//! The members settings page (`/settings/members`: members, roles, invitations) and the
//! invitation link's page (`/invite/{token}`). Leaving and accepting are plain posts: the page
//! reloads as the new session.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use super::{token_param, when};
use crate::pages::layout::{error_banner, refused, Head};
use crate::rpc::team::{
    invitation, team_page, AcceptInvitation, ChangeRole, InviteMember, LeaveOrg, RemoveMember,
    ResendInvitation, RevokeInvitation,
};
use model::{Action, Role};

/// Members with their roles (owners change them and remove members), and invitations.
#[component]
pub fn MembersSettingsPage() -> impl IntoView {
    let invite = ServerAction::<InviteMember>::new();
    let role = ServerAction::<ChangeRole>::new();
    let remove = ServerAction::<RemoveMember>::new();
    let resend = ServerAction::<ResendInvitation>::new();
    let revoke = ServerAction::<RevokeInvitation>::new();
    let page = Resource::new(|| (), |_| team_page());
    let banner = move || {
        [
            invite.value().get().map(|r| r.map_err(|e| e.error)),
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
                        // Without JavaScript a refused invitation comes back through the URL: its
                        // key and what was typed.
                        let (typed_key, typed) = refused(invite.value().get_untracked());
                        let (typed_email, typed_role) =
                            typed.unwrap_or_else(|| (String::new(), "member".to_owned()));
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
                                        <input type="hidden" name="idempotency_key" value=typed_key.unwrap_or_else(|| p.invite_key.to_string()) />
                                        <div class="grid">
                                            <label>"Email" <input type="email" name="email" required maxlength="254" value=typed_email.clone() /></label>
                                            <label>
                                                "Role"
                                                <select name="role">
                                                    <option value="member" selected=typed_role == "member">"Member"</option>
                                                    <option value="viewer" selected=typed_role == "viewer">"Viewer"</option>
                                                    <option value="owner" selected=typed_role == "owner">"Owner"</option>
                                                </select>
                                            </label>
                                        </div>
                                        <button type="submit" class="primary send-invitation">
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

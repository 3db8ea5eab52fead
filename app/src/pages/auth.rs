//! Sign-up and log-in. Plain HTML form posts (with or without JavaScript): a session change reloads
//! the page, so everything on it reflects the new user.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::hooks::use_query_map;

use super::layout::error_banner;
use crate::rpc::auth::{signups_open, Login, Signup, SIGNUPS_CLOSED};

#[component]
pub fn LoginPage() -> impl IntoView {
    let action = ServerAction::<Login>::new();
    let next = use_query_map().with_untracked(|q| q.get("next"));
    view! {
        <section class="card narrow">
            <h1>"Log in"</h1>
            {move || action.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            <form method="post" action=Login::PATH>
                <label>"Email" <input type="email" name="email" required autocomplete="username" /></label>
                <label>
                    "Password"
                    <input type="password" name="password" required autocomplete="current-password" />
                </label>
                {next.map(|n| view! { <input type="hidden" name="next" value=n /> })}
                <button type="submit">"Log in"</button>
            </form>
            <p>"No account? " <a href="/signup">"Sign up"</a></p>
        </section>
    }
}

#[component]
pub fn SignupPage() -> impl IntoView {
    let action = ServerAction::<Signup>::new();
    let field_error = move |name: &'static str| {
        move || {
            action
                .value()
                .get()
                .and_then(|r| r.err())
                .and_then(|e| e.field_errors().and_then(|f| f.get(name).cloned()))
                .map(|m| view! { <span class="error">{m}</span> })
        }
    };
    let open = Resource::new(|| (), |_| signups_open());
    let closed = move || matches!(open.get(), Some(Ok(false)));
    let sent = use_query_map().with_untracked(|q| q.get("sent").is_some_and(|v| v == "1"));
    if sent {
        return view! {
            <section class="card narrow">
                <h1>"Check your email"</h1>
                <p class="notice signed-up" role="status">
                    "We sent a message to the address you gave: a link to confirm it if it is new \
                     to us. Then log in with the password you chose."
                </p>
                <p><a class="button primary" href="/login">"Log in"</a></p>
            </section>
        }
        .into_any();
    }
    view! {
        <section class="card narrow">
            <h1>"Create your organisation"</h1>
            <Suspense fallback=|| ()>
                {move || {
                    closed()
                        .then(|| {
                            view! {
                                <p class="notice signups-closed" role="status">
                                    {SIGNUPS_CLOSED}
                                </p>
                            }
                        })
                }}
            </Suspense>
            {move || action.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            <form method="post" action=Signup::PATH>
                <label>"Organisation" <input type="text" name="org_name" required maxlength="200" /></label>
                <label>
                    "Email" <input type="email" name="email" required autocomplete="username" />
                    {field_error("email")}
                </label>
                <label>
                    "Password (8 characters or more)"
                    <input type="password" name="password" required minlength="8" autocomplete="new-password" />
                </label>
                <button type="submit">"Sign up"</button>
            </form>
            <p>"Have an account? " <a href="/login">"Log in"</a></p>
        </section>
    }
    .into_any()
}

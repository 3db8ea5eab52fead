//! The pages an emailed link or a lost password leads to: `/verify-email/{token}`,
//! `/forgot-password` and `/reset-password/{token}`. Their forms are plain posts.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use super::{query_flag, token_param};
use crate::pages::layout::error_banner;
use crate::rpc::account::ConfirmEmail;
use crate::rpc::auth::{ForgotPassword, ResetPassword};

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
    // Minted where the page is rendered: a resubmit is one email.
    let key = uuid::Uuid::now_v7();
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

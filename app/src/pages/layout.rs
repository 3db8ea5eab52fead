//! What every page shares: the header and navigation, error banners, the not-found page, table heads.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use crate::rpc::auth::{current_user, Logout};
use model::error::AppError;
use model::Action;

/// The header: the main sections on one line at 1280 px (wrapping on a phone), with the org and
/// the role on the right; on the settings pages, their own tabs below it.
#[component]
pub fn Nav() -> impl IntoView {
    let user = Resource::new(|| (), |_| current_user());
    let location = leptos_router::hooks::use_location();
    let in_settings = move || location.pathname.get().starts_with("/settings");
    view! {
        <header class="nav">
            <a class="brand" href="/dashboard">"invoicer"</a>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    match user.await {
                        Ok(Some(u)) => {
                            let edits = u.role.may(Action::EditInvoices);
                            view! {
                                <nav aria-label="Main">
                                    <a href="/dashboard">"Dashboard"</a>
                                    <a href="/invoices">"Invoices"</a>
                                    <a href="/quotes">"Quotes"</a>
                                    <a href="/customers">"Customers"</a>
                                    <a href="/schedules">"Recurring"</a>
                                    <a href="/payments/bank">"Bank"</a>
                                    <a href="/inbox">"Inbox"</a>
                                    <a href="/activity">"Activity"</a>
                                    <a href="/settings/org">"Settings"</a>
                                    {edits.then(|| view! { <a href="/invoices/new" class="button new-invoice">"New invoice"</a> })}
                                </nav>
                                <span class="who" title=u.email.clone()>
                                    <a href="/settings/orgs" class="org-switch" title="Switch organisation">
                                        {u.org_name}
                                    </a>
                                    " (" {u.role.as_str()} ")"
                                </span>
                                // A plain POST: logging out reloads the page for everyone.
                                <form method="post" action=Logout::PATH class="inline">
                                    <button type="submit" class="link">"Log out"</button>
                                </form>
                            }
                                .into_any()
                        }
                        _ => {
                            view! {
                                <nav aria-label="Main">
                                    <a href="/login">"Log in"</a>
                                    <a href="/signup">"Sign up"</a>
                                </nav>
                            }
                                .into_any()
                        }
                    }
                })}
            </Transition>
        </header>
        {move || in_settings().then(SettingsTabs)}
    }
}

/// The settings pages' own navigation: the org, its members, API keys, and one's account.
#[component]
fn SettingsTabs() -> impl IntoView {
    let location = leptos_router::hooks::use_location();
    let tab = move |href: &'static str, label: &'static str| {
        let current = move || (location.pathname.get() == href).then_some("page");
        view! { <a href=href aria-current=current>{label}</a> }
    };
    view! {
        <nav class="tabs" aria-label="Settings">
            {tab("/settings/org", "Organisation")}
            {tab("/settings/members", "Members")}
            {tab("/settings/api-keys", "API keys")}
            {tab("/settings/webhooks", "Webhooks")}
            {tab("/settings/account", "Account")}
            {tab("/settings/sessions", "Sessions")}
            {tab("/settings/orgs", "Organisations")}
            {tab("/settings/audit", "Audit log")}
        </nav>
    }
}

#[component]
pub fn NotFound() -> impl IntoView {
    set_not_found_status();
    view! {
        <section class="card">
            <h1>"Not found"</h1>
            <p>"There is nothing here, or it belongs to another organisation."</p>
            <p><a href="/invoices">"Back to invoices"</a></p>
        </section>
    }
}

#[cfg(feature = "ssr")]
fn set_not_found_status() {
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(axum::http::StatusCode::NOT_FOUND);
    }
}

#[cfg(not(feature = "ssr"))]
fn set_not_found_status() {}

/// What a page shows for the route's `id`, as `read` answers it. Read once per rendering: the pages
/// are server HTML, and an action's form post brings the browser back to a fresh rendering.
pub fn route_resource<T, Fut>(
    read: impl Fn(String) -> Fut + Send + Sync + 'static,
) -> Resource<Result<T, AppError>>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<T, AppError>> + Send + 'static,
{
    let params = leptos_router::hooks::use_params_map();
    Resource::new(
        move || params.with(|p| p.get("id").unwrap_or_default()),
        read,
    )
}

/// The field errors of the latest answer of a form's action (`action.value()`), none before it.
pub fn field_errors<T, E>(
    value: impl Get<Value = Option<Result<T, E>>> + Send + Sync + 'static,
) -> Signal<model::error::FieldErrors>
where
    T: Clone + Send + Sync + 'static,
    E: std::borrow::Borrow<AppError> + Clone + Send + Sync + 'static,
{
    Signal::derive(move || match value.get() {
        Some(Err(e)) => e.borrow().field_errors().cloned().unwrap_or_default(),
        _ => Default::default(),
    })
}

/// A refused submit sent back to its page (without JavaScript, through the URL): the key it was
/// made with, so the corrected resubmit is the same attempt, and what was typed, so nothing is lost.
pub fn refused<T, V>(
    answer: Option<Result<T, model::error::FormError<V>>>,
) -> (Option<String>, Option<V>) {
    match answer {
        Some(Err(e)) => (
            e.error.attempt().and_then(|r| r.idempotency_key.clone()),
            e.values,
        ),
        _ => (None, None),
    }
}

/// The message of `errors` about `field`, next to it.
pub fn field_error(
    errors: Signal<model::error::FieldErrors>,
    field: &'static str,
) -> impl Fn() -> Option<AnyView> + Send + Sync + 'static {
    move || {
        errors
            .get()
            .get(field)
            .cloned()
            .map(|m| view! { <span class="error">{m}</span> }.into_any())
    }
}

/// What `resource` reads, drawn by `draw` once it is there ("Loading…" until then); a read that
/// found nothing (or another org's) is the not-found page, another failure its error's banner.
pub fn loaded<T, V>(
    resource: Resource<Result<T, AppError>>,
    draw: impl Fn(T) -> V + Clone + Send + Sync + 'static,
) -> impl IntoView
where
    T: Clone + serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    V: IntoView + 'static,
{
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || {
                let draw = draw.clone();
                Suspend::new(async move {
                    match resource.await {
                        Ok(found) => draw(found).into_any(),
                        Err(AppError::NotFound) => view! { <NotFound /> }.into_any(),
                        Err(e) => error_banner(&e).into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

/// A message for errors that are not about one field.
pub fn error_banner(error: &AppError) -> Option<AnyView> {
    match error {
        // Field errors sit next to their fields; those about the form as a whole (its key, the
        // version it was rendered from) are a banner.
        AppError::Invalid(r) => ["idempotency_key", "version", "einvoice"]
            .into_iter()
            .find_map(|f| r.fields.get(f))
            .map(|message| {
                view! { <p class="error banner" role="alert">{message.clone()}</p> }.into_any()
            }),
        AppError::Unauthorized => Some(
            view! {
                <p class="error banner" role="alert">
                    "Your session has ended. " <a href="/login">"Log in"</a> " again."
                </p>
            }
            .into_any(),
        ),
        other => {
            Some(view! { <p class="error banner" role="alert">{other.to_string()}</p> }.into_any())
        }
    }
}

/// A table's header row, one heading per column; the headings also named in `num` are right-aligned like
/// the numbers under them, and an empty heading is the rows' buttons, named for screen readers only.
#[component]
pub fn Head(
    cols: &'static [&'static str],
    #[prop(optional)] num: &'static [&'static str],
) -> impl IntoView {
    view! {
        <thead>
            <tr>{cols.iter().map(|col| view! {
                <th scope="col" class=num.contains(col).then_some("num")>
                    {if col.is_empty() { view! { <span class="sr-only">"Actions"</span> }.into_any() } else { col.into_any() }}
                </th>
            }).collect_view()}</tr>
        </thead>
    }
}

/// A list drawn as a table, or the sentence that stands in for an empty one. The table scrolls sideways
/// on a narrow screen, so it is a region the keyboard can reach, named by `label`.
#[derive(Clone, Copy, Default)]
pub struct Table {
    pub class: &'static str,
    pub label: &'static str,
    pub cols: &'static [&'static str],
    /// The headings whose columns hold numbers.
    pub num: &'static [&'static str],
    /// What the page says when there is nothing to list (where it says nothing, an empty table is left out).
    pub empty: &'static str,
}

impl Table {
    /// The table, one row drawn by `row` for each of `rows`.
    pub fn rows<T, V: IntoView + 'static>(
        self,
        rows: impl IntoIterator<Item = T>,
        row: impl FnMut(T) -> V,
    ) -> AnyView {
        let mut rows = rows.into_iter().peekable();
        if rows.peek().is_none() {
            return (!self.empty.is_empty())
                .then(|| view! { <p class="empty">{self.empty}</p> })
                .into_any();
        }
        view! {
            <div class="table-scroll" tabindex="0" role="region" aria-label=self.label>
                <table class=self.class>
                    <Head cols=self.cols num=self.num/>
                    <tbody>{rows.map(row).collect_view()}</tbody>
                </table>
            </div>
        }
        .into_any()
    }
}

/// A customer's name, linking to their page where they still have one.
pub fn customer_link(id: Option<impl std::fmt::Display>, name: String) -> AnyView {
    match id {
        Some(id) => view! { <a href=format!("/customers/{id}")>{name}</a> }.into_any(),
        None => name.into_any(),
    }
}

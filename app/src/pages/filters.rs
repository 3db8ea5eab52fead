//! The filter bar of the list pages (invoices, activity): selects and a search box that read their
//! values from the page's query string and submit as a plain GET form.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// The query-string parameter `name` of the current page, if it is given and not empty.
pub fn query_param() -> impl Fn(&str) -> Option<String> + Copy + Send + Sync + 'static {
    let query = use_query_map();
    move |name: &str| query.with(|q| q.get(name)).filter(|v| !v.is_empty())
}

/// The query-string parameters `names` of the current page (each `None` if absent or empty): the
/// source of a list page's resource.
pub fn query_params<const N: usize>(
    names: [&'static str; N],
) -> impl Fn() -> [Option<String>; N] + Copy + Send + Sync + 'static {
    let param = query_param();
    move || names.map(param)
}

/// A labelled select named `name` (`id` is `filter-<id>`): `any` first, then `options`, the one in
/// the query string selected; underscores read as spaces.
#[component]
pub fn FilterSelect(
    id: &'static str,
    name: &'static str,
    label: &'static str,
    any: &'static str,
    options: &'static [&'static str],
) -> impl IntoView {
    let param = query_param();
    view! {
        <label class="sr-only" for=format!("filter-{id}")>{label}</label>
        <select id=format!("filter-{id}") name=name>
            <option value="">{any}</option>
            {options
                .iter()
                .map(|o| {
                    view! {
                        <option value=*o selected=move || param(name).as_deref() == Some(*o)>
                            {o.replace('_', " ")}
                        </option>
                    }
                })
                .collect_view()}
        </select>
    }
}

/// A labelled search box named `q`.
#[component]
pub fn FilterSearch(label: &'static str, placeholder: &'static str) -> impl IntoView {
    let param = query_param();
    view! {
        <label class="sr-only" for="filter-q">{label}</label>
        <input id="filter-q" type="search" name="q" placeholder=placeholder value=move || param("q") />
    }
}

/// The link to the next page of a list at `path`: the current query with `before=<cursor>`.
#[component]
pub fn NextPage(path: &'static str, cursor: String, label: &'static str) -> impl IntoView {
    let query = use_query_map();
    view! {
        <p>
            <a
                class="older"
                href=move || {
                    let mut q = query.get();
                    q.replace("before", cursor.clone());
                    format!("{path}{}", q.to_query_string())
                }
            >
                {label}
            </a>
        </p>
    }
}

/// A link to the export `kind` (`/exports/<kind>.csv`) with the list's filters as they are (not its
/// page: an export lists them all).
#[component]
pub fn ExportLink(kind: &'static str, label: &'static str) -> impl IntoView {
    let query = use_query_map();
    view! {
        <a
            class=format!("export export-{kind}")
            download
            href=move || {
                let mut q = query.get();
                q.remove("before");
                format!("/exports/{kind}.csv{}", q.to_query_string())
            }
        >
            {label}
        </a>
    }
}

//! Importing customers: `/customers/import` (a plain multipart form: the file goes to
//! `POST /customers/import`) and `/customers/import/{id}` (the preview with each refused row, the
//! button that adds the rest, and the progress while they are added, reloading itself).

use leptos::prelude::*;
use leptos_meta::Meta;

use crate::pages::layout::{loaded, route_resource, Table};
use crate::rpc::imports::{get_customer_import, import_form, ApplyCustomerImport};
use model::imports::{ImportView, COLUMNS, MAX_BYTES, MAX_ROWS};

const REFUSED: Table = Table {
    class: "import-errors",
    label: "Rows that cannot be imported",
    cols: &["Line", "Field", "Why"],
    num: &["Line"],
    empty: "",
};

const SAMPLE: Table = Table {
    class: "import-sample",
    label: "The first customers it adds",
    cols: &["Line", "Name", "Email"],
    num: &["Line"],
    empty: "",
};

#[component]
pub fn CustomerImportPage() -> impl IntoView {
    let key = Resource::new(|| (), |_| import_form());
    view! {
        <section class="card">
            <h1>"Import customers"</h1>
            <p>
                {format!(
                    "A CSV file (UTF-8, at most {} MB and {MAX_ROWS} customers) whose first line names its columns: ",
                    MAX_BYTES / 1024 / 1024
                )}
                <code>{COLUMNS.join(", ")}</code>
                ". Name and email are required. You see every row that cannot be imported before anything is added; the same file uploaded twice is the same import."
            </p>
            {loaded(key, move |key| view! {
                            <form method="post" action="/customers/import" enctype="multipart/form-data" class="import-form">
                                <input type="hidden" name="idempotency_key" value=key.to_string() />
                                <label>"CSV file" <input type="file" name="file" accept=".csv,text/csv" required /></label>
                                <button type="submit" class="primary">"Check the file"</button>
                            </form>
                        }.into_any())}
        </section>
    }
}

#[component]
pub fn CustomerImportStatusPage() -> impl IntoView {
    let apply = ServerAction::<ApplyCustomerImport>::new();
    let import = route_resource(get_customer_import);
    view! {
        {loaded(import, move |i| import_view(i, apply).into_any())}
    }
}

fn import_view(i: ImportView, apply: ServerAction<ApplyCustomerImport>) -> impl IntoView {
    let refused = i.total - i.valid;
    let summary = format!(
        "{}: {} rows, {} can be imported, {} cannot.",
        if i.file_name.is_empty() {
            "The file"
        } else {
            &i.file_name
        },
        i.total,
        i.valid,
        refused
    );
    let state = match i.status.as_str() {
        "previewed" if i.valid > 0 => view! {
            <ActionForm action=apply>
                <input type="hidden" name="idempotency_key" value=i.form_key.to_string() />
                <input type="hidden" name="id" value=i.id.to_string() />
                <button type="submit" class="primary import-apply">
                    {format!("Add {} customers", i.valid)}
                </button>
            </ActionForm>
        }.into_any(),
        "previewed" => view! { <p class="empty">"Nothing in this file can be imported."</p> }.into_any(),
        "applying" => view! {
            // Reloads itself until the worker is done (no script needed).
            <Meta http_equiv="refresh" content="2" />
            <p class="import-progress" role="status">
                <progress max=i.valid value=i.applied>{format!("{} of {}", i.applied, i.valid)}</progress>
                {format!(" Adding customers: {} of {}…", i.applied, i.valid)}
            </p>
        }.into_any(),
        _ => view! {
            <p class="import-done" role="status">{format!("Done: {} customers added.", i.applied)}</p>
            <p><a href="/customers">"See the customers"</a></p>
        }.into_any(),
    };
    view! {
        <section class="card import">
            <h1>"Import customers"</h1>
            <p class="import-summary">{summary}</p>
            {state}
            {(!i.errors.is_empty()).then(|| view! { <h2>"Rows that cannot be imported"</h2> })}
            {REFUSED.rows(i.errors.iter(), |e| view! {
                <tr class="import-error-row">
                    <td class="num">{e.row}</td>
                    <td>{e.field.clone()}</td>
                    <td>{e.message.clone()}</td>
                </tr>
            })}
            {(!i.sample.is_empty()).then(|| view! { <h2>"The first customers it adds"</h2> })}
            {SAMPLE.rows(i.sample.iter(), |(line, name, email)| view! {
                <tr><td class="num">{*line}</td><td>{name.clone()}</td><td>{email.clone()}</td></tr>
            })}
            <p><a href="/customers/import">"Import another file"</a></p>
        </section>
    }
}

//! `/payments/bank`: bank statements in (a plain multipart form: the file goes to
//! `POST /payments/bank`, once per rendered form), what the last import did, and the unmatched
//! entries: each credit with the invoices it may pay (same amount, same payer), confirmed or
//! dismissed once per rendered row.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::pages::layout::{error_banner, loaded, Table};
use crate::rpc::bank::{get_bank_page, IgnoreBankEntry, MatchBankEntry};
use model::{format_money, BankPage, UnmatchedEntry};

const UNMATCHED: Table = Table {
    class: "bank-entries",
    label: "Unmatched bank entries",
    cols: &[
        "Booked",
        "Amount",
        "Payer or payee",
        "Remittance",
        "Bank reference",
        "",
    ],
    num: &["Amount"],
    empty: "Nothing to match: every entry of your statements is matched or dismissed.",
};

#[component]
pub fn BankStatementsPage() -> impl IntoView {
    let query = use_query_map();
    let page = Resource::new(move || query.with(|q| q.get("imported")), get_bank_page);
    let confirm = ServerAction::<MatchBankEntry>::new();
    let dismiss = ServerAction::<IgnoreBankEntry>::new();
    view! {
        <section class="card bank">
            <h1>"Bank statements"</h1>
            {move || confirm.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            {move || dismiss.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            {loaded(page, move |p| bank_view(p, confirm, dismiss).into_any())}
        </section>
    }
}

fn bank_view(
    p: BankPage,
    confirm: ServerAction<MatchBankEntry>,
    dismiss: ServerAction<IgnoreBankEntry>,
) -> impl IntoView {
    let accounts = if p.accounts.is_empty() {
        view! {
            <p class="empty">
                "Add your account's IBAN on " <a href="/settings/org">"Settings"</a>
                " first: a statement is taken only for one of your accounts."
            </p>
        }
        .into_any()
    } else {
        view! {
            <p>
                "A CAMT.053, CAMT.054 or MT940 file from your bank (at most 10 MB), for "
                {p.accounts.join(", ")}
                ". Every entry is recorded once, however often a statement is imported and however statements overlap; \
                 a credit that names an invoice (its RF reference or its number) pays it."
            </p>
        }
        .into_any()
    };
    let imported = p.imported.map(|i| {
        view! {
            <p class="bank-imported" role="status">
                {format!(
                    "{} of {}: {} entries, {} new, {} matched to invoices.",
                    i.format.to_uppercase(),
                    i.account_iban,
                    i.entries,
                    i.new_entries,
                    i.matched
                )}
            </p>
        }
    });
    let upload = (p.can_edit && !p.accounts.is_empty()).then(|| {
        view! {
            <form method="post" action="/payments/bank" enctype="multipart/form-data" class="bank-upload">
                <input type="hidden" name="idempotency_key" value=p.upload_key.to_string() />
                <label>"Statement file" <input type="file" name="file" accept=".xml,.sta,.mt940,.940,.txt" required /></label>
                <button type="submit" class="primary">"Import"</button>
            </form>
        }
    });
    let can_edit = p.can_edit;
    view! {
        {accounts}
        {imported}
        {upload}
        <h2>"Unmatched"</h2>
        {UNMATCHED.rows(p.unmatched, move |u| entry_row(u, can_edit, confirm, dismiss))}
        {p.more.then(|| view! { <p class="more">"More entries wait: match or dismiss these to see them."</p> })}
    }
}

fn entry_row(
    u: UnmatchedEntry,
    can_edit: bool,
    confirm: ServerAction<MatchBankEntry>,
    dismiss: ServerAction<IgnoreBankEntry>,
) -> impl IntoView {
    let e = u.entry;
    let id = e.id.to_string();
    let key = u.key.to_string();
    let suggestions = u
        .suggestions
        .into_iter()
        .map(|s| {
            let why = match (s.same_amount, s.same_name) {
                (true, true) => "same amount and payer",
                (true, false) => "same amount",
                _ => "same payer",
            };
            let label = format!(
                "Confirm {} ({}, {} due; {why})",
                s.number,
                s.customer_name,
                format_money(s.due_cents, &e.currency.to_lowercase())
            );
            let (id, key) = (id.clone(), key.clone());
            view! {
                <ActionForm action=confirm attr:class="inline bank-confirm">
                    <input type="hidden" name="entry_id" value=id />
                    <input type="hidden" name="invoice_id" value=s.invoice_id.to_string() />
                    <input type="hidden" name="idempotency_key" value=key />
                    <button type="submit" class="link confirm">{label}</button>
                </ActionForm>
            }
        })
        .collect_view();
    let class = if e.amount_cents > 0 {
        "bank-entry credit"
    } else {
        "bank-entry debit"
    };
    view! {
        <tr class=class>
            <td>{e.booked_on.to_string()}</td>
            <td class="num">{format_money(e.amount_cents, &e.currency.to_lowercase())}</td>
            <td>{e.counterparty}</td>
            <td class="remittance">{e.remittance}</td>
            <td><code>{e.bank_reference.unwrap_or_default()}</code></td>
            <td class="actions">
                {can_edit.then(|| view! {
                    {suggestions}
                    <ActionForm action=dismiss attr:class="inline bank-dismiss">
                        <input type="hidden" name="entry_id" value=id />
                        <input type="hidden" name="idempotency_key" value=key />
                        <button type="submit" class="link dismiss">"Dismiss"</button>
                    </ActionForm>
                })}
            </td>
        </tr>
    }
}

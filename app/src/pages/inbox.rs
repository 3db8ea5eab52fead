//! `/inbox`: e-invoices the org received, uploaded here (a plain multipart form posted to
//! `POST /inbox`, once per rendered form and once per file) or delivered by the Peppol access
//! point; `/inbox/{id}`: one of them as a readable page (seller, lines, taxes, totals, payment
//! details, the rules that failed), its file, and "Mark paid" once per rendered button.

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::pages::layout::{error_banner, loaded, Table};
use crate::rpc::inbox::{get_inbox_page, get_received_page, MarkReceivedPaid};
use model::format_money;
use model::peppol::{InboxPage, ReceivedDocument, ReceivedPage};

const DOCUMENTS: Table = Table {
    class: "received-documents",
    label: "Received e-invoices",
    cols: &[
        "Received", "Seller", "Number", "Due date", "Total", "Due", "Checked", "",
    ],
    num: &["Total", "Due"],
    empty: "Nothing received yet.",
};

fn money(cents: i64, currency: &str) -> String {
    format_money(cents, &currency.to_lowercase())
}

#[component]
pub fn InboxPageView() -> impl IntoView {
    let page = Resource::new(|| (), |_| get_inbox_page());
    view! {
        <section class="card inbox">
            <h1>"Inbox"</h1>
            {loaded(page, move |p| inbox_view(p).into_any())}
        </section>
    }
}

fn inbox_view(p: InboxPage) -> impl IntoView {
    let how = if p.peppol_id.is_empty() {
        view! {
            <p>
                "Upload e-invoices you received: UBL or CII XML, or a Factur-X PDF (at most 10 MB). "
                "Set your Peppol id on " <a href="/settings/org">"Settings"</a>
                " to receive them over Peppol as well."
            </p>
        }
        .into_any()
    } else {
        view! {
            <p>
                "E-invoices sent to " <code>{p.peppol_id.clone()}</code>
                " over Peppol arrive here; you can also upload UBL or CII XML, or a Factur-X PDF (at most 10 MB)."
            </p>
        }
        .into_any()
    };
    let upload = p.can_edit.then(|| {
        view! {
            <form method="post" action="/inbox" enctype="multipart/form-data" class="inbox-upload">
                <input type="hidden" name="idempotency_key" value=p.upload_key.to_string() />
                <label>"E-invoice file" <input type="file" name="file" accept=".xml,.pdf" required /></label>
                <button type="submit" class="primary">"Upload"</button>
            </form>
        }
    });
    let exportable = !p.documents.is_empty();
    view! {
        {how}
        {upload}
        {DOCUMENTS.rows(p.documents, document_row)}
        {exportable.then(|| view! { <p><a href="/inbox.csv" download>"Export as CSV"</a></p> })}
    }
}

fn checked(d: &ReceivedDocument) -> String {
    let mut words = if d.valid {
        format!("Valid ({})", d.rule_set)
    } else {
        format!("{} rules failed", d.failed_rules.len())
    };
    if d.duplicate_of.is_some() {
        words.push_str("; conflicting duplicate");
    }
    if d.paid_at.is_some() {
        words.push_str("; paid");
    }
    words
}

fn document_row(d: ReceivedDocument) -> impl IntoView {
    let href = format!("/inbox/{}", d.id);
    let status = checked(&d);
    view! {
        <tr class="received-document">
            <td>{d.created_at.format("%Y-%m-%d").to_string()}</td>
            <td>{d.seller_name.clone()}</td>
            <td><a href=href>{d.number.clone()}</a></td>
            <td>{d.due_date.map(|x| x.to_string()).unwrap_or_default()}</td>
            <td class="num">{money(d.total_cents, &d.currency)}</td>
            <td class="num">{money(d.due_cents, &d.currency)}</td>
            <td>{status}</td>
            <td>{(d.source == "peppol").then_some("Peppol")}</td>
        </tr>
    }
}

#[component]
pub fn ReceivedDocumentView() -> impl IntoView {
    let params = use_params_map();
    let page = Resource::new(
        move || params.with(|p| p.get("id").unwrap_or_default()),
        get_received_page,
    );
    let paid = ServerAction::<MarkReceivedPaid>::new();
    view! {
        <section class="card received">
            {move || paid.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            {loaded(page, move |p| received_view(p, paid).into_any())}
        </section>
    }
}

const LINES: Table = Table {
    class: "received-lines",
    label: "Lines",
    cols: &["#", "Item", "Quantity", "Price", "VAT", "Net"],
    num: &["Quantity", "Price", "Net"],
    empty: "",
};

const TAXES: Table = Table {
    class: "received-taxes",
    label: "VAT breakdown",
    cols: &["Category", "Rate", "Taxable", "VAT"],
    num: &["Taxable", "VAT"],
    empty: "",
};

fn received_view(p: ReceivedPage, paid: ServerAction<MarkReceivedPaid>) -> impl IntoView {
    let d = p.detail.document;
    let c = p.detail.content;
    let currency = d.currency.clone();
    let cur = currency.clone();
    let lines = LINES.rows(c.lines, move |l| {
        view! {
            <tr>
                <td>{l.id}</td>
                <td>{l.name}</td>
                <td class="num">{l.quantity}</td>
                <td class="num">{l.unit_price}</td>
                <td>{format!("{} {}", l.category, l.percent)}</td>
                <td class="num">{money(l.net_cents, &cur)}</td>
            </tr>
        }
    });
    let cur = currency.clone();
    let taxes = TAXES.rows(c.taxes, move |t| {
        view! {
            <tr>
                <td>{t.category}</td>
                <td>{t.percent}</td>
                <td class="num">{money(t.taxable_cents, &cur)}</td>
                <td class="num">{money(t.tax_cents, &cur)}</td>
            </tr>
        }
    });
    let failed = if d.failed_rules.is_empty() {
        view! { <p class="valid">{format!("No rule of the {} rules failed.", d.rule_set)}</p> }
            .into_any()
    } else {
        view! {
            <h2>"Rules that failed"</h2>
            <ul class="failed-rules">
                {d.failed_rules.into_iter().map(|r| view! { <li><code>{r.rule}</code>" " {r.text}</li> }).collect_view()}
            </ul>
        }
        .into_any()
    };
    let duplicate = d.duplicate_of.map(|first| {
        view! {
            <p class="error duplicate" role="alert">
                "Conflicting duplicate: the same seller and number as "
                <a href=format!("/inbox/{first}")>"an e-invoice received before"</a>
                ", with other content."
            </p>
        }
    });
    let id = d.id.to_string();
    let mark = (p.can_edit && d.paid_at.is_none()).then(|| {
        view! {
            <ActionForm action=paid attr:class="inline mark-paid">
                <input type="hidden" name="document_id" value=id.clone() />
                <input type="hidden" name="idempotency_key" value=p.paid_key.to_string() />
                <button type="submit" class="primary">"Mark paid"</button>
            </ActionForm>
        }
    });
    let payment = (!c.iban.is_empty() || !c.payment_reference.is_empty()).then(|| {
        view! {
            <h2>"Payment"</h2>
            <dl class="received-payment">
                <dt>"IBAN"</dt><dd class="iban">{c.iban.clone()}</dd>
                <dt>"BIC"</dt><dd>{c.bic.clone()}</dd>
                <dt>"Reference"</dt><dd class="payment-reference">{c.payment_reference.clone()}</dd>
                <dt>"Terms"</dt><dd>{c.terms.clone()}</dd>
            </dl>
        }
    });
    let kind = if c.credit_note {
        "Credit note"
    } else {
        "Invoice"
    };
    view! {
        <h1>{format!("{kind} {} from {}", d.number, d.seller_name)}</h1>
        {duplicate}
        <dl class="received-summary">
            <dt>"Seller"</dt><dd class="seller">{d.seller_name.clone()}</dd>
            <dt>"Seller's id"</dt><dd>{d.seller_id.clone()}</dd>
            <dt>"Number"</dt><dd class="number">{d.number.clone()}</dd>
            <dt>"Issued"</dt><dd>{d.issue_date.map(|x| x.to_string()).unwrap_or_default()}</dd>
            <dt>"Due"</dt><dd>{d.due_date.map(|x| x.to_string()).unwrap_or_default()}</dd>
            <dt>"Buyer"</dt><dd>{c.buyer_name.clone()}</dd>
            <dt>"Total"</dt><dd class="total">{money(d.total_cents, &currency)}</dd>
            <dt>"Amount due"</dt><dd class="due">{money(d.due_cents, &currency)}</dd>
            <dt>"Paid"</dt><dd class="paid">{d.paid_at.map(|x| x.format("%Y-%m-%d").to_string()).unwrap_or_else(|| "Not yet".into())}</dd>
        </dl>
        {mark}
        <p><a href=format!("/inbox/{}/file", d.id) download>"Download the file"</a>" · "<a href="/inbox">"Back to the inbox"</a></p>
        <h2>"Lines"</h2>
        {lines}
        <h2>"VAT"</h2>
        {taxes}
        {payment}
        {failed}
    }
}

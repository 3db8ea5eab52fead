//! The invoice's customer page, `/i/{token}`: in the customer's language and the org's look,
//! with Pay (a plain form: paying works without JavaScript) and how to pay by transfer.

use axum::extract::State;
use axum::response::Response;
use invoicer_core::documents::i18n::Tr;
use invoicer_core::invoicing::public::{self, PublicInvoice};
use invoicer_core::AppState;
use leptos::prelude::*;
use model::{InvoiceStatus, Words};

use super::{checkout_origins, drawn, look, PageToken};

pub(super) async fn page(
    State(state): State<AppState>,
    PageToken(token, ceiling): PageToken,
) -> Response {
    let opened = public::open(&state.pool, &token, &state.settings.public_url).await;
    match drawn(ceiling, "public invoice page", opened) {
        Ok(mut found) => {
            if found.invoice.customer_id.is_some() {
                let id = found.invoice.id;
                match invoicer_core::payments::saved::of_invoice(&state.pool, id).await {
                    Ok(methods) => found.saved_methods = methods,
                    Err(e) => return super::unavailable("public invoice page", e),
                }
            }
            let tr = Tr::new(found.locale);
            let number = found.invoice.number.clone().unwrap_or_default();
            let title = tr.t_args(
                "invoice-title",
                &[("number", &number), ("org", &found.org_name)],
            );
            let branding = found.branding.clone();
            look::page(
                &title,
                render(found, &token, &tr),
                &branding,
                &checkout_origins(&state),
                tr.locale,
            )
        }
        Err(answer) => answer,
    }
}

fn status_text(found: &PublicInvoice, tr: &Tr) -> String {
    let inv = &found.invoice;
    match inv.status {
        InvoiceStatus::Paid => tr.t("status-paid"),
        InvoiceStatus::Refunded => tr.t("status-refunded"),
        _ if inv.payment_state == model::PaymentState::Processing => tr.t("status-processing"),
        _ if inv.overdue => tr.t_args("status-overdue", &[("due", &app::due_text(inv, tr))]),
        _ => tr.t_args("status-due", &[("due", &app::due_text(inv, tr))]),
    }
}

fn render(found: PublicInvoice, token: &str, tr: &Tr) -> String {
    let status = status_text(&found, tr);
    // A euro invoice with money due: the EPC QR code a banking app reads, drawn here as SVG.
    let qr = found
        .transfer_qr()
        .and_then(|payload| crate::payment_qr::svg(&payload, &tr.t("payment-qr")));
    let PublicInvoice {
        org_name,
        org_address,
        invoice: inv,
        payments_enabled,
        bank,
        einvoicing,
        branding,
        saved_methods,
        ..
    } = found;
    let currency = inv.currency.clone();
    let due = inv.amount_due_cents;
    let mentions = inv.tax_mentions(tr);
    // Not while a delayed payment (a bank debit) is under way: it would be paid twice.
    let payable = due > 0
        && payments_enabled
        && inv.payment_state != model::PaymentState::Processing
        && matches!(
            inv.status,
            InvoiceStatus::Open | InvoiceStatus::Uncollectible
        );
    let lines = app::line_rows(&inv, tr);
    // A customer on record may save a method for the next invoices; what they saved they see and
    // can remove here. The form's key is minted now: a double submit asks for one setup page.
    let may_save = inv.customer_id.is_some()
        && payments_enabled
        && !matches!(inv.status, InvoiceStatus::Void | InvoiceStatus::Draft);
    let saving = (may_save || !saved_methods.is_empty()).then(|| {
        let methods = saved_methods
            .into_iter()
            .map(|m| {
                let label = match m.kind.as_str() {
                    "card" => tr.t_args(
                        "method-card",
                        &[
                            ("brand", m.brand.as_deref().unwrap_or("")),
                            ("last4", m.last4.as_deref().unwrap_or("")),
                        ],
                    ),
                    _ => tr.t_args(
                        "method-debit",
                        &[("reference", m.mandate_reference.as_deref().unwrap_or(""))],
                    ),
                };
                view! {
                    <li class="saved-method">
                        <span class="method">{label}</span>
                        {m.default.then(|| view! { " " <span class="default">{format!("({})", tr.t("method-default"))}</span> })}
                        <form method="post" action=format!("/i/{token}/methods/{}/remove", m.id) class="remove-method">
                            <button type="submit" class="button remove">{tr.t("remove-method")}</button>
                        </form>
                    </li>
                }
            })
            .collect_view();
        view! {
            <section class="saved-methods" aria-labelledby="saved-heading">
                <h2 id="saved-heading">{tr.t("saved-methods")}</h2>
                <ul>{methods}</ul>
                {may_save.then(|| view! {
                    <form method="post" action=format!("/i/{token}/save_method") class="save-method">
                        <input type="hidden" name="key" value=uuid::Uuid::new_v4().to_string()/>
                        <button type="submit" class="button save-method">{tr.t("pay-automatically")}</button>
                        <p class="hint">{tr.t("pay-automatically-hint")}</p>
                    </form>
                })}
            </section>
        }
    });
    // How to pay by transfer, while something is due on an invoice that takes payments.
    let transfer = (due > 0
        && bank.is_set()
        && matches!(
            inv.status,
            InvoiceStatus::Open | InvoiceStatus::Uncollectible
        ))
    .then(|| {
        let rf = inv.payment_reference.as_deref();
        bank.lines(inv.number.as_deref().unwrap_or_default(), rf, tr)
    });
    view! {
        <main class="public invoice">
            {look::header(&org_name, &org_address, &branding)}
            <h1>{tr.t("invoice")} " " <span class="number">{inv.number.clone().unwrap_or_default()}</span></h1>
            <p class=format!("public-status {}", inv.status.as_str())>{status}</p>
            <section class="bill-to" aria-label=tr.t("billed-to")>
                <h2>{tr.t("billed-to")}</h2>
                <p class="customer">{inv.customer_name.clone()}</p>
                <p>{inv.customer_email.clone()}</p>
                <p class="address">{inv.customer_address.clone()}</p>
                {inv.customer_tax_id.clone().map(|t| view! { <p>{tr.t_args("tax-id", &[("id", &t)])}</p> })}
            </section>
            // Wider than a phone in some languages: the region scrolls, and the keyboard reaches it.
            <div class="table-scroll" tabindex="0" role="region" aria-label=tr.t("items")>
                <table>
                    <caption>{tr.t("items")}</caption>
                    {super::look::items_head(tr)}
                    <tbody>{lines}</tbody>
                    <tfoot>
                        {app::totals_rows(&inv, 4, tr)}
                        {(inv.amount_credited_cents > 0).then(|| view! {
                            <tr>
                                <th scope="row" colspan="4">{tr.t("credited")}</th>
                                <td class="num credited">{format!("-{}", tr.money(inv.amount_credited_cents, &currency))}</td>
                            </tr>
                        })}
                        <tr>
                            <th scope="row" colspan="4">{tr.t("paid")}</th>
                            <td class="num">{tr.money(inv.amount_paid_cents, &currency)}</td>
                        </tr>
                        <tr>
                            <th scope="row" colspan="4">{tr.t("amount-due")}</th>
                            <td class="num amount-due">{tr.money(due.max(0), &currency)}</td>
                        </tr>
                    </tfoot>
                </table>
            </div>
            {mentions.into_iter().map(|m| view! { <p class="tax-mention">{m}</p> }).collect_view()}
            {(!inv.notes.is_empty()).then(|| view! { <p class="notes">{inv.notes.clone()}</p> })}
            {payable
                .then(|| {
                    view! {
                        // A plain form: paying works without JavaScript.
                        <form method="post" action=format!("/i/{token}/pay") class="pay">
                            <button type="submit" class="button primary pay">
                                {tr.t_args("pay-amount", &[("amount", &tr.money(due, &currency))])}
                            </button>
                        </form>
                    }
                })}
            {saving}
            {transfer
                .map(|lines| {
                    view! {
                        <section class="transfer" aria-labelledby="transfer-heading">
                            <h2 id="transfer-heading">{tr.t("pay-by-transfer")}</h2>
                            <dl>
                                {lines
                                    .into_iter()
                                    .map(|(label, value)| view! { <dt>{label}</dt> <dd>{value}</dd> })
                                    .collect_view()}
                            </dl>
                            {qr.map(|svg| view! {
                                <figure class="payment-qr">
                                    <div class="qr" inner_html=svg></div>
                                    <figcaption>{tr.t("payment-qr")}</figcaption>
                                </figure>
                            })}
                        </section>
                    }
                })}
            <p>
                <a class="button pdf" href=format!("/i/{token}/pdf")>{tr.t("download-pdf")}</a>
                {einvoicing.then(|| view! {
                    " " <a class="einvoice" href=format!("/i/{token}/einvoice.xml")>{tr.t("einvoice-xml")}</a>
                })}
            </p>
            {look::footer(&branding)}
        </main>
    }
    .to_html()
}

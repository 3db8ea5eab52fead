//! The invoice as a PDF (A4 or US Letter), drawn with krilla: the embedded font is subset, so any
//! name a customer has (Zoë, Łukasz, Привет) is drawn and extractable as text. The numbers are the
//! page's: the same `PublicInvoice`, the same `format_money`.

use invoicer_core::documents::i18n::Tr;
use invoicer_core::invoicing::public::PublicInvoice;
use krilla::Document;
use model::Words;
use model::{Discount, InvoiceStatus};

use layout::{start, wrap, Writer, BODY, LINE, MARGIN};
pub use layout::{Brand, Paper};

pub mod credit_note;
pub mod facturx;
mod layout;
pub mod mail;
pub mod statement;
pub mod stored;

/// Right edges of the quantity, unit price and amount columns; the description takes what is left.
fn columns(width: f32) -> (f32, f32, f32) {
    let right = width - MARGIN;
    (right - 170.0, right - 85.0, right)
}

fn status_line(inv: &model::Invoice, tr: &Tr) -> String {
    let status = match inv.status {
        _ if inv.overdue => "state-overdue",
        InvoiceStatus::Draft => "state-draft",
        InvoiceStatus::Open => "state-open",
        InvoiceStatus::Paid => "state-paid",
        InvoiceStatus::Void => "state-void",
        InvoiceStatus::Uncollectible => "state-uncollectible",
        InvoiceStatus::Refunded => "state-refunded",
    };
    tr.t_args("pdf-status", &[("status", &tr.t(status))])
}

/// The invoice as PDF bytes; with its EN 16931 CII document (`cii`), a Factur-X PDF/A-3b.
pub fn render(found: &PublicInvoice, paper: Paper, cii: Option<Vec<u8>>, brand: Brand) -> Vec<u8> {
    let inv = &found.invoice;
    let tr = Tr::new(found.locale);
    let number = inv.number.clone().unwrap_or_else(|| "Draft".to_owned());
    let currency = &inv.currency;
    let mut doc = match cii {
        Some(_) => facturx::document(),
        None => Document::new(),
    };
    let title = tr.t_args(
        "invoice-title",
        &[("number", &number), ("org", &found.org_name)],
    );
    let mut w = start(&mut doc, title.clone(), paper, brand, tr);
    let width = w.width();
    let right = width - MARGIN;
    let (qty_right, unit_right, amount_right) = columns(width);
    let description_width = qty_right - 40.0 - MARGIN;

    // The sender, and the invoice's identity on the right.
    w.logo();
    w.y += 18.0;
    w.text(MARGIN, &found.org_name, 16.0, true);
    w.title_right(right, &tr.t("pdf-invoice"));
    w.y += LINE + 4.0;
    let issued = inv
        .finalized_at
        .map(|at| tr.date(at.date_naive()))
        .unwrap_or_default();
    let facts = [
        tr.t_args("pdf-number", &[("number", &number)]),
        tr.t_args("pdf-issued", &[("date", &issued)]),
        tr.t_args("pdf-due", &[("due", &app::due_text(inv, &tr))]),
        status_line(inv, &tr),
    ];
    let address = wrap(&found.org_address, 250.0, BODY);
    for row in 0..facts.len().max(address.len()) {
        if let Some(line) = address.get(row) {
            w.text(MARGIN, line, BODY, false);
        }
        if let Some(fact) = facts.get(row) {
            w.text_right(right, fact, BODY, row == 0);
        }
        w.y += LINE;
    }

    // The customer.
    w.y += LINE;
    w.grey(MARGIN, &tr.t("billed-to"), 9.0);
    w.y += LINE;
    w.text(MARGIN, &inv.customer_name, 11.0, true);
    w.y += LINE;
    w.text(MARGIN, &inv.customer_email, BODY, false);
    w.y += LINE;
    for line in wrap(&inv.customer_address, 300.0, BODY) {
        if !line.is_empty() {
            w.text(MARGIN, &line, BODY, false);
            w.y += LINE;
        }
    }
    if let Some(tax_id) = &inv.customer_tax_id {
        w.text(
            MARGIN,
            &tr.t_args("pdf-tax-id", &[("id", tax_id)]),
            BODY,
            false,
        );
        w.y += LINE;
    }

    // The lines.
    w.y += LINE;
    let header = |w: &mut Writer<'_>| {
        w.text(MARGIN, &tr.t("col-description"), 9.0, true);
        w.text_right(qty_right, &tr.t("col-qty"), 9.0, true);
        w.text_right(unit_right, &tr.t("col-unit-price"), 9.0, true);
        w.text_right(amount_right, &tr.t("col-amount"), 9.0, true);
        w.y += 6.0;
        w.rule(0.8);
        w.y += LINE;
    };
    header(&mut w);
    for line in &inv.lines {
        let wrapped = wrap(&line.description, description_width, BODY);
        let height = wrapped.len() as f32 * LINE + 4.0;
        if w.y + height > w.bottom() {
            w.new_page();
            header(&mut w);
        }
        w.text_right(qty_right, &tr.number(line.quantity), BODY, false);
        w.text_right(
            unit_right,
            &tr.money(line.unit_amount_cents, currency),
            BODY,
            false,
        );
        w.text_right(
            amount_right,
            &tr.money(line.amount_cents, currency),
            BODY,
            false,
        );
        for part in &wrapped {
            w.text(MARGIN, part, BODY, false);
            w.y += LINE;
        }
        if let (Some(name), Some(percent)) = (&line.tax_name, line.tax_percent) {
            w.room(LINE);
            let percent = tr.number(percent);
            let tax = tr.t_args("pdf-line-tax", &[("name", name), ("percent", &percent)]);
            w.grey(MARGIN, &tax, 9.0);
            w.y += LINE;
        }
        w.y += 4.0;
    }
    w.y -= LINE - 4.0;
    w.rule(0.8);
    w.y += LINE + 4.0;

    // Totals.
    let due = inv.amount_due_cents;
    let money = |cents: i64| tr.money(cents, currency);
    let mut rows = vec![(
        tr.label("subtotal", "Subtotal"),
        money(inv.subtotal_cents),
        false,
    )];
    if let Some(discount) = inv.discount {
        let label = match discount {
            Discount::Percent(p) => tr.phrase(
                "discount-percent",
                "Discount ({ $percent }%)",
                &[("percent", &tr.number(p))],
            ),
            Discount::AmountCents(_) => tr.label("discount", "Discount"),
        };
        let amount = format!("-{}", money(inv.discount_cents));
        rows.push((label, amount, false));
    }
    for tax in &inv.taxes {
        let label = format!("{} {}%", tax.name, tr.number(tax.percent));
        rows.push((label, money(tax.amount_cents), false));
    }
    rows.push((tr.label("total", "Total"), money(inv.total_cents), false));
    if inv.amount_credited_cents > 0 {
        let credited = format!("-{}", money(inv.amount_credited_cents));
        rows.push((tr.t("credited"), credited, false));
    }
    rows.push((tr.t("paid"), money(inv.amount_paid_cents), false));
    rows.push((tr.t("amount-due"), money(due), true));
    w.room(rows.len() as f32 * LINE);
    for (label, amount, bold) in rows {
        w.text_right(unit_right, &label, BODY, bold);
        w.text_right(amount_right, &amount, BODY, bold);
        w.y += LINE;
    }
    // What the law requires the invoice to say of its VAT categories.
    for mention in inv.tax_mentions(&tr) {
        w.y += LINE;
        for line in wrap(&mention, width - 2.0 * MARGIN, BODY) {
            w.room(LINE);
            w.text(MARGIN, &line, BODY, false);
            w.y += LINE;
        }
    }
    if !inv.notes.is_empty() {
        w.y += LINE;
        for line in wrap(&inv.notes, width - 2.0 * MARGIN, BODY) {
            w.room(LINE);
            w.text(MARGIN, &line, BODY, false);
            w.y += LINE;
        }
    }
    // How to pay by transfer, while something is due on an invoice that takes payments.
    let payable = matches!(
        inv.status,
        InvoiceStatus::Open | InvoiceStatus::Uncollectible
    );
    if due > 0 && payable && found.bank.is_set() {
        w.y += LINE;
        w.room(2.0 * LINE);
        w.text(MARGIN, &tr.t("pay-by-transfer"), BODY, true);
        w.y += LINE;
        let rf = inv.payment_reference.as_deref();
        for (label, value) in found.bank.lines(&number, rf, &tr) {
            for (n, part) in wrap(&value, width - 2.0 * MARGIN - 110.0, BODY)
                .iter()
                .enumerate()
            {
                w.room(LINE);
                if n == 0 {
                    w.grey(MARGIN, &label, 9.0);
                }
                w.text(MARGIN + 110.0, part, BODY, false);
                w.y += LINE;
            }
        }
        // A euro invoice: the EPC QR code a banking app reads, beside the text that says it.
        let code = found
            .transfer_qr()
            .and_then(|payload| crate::payment_qr::modules(&payload));
        if let Some(code) = code {
            const MODULE: f32 = 1.6;
            let side = code.side + 2 * crate::payment_qr::QUIET;
            w.room(side as f32 * MODULE + 2.0 * LINE);
            w.y += LINE / 2.0;
            let quiet = crate::payment_qr::QUIET;
            let at = code.dark.into_iter().map(|(x, y)| (x + quiet, y + quiet));
            w.squares(MARGIN + 110.0, MODULE, side, at.collect());
            w.grey(MARGIN + 110.0, &tr.t("payment-qr"), 9.0);
            w.y += LINE;
        }
    }

    let footer = tr.t_args(
        "pdf-invoice-footer",
        &[("org", &found.org_name), ("number", &number)],
    );
    w.finish(&footer);
    facturx::finish(doc, title, cii, inv.finalized_at.unwrap_or(inv.created_at))
}

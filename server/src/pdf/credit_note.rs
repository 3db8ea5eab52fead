//! A credit note as a PDF: the sender, the credit note's number and date, the invoice it credits,
//! why, and the amount. Drawn with the invoice's writer and fonts.

use invoicer_core::documents::i18n::Tr;
use krilla::Document;
use model::{CreditNote, Words};

use super::layout::{start, wrap, Paper, BODY, LINE, MARGIN};

/// The credit note `note` of `org_name` as PDF bytes; with its EN 16931 CII document (`cii`), a
/// Factur-X PDF/A-3b.
pub fn render(
    note: &CreditNote,
    org_name: &str,
    paper: Paper,
    cii: Option<Vec<u8>>,
    brand: super::Brand,
    tr: Tr,
) -> Vec<u8> {
    let mut doc = match cii {
        Some(_) => super::facturx::document(),
        None => Document::new(),
    };
    let title = tr.t_args(
        "credit-note-title",
        &[("number", &note.number), ("org", org_name)],
    );
    let mut w = start(&mut doc, title.clone(), paper, brand, tr);
    let width = w.width();
    let right = width - MARGIN;
    w.logo();
    w.y += 18.0;
    w.text(MARGIN, org_name, 16.0, true);
    w.title_right(right, &tr.t("pdf-credit-note"));
    w.y += LINE + 4.0;
    let facts = [
        tr.t_args("pdf-number", &[("number", &note.number)]),
        tr.t_args(
            "pdf-issued",
            &[("date", &tr.date(note.created_at.date_naive()))],
        ),
        tr.t_args("pdf-for-invoice", &[("number", &note.invoice_number)]),
    ];
    for (n, fact) in facts.iter().enumerate() {
        w.text_right(right, fact, BODY, n == 0);
        w.y += LINE;
    }
    w.y += LINE;
    w.grey(MARGIN, &tr.t("reason"), 9.0);
    w.y += LINE;
    for line in wrap(&note.reason, width - 2.0 * MARGIN, BODY) {
        w.room(LINE);
        w.text(MARGIN, &line, BODY, false);
        w.y += LINE;
    }
    w.y += LINE;
    w.rule(0.8);
    w.y += LINE + 4.0;
    w.text_right(right - 110.0, &tr.t("credited"), BODY, true);
    w.text_right(
        right,
        &tr.money(note.total_cents, &note.currency),
        BODY,
        true,
    );
    let footer = tr.t_args(
        "pdf-credit-note-footer",
        &[("org", org_name), ("number", &note.number)],
    );
    w.finish(&footer);
    super::facturx::finish(doc, title, cii, note.created_at)
}

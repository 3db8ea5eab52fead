//! A customer's statement as a PDF: per currency, the balance brought forward, each entry with the
//! balance running, and the balance due. Drawn with the invoice's writer and fonts; long
//! statements run over pages.

use invoicer_core::documents::i18n::Tr;
use krilla::Document;
use model::{Statement, Words};

use super::layout::{start, wrap, Paper, LINE, MARGIN};

const SMALL: f32 = 9.0;

/// `statement` as PDF bytes.
pub fn render(statement: &Statement, paper: Paper, brand: super::Brand, tr: Tr) -> Vec<u8> {
    let mut doc = Document::new();
    let title = tr.t_args(
        "statement-title",
        &[
            ("customer", &statement.customer_name),
            ("org", &statement.org_name),
        ],
    );
    let mut w = start(&mut doc, title, paper, brand, tr);
    let width = w.width();
    let right = width - MARGIN;
    w.logo();
    w.y += 18.0;
    w.text(MARGIN, &statement.org_name, 16.0, true);
    w.title_right(right, &tr.t("pdf-statement"));
    w.y += LINE + 4.0;
    w.text_right(right, &statement.customer_name, 10.0, true);
    w.y += LINE;
    w.text_right(
        right,
        &tr.t_args(
            "statement-period",
            &[
                ("from", &tr.date(statement.from)),
                ("to", &tr.date(statement.to)),
            ],
        ),
        10.0,
        false,
    );
    w.y += 2.0 * LINE;
    if statement.sections.is_empty() {
        w.text(MARGIN, &tr.t("statement-empty"), 10.0, false);
    }
    // Columns: date, reference, what; then three amounts flush right.
    let (reference_x, what_x) = (MARGIN + 62.0, MARGIN + 150.0);
    let (charged, paid) = (right - 150.0, right - 75.0);
    let what_width = charged - 70.0 - what_x;
    for section in &statement.sections {
        let money = |cents: i64| tr.money(cents, &section.currency);
        w.room(4.0 * LINE);
        w.text(
            MARGIN,
            &tr.t_args(
                "statement-in",
                &[("currency", &section.currency.to_uppercase())],
            ),
            10.0,
            true,
        );
        w.y += LINE;
        for (x, head) in [
            (MARGIN, "col-date"),
            (reference_x, "col-reference"),
            (what_x, "col-what"),
        ] {
            w.grey(x, &tr.t(head), SMALL);
        }
        for (x, head) in [
            (charged, "col-charged"),
            (paid, "pdf-paid-credited"),
            (right, "col-balance"),
        ] {
            w.text_right(x, &tr.t(head), SMALL, false);
        }
        w.y += LINE;
        w.text(what_x, &tr.t("balance-forward"), SMALL, false);
        w.text_right(right, &money(section.opening_cents), SMALL, false);
        w.y += LINE;
        for e in &section.entries {
            w.room(LINE);
            w.text(MARGIN, &tr.short_date(e.day), SMALL, false);
            w.text(reference_x, &e.reference, SMALL, false);
            let what = wrap(&e.description, what_width, SMALL);
            w.text(
                what_x,
                what.first().map_or("", String::as_str),
                SMALL,
                false,
            );
            if e.debit_cents != 0 {
                w.text_right(charged, &money(e.debit_cents), SMALL, false);
            }
            if e.credit_cents != 0 {
                w.text_right(paid, &money(e.credit_cents), SMALL, false);
            }
            w.text_right(right, &money(e.balance_cents), SMALL, false);
            w.y += LINE;
        }
        w.rule(0.8);
        w.y += LINE;
        w.text_right(paid, &tr.t("balance-due"), 10.0, true);
        w.text_right(right, &money(section.closing_cents), 10.0, true);
        w.y += 2.0 * LINE;
    }
    if statement.truncated {
        w.room(LINE);
        w.text(MARGIN, &tr.t("statement-truncated"), SMALL, false);
    }
    let footer = tr.t_args(
        "pdf-statement-footer",
        &[
            ("org", &statement.org_name),
            ("customer", &statement.customer_name),
        ],
    );
    w.finish(&footer);
    doc.finish()
        .expect("a PDF of text and rules always serialises")
}

//! The fault run's report: what the checker counted, printed as a table, and the broken guarantees.

use std::sync::atomic::Ordering;

use super::load::Ledger;

#[derive(Debug, Default)]
pub(crate) struct Report {
    pub(super) events_acked: usize,
    pub(super) events_applied_once: usize,
    pub(super) events_lost: usize,
    pub(super) payments_duplicated: usize,
    pub(super) invoices_overpaid: usize,
    pub(super) api_acked: usize,
    pub(super) api_one_invoice: usize,
    pub(super) api_lost_or_duplicated: usize,
    pub(super) api_answers_differ: usize,
    pub(super) form_acked: usize,
    pub(super) form_one_invoice: usize,
    pub(super) form_lost_or_duplicated: usize,
    pub(super) form_answers_differ: usize,
    pub(super) orphan_invoices: i64,
    pub(super) unanswered: usize,
    pub(super) emails_expected: i64,
    pub(super) emails_unsent: i64,
    pub(super) emails_lost: usize,
    pub(super) emails_duplicated: usize,
    /// Every kind of email by its row: (rows, sent, arrived), and the dead or still pending ones.
    pub(super) emails_by_kind: std::collections::BTreeMap<String, (usize, usize, usize)>,
    pub(super) emails_dead: usize,
    /// Webhook deliveries dead or still pending after the drain.
    pub(super) webhooks_undone: i64,
}

impl Report {
    pub(crate) fn print(&self, worker_crashes: u32) {
        let row = |name: &str, value: &dyn std::fmt::Display| println!("{name:<44} {value:>8}");
        row("check", &"count");
        row("events acknowledged (2xx)", &self.events_acked);
        row("  applied exactly once", &self.events_applied_once);
        row("  lost (acknowledged, not applied)", &self.events_lost);
        row("  payments duplicated", &self.payments_duplicated);
        row(
            "  invoices whose paid amount != payments",
            &self.invoices_overpaid,
        );
        row("API keys answered 201", &self.api_acked);
        row("  with exactly one invoice", &self.api_one_invoice);
        row("  lost or duplicated", &self.api_lost_or_duplicated);
        row(
            "  answered with different invoices",
            &self.api_answers_differ,
        );
        row("form keys answered", &self.form_acked);
        row("  with exactly one invoice", &self.form_one_invoice);
        row("  lost or duplicated", &self.form_lost_or_duplicated);
        row(
            "  answered with different invoices",
            &self.form_answers_differ,
        );
        row("invoices nobody was answered for", &self.orphan_invoices);
        row("attempts unanswered after the drain", &self.unanswered);
        row(
            "receipt emails owed / unsent",
            &format!("{} / {}", self.emails_expected, self.emails_unsent),
        );
        for (kind, (rows, sent, arrived)) in &self.emails_by_kind {
            row(
                &format!("{kind} emails: rows / sent / arrived"),
                &format!("{rows} / {sent} / {arrived}"),
            );
        }
        row("  sent but never arrived", &self.emails_lost);
        row("  dead", &self.emails_dead);
        row(
            "  duplicate arrivals (bound: emails in hand)",
            &format!("{} <= {worker_crashes}", self.emails_duplicated),
        );
        row("webhook deliveries dead or pending", &self.webhooks_undone);
    }

    pub(crate) fn problems(&self, worker_crashes: u32) -> Vec<String> {
        let mut p = Vec::new();
        let mut require = |ok: bool, what: String| {
            if !ok {
                p.push(what)
            }
        };
        // A run that acknowledged nothing of a kind proved nothing about it.
        require(
            self.events_acked > 0 && self.api_acked > 0 && self.form_acked > 0,
            format!(
                "acknowledged: {} events, {} API creates, {} forms (each kind must be above 0)",
                self.events_acked, self.api_acked, self.form_acked
            ),
        );
        require(
            self.events_lost == 0,
            format!("{} events lost", self.events_lost),
        );
        require(
            self.events_applied_once == self.events_acked,
            format!(
                "{} of {} events applied once",
                self.events_applied_once, self.events_acked
            ),
        );
        require(
            self.payments_duplicated == 0,
            format!("{} payments duplicated", self.payments_duplicated),
        );
        require(
            self.invoices_overpaid == 0,
            format!("{} invoices paid twice", self.invoices_overpaid),
        );
        require(
            self.api_lost_or_duplicated == 0 && self.api_answers_differ == 0,
            format!(
                "API: {} lost/duplicated, {} differing answers",
                self.api_lost_or_duplicated, self.api_answers_differ
            ),
        );
        require(
            self.form_lost_or_duplicated == 0 && self.form_answers_differ == 0,
            format!(
                "form: {} lost/duplicated, {} differing answers",
                self.form_lost_or_duplicated, self.form_answers_differ
            ),
        );
        require(
            self.orphan_invoices == 0,
            format!("{} invoices nobody asked for", self.orphan_invoices),
        );
        require(
            self.unanswered == 0,
            format!("{} attempts never answered", self.unanswered),
        );
        require(
            self.emails_unsent == 0,
            format!("{} emails never sent", self.emails_unsent),
        );
        require(
            self.emails_lost == 0,
            format!("{} emails marked sent never arrived", self.emails_lost),
        );
        // The run makes no email die on purpose: a dead one is one lost.
        require(
            self.emails_dead == 0,
            format!("{} emails dead", self.emails_dead),
        );
        require(
            !self.emails_by_kind.is_empty(),
            "no email of any kind was sent".to_owned(),
        );
        require(
            self.webhooks_undone == 0,
            format!(
                "{} webhook deliveries dead or pending",
                self.webhooks_undone
            ),
        );
        require(
            self.emails_duplicated <= worker_crashes as usize,
            format!(
                "{} duplicate emails > {worker_crashes} emails in hand at the crashes",
                self.emails_duplicated
            ),
        );
        p
    }
}

/// Prints the request counts and the report, and fails the run if a guarantee broke or a valid
/// request was refused; `send_crashes` bounds the duplicate emails (the emails workers can have had
/// sent and not yet marked at the crashes: see [`in_hand`]).
pub(crate) fn verdict(ledger: &Ledger, report: &Report, send_crashes: u32) -> anyhow::Result<()> {
    println!(
        "requests {}  retries {}  refused {}",
        ledger.requests.load(Ordering::Relaxed),
        ledger.retries.load(Ordering::Relaxed),
        ledger.refused.lock().unwrap().len()
    );
    report.print(send_crashes);
    let problems = report.problems(send_crashes);
    let refused = ledger.refused.lock().unwrap().clone();
    anyhow::ensure!(
        problems.is_empty() && refused.is_empty(),
        "guarantees broken: {}{}",
        problems.join("; "),
        refused
            .first()
            .map(|r| format!("; refused: {r}"))
            .unwrap_or_default()
    );
    println!("OK: lost 0, duplicated 0, duplicate emails within the bound");
    Ok(())
}

/// The emails a worker can have sent and not yet marked at one crash: its customer lane's places
/// (WORKER_CONCURRENCY, as the run's servers have it).
pub(crate) fn in_hand() -> u32 {
    std::env::var("WORKER_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(invoicer_core::worker::WorkerConfig::DEFAULT_CONCURRENCY as u32)
}

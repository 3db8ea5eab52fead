//! The server's integration tests, linked into one test binary: a binary per file would link the whole
//! server once per file and fill `target/` with copies of it.

mod common;

mod abuse;
mod api;
mod api_crash;
mod bank_details;
mod branding;
mod checkout;
mod cli;
mod credit_balance;
mod credit_notes;
mod credit_refunds;
mod customers;
mod dashboard;
mod einvoice;
mod exports;
mod form_crash;
mod invoice_lists;
mod languages;
mod lifecycle;
mod line_items;
mod mail;
mod manual_payments;
mod money;
mod money_order;
mod observability;
mod outbox;
mod pg_tls;
mod pgbench_scripts;
mod plans;
mod public_page;
mod quotes;
mod readiness;
mod reminders;
mod reports;
mod schedules;
mod security;
mod signups;
mod statements;
mod takeover;
mod teams;
mod webhook;
mod webhook_crash;
mod webhooks_out;
mod worker_processes;

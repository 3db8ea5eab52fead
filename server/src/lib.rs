//! The invoicer binary's parts: configuration, the pools, logging, HTTP wiring, the JSON API, the
//! webhook route and the command line.

pub mod api;
pub mod assets;
pub mod branding;
pub mod cli;
pub mod config;
pub mod csv_out;
pub mod db;
pub mod exports;
pub mod imports;
pub mod logging;
pub mod payment_qr;
pub mod pdf;
pub mod peppol_webhook;
pub mod process;
pub mod public;
pub mod reports;
pub mod security;
pub mod session_store;
pub mod web;
pub mod webhook;

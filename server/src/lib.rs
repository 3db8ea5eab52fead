//! The invoicer binary's parts: configuration, HTTP wiring, the JSON API, the webhook route and the
//! command line.

pub mod api;
pub mod cli;
pub mod config;
pub mod pdf;
pub mod process;
pub mod public;
pub mod security;
pub mod web;
pub mod webhook;

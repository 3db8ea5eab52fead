//! The invoicer binary's parts: configuration, HTTP wiring and the command line.

pub mod api;
pub mod bench;
pub mod bench_http;
pub mod cli;
pub mod config;
pub mod faults;
pub mod load;
pub mod web;
pub mod webhook;

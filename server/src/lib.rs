//! The invoicer binary's parts: configuration, HTTP wiring and the command line.

pub mod api;
pub mod bench;
pub mod cli;
pub mod config;
pub mod web;
pub mod webhook;

//! The server's integration tests, linked into one test binary: each `tests/*.rs` file used to be its
//! own binary linking the whole server, which cost a link per file and most of `target/` in disk.

mod common;

mod api;
mod api_crash;
mod cli;
mod form_crash;
mod observability;
mod outbox;
mod readiness;
mod webhook;
mod webhook_crash;
mod worker_processes;

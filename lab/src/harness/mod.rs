//! What the benchmarks, the fault harness and the server's integration tests share: the built
//! `server` binary as a process, a seeded org, and HTTP clients of each surface.

pub mod bank;
pub mod charges;
pub mod client;
pub mod fixture;
pub mod process;

pub use client::{api_body, invoice_form, Target};
pub use fixture::{seed, Fixture, SEEDED_TOTAL_CENTS};
pub use process::{free_port, ServerProcess};

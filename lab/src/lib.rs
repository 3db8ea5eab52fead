//! invoicer's lab: what measures and attacks the built `server` binary from outside (benchmarks, the
//! fault harness) and the harness the server's integration tests share with them. Nothing here ships.

pub mod datagen;
pub mod harness;
pub mod peppol_local;
pub mod pgbench_script;
pub mod stripe_local;

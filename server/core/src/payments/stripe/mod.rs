//! Stripe: signature checks and a local stand-in that sends signed events (the webhook surface is
//! `surfaces::webhook`).

pub mod client;
pub mod signature;
pub mod standin;

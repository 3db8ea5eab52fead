//! Stripe: signature checks and a local stand-in that sends signed events (the webhook surface is
//! `surfaces::webhook`).

/// The provider name Stripe's facts (payments, methods, customers) are stored under.
pub const PROVIDER: &str = "stripe";

pub mod client;
pub mod collect;
pub mod signature;
pub mod standin;

//! Stripe: signature checks, the webhook surface, and a local stand-in that sends signed events.

pub mod signature;
pub mod standin;
pub mod surface;

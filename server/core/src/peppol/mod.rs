//! Peppol: documents sent through the org's access point exactly once ([`send`], over the
//! provider interface of [`access_point`]), and e-invoices received ([`inbox`]).

pub mod access_point;
pub mod inbox;
pub mod send;

pub use access_point::{AccessPoint, ApError, PhossAp, Status, Submission};

/// The local access point of dev and tests (`scripts/peppol-local`), and the token it accepts.
pub const LOCAL_ACCESS_POINT: &str = "http://127.0.0.1:12112";
pub const LOCAL_ACCESS_POINT_TOKEN: &str = "peppol-local-token";

/// The inbound webhook's secret in dev and tests (`scripts/peppol-local` signs with it); refused
/// in production.
pub const DEV_INBOUND_SECRET: &str = "whsec_ZGV2LXBlcHBvbC1pbmJvdW5kLXNlY3JldA==";

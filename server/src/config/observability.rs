//! What the process tells its operator: `/metrics` (METRICS_*), logs (RUST_LOG, LOG_FORMAT) and,
//! in tests, crashes on purpose (INVOICER_FAILPOINT). Logging is set up in [`crate::logging`].

use std::net::SocketAddr;

use invoicer_core::secret::Secret;

use super::present_secret;

#[derive(clap::Args, Debug, Clone)]
pub struct Metrics {
    /// With it, `/metrics` requires `Authorization: Bearer <token>` (at least 16 characters).
    #[arg(long, env = "METRICS_TOKEN", global = true, hide_env_values = true)]
    pub metrics_token: Option<Secret>,
    /// A separate listener for `/metrics` only (e.g. `127.0.0.1:9100`, not exposed publicly); then
    /// the public listener has no `/metrics`.
    #[arg(long, env = "METRICS_ADDR", global = true)]
    pub metrics_addr: Option<SocketAddr>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct Logging {
    /// Crash injection for tests, comma separated (debug builds or `--features failpoints`).
    #[arg(long, env = "INVOICER_FAILPOINT", global = true)]
    pub invoicer_failpoint: Option<String>,
    /// Log filter.
    #[arg(
        long,
        env = "RUST_LOG",
        default_value = DEFAULT_LOG_FILTER,
        global = true
    )]
    pub rust_log: String,
    /// `json` for one JSON object per log event (always in production).
    #[arg(long, env = "LOG_FORMAT", default_value = "text", global = true)]
    pub log_format: String,
}

/// RUST_LOG's default, also used when RUST_LOG cannot be parsed.
pub const DEFAULT_LOG_FILTER: &str = "info,sqlx=warn,tower_sessions=warn";

impl Metrics {
    /// A blank token is none; a set one is long enough.
    pub(super) fn check(self) -> anyhow::Result<Metrics> {
        let metrics_token = present_secret(self.metrics_token);
        if let Some(token) = &metrics_token {
            anyhow::ensure!(
                token.expose().len() >= 16,
                "METRICS_TOKEN must have at least 16 characters"
            );
        }
        Ok(Metrics {
            metrics_token,
            metrics_addr: self.metrics_addr,
        })
    }
}

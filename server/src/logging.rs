//! Logging: readable text in dev; JSON (one object per event, with the request span's fields, e.g.
//! request_id) with `LOG_FORMAT=json` or in production.

use tracing_subscriber::EnvFilter;

use crate::config::{Logging, DEFAULT_LOG_FILTER};

/// Installs the global subscriber; call once, before anything logs.
pub fn init(logging: &Logging, dev_mode: bool) {
    let filter = EnvFilter::try_new(&logging.rust_log)
        .unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    let json = logging.log_format.eq_ignore_ascii_case("json") || !dev_mode;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    if json {
        builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init();
    } else {
        builder.init();
    }
}

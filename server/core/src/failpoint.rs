//! Crash injection for the tests that kill the process at the worst moment
//! (`INVOICER_FAILPOINT=form.after_claim,...`). Exits with code 70 and no cleanup, as a crash would.
//! Honoured only in dev mode (`LEPTOS_ENV=DEV`) of debug builds or builds with the `failpoints`
//! feature: a production process never exits on an environment variable.

use std::sync::OnceLock;

pub const ENABLED: bool = cfg!(any(debug_assertions, feature = "failpoints"));

static ARMED: OnceLock<Vec<String>> = OnceLock::new();

fn armed() -> &'static [String] {
    ARMED.get().map_or(&[], Vec::as_slice)
}

/// Reads INVOICER_FAILPOINT once, at start-up, so a misconfiguration is reported early. Outside dev
/// mode nothing is armed.
pub fn init(dev_mode: bool) {
    ARMED.get_or_init(|| {
        let names: Vec<String> = std::env::var("INVOICER_FAILPOINT")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        if !names.is_empty() && !ENABLED {
            tracing::warn!(
                ?names,
                "INVOICER_FAILPOINT ignored: this build has no failpoints"
            );
            return Vec::new();
        }
        if !names.is_empty() && !dev_mode {
            tracing::warn!(
                ?names,
                "INVOICER_FAILPOINT ignored: failpoints are honoured only with LEPTOS_ENV=DEV"
            );
            return Vec::new();
        }
        if !names.is_empty() {
            tracing::warn!(
                ?names,
                "failpoints armed: the process will exit when it reaches them"
            );
        }
        names
    });
}

pub fn hit(name: &str) {
    if ENABLED && armed().iter().any(|armed| armed == name) {
        eprintln!("failpoint {name} reached: exiting with code 70");
        std::process::exit(70);
    }
}

/// `hit("<surface>.<point>")`, without building the name unless a failpoint is armed.
pub fn hit_at(surface: &str, point: &str) {
    if ENABLED && !armed().is_empty() {
        hit(&format!("{surface}.{point}"));
    }
}

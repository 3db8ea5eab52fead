//! Crash injection for the tests that kill the process at the worst moment
//! (`INVOICER_FAILPOINT=form.after_claim,...`). Exits with code 70 and no cleanup, as a crash would.
//! Honoured only in debug builds or with the `failpoints` feature.

use std::sync::OnceLock;

const ENABLED: bool = cfg!(any(debug_assertions, feature = "failpoints"));

fn armed() -> &'static [String] {
    static ARMED: OnceLock<Vec<String>> = OnceLock::new();
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
        if !names.is_empty() {
            tracing::warn!(
                ?names,
                "failpoints armed: the process will exit when it reaches them"
            );
        }
        names
    })
}

/// Reads the environment once, at start-up, so a misconfiguration is reported early.
pub fn init() {
    let _ = armed();
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

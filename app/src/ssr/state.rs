use std::time::Duration;

use axum::extract::FromRef;
use leptos::config::LeptosOptions;
use sqlx::PgPool;

/// Everything a request needs, handed to axum handlers as state and to server functions as context.
#[derive(Clone)]
pub struct AppState {
    pub pool: PgPool,
    pub leptos_options: LeptosOptions,
    pub settings: Settings,
}

#[derive(Clone, Debug)]
pub struct Settings {
    /// How long a claim committed before its work stays ours before another attempt may take it.
    pub claim_lease: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            claim_lease: Duration::from_secs(300),
        }
    }
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}

impl FromRef<AppState> for PgPool {
    fn from_ref(state: &AppState) -> Self {
        state.pool.clone()
    }
}

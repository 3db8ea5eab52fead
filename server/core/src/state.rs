//! The shared application state: the pools, the settings, the throttles, the Stripe client.

use std::time::Duration;

use axum::extract::FromRef;
use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;

/// Everything a request needs, handed to axum handlers as state and to server functions as context.
#[derive(Clone)]
pub struct AppState {
    pub pool: PgPool,
    /// The same database through connections that run every prepared statement on its generic plan
    /// (see [`generic_plans`]), for the reads of the pages and the API: see [`AppState::read_pool`].
    pub reads: PgPool,
    pub settings: Settings,
    /// Rate limits of the expensive paths (login, sign-up, email), shared by all requests.
    pub throttle: std::sync::Arc<crate::throttle::Throttle>,
    /// The Stripe API client (Checkout sessions).
    pub stripe: crate::payments::stripe::client::Stripe,
}

impl AppState {
    pub fn new(pool: PgPool, reads: PgPool, settings: Settings) -> AppState {
        let throttle = std::sync::Arc::new(crate::throttle::Throttle::new(settings.limits));
        let stripe = crate::payments::stripe::client::Stripe::new(
            &settings.stripe_api_base,
            settings.stripe_secret_key.clone(),
        )
        .with_max_calls(settings.stripe_max_calls);
        AppState {
            pool,
            reads,
            settings,
            throttle,
            stripe,
        }
    }

    /// Where a page's or the API's read runs. Prepared, a statement is planned with its values five
    /// times, then on its generic plan if that looks no dearer; for a big org it looks dearer (the
    /// average org's estimates), so Postgres planned the list, the activity page and the invoice
    /// lookups again on every execution, as long as running them. Their generic plans are the ones
    /// `lab bench read --explain --forbid-big-scans` checks at the large size, so they run on
    /// `reads`, which always uses them. A statement with a `like` pattern (`by_value`: the activity
    /// page's search) is sent unprepared and must be planned with its pattern (a generic plan cannot
    /// see a prefix): `pool`. The list's search binds a prefix range instead, which a generic plan
    /// can bound an index by.
    pub fn read_pool(&self, by_value: bool) -> &PgPool {
        if by_value {
            &self.pool
        } else {
            &self.reads
        }
    }
}

/// `options` with `plan_cache_mode = force_generic_plan` for every connection they open: each
/// prepared statement is planned once per connection, without its values.
pub fn generic_plans(options: PgConnectOptions) -> PgConnectOptions {
    options.options([("plan_cache_mode", "force_generic_plan")])
}

/// The deployment's settings, built from the checked configuration (`server::config::Checked`).
#[derive(Clone, Debug)]
pub struct Settings {
    /// `whsec_...` secrets; a signature under any of them is accepted (rotation).
    pub stripe_webhook_secrets: Vec<crate::secret::Secret>,
    /// Largest accepted |now − t| of a webhook signature, in seconds.
    pub stripe_tolerance_secs: i64,
    /// STRIPE_MODE=live: only live-mode events apply (else only test-mode ones).
    pub stripe_livemode: bool,
    /// Development conveniences (the "Simulate payment" button) are offered.
    pub dev_mode: bool,
    /// Where this server can reach itself, for the simulated Stripe delivery.
    pub self_url: String,
    /// INVOICER_PUBLIC_URL without a trailing slash: the base of links that leave the app (the
    /// customer's invoice page).
    pub public_url: String,
    /// How long an API Idempotency-Key names its first request (IDEMPOTENCY_KEY_TTL_HOURS).
    pub idempotency_key_ttl: Duration,
    /// With it, `/metrics` answers only `Authorization: Bearer <token>`.
    pub metrics_token: Option<crate::secret::Secret>,
    /// Login, sign-up and email allowances.
    pub limits: crate::throttle::Limits,
    /// The request header a trusted reverse proxy puts the client address in (its last value is
    /// used); without it, the connection's peer address.
    pub client_ip_header: Option<String>,
    /// The Stripe API the app calls (STRIPE_API_BASE).
    pub stripe_api_base: String,
    /// STRIPE_SECRET_KEY; without it, paying answers "payment unavailable".
    pub stripe_secret_key: Option<crate::secret::Secret>,
    /// Calls to Stripe under way at once (STRIPE_MAX_CALLS); beyond them Pay answers 503.
    pub stripe_max_calls: usize,
    /// SIGNUPS=open: anyone may create an org at /signup (else orgs come from the operator).
    pub signups_open: bool,
    /// Orgs that sign themselves up may take card payments at once (development only).
    pub signup_payments: bool,
    /// Where webhook endpoints may be (checked when one is registered, and at each delivery).
    pub webhooks: crate::webhooks_out::guard::Policy,
    /// PEPPOL_INBOUND_SECRET: received documents the access point delivers are signed with it;
    /// none: the inbound webhook answers 503.
    pub peppol_inbound_secret: Option<crate::secret::Secret>,
}

pub const DEV_WEBHOOK_SECRET: &str = "whsec_dev_invoicer";

/// LEPTOS_SITE_ADDR's default: where the server listens, and reaches itself.
pub const DEFAULT_SITE_ADDR: &str = "127.0.0.1:3000";

/// Accepted clock skew of webhook signatures unless STRIPE_WEBHOOK_TOLERANCE_SECS says otherwise
/// (Stripe's own libraries' default).
pub const DEFAULT_STRIPE_TOLERANCE_SECS: u32 = 300;

/// The tests' settings: the configuration's defaults in dev mode.
impl Default for Settings {
    fn default() -> Self {
        Settings {
            stripe_webhook_secrets: vec![DEV_WEBHOOK_SECRET.into()],
            stripe_tolerance_secs: i64::from(DEFAULT_STRIPE_TOLERANCE_SECS),
            stripe_livemode: false,
            dev_mode: true,
            self_url: format!("http://{DEFAULT_SITE_ADDR}"),
            public_url: format!("http://{DEFAULT_SITE_ADDR}"),
            idempotency_key_ttl: crate::jobs::retention::RetentionConfig::DEFAULT.api_key_ttl,
            metrics_token: None,
            limits: crate::throttle::Limits::default(),
            client_ip_header: None,
            stripe_api_base: crate::payments::stripe::client::DEFAULT_API_BASE.to_owned(),
            stripe_secret_key: None,
            stripe_max_calls: crate::payments::stripe::client::MAX_CALLS,
            signups_open: true,
            signup_payments: true,
            // The tests deliver to receivers on loopback.
            webhooks: crate::webhooks_out::guard::Policy::OPEN,
            peppol_inbound_secret: Some(crate::peppol::DEV_INBOUND_SECRET.into()),
        }
    }
}

impl FromRef<AppState> for PgPool {
    fn from_ref(state: &AppState) -> Self {
        state.pool.clone()
    }
}

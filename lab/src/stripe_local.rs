//! A local Stripe for development and tests: the subset of Stripe's API invoicer calls, with
//! Stripe's idempotency semantics and error shapes, a hosted checkout page, and signed webhook
//! delivery retried until the app answers 2xx. Not part of the production binary.
//!
//! - `POST /v1/checkout/sessions` (form-encoded, `Authorization: Bearer <key>`, optional
//!   `Idempotency-Key`: the same key and parameters replay the first response with
//!   `Idempotent-Replayed: true`; the same key with other parameters is a 400 `idempotency_error`).
//! - `GET /v1/checkout/sessions/{id}`, `GET /v1/checkout/sessions` (a list, newest first).
//! - `GET /checkout/{id}`: the payment page: "Pay by card" (paid at once), "Pay by bank debit" (unpaid,
//!   then an asynchronous success), "Bank debit that fails" (unpaid, then an asynchronous failure),
//!   "Decline" (nothing happens; the session stays open).
//! - Events (`checkout.session.completed`, `..._async_payment_succeeded`, `..._async_payment_failed`)
//!   are signed with the endpoint secret and POSTed to the webhook URL, retried with backoff until
//!   2xx. With `chaos`, each event goes two or three times, some at once, in shuffled order.
//! - `POST /v1/refunds` (`payment_intent`, optional `amount`, `metadata[...]`; Stripe's idempotency
//!   semantics, and a 409 `idempotency_error` while a request under the same key is still being
//!   made) refunds a paid checkout's payment and sends `charge.refunded` with the cumulative
//!   `amount_refunded`; `GET /v1/refunds` (optional `payment_intent`, `limit`, `starting_after`)
//!   lists the refunds made, metadata included.
//! - `POST /v1/test_helpers/idempotency_keys/forget` (and [`LocalStripe::forget_idempotency_keys`])
//!   forgets every Idempotency-Key, as Stripe does after 24 hours: a key used again makes a new
//!   object.
//! - `POST /v1/test_helpers/checkout/sessions/{id}/hold_settlement` keeps that session's delayed
//!   settlement until `.../release_settlement` sends it, so a test can see a payment processing.
//! - Saving a way to pay (`setup`): `POST /v1/customers`, a checkout session with `mode=setup` and
//!   `customer` whose page saves one of Stripe's test numbers (card 4242 succeeds, 0341 declines
//!   later, 3155 needs authentication; IBAN DE89…3000 debits succeed, DE62…3001 fail), making a
//!   SetupIntent, a PaymentMethod (a Mandate for SEPA) and sending `checkout.session.completed` and
//!   `setup_intent.succeeded`; `GET` of each, `POST /v1/payment_methods/{id}/detach`.
//! - `POST /v1/payment_intents` (`confirm=true`, `off_session=true`, Idempotency-Key) charges a
//!   saved method as Stripe answers it: succeeded; 402 `card_declined`; 402
//!   `authentication_required` with the intent `requires_action` and a page `/authenticate/{id}` to
//!   complete it; or a debit `processing`, settled (`payment_intent.succeeded` / `.payment_failed`)
//!   after `debit_settles_after` or when `/v1/test_helpers/payment_intents/{id}/release_settlement`
//!   is posted. `GET /v1/payment_intents[/{id}]`.
//!
//! Ids, event envelopes and signatures come from the shipped stand-in (`invoicer_core::payments::stripe::standin`,
//! which `server stripe trigger` uses), so both send the same shapes.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;

use answers::{forget, forget_keys, require_key};
use checkout::{checkout_page, pay};
use delivery::settlement;
use sessions::{create_session, expire_session, get_session, list_sessions};

mod answers;
mod checkout;
mod delivery;
mod intents;
mod refunds;
mod sessions;
pub mod setup;

#[derive(Debug, Clone)]
pub struct Config {
    /// The secret key requests must carry.
    pub api_key: String,
    /// Where events go (`<app>/webhooks/stripe`); none: no events are sent.
    pub webhook_url: Option<String>,
    /// The endpoint's `whsec_...` secret events are signed with.
    pub webhook_secret: String,
    /// Deliver each event two or three times, some concurrently, out of order.
    pub chaos: bool,
    /// Answer the first N session creations with a 500 (to exercise clients' retries).
    pub fail_first: u32,
    /// With it, each session creation waits for one permit of this semaphore before it is answered
    /// (tests hold Stripe's answer to look at the app meanwhile).
    pub hold: Option<Arc<tokio::sync::Semaphore>>,
    /// How long a SEPA debit stays processing before its settlement is sent (none: until a test
    /// releases it with `release_settlement`).
    pub debit_settles_after: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            api_key: "sk_test_local".to_owned(),
            webhook_url: None,
            webhook_secret: "whsec_dev_invoicer".to_owned(),
            chaos: false,
            fail_first: 0,
            hold: None,
            debit_settles_after: Some(Duration::from_secs(3)),
        }
    }
}

/// What an Idempotency-Key was first used with, and what was answered.
struct Keyed {
    params: Vec<(String, String)>,
    status: u16,
    body: Value,
}

#[derive(Default)]
struct Store {
    /// Sessions by id, with the order they were made in.
    sessions: HashMap<String, Value>,
    order: Vec<String>,
    /// Idempotency-Key → the first request under it.
    keys: HashMap<String, Keyed>,
    /// Idempotency-Keys of refunds whose first request is still being made.
    refunds_in_flight: HashSet<String>,
    /// Session creations answered (failures included), and events sent.
    create_calls: u64,
    expire_calls: u64,
    refund_calls: u64,
    /// Payment intent → the Stripe units refunded of it so far; the refunds made, oldest first.
    refunded: HashMap<String, i64>,
    refunds: Vec<Value>,
    events: Vec<Value>,
    /// Sessions whose delayed settlement waits for `release_settlement` (tests that must see a
    /// payment processing): the settlement events once the session is paid.
    held: HashMap<String, Vec<Value>>,
    /// Customers, saved payment methods, the SetupIntents and SEPA mandates that saved them.
    customers: HashMap<String, Value>,
    payment_methods: HashMap<String, Value>,
    setup_intents: HashMap<String, Value>,
    mandates: HashMap<String, Value>,
    /// PaymentIntents by id, in the order they were made; creations asked for (replays included).
    intents: HashMap<String, Value>,
    intent_order: Vec<String>,
    intent_calls: u64,
}

#[derive(Clone)]
struct Shared {
    config: Config,
    /// Where events go now (set at start from the config, or later).
    webhook_url: Arc<Mutex<Option<String>>>,
    base: String,
    store: Arc<Mutex<Store>>,
    http: reqwest::Client,
    /// Session creations received, answered or not.
    arrived: Arc<std::sync::atomic::AtomicU64>,
    /// With it, each refund waits for one permit of this semaphore before it is made (tests hold
    /// Stripe's answer, with the request in progress).
    refund_hold: Arc<Mutex<Option<Arc<tokio::sync::Semaphore>>>>,
}

/// A running local Stripe.
pub struct LocalStripe {
    pub base: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl LocalStripe {
    /// Serves on `addr` (port 0: any free port).
    pub async fn start(addr: SocketAddr, config: Config) -> anyhow::Result<LocalStripe> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let base = format!("http://{}", listener.local_addr()?);
        let shared = Shared {
            webhook_url: Arc::new(Mutex::new(config.webhook_url.clone())),
            config,
            base: base.clone(),
            store: Arc::default(),
            arrived: Arc::default(),
            refund_hold: Arc::default(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()?,
        };
        let api = Router::new()
            .route(
                "/v1/checkout/sessions",
                post(create_session).get(list_sessions),
            )
            .route("/v1/checkout/sessions/{id}", get(get_session))
            .route("/v1/checkout/sessions/{id}/expire", post(expire_session))
            .route(
                "/v1/refunds",
                post(refunds::create_refund).get(refunds::list_refunds),
            )
            .route(
                "/v1/test_helpers/idempotency_keys/forget",
                post(forget_keys),
            )
            .route("/v1/customers", post(setup::create_customer))
            .route("/v1/customers/{id}", get(setup::get_customer))
            .route("/v1/setup_intents/{id}", get(setup::get_setup_intent))
            .route("/v1/payment_methods/{id}", get(setup::get_payment_method))
            .route(
                "/v1/payment_methods/{id}/detach",
                post(setup::detach_payment_method),
            )
            .route("/v1/mandates/{id}", get(setup::get_mandate))
            .route(
                "/v1/payment_intents",
                post(intents::create_intent).get(intents::list_intents),
            )
            .route("/v1/payment_intents/{id}", get(intents::get_intent))
            .route_layer(axum::middleware::from_fn_with_state(
                shared.clone(),
                require_key,
            ));
        let router = api
            .route("/checkout/{id}", get(checkout_page))
            .route("/checkout/{id}/pay", post(pay))
            .route("/checkout/{id}/save", post(setup::save))
            .route(
                "/authenticate/{id}",
                get(intents::authenticate_page).post(intents::authenticate),
            )
            .route(
                "/v1/test_helpers/payment_intents/{id}/{helper}",
                post(settlement),
            )
            .route(
                "/v1/test_helpers/checkout/sessions/{id}/{helper}",
                post(settlement),
            )
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok(LocalStripe { base, shared, task })
    }

    /// Sends events to `url` from now on (an app started after this).
    pub fn send_events_to(&self, url: &str) {
        *self.shared.webhook_url.lock().unwrap() = Some(url.to_owned());
    }

    /// A session's status (`open`, `complete`, `expired`), if it exists.
    pub fn session_status(&self, id: &str) -> Option<String> {
        let store = self.shared.store.lock().unwrap();
        let status = store.sessions.get(id)?["status"].as_str()?.to_owned();
        Some(status)
    }

    /// Forgets every Idempotency-Key, as Stripe does once they are 24 hours old: the same key again
    /// is a new request. Returns how many were forgotten.
    pub fn forget_idempotency_keys(&self) -> usize {
        forget(&self.shared)
    }

    /// Expirations asked for (replays of an Idempotency-Key included).
    pub fn expire_calls(&self) -> u64 {
        self.shared.store.lock().unwrap().expire_calls
    }

    /// Refunds asked for (replays of an Idempotency-Key and refusals included).
    pub fn refund_calls(&self) -> u64 {
        self.shared.store.lock().unwrap().refund_calls
    }

    /// How many session creations were received, answered or not yet.
    pub fn arrived(&self) -> u64 {
        self.shared
            .arrived
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many session creations were answered (successes, replays and failures).
    pub fn create_calls(&self) -> u64 {
        self.shared.store.lock().unwrap().create_calls
    }

    /// The sessions made (replays of a key make none).
    pub fn session_count(&self) -> usize {
        self.shared.store.lock().unwrap().order.len()
    }

    /// The events sent so far (each once, whatever the deliveries).
    pub fn events(&self) -> Vec<Value> {
        self.shared.store.lock().unwrap().events.clone()
    }

    /// The PaymentIntents made (replays of an Idempotency-Key make none), oldest first.
    pub fn payment_intents(&self) -> Vec<Value> {
        let store = self.shared.store.lock().unwrap();
        store
            .intent_order
            .iter()
            .map(|id| store.intents[id].clone())
            .collect()
    }

    /// PaymentIntent creations asked for (replays and refusals included).
    pub fn intent_calls(&self) -> u64 {
        self.shared.store.lock().unwrap().intent_calls
    }

    /// Saves a method on setup session `id` as its page would (a value of [`setup::SAVABLE`]).
    pub async fn save(&self, id: &str, method: &str) -> anyhow::Result<()> {
        self.post_page(&format!("/checkout/{id}/save"), &[("method", method)])
            .await
    }

    /// Completes (`complete`) or fails (`fail`) the authentication a PaymentIntent waits for.
    pub async fn authenticate(&self, intent: &str, outcome: &str) -> anyhow::Result<()> {
        self.post_page(&format!("/authenticate/{intent}"), &[("outcome", outcome)])
            .await
    }

    /// Posts one of the local Stripe's pages' forms, without following where it sends the browser.
    async fn post_page(&self, path: &str, form: &[(&str, &str)]) -> anyhow::Result<()> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let res = http
            .post(format!("{}{path}", self.base))
            .form(form)
            .send()
            .await?;
        anyhow::ensure!(
            res.status().is_success() || res.status().is_redirection(),
            "{path}: {}",
            res.status()
        );
        Ok(())
    }

    /// Sends the held settlement of debit `intent` (its `payment_intent.succeeded` or
    /// `payment_failed`), as the bank's days passing would.
    pub async fn release_settlement(&self, intent: &str) -> anyhow::Result<()> {
        let res = reqwest::Client::new()
            .post(format!(
                "{}/v1/test_helpers/payment_intents/{intent}/release_settlement",
                self.base
            ))
            .bearer_auth(&self.shared.config.api_key)
            .send()
            .await?;
        anyhow::ensure!(
            res.status().is_success(),
            "release {intent}: {}",
            res.status()
        );
        Ok(())
    }

    /// Pays session `id` as its page would (`card`, `bank`, `bank_fail`, `decline`), without
    /// following the customer back to the app.
    pub async fn pay(&self, id: &str, method: &str) -> anyhow::Result<()> {
        self.post_page(&format!("/checkout/{id}/pay"), &[("method", method)])
            .await
    }
}

impl Drop for LocalStripe {
    fn drop(&mut self) {
        self.task.abort();
    }
}

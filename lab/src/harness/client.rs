//! The surfaces' requests as their clients send them: signed Stripe events, API posts with an
//! Idempotency-Key, the create form's server function with a session cookie.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use uuid::Uuid;

use super::fixture::Fixture;

/// A client of the running server: one connection pool shared by all tasks.
#[derive(Clone)]
pub struct Target {
    http: reqwest::Client,
    pub base: String,
    secret: String,
    api_token: String,
    cookie: Option<String>,
    /// With several servers (a load balancer and the replicas behind it), each request goes to the
    /// next: a retry, or the second submit of a form, lands on another process.
    spread: Vec<String>,
    turn: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// What every request of this client (and its clones) was answered, where a client must never
    /// see it.
    pub answers: Arc<Answers>,
}

/// Answers a client of the server must never get, counted: a 500 (an internal error) or a 503 that
/// does not say when to come back; and how many 503s there were.
#[derive(Debug, Default)]
pub struct Answers {
    pub internal_errors: AtomicU64,
    pub unavailable: AtomicU64,
    pub unavailable_without_retry_after: AtomicU64,
}

impl Answers {
    fn note(&self, res: &reqwest::Response) {
        match res.status().as_u16() {
            500 => {
                self.internal_errors.fetch_add(1, Ordering::Relaxed);
            }
            503 => {
                self.unavailable.fetch_add(1, Ordering::Relaxed);
                if !res.headers().contains_key("retry-after") {
                    self.unavailable_without_retry_after
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
            _ => {}
        }
    }

    pub fn get(&self) -> (u64, u64, u64) {
        (
            self.internal_errors.load(Ordering::Relaxed),
            self.unavailable.load(Ordering::Relaxed),
            self.unavailable_without_retry_after.load(Ordering::Relaxed),
        )
    }
}

/// The body the API and form clients send: one line, the same every time.
pub fn api_body() -> Vec<u8> {
    serde_json::json!({
        "customer_name": "Load Client",
        "customer_email": "billing@example.com",
        "currency": "usd",
        "due_date": "2030-01-31",
        "lines": [{ "description": "Consulting", "quantity": 2, "unit_amount_cents": 15000 }],
    })
    .to_string()
    .into_bytes()
}

/// The create-invoice form's fields, as a browser without JavaScript posts them (one line, 2 x 150.00).
pub fn invoice_form(key: &str, customer: &str) -> Vec<(String, String)> {
    [
        ("idempotency_key", key),
        ("input[customer_name]", customer),
        ("input[customer_email]", "billing@example.com"),
        ("input[currency]", "usd"),
        ("input[due_date]", "2030-01-31"),
        ("input[lines][0][description]", "Consulting"),
        ("input[lines][0][quantity]", "2"),
        ("input[lines][0][unit_amount]", "150.00"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

impl Target {
    pub fn new(base: &str, secret: &str, fixture: &Fixture) -> anyhow::Result<Self> {
        Ok(Target {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .pool_max_idle_per_host(256)
                .timeout(Duration::from_secs(30))
                .build()?,
            base: base.to_owned(),
            secret: secret.to_owned(),
            api_token: fixture.api_token.clone(),
            cookie: None,
            spread: Vec::new(),
            turn: Default::default(),
            answers: Default::default(),
        })
    }

    /// Sends each request to the next of `bases` in turn (login stays on `base`).
    pub fn spread_over(mut self, bases: Vec<String>) -> Self {
        self.spread = bases;
        self
    }

    /// Where the next request goes.
    fn next(&self) -> &str {
        if self.spread.is_empty() {
            return &self.base;
        }
        let turn = self.turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        &self.spread[turn % self.spread.len()]
    }

    /// Logs in through the login server function and keeps the session cookie for `form_create`.
    pub async fn login(&mut self, email: &str, password: &str) -> anyhow::Result<()> {
        self.cookie = Some(login(&self.http, &self.base, email, password).await?);
        Ok(())
    }

    /// The session id this client's cookie carries (`cookie_sessions` stores it under the same id).
    pub fn session_id(&self) -> Option<&str> {
        self.cookie.as_deref()?.strip_prefix("invoicer_session=")
    }

    /// Signs `payload` now and delivers it, as Stripe does; the status.
    pub async fn webhook(&self, payload: &str) -> reqwest::Result<u16> {
        let signature = invoicer_core::payments::stripe::signature::header(
            &self.secret,
            chrono::Utc::now().timestamp(),
            payload.as_bytes(),
        );
        let res = self
            .http
            .post(format!("{}/webhooks/stripe", self.next()))
            .header("content-type", "application/json")
            .header("stripe-signature", signature)
            .body(payload.to_owned())
            .send()
            .await?;
        self.answers.note(&res);
        let status = res.status().as_u16();
        res.bytes().await?;
        Ok(status)
    }

    /// `POST /api/v1/invoices` with this Idempotency-Key; the status and body.
    pub async fn api_create(&self, key: &str, body: &[u8]) -> reqwest::Result<(u16, Vec<u8>)> {
        let res = self
            .http
            .post(format!("{}/api/v1/invoices", self.next()))
            .bearer_auth(&self.api_token)
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(body.to_vec())
            .send()
            .await?;
        self.answers.note(&res);
        let status = res.status().as_u16();
        Ok((status, res.bytes().await?.to_vec()))
    }

    /// The create form's server function, as the hydrated page posts it; the status.
    pub async fn form_create(&self, key: Uuid) -> reqwest::Result<u16> {
        Ok(self.form_create_id(key).await?.0)
    }

    /// Like `form_create`, with the invoice id the server function answered.
    pub async fn form_create_id(&self, key: Uuid) -> reqwest::Result<(u16, Option<Uuid>)> {
        let key = key.to_string();
        let fields = invoice_form(&key, "Load Client");
        let mut req = self
            .http
            .post(format!("{}/rpc/create_invoice", self.next()))
            .form(&fields);
        if let Some(cookie) = &self.cookie {
            req = req.header("cookie", cookie);
        }
        let res = req.send().await?;
        self.answers.note(&res);
        let status = res.status().as_u16();
        let body = res.bytes().await?;
        Ok((status, serde_json::from_slice(&body).ok()))
    }
}

/// Logs in at `base` through the login server function (a client that does not follow redirects);
/// the session cookie (`invoicer_session=...`).
pub async fn login(
    http: &reqwest::Client,
    base: &str,
    email: &str,
    password: &str,
) -> anyhow::Result<String> {
    let res = http
        .post(format!("{base}/rpc/login"))
        .header("accept", "text/html")
        .form(&[("email", email), ("password", password)])
        .send()
        .await?;
    anyhow::ensure!(
        res.status() == 302,
        "login answered {}",
        res.status().as_u16()
    );
    let cookie = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("invoicer_session="))
        .and_then(|v| v.split(';').next())
        .context("login set no session cookie")?;
    Ok(cookie.to_owned())
}

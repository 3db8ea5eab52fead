//! The charges phase: invoices collected automatically are created at a steady pace through the
//! whole fault sequence (a crash at `charge.after_stripe` among the others, kill -9, Postgres
//! stopped) and charged by the workers at a local Stripe that delivers every event two or three
//! times, out of order. The check reads the local Stripe's own ledger: one PaymentIntent per
//! attempt, no invoice charged or paid twice, every invoice charged and paid.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use lab::stripe_local::{Config, LocalStripe};
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

/// The customers whose saved methods are charged: one in four a SEPA debit, the rest cards.
pub(crate) const CUSTOMERS: usize = 8;
/// The pace of new invoices.
const EVERY: Duration = Duration::from_millis(150);

/// A local Stripe for the run, signing with `secret`; its events go to the server once it is up.
pub(crate) async fn stripe(secret: &str) -> anyhow::Result<LocalStripe> {
    LocalStripe::start(
        "127.0.0.1:0".parse()?,
        Config {
            webhook_secret: secret.to_owned(),
            chaos: true,
            debit_settles_after: Some(Duration::from_millis(500)),
            ..Config::default()
        },
    )
    .await
}

/// The API as a client that retries one key until it gets an answer (the server may be down).
#[derive(Clone)]
pub(crate) struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    pub(crate) fn new(base: &str, token: &str) -> Api {
        Api {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("an HTTP client builds"),
            base: base.to_owned(),
            token: token.to_owned(),
        }
    }

    pub(crate) async fn post(&self, path: &str, key: &str, body: &Value) -> anyhow::Result<Value> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let sent = self
                .http
                .post(format!("{}{path}", self.base))
                .bearer_auth(&self.token)
                .header("idempotency-key", key)
                .json(body)
                .send()
                .await;
            if let Ok(res) = sent {
                let status = res.status().as_u16();
                if (200..300).contains(&status) {
                    return Ok(res.json().await?);
                }
                anyhow::ensure!(
                    status == 409 || status >= 500,
                    "POST {path}: {status} {}",
                    res.text().await.unwrap_or_default()
                );
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "POST {path} under {key}: no answer in 120 s"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Customers of the load org who saved a method on the local Stripe's page; their ids.
pub(crate) async fn seed(
    pool: &PgPool,
    base: &str,
    token: &str,
    stripe: &LocalStripe,
) -> anyhow::Result<Vec<String>> {
    let api = Api {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()?,
        base: base.to_owned(),
        token: token.to_owned(),
    };
    let before: i64 = sqlx::query_scalar("select count(*) from payment_methods")
        .fetch_one(pool)
        .await?;
    let mut customers = Vec::new();
    for i in 0..CUSTOMERS {
        let made = api
            .post(
                "/api/v1/customers",
                &format!("faults-customer-{i}"),
                &json!({"name": format!("Charged {i}"), "email": format!("charged-{i}@example.com")}),
            )
            .await?;
        let id = made["id"].as_str().context("a customer id")?.to_owned();
        let link = api
            .post(
                &format!("/api/v1/customers/{id}/payment_method_link"),
                &format!("faults-link-{i}"),
                &json!({}),
            )
            .await?;
        let session = link["url"]
            .as_str()
            .and_then(|u| u.rsplit('/').next())
            .context("a setup page")?;
        let method = if i % 4 == 0 { "sepa_3000" } else { "card_4242" };
        stripe.save(session, method).await?;
        customers.push(id);
    }
    let want = before + CUSTOMERS as i64;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let saved: i64 = sqlx::query_scalar("select count(*) from payment_methods")
            .fetch_one(pool)
            .await?;
        if saved >= want {
            return Ok(customers);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{saved} of {want} methods saved in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates invoices collected automatically, one per [`EVERY`], each under its own key retried
/// until answered, until `stop`; returns the invoices made.
pub(crate) fn run(
    base: &str,
    token: &str,
    customers: Vec<String>,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<anyhow::Result<Vec<Uuid>>> {
    let api = Api {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("an HTTP client builds"),
        base: base.to_owned(),
        token: token.to_owned(),
    };
    tokio::spawn(async move {
        let mut made = Vec::new();
        for i in 0.. {
            if *stop.borrow() {
                break;
            }
            let customer = &customers[i % customers.len()];
            let body = json!({
                "customer_id": customer,
                "currency": "eur",
                "due_date": "2031-01-31",
                "lines": [{"description": "Plan", "quantity": 1, "unit_amount_cents": 1_000 + i}],
                "collection_method": "charge_automatically",
            });
            let invoice = api
                .post("/api/v1/invoices", &format!("faults-charge-{i}"), &body)
                .await?;
            made.push(invoice["id"].as_str().context("an invoice id")?.parse()?);
            tokio::select! {
                _ = tokio::time::sleep(EVERY) => {}
                _ = stop.changed() => {}
            }
        }
        Ok(made)
    })
}

/// What the charges phase found.
#[derive(Debug, Default)]
pub(crate) struct ChargeReport {
    pub invoices: usize,
    pub intents: usize,
    /// More than one PaymentIntent for one (invoice, attempt).
    pub charged_twice: usize,
    /// More than one succeeded PaymentIntent, or payment, for one invoice.
    pub paid_twice: usize,
    /// No PaymentIntent at all for an invoice.
    pub not_charged: usize,
    /// Not paid in full at the end.
    pub unpaid: usize,
}

impl ChargeReport {
    pub fn ok(&self) -> bool {
        self.invoices > 0
            && self.charged_twice == 0
            && self.paid_twice == 0
            && self.not_charged == 0
            && self.unpaid == 0
    }
}

/// Waits (up to `within`) for every invoice to be paid, then checks the local Stripe's ledger
/// against the database.
pub(crate) async fn check(
    pool: &PgPool,
    stripe: &LocalStripe,
    invoices: &[Uuid],
    within: Duration,
) -> anyhow::Result<ChargeReport> {
    let deadline = Instant::now() + within;
    let unpaid = loop {
        // language=PostgreSQL
        let unpaid: i64 = sqlx::query_scalar(
            "select count(*) from invoices where id = any($1) and status <> 'paid'",
        )
        .bind(invoices)
        .fetch_one(pool)
        .await?;
        if unpaid == 0 || Instant::now() >= deadline {
            break unpaid;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let intents = stripe.payment_intents();
    let mut per_attempt: HashMap<(String, String), usize> = HashMap::new();
    let mut succeeded: HashMap<String, usize> = HashMap::new();
    for intent in &intents {
        let invoice = intent["metadata"]["invoice_id"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let attempt = intent["metadata"]["attempt"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        *per_attempt.entry((invoice.clone(), attempt)).or_default() += 1;
        if intent["status"] == "succeeded" {
            *succeeded.entry(invoice).or_default() += 1;
        }
    }
    // language=PostgreSQL
    let paid_rows: Vec<(Uuid, i64)> = sqlx::query_as(
        r#"
        select invoice_id, count(*) from payments
        where invoice_id = any($1) and status = 'succeeded' group by invoice_id
        "#,
    )
    .bind(invoices)
    .fetch_all(pool)
    .await?;
    let paid_twice = paid_rows.iter().filter(|(_, n)| *n > 1).count()
        + succeeded.values().filter(|n| **n > 1).count();
    let charged: std::collections::HashSet<&str> = per_attempt
        .keys()
        .map(|(invoice, _)| invoice.as_str())
        .collect();
    let not_charged = invoices
        .iter()
        .filter(|i| !charged.contains(i.to_string().as_str()))
        .count();
    Ok(ChargeReport {
        invoices: invoices.len(),
        intents: intents.len(),
        charged_twice: per_attempt.values().filter(|n| **n > 1).count(),
        paid_twice,
        not_charged,
        unpaid: unpaid as usize,
    })
}

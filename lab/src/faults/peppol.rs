//! The Peppol phase: invoices for a buyer who receives by Peppol are created at a steady pace through
//! the whole fault sequence (a crash at `peppol.after_submit` among the others, kill -9, Postgres
//! stopped) and sent by the workers through a local access point that fails a share of the calls,
//! half of them after taking the document (the answer lost). The check reads the access point's own
//! ledger: every acknowledged invoice transmitted, none twice (by its number), whatever was retried.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use lab::peppol_local::{Config, LocalAccessPoint};
use serde_json::json;
use sqlx::PgPool;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::charges::Api;

/// The pace of new invoices.
const EVERY: Duration = Duration::from_millis(200);
/// The share of submissions the access point fails.
const FAIL_RATE: f64 = 0.2;

/// The local access point of the run.
pub(crate) async fn access_point() -> anyhow::Result<LocalAccessPoint> {
    LocalAccessPoint::start(
        "127.0.0.1:0".parse()?,
        Config {
            fail_rate: FAIL_RATE,
            ..Config::default()
        },
    )
    .await
}

/// The load org on Peppol (its id and what the rules need of a seller, written directly: no notice
/// email), a tax rate, and a Belgian customer who receives by Peppol; (customer, rate).
pub(crate) async fn seed(
    pool: &PgPool,
    org: model::OrgId,
    base: &str,
    token: &str,
) -> anyhow::Result<(String, String)> {
    // language=PostgreSQL
    sqlx::query(
        r#"
        update orgs set peppol_id = '0088:4000001000005', vat_id = 'DE136695976',
                        address_line1 = 'Hauptstrasse 5', city = 'Berlin', postal_code = '10115',
                        country = 'DE'
        where id = $1
        "#,
    )
    .bind(org.uuid())
    .execute(pool)
    .await?;
    let api = Api::new(base, token);
    let rate = api
        .post(
            "/api/v1/tax_rates",
            "faults-peppol-rate",
            &json!({"name": "VAT 21%", "percent": 21}),
        )
        .await?;
    let customer = api
        .post(
            "/api/v1/customers",
            "faults-peppol-customer",
            &json!({
                "name": "Entreprise Exemple SRL", "email": "factures@exemple.be",
                "address": {"line1": "Rue Royale 1", "postal_code": "1000", "city": "Bruxelles", "country": "BE"},
                "vat_id": "BE0123456749",
                "peppol_id": "0208:0123456749", "einvoice_channel": "peppol"
            }),
        )
        .await?;
    Ok((
        customer["id"].as_str().context("a customer id")?.to_owned(),
        rate["id"].as_str().context("a rate id")?.to_owned(),
    ))
}

/// Creates invoices for the customer by Peppol, one per [`EVERY`], each under its own key retried
/// until answered, until `stop`; returns the invoices made.
pub(crate) fn run(
    base: &str,
    token: &str,
    (customer, rate): (String, String),
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<anyhow::Result<Vec<Uuid>>> {
    let api = Api::new(base, token);
    tokio::spawn(async move {
        let mut made = Vec::new();
        for i in 0.. {
            if *stop.borrow() {
                break;
            }
            let body = json!({
                "customer_id": customer,
                "currency": "eur",
                "payment_terms_days": 30,
                "lines": [{"description": "Service", "quantity": 1, "unit_amount_cents": 2_000 + i,
                           "tax_rate_id": rate}],
            });
            let invoice = api
                .post("/api/v1/invoices", &format!("faults-peppol-{i}"), &body)
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

/// What the Peppol phase found.
#[derive(Debug, Default)]
pub(crate) struct PeppolReport {
    pub invoices: usize,
    /// Documents the access point took.
    pub transmitted: usize,
    /// Submissions made, and failed on purpose by the access point.
    pub calls: u64,
    pub failed_calls: u64,
    /// Submissions that repeated an instance id the access point had (absorbed: one transmission).
    pub repeats: u32,
    /// One invoice (by its number) transmitted under more than one instance id.
    pub transmitted_twice: usize,
    /// Acknowledged, and not transmitted (or not recorded sent) at the end.
    pub lost: usize,
}

impl PeppolReport {
    pub fn ok(&self) -> bool {
        self.invoices > 0 && self.transmitted_twice == 0 && self.lost == 0
    }
}

/// Waits (up to `within`) for every invoice's transmission to be recorded sent, then checks the
/// access point's ledger against the database.
pub(crate) async fn check(
    pool: &PgPool,
    ap: &LocalAccessPoint,
    invoices: &[Uuid],
    within: Duration,
) -> anyhow::Result<PeppolReport> {
    let deadline = Instant::now() + within;
    loop {
        // language=PostgreSQL
        let waiting: i64 = sqlx::query_scalar(
            r#"
            select count(*) from unnest($1::uuid[]) as i (id)
            where not exists (select from peppol_transmissions t
                              where t.invoice_id = i.id and t.state in ('sent', 'delivered'))
            "#,
        )
        .bind(invoices)
        .fetch_one(pool)
        .await?;
        if waiting == 0 || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let ledger = ap.transmissions();
    let mut by_number: HashMap<&str, usize> = HashMap::new();
    for t in &ledger {
        *by_number.entry(t.number.as_str()).or_default() += 1;
    }
    let taken: std::collections::HashSet<&str> =
        ledger.iter().map(|t| t.instance_id.as_str()).collect();
    // language=PostgreSQL
    let recorded: Vec<(Uuid, Option<Uuid>, Option<String>)> = sqlx::query_as(
        r#"
        select i.id, t.instance_id, t.state from unnest($1::uuid[]) as i (id)
        left join peppol_transmissions t on t.invoice_id = i.id and t.credit_note_id is null
        "#,
    )
    .bind(invoices)
    .fetch_all(pool)
    .await?;
    let lost = recorded
        .iter()
        .filter(|(_, instance, state)| match (instance, state.as_deref()) {
            (Some(instance), Some("sent" | "delivered")) => {
                !taken.contains(instance.to_string().as_str())
            }
            _ => true,
        })
        .count();
    let (calls, failed_calls) = ap.calls();
    Ok(PeppolReport {
        invoices: invoices.len(),
        transmitted: ledger.len(),
        calls,
        failed_calls,
        repeats: ledger.iter().map(|t| t.submissions - 1).sum(),
        transmitted_twice: by_number.values().filter(|n| **n > 1).count(),
        lost,
    })
}

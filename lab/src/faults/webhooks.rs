//! Webhooks out under the fault run: the fixture org's endpoint (every event type) points at a
//! receiver (scripts/webhook_receiver.py) that answers 500 at random and keeps a ledger of every
//! request. After the drain the ledger is checked against the database: every event written
//! arrived with a 2xx at least once, every delivery of an event carried its `webhook-id` and the
//! same body, every request verifies under the secret (the official `standardwebhooks` library),
//! and no change lost its event (one `invoice.finalized` per invoice finalized and one
//! `payment.recorded` per payment recorded since the endpoint was registered).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::Context;
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use model::webhooks::{message_id, WebhookEndpointInput, EVENT_TYPES};

/// The receiver a fault run sends its webhooks to (both runs take these arguments).
#[derive(clap::Args, Debug)]
pub struct Receiver {
    /// A webhook receiver (scripts/webhook_receiver.py serve): the org's endpoint for every event
    /// type, checked against its ledger after the drain.
    #[arg(long, requires = "webhook_ledger")]
    pub webhook_url: Option<String>,
    /// The receiver's ledger.
    #[arg(long)]
    pub webhook_ledger: Option<std::path::PathBuf>,
    /// The receiver script, whose `verify` checks the ledger with the standardwebhooks library.
    #[arg(long, default_value = "scripts/webhook_receiver.py")]
    pub webhook_receiver: std::path::PathBuf,
    /// Python with standardwebhooks installed.
    #[arg(long, env = "TEST_PYTHON", default_value = "python3")]
    pub python: String,
}

impl Receiver {
    /// Registers the receiver as `org`'s endpoint, if the run has one.
    pub(crate) async fn register(
        &self,
        pool: &PgPool,
        org: model::OrgId,
    ) -> anyhow::Result<Option<Endpoint>> {
        match &self.webhook_url {
            Some(url) => Ok(Some(register(pool, org, url).await?)),
            None => Ok(None),
        }
    }

    /// Checks the receiver's ledger (when the run has one), prints what it found and fails on a
    /// lost or changed delivery.
    pub(crate) async fn check(
        &self,
        pool: &PgPool,
        org: model::OrgId,
        endpoint: Option<&Endpoint>,
    ) -> anyhow::Result<()> {
        let (Some(endpoint), Some(ledger)) = (endpoint, &self.webhook_ledger) else {
            return Ok(());
        };
        let h = check(
            pool,
            org,
            endpoint,
            ledger,
            &self.python,
            &self.webhook_receiver,
        )
        .await?;
        println!(
            "webhooks out: {} events ({}), {} requests, {} verified by standardwebhooks, {} delivered \
             more than once (same webhook-id and body), lost {}, changed bodies {}, unknown ids {}, \
             changes without their event {:?}",
            h.events,
            h.by_type
                .iter()
                .map(|(t, n)| format!("{t} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            h.requests,
            h.verified,
            h.duplicated,
            h.lost.len(),
            h.changed_body,
            h.unknown,
            h.missing,
        );
        anyhow::ensure!(
            h.ok(),
            "webhooks out lost or changed deliveries (the first lost: {:?})",
            &h.lost[..h.lost.len().min(10)]
        );
        Ok(())
    }
}

/// Where the run's endpoint is and what signs it.
pub(crate) struct Endpoint {
    pub secret: String,
    pub since: DateTime<Utc>,
}

/// Registers `url` for every event type of `org`.
async fn register(pool: &PgPool, org: model::OrgId, url: &str) -> anyhow::Result<Endpoint> {
    let input = WebhookEndpointInput {
        url: url.to_owned(),
        events: EVENT_TYPES.iter().map(|t| t.to_string()).collect(),
        description: "fault run".into(),
    };
    let mut tx = pool.begin().await?;
    let id = Uuid::now_v7();
    let nobody = invoicer_core::webhooks_out::RegisteredBy::Nobody;
    let created = invoicer_core::webhooks_out::create(
        &mut tx,
        id,
        org,
        &format!("faults:{id}"),
        &input,
        nobody,
    )
    .await
    .map_err(|e| anyhow::anyhow!("registering the endpoint: {e:?}"))?;
    tx.commit().await?;
    Ok(Endpoint {
        secret: created.secret.context("a new endpoint has its secret")?,
        since: created.created_at,
    })
}

#[derive(Debug, Default)]
pub(crate) struct WebhookReport {
    pub events: usize,
    pub requests: usize,
    /// Requests the library verified under the secret.
    pub verified: usize,
    /// Events with no 2xx delivery.
    pub lost: Vec<String>,
    /// Events delivered more than once (all with their own id and body: see `changed_body`).
    pub duplicated: usize,
    /// Events whose deliveries did not all carry the same body.
    pub changed_body: usize,
    /// Requests naming an event the database does not have.
    pub unknown: usize,
    /// Changes without their event: (type, changes, events).
    pub missing: Vec<(String, i64, i64)>,
    pub by_type: BTreeMap<String, usize>,
}

impl WebhookReport {
    pub fn ok(&self) -> bool {
        self.events > 0
            && self.verified == self.requests
            && self.lost.is_empty()
            && self.changed_body == 0
            && self.unknown == 0
            && self.missing.is_empty()
    }
}

/// Checks the receiver's ledger against the database.
async fn check(
    pool: &PgPool,
    org: model::OrgId,
    endpoint: &Endpoint,
    ledger: &Path,
    python: &str,
    script: &Path,
) -> anyhow::Result<WebhookReport> {
    let out = tokio::process::Command::new(python)
        .arg(script)
        .args(["verify", "--ledger"])
        .arg(ledger)
        .args(["--secret", &endpoint.secret])
        .output()
        .await
        .context("running the receiver's verify")?;
    anyhow::ensure!(
        out.status.success(),
        "verify failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verified: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let received = verified["events"]
        .as_object()
        .context("the verify output's events")?;
    let events: Vec<(Uuid, String)> =
        sqlx::query_as("select id, type from webhook_events where org_id = $1")
            .bind(org)
            .fetch_all(pool)
            .await?;
    let mut r = WebhookReport {
        events: events.len(),
        requests: verified["records"].as_u64().unwrap_or(0) as usize,
        verified: verified["verified_by"][0].as_u64().unwrap_or(0) as usize,
        ..Default::default()
    };
    let ids: HashMap<String, &str> = events
        .iter()
        .map(|(id, t)| (message_id(*id), t.as_str()))
        .collect();
    for (id, kind) in &ids {
        *r.by_type.entry(kind.to_string()).or_default() += 1;
        match received.get(id) {
            Some(e) if e["ok"].as_u64().unwrap_or(0) > 0 => {
                if e["deliveries"].as_u64().unwrap_or(0) > 1 {
                    r.duplicated += 1;
                }
                if e["same_body"] != true {
                    r.changed_body += 1;
                }
            }
            _ => r.lost.push(format!("{kind} {id}")),
        }
    }
    r.unknown = received.keys().filter(|k| !ids.contains_key(*k)).count();
    // No change without its event: finalizations and payments since the endpoint was registered.
    for (kind, sql) in [
        (
            "invoice.finalized",
            "select count(*) from invoices where org_id = $1 and status <> 'draft' and finalized_at >= $2",
        ),
        (
            "payment.recorded",
            "select count(*) from payments where org_id = $1 and status = 'succeeded' and created_at >= $2",
        ),
    ] {
        let (changes,): (i64,) = sqlx::query_as(sql)
            .bind(org)
            .bind(endpoint.since)
            .fetch_one(pool)
            .await?;
        let (written,): (i64,) = sqlx::query_as(
            "select count(*) from webhook_events where org_id = $1 and type = $2",
        )
        .bind(org)
        .bind(kind)
        .fetch_one(pool)
        .await?;
        if written != changes {
            r.missing.push((kind.to_owned(), changes, written));
        }
    }
    Ok(r)
}

//! Webhooks out: every change the app makes reaches a registered endpoint once per change (at least
//! once per delivery), signed as the Standard Webhooks specification says — checked by the
//! official `standardwebhooks` library, not our code — retried after failures, logged, with both
//! secrets signing after a rotation; an endpoint failing for three days is disabled and its owner
//! emailed; URLs into our network are refused.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;
use uuid::Uuid;

use crate::common::served::TestApp;
use crate::common::{poll, queue_email, rows, SmtpSink};

/// The receiver (scripts/webhook_receiver.py) on a free port, writing to its ledger.
pub struct Receiver {
    pub url: String,
    pub ledger: PathBuf,
    pub status_file: PathBuf,
    dir: PathBuf,
    _child: tokio::process::Child,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn python() -> String {
    std::env::var("TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/webhook_receiver.py")
}

impl Receiver {
    pub async fn start(fail_rate: f64) -> Receiver {
        let dir =
            std::env::temp_dir().join(format!("invoicer-receiver-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let ledger = dir.join("ledger.jsonl");
        let status_file = dir.join("status");
        let mut child = tokio::process::Command::new(python())
            .arg(script())
            .args(["serve", "--port", "0", "--ledger"])
            .arg(&ledger)
            .args(["--fail-rate", &fail_rate.to_string(), "--status-file"])
            .arg(&status_file)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("the receiver starts")
            .unwrap()
            .unwrap();
        let port = ready.strip_prefix("ready ").unwrap();
        Receiver {
            url: format!("http://127.0.0.1:{port}/hook"),
            ledger,
            status_file,
            dir,
            _child: child,
        }
    }

    /// Answers `status` from now on (None: 200).
    pub fn answer(&self, status: Option<u16>) {
        match status {
            Some(s) => std::fs::write(&self.status_file, s.to_string()).unwrap(),
            None => {
                let _ = std::fs::remove_file(&self.status_file);
            }
        }
    }

    /// The requests received so far.
    pub fn received(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.ledger)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// What the official library says of the ledger under `secrets`.
    pub fn verify(&self, secrets: &[&str]) -> Value {
        verify_ledger(&self.ledger, secrets)
    }
}

/// What the official library says of `ledger` under `secrets`.
pub fn verify_ledger(ledger: &std::path::Path, secrets: &[&str]) -> Value {
    {
        let mut cmd = std::process::Command::new(python());
        cmd.arg(script()).args(["verify", "--ledger"]).arg(ledger);
        for s in secrets {
            cmd.args(["--secret", s]);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "verify: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// An in-process outbox worker delivering anywhere (loopback included), retrying fast; stops when
/// the returned sender is dropped.
pub fn worker(pool: &sqlx::PgPool, smtp: &SmtpSink) -> tokio::sync::watch::Sender<bool> {
    let mailer = invoicer_core::mail::Mailer::new(
        Some(&smtp.url()),
        None,
        std::path::Path::new("unused"),
        Duration::from_secs(10),
        invoicer_core::mail::DEV_FROM,
    )
    .unwrap();
    let config = invoicer_core::worker::WorkerConfig {
        id: "webhooks".into(),
        poll: Duration::from_millis(50),
        backoff_base: Duration::from_millis(100),
        ..Default::default()
    }
    .with_webhooks(invoicer_core::webhooks_out::guard::Policy::OPEN);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(invoicer_core::worker::run(
        pool.clone(),
        mailer,
        config,
        stopped,
    ));
    stop
}

async fn call(
    app: &TestApp,
    method: &str,
    path: &str,
    key: &str,
    idem: Option<&str>,
    body: Value,
) -> (u16, Value) {
    let mut req = app
        .http
        .request(method.parse().unwrap(), format!("{}{path}", app.base))
        .bearer_auth(key);
    if let Some(idem) = idem {
        req = req.header("idempotency-key", idem);
    }
    if !body.is_null() {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn ok(app: &TestApp, path: &str, key: &str, body: Value) -> Value {
    let (status, body) = call(
        app,
        "POST",
        path,
        key,
        Some(&Uuid::new_v4().to_string()),
        body,
    )
    .await;
    assert!(status < 300, "{path}: {status} {body}");
    body
}

/// Waits until the receiver has a 2xx delivery of every event the database wrote for `org`.
async fn all_delivered(app: &TestApp, receiver: &Receiver, org: model::OrgId) {
    poll(
        "every event delivered",
        true,
        Duration::from_secs(30),
        Duration::from_millis(50),
        || async {
            let ids: Vec<Uuid> = rows::scalars_for(
                &app.pool,
                "select id from webhook_events where org_id = $1",
                org,
            )
            .await;
            let got: BTreeSet<String> = receiver
                .received()
                .iter()
                .filter(|r| r["status"].as_u64().is_some_and(|s| s < 300))
                .map(|r| r["id"].as_str().unwrap().to_owned())
                .collect();
            ids.iter()
                .all(|id| got.contains(&model::webhooks::message_id(*id)))
        },
    )
    .await;
}

fn types(verified: &Value) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in verified["events"].as_object().unwrap().values() {
        *out.entry(e["type"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    out
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn every_change_reaches_the_endpoint_once_signed_as_the_standard_says(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let receiver = Receiver::start(0.0).await;
    let smtp = SmtpSink::start(0, false).await;

    // Registered once per Idempotency-Key: the replay answers the same endpoint, its secret
    // redacted (stored answers never hold one).
    let body = json!({"url": receiver.url, "events": model::webhooks::EVENT_TYPES, "description": "books"});
    let (status, endpoint) = call(
        &app,
        "POST",
        "/api/v1/webhook_endpoints",
        &key,
        Some("reg-1"),
        body.clone(),
    )
    .await;
    assert_eq!(status, 201, "{endpoint}");
    let secret = endpoint["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    let (status, again) = call(
        &app,
        "POST",
        "/api/v1/webhook_endpoints",
        &key,
        Some("reg-1"),
        body,
    )
    .await;
    assert_eq!(
        (status, again["id"].as_str(), again["secret"].as_str()),
        (201, endpoint["id"].as_str(), Some("[redacted]"))
    );
    assert_eq!(app.count("select count(*) from webhook_endpoints").await, 1);
    let id = endpoint["id"].as_str().unwrap().to_owned();
    let (_, listed) = call(
        &app,
        "GET",
        "/api/v1/webhook_endpoints",
        &key,
        None,
        Value::Null,
    )
    .await;
    assert_eq!(listed["data"][0]["id"], id.as_str());
    assert!(
        listed["data"][0].get("secret").is_none(),
        "a list shows no secret"
    );

    // Changes on every surface the API reaches, and one replayed (no second event).
    let customer_key = Uuid::new_v4().to_string();
    let customer = json!({"name": "Buyer", "email": "buyer@example.com"});
    let (_, c) = call(
        &app,
        "POST",
        "/api/v1/customers",
        &key,
        Some(&customer_key),
        customer.clone(),
    )
    .await;
    call(
        &app,
        "POST",
        "/api/v1/customers",
        &key,
        Some(&customer_key),
        customer,
    )
    .await;
    let invoice = |due: &str| {
        json!({"customer_id": c["id"], "currency": "eur", "due_date": due,
        "lines": [{"description": "Work", "quantity": 1, "unit_amount_cents": 10_000}]})
    };
    let paid = ok(&app, "/api/v1/invoices", &key, invoice("2031-01-31")).await;
    let paid_id = paid["id"].as_str().unwrap().to_owned();
    for cents in [4_000, 6_000] {
        ok(
            &app,
            &format!("/api/v1/invoices/{paid_id}/payments"),
            &key,
            json!({"amount_cents": cents, "method": "bank_transfer", "paid_on": "2026-12-01"}),
        )
        .await;
    }
    ok(
        &app,
        &format!("/api/v1/invoices/{paid_id}/credit_notes"),
        &key,
        json!({"amount_cents": 2_500, "reason": "Returned", "refund": "manual"}),
    )
    .await;
    let voided = ok(&app, "/api/v1/invoices", &key, invoice("2031-01-31")).await;
    ok(
        &app,
        &format!("/api/v1/invoices/{}/void", voided["id"].as_str().unwrap()),
        &key,
        json!({}),
    )
    .await;
    let late = ok(&app, "/api/v1/invoices", &key, invoice("2031-01-31")).await;
    let late_id = Uuid::parse_str(late["id"].as_str().unwrap()).unwrap();
    // Fell due yesterday (the endpoint was registered before).
    sqlx::query("update invoices set due_date = current_date - 1 where id = $1")
        .bind(late_id)
        .execute(&app.pool)
        .await
        .unwrap();
    queue_email(&app.pool, org, model::form_key(org), late_id)
        .await
        .unwrap();

    let stop = worker(&app.pool, &smtp);
    all_delivered(&app, &receiver, org).await;
    poll(
        "the sent and overdue events",
        true,
        Duration::from_secs(30),
        Duration::from_millis(50),
        || async {
            let got = types(&receiver.verify(&[&secret]));
            got.contains_key("invoice.sent") && got.contains_key("invoice.overdue")
        },
    )
    .await;
    all_delivered(&app, &receiver, org).await;

    let verified = receiver.verify(&[&secret]);
    let records = verified["records"].as_u64().unwrap();
    assert_eq!(
        verified["verified_by"][0], records,
        "every request verifies: {verified}"
    );
    let got = types(&verified);
    let want: BTreeMap<String, usize> = [
        ("customer.created", 1),
        ("invoice.finalized", 3),
        ("payment.recorded", 2),
        ("invoice.partially_paid", 1),
        ("invoice.paid", 1),
        ("credit_note.issued", 1),
        ("payment.refunded", 1),
        ("invoice.voided", 1),
        ("invoice.overdue", 1),
        ("invoice.sent", 1),
    ]
    .into_iter()
    .map(|(t, n)| (t.to_owned(), n))
    .collect();
    assert_eq!(
        got, want,
        "one event per change, the replayed customer create included"
    );
    let events: i64 = rows::scalar_for(
        &app.pool,
        "select count(*) from webhook_events where org_id = $1",
        org,
    )
    .await;
    assert_eq!(events as usize, want.values().sum::<usize>());
    // The body says what changed.
    let body: Value = serde_json::from_str(
        receiver
            .received()
            .iter()
            .find(|r| r["body"].as_str().unwrap().contains("invoice.paid"))
            .unwrap()["body"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(body["type"], "invoice.paid");
    assert_eq!(body["data"]["id"], paid_id.as_str());
    assert_eq!(body["data"]["amount_paid_cents"], 10_000);
    assert!(body["timestamp"].as_str().unwrap().ends_with('Z'));

    // The delivery log.
    let (_, log) = call(
        &app,
        "GET",
        &format!("/api/v1/webhook_endpoints/{id}/attempts"),
        &key,
        None,
        Value::Null,
    )
    .await;
    let first = &log["data"][0];
    assert_eq!(first["status_code"], 200);
    assert_eq!(first["response"], "{\"received\": true}");
    assert!(first["latency_ms"].as_i64().unwrap() >= 0);

    // A failing endpoint: retried with the same webhook-id until it answers.
    receiver.answer(Some(500));
    ok(
        &app,
        "/api/v1/customers",
        &key,
        json!({"name": "Second", "email": "second@example.com"}),
    )
    .await;
    poll(
        "two failed tries",
        true,
        Duration::from_secs(30),
        Duration::from_millis(50),
        || async {
            receiver
                .received()
                .iter()
                .filter(|r| r["status"] == 500)
                .count()
                >= 2
        },
    )
    .await;
    receiver.answer(None);
    all_delivered(&app, &receiver, org).await;
    let verified = receiver.verify(&[&secret]);
    let retried: Vec<&Value> = verified["events"]
        .as_object()
        .unwrap()
        .values()
        .filter(|e| e["deliveries"].as_u64().unwrap() >= 3)
        .collect();
    assert_eq!(retried.len(), 1, "{verified}");
    assert_eq!(retried[0]["ok"], 1);
    assert_eq!(retried[0]["same_body"], true);
    let (_, log) = call(
        &app,
        "GET",
        &format!("/api/v1/webhook_endpoints/{id}/attempts"),
        &key,
        None,
        Value::Null,
    )
    .await;
    assert!(log["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["status_code"] == 500 && a["response"] == "try again later"));

    // Rotation: both secrets sign during the overlap; a replay of the rotation answers it again,
    // the secret redacted.
    let path = format!("/api/v1/webhook_endpoints/{id}/rotate_secret");
    let (status, rotated) = call(&app, "POST", &path, &key, Some("rot-1"), Value::Null).await;
    assert_eq!(status, 200, "{rotated}");
    let new_secret = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(new_secret, secret);
    let (_, replayed) = call(&app, "POST", &path, &key, Some("rot-1"), Value::Null).await;
    assert_eq!(replayed["secret"].as_str(), Some("[redacted]"));
    let before = receiver.received().len();
    ok(
        &app,
        "/api/v1/customers",
        &key,
        json!({"name": "Third", "email": "third@example.com"}),
    )
    .await;
    all_delivered(&app, &receiver, org).await;
    let last: Vec<Value> = receiver.received().split_off(before);
    assert_eq!(last[0]["signature"].as_str().unwrap().split(' ').count(), 2);
    // Verify only the newest request under each secret alone.
    let lone = receiver.dir.join("lone.jsonl");
    std::fs::write(&lone, format!("{}\n", last[0])).unwrap();
    assert_eq!(
        verify_ledger(&lone, &[&secret, &new_secret])["verified_by"],
        json!([1, 1])
    );

    // Another org's key sees none of it; deleting stops deliveries.
    let (_, other_key) = app.api_client().await;
    let (status, _) = call(
        &app,
        "GET",
        &format!("/api/v1/webhook_endpoints/{id}"),
        &other_key,
        None,
        Value::Null,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = call(
        &app,
        "DELETE",
        &format!("/api/v1/webhook_endpoints/{id}"),
        &other_key,
        None,
        Value::Null,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = call(
        &app,
        "DELETE",
        &format!("/api/v1/webhook_endpoints/{id}"),
        &key,
        None,
        Value::Null,
    )
    .await;
    assert_eq!(status, 204);
    let before = app.count("select count(*) from webhook_events").await;
    ok(
        &app,
        "/api/v1/customers",
        &key,
        json!({"name": "Fourth", "email": "fourth@example.com"}),
    )
    .await;
    assert_eq!(
        app.count("select count(*) from webhook_events").await,
        before,
        "no endpoint wants it"
    );
    drop(stop);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_endpoint_failing_for_three_days_is_disabled_and_its_owner_emailed(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let receiver = Receiver::start(0.0).await;
    let smtp = SmtpSink::start(0, false).await;
    let endpoint = ok(
        &app,
        "/api/v1/webhook_endpoints",
        &key,
        json!({"url": receiver.url, "events": ["customer.created"]}),
    )
    .await;
    let id = Uuid::parse_str(endpoint["id"].as_str().unwrap()).unwrap();
    receiver.answer(Some(503));
    // Failing since four days ago: the next failure ends it.
    sqlx::query(
        "update webhook_endpoints set failing_since = now() - interval '4 days' where id = $1",
    )
    .bind(id)
    .execute(&app.pool)
    .await
    .unwrap();
    ok(
        &app,
        "/api/v1/customers",
        &key,
        json!({"name": "A", "email": "a@example.com"}),
    )
    .await;
    ok(
        &app,
        "/api/v1/customers",
        &key,
        json!({"name": "B", "email": "b@example.com"}),
    )
    .await;
    let stop = worker(&app.pool, &smtp);
    let mails = smtp.wait_for(1, Duration::from_secs(30)).await;
    assert!(
        mails[0].contains("A webhook endpoint of yours was disabled"),
        "{}",
        mails[0]
    );
    assert!(mails[0].contains(&receiver.url));
    let (_, got) = call(
        &app,
        "GET",
        &format!("/api/v1/webhook_endpoints/{id}"),
        &key,
        None,
        Value::Null,
    )
    .await;
    assert_eq!(got["status"], "disabled");
    // Nothing more is tried: the other delivery was given up with the endpoint.
    crate::common::wait_until(
        &app.pool,
        "select count(*) from outbox where kind = 'webhook' and sent_at is null and dead_at is null",
        0,
        Duration::from_secs(30),
    )
    .await;
    let tries = receiver.received().len();
    assert_eq!(tries, 1, "one failure, then the endpoint was disabled");
    ok(
        &app,
        "/api/v1/customers",
        &key,
        json!({"name": "C", "email": "c@example.com"}),
    )
    .await;
    assert_eq!(
        app.count("select count(*) from webhook_events").await,
        2,
        "a disabled endpoint wants nothing"
    );
    let _ = org;
    drop(stop);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn urls_into_our_network_are_refused(pool: sqlx::PgPool) {
    let app = TestApp::spawn_with(pool, |s| {
        s.webhooks = invoicer_core::webhooks_out::guard::Policy::STRICT;
    })
    .await;
    let (_, key) = app.api_client().await;
    for url in [
        "https://127.0.0.1/hook",
        "https://localhost/hook",
        "https://10.0.0.5/hook",
        "https://10.255.255.255:8443/hook",
        "https://169.254.169.254/latest/meta-data/",
        "https://[fd00:ec2::254]/",
        "https://[fc00::1]/hook",
        "https://[fe80::1]/hook",
        "https://[::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://[64:ff9b::7f00:1]/hook",
        "https://[64:ff9b::808:808]/hook",
        "https://[64:ff9b:1::a9fe:a9fe]/hook",
        "https://192.168.0.1/hook",
        "https://172.16.1.1/hook",
        "https://100.64.0.1/hook",
        "https://0.0.0.0/hook",
        "http://example.com/hook",
        "ftp://example.com/hook",
    ] {
        let (status, body) = call(
            &app,
            "POST",
            "/api/v1/webhook_endpoints",
            &key,
            Some(&Uuid::new_v4().to_string()),
            json!({"url": url, "events": ["invoice.paid"]}),
        )
        .await;
        assert_eq!(status, 422, "{url}: {body}");
        assert!(body["errors"]["url"].is_string(), "{url}: {body}");
    }
    assert_eq!(app.count("select count(*) from webhook_endpoints").await, 0);
    assert_eq!(
        app.count("select count(*) from claims where scope = 'api'")
            .await,
        0,
        "nothing claimed"
    );
    // Unknown events and no events are refused too.
    for events in [json!([]), json!(["invoice.exploded"])] {
        let (status, body) = call(
            &app,
            "POST",
            "/api/v1/webhook_endpoints",
            &key,
            Some(&Uuid::new_v4().to_string()),
            json!({"url": "https://example.com/", "events": events}),
        )
        .await;
        assert_eq!(status, 422, "{body}");
        assert!(body["errors"]["events"].is_string());
    }
}

/// Where private targets are allowed (dev mode, these tests), link-local addresses and clouds'
/// metadata services still are not: refused at registration, through the API and the settings
/// form, and at delivery to an endpoint stored before.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn metadata_and_link_local_addresses_are_refused_where_private_ones_are_allowed(
    pool: sqlx::PgPool,
) {
    // The tests' settings allow private targets (Policy::OPEN), as dev mode does.
    let app = TestApp::spawn(pool).await;
    let (_, key) = app.api_client().await;
    for url in [
        "http://169.254.169.254/",
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://169.254.0.23/",
        "http://[fe80::1]/hook",
        "http://[::ffff:169.254.169.254]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[64:ff9b::7f00:1]/hook",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://100.100.100.200/latest/meta-data/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://metadata/computeMetadata/v1/",
        "http://instance-data/latest/meta-data/",
    ] {
        let (status, body) = call(
            &app,
            "POST",
            "/api/v1/webhook_endpoints",
            &key,
            Some(&Uuid::new_v4().to_string()),
            json!({"url": url, "events": ["customer.created"]}),
        )
        .await;
        assert_eq!(status, 422, "{url}: {body}");
        let why = body["errors"]["url"].as_str().unwrap_or_default();
        assert!(why.contains("metadata"), "{url}: {body}");
    }
    assert_eq!(app.count("select count(*) from webhook_endpoints").await, 0);

    // The settings page's form answers the same.
    let (email, owner) = crate::common::rows::new_owner(&app.pool, "Form Co").await;
    let browser = crate::common::client();
    crate::common::login(&browser, &app.base, &email, "correct horse").await;
    let form = [
        ("idempotency_key", model::form_key(owner.org_id).to_string()),
        ("url", "http://169.254.169.254/latest/meta-data/".to_owned()),
        ("events[]", "invoice.paid".to_owned()),
    ];
    let res = crate::common::pages::post_form(
        &browser,
        format!("{}/rpc/create_webhook_endpoint", app.base),
        &form,
    )
    .await;
    assert_eq!(res.status(), 422);
    assert!(res.text().await.unwrap().contains("metadata"));
    assert_eq!(app.count("select count(*) from webhook_endpoints").await, 0);

    // Loopback and private networks are what the setting is for.
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://10.0.0.5/hook",
    ] {
        ok(
            &app,
            "/api/v1/webhook_endpoints",
            &key,
            json!({"url": url, "events": ["invoice.paid"]}),
        )
        .await;
    }

    // An endpoint stored before the rule is refused at delivery, before any connection.
    let smtp = SmtpSink::start(0, false).await;
    let endpoint = ok(
        &app,
        "/api/v1/webhook_endpoints",
        &key,
        json!({"url": "http://127.0.0.1:9/stored", "events": ["customer.created"]}),
    )
    .await;
    let id = Uuid::parse_str(endpoint["id"].as_str().unwrap()).unwrap();
    sqlx::query("update webhook_endpoints set url = $2 where id = $1")
        .bind(id)
        .bind("http://169.254.169.254/latest/meta-data/")
        .execute(&app.pool)
        .await
        .unwrap();
    ok(
        &app,
        "/api/v1/customers",
        &key,
        json!({"name": "A", "email": "a@example.com"}),
    )
    .await;
    let stop = worker(&app.pool, &smtp);
    poll(
        "the delivery was tried",
        true,
        Duration::from_secs(30),
        Duration::from_millis(50),
        || async {
            let tried: i64 = rows::scalar_for(
                &app.pool,
                "select count(*) from webhook_attempts where endpoint_id = $1",
                id,
            )
            .await;
            tried > 0
        },
    )
    .await;
    let error: Option<String> = rows::scalar_for(
        &app.pool,
        "select error from webhook_attempts where endpoint_id = $1 order by attempted_at limit 1",
        id,
    )
    .await;
    let error = error.unwrap_or_default();
    assert!(error.contains("metadata"), "{error}");
    drop(stop);
}

//! What an operator sees: one JSON log event per attempt carrying the request id, the request id on the
//! response, and Prometheus counters per surface and outcome.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::pages;
use crate::common::rows::{public_token, scalar};
use crate::common::{self, client, invoice_form, login, TestDb};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .find(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// A database with the org `org` (owner `email`) and that owner's API key, a pool on it and another
/// org's open invoice of 10.00 USD; (database, key, pool, invoice).
async fn org_with_key_and_invoice(
    tag: &str,
    org: &str,
    email: &str,
) -> (TestDb, String, sqlx::PgPool, uuid::Uuid) {
    let db = TestDb::with_org(tag, org, email).await;
    let token = common::api_key(&db, email).await;
    let pool = db.pool().await;
    let (_, invoice) = common::seed_invoice(&pool, "payer@example.com", 1_000, "usd").await;
    (db, token, pool, invoice)
}

/// The binary with JSON logs at `rust_log` on a free port, once it answers; (process, base URL, its
/// log lines).
async fn json_logging_server(
    db: &TestDb,
    rust_log: &str,
) -> (Child, String, Lines<BufReader<ChildStdout>>) {
    let port = common::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = tokio::process::Command::new(common::SERVER)
        .env("LEPTOS_ENV", "DEV")
        .env("DATABASE_URL", db.url())
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("LOG_FORMAT", "json")
        .env("RUST_LOG", rust_log)
        .env("WORKERS", "0")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let logs = BufReader::new(server.stdout.take().unwrap()).lines();
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while http.get(format!("{base}/healthz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (server, base, logs)
}

#[tokio::test]
async fn attempts_are_logged_with_request_ids_and_counted_per_surface_and_outcome() {
    let (db, token, pool, invoice) =
        org_with_key_and_invoice("observe", "Obs", "obs@example.com").await;

    let (mut server, base, mut logs) = json_logging_server(&db, "info").await;
    let http = reqwest::Client::new();

    // API: won then replay; the caller's request id comes back, and a missing one is made up.
    let post = |request_id: Option<&'static str>| {
        let mut req = http
            .post(format!("{base}/api/v1/invoices"))
            .bearer_auth(&token)
            .header("idempotency-key", "obs-1")
            .header("content-type", "application/json")
            .body(common::served::invoice_body("Ada"));
        if let Some(id) = request_id {
            req = req.header("x-request-id", id);
        }
        req.send()
    };
    let first = post(Some("req-obs-1")).await.unwrap();
    assert_eq!(first.status(), 201);
    assert_eq!(first.headers()["x-request-id"], "req-obs-1");
    let second = post(None).await.unwrap();
    let generated = second.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(uuid::Uuid::try_parse(&generated).is_ok(), "{generated}");

    // Webhook: won, replay, and a refused signature.
    let (_, payload) = invoicer_core::payments::stripe::standin::checkout_completed(
        model::InvoiceId::from(invoice),
        1_000,
        "usd",
    );
    let secret = invoicer_core::state::DEV_WEBHOOK_SECRET;
    let url = format!("{base}/webhooks/stripe");
    for _ in 0..2 {
        assert_eq!(
            invoicer_core::payments::stripe::standin::deliver(&url, secret, &payload)
                .await
                .unwrap()
                .0,
            200
        );
    }
    assert_eq!(
        invoicer_core::payments::stripe::standin::deliver(&url, "whsec_wrong", &payload)
            .await
            .unwrap()
            .0,
        400
    );

    // Form: won then replay.
    let browser = client();
    login(&browser, &base, "obs@example.com", "correct horse").await;
    let key = uuid::Uuid::new_v4().to_string();
    for _ in 0..2 {
        let res = pages::submit(
            &browser,
            format!("{base}/rpc/create_invoice"),
            &invoice_form(&key, "Ada"),
        )
        .await;
        assert_eq!(res.status(), 302);
    }

    let text = pages::text(&http, format!("{base}/metrics")).await;
    for surface in ["api", "webhook", "form"] {
        for outcome in ["won", "replay"] {
            let n = metric(
                &text,
                "invoicer_attempts_total",
                &[("surface", surface), ("outcome", outcome)],
            );
            assert_eq!(n, Some(1.0), "{surface}/{outcome} in\n{text}");
        }
    }
    assert_eq!(
        metric(
            &text,
            "invoicer_attempts_total",
            &[("surface", "webhook"), ("outcome", "rejected")]
        ),
        Some(1.0)
    );
    assert_eq!(
        metric(
            &text,
            "invoicer_webhook_signature_failures_total",
            &[("reason", "mismatch")]
        ),
        Some(1.0)
    );
    assert!(
        metric(
            &text,
            "invoicer_attempt_duration_seconds_count",
            &[("surface", "api")]
        )
        .unwrap()
            >= 2.0
    );
    assert_eq!(
        metric(&text, "invoicer_outbox_pending", &[]),
        Some(1.0),
        "the receipt waits (no workers)"
    );

    // The log has one event per attempt, inside its request's span.
    let _ = server.start_kill();
    let mut events = Vec::new();
    while let Ok(Some(line)) = logs.next_line().await {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
            if v["fields"]["message"] == "attempt" {
                events.push(v);
            }
        }
    }
    let api_won = events
        .iter()
        .find(|e| e["fields"]["surface"] == "api" && e["fields"]["outcome"] == "won")
        .expect("an api/won event");
    assert_eq!(api_won["span"]["request_id"], "req-obs-1");
    assert_eq!(api_won["fields"]["key"], "obs-1");
    assert!(api_won["fields"]["duration_ms"].as_f64().unwrap() > 0.0);
    let api_replay = events
        .iter()
        .find(|e| e["fields"]["surface"] == "api" && e["fields"]["outcome"] == "replay")
        .expect("an api/replay event");
    assert_eq!(api_replay["span"]["request_id"], generated.as_str());
    assert_eq!(events.len(), 7, "one event per attempt: {events:#?}");

    // The job surface: a worker process sends the pending receipt and logs the attempt.
    let sink = common::SmtpSink::start(0, false).await;
    let mut worker = tokio::process::Command::new(common::SERVER)
        .arg("worker")
        .env("LEPTOS_ENV", "DEV")
        .env("DATABASE_URL", db.url())
        .env("SMTP_URL", sink.url())
        .env("LOG_FORMAT", "json")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut worker_logs = tokio::io::BufReader::new(worker.stdout.take().unwrap()).lines();
    sink.wait_for(1, Duration::from_secs(30)).await;
    let job_event = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = worker_logs.next_line().await {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                if v["fields"]["message"] == "attempt" && v["fields"]["surface"] == "job" {
                    return Some(v);
                }
            }
        }
        None
    })
    .await
    .unwrap()
    .expect("a job attempt event");
    assert_eq!(job_event["fields"]["outcome"], "won");
    assert_eq!(job_event["fields"]["owner"], "outbox");
    let _ = worker.start_kill();

    db.finish(pool).await;
}

/// Secret path segments never reach the log: the customer's link, an invitation, a reset or a
/// verification link show as `[redacted]` in every request span. A caller's request id is kept
/// as at most 128 visible characters, in the log, in the stored attempt and on the response.
#[tokio::test]
async fn logs_redact_link_tokens_and_cut_request_ids() {
    let (db, token, pool, invoice) =
        org_with_key_and_invoice("redact", "Red", "red@example.com").await;
    let link: String = public_token(&pool, invoice).await;
    let (mut server, base, mut logs) = json_logging_server(&db, "info,tower_http=debug").await;
    let http = reqwest::Client::new();
    let secret = "f".repeat(64);
    for path in [
        format!("/i/{link}"),
        format!("/i/{link}/pdf"),
        format!("/invite/{secret}"),
        format!("/reset-password/{secret}"),
        format!("/verify-email/{secret}"),
    ] {
        pages::get(&http, format!("{base}{path}")).await;
    }
    let long_id = "r".repeat(5_000);
    let res = http
        .post(format!("{base}/api/v1/invoices"))
        .bearer_auth(&token)
        .header("idempotency-key", "redact-1")
        .header("content-type", "application/json")
        .header("x-request-id", &long_id)
        .body(common::served::invoice_body("Ada"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    assert_eq!(res.headers()["x-request-id"].len(), 128);
    let stored: String = scalar(
        &pool,
        "select request_id from attempts where key = 'redact-1'",
    )
    .await;
    assert_eq!(stored, "r".repeat(128));

    let _ = server.start_kill();
    let mut lines = Vec::new();
    while let Ok(Some(line)) = logs.next_line().await {
        lines.push(line);
    }
    let all = lines.join("\n");
    assert!(!all.contains(&link), "the customer's link reached the log");
    assert!(!all.contains(&secret), "a link token reached the log");
    assert!(
        !all.contains(&"r".repeat(129)),
        "a request id longer than 128 was logged"
    );
    for shown in [
        "/i/[redacted]",
        "/i/[redacted]/pdf",
        "/invite/[redacted]",
        "/reset-password/[redacted]",
        "/verify-email/[redacted]",
    ] {
        assert!(
            all.contains(&format!("\"{shown}\"")),
            "no span shows {shown}"
        );
    }
    db.cleanup().await;
}

//! /readyz follows the database: it fails while the database is unreachable and recovers after.
//! The database "goes away" by cutting a unix-socket proxy between the server and Postgres (the
//! machine's cluster is shared, so the test does not stop it).

use crate::common;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinSet;

const REAL_SOCKET: &str = "/var/run/postgresql/.s.PGSQL.5432";

/// Forwards connections from `dir/.s.PGSQL.5432` to the real socket until dropped.
struct Proxy {
    tasks: JoinSet<()>,
}

impl Proxy {
    fn start(dir: &Path) -> Proxy {
        let socket = dir.join(".s.PGSQL.5432");
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).unwrap();
        let mut tasks = JoinSet::new();
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((mut client, _)) = listener.accept().await {
                connections.spawn(async move {
                    if let Ok(mut server) = UnixStream::connect(REAL_SOCKET).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        Proxy { tasks }
    }

    /// The database is gone: no new connections, and the open ones are cut.
    async fn stop(mut self, dir: &Path) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        let _ = std::fs::remove_file(dir.join(".s.PGSQL.5432"));
    }
}

async fn status_within(url: &str, want: u16, within: Duration) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    common::poll(url, want, within, Duration::from_millis(100), || async {
        http.get(url)
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0)
    })
    .await;
}

#[tokio::test]
async fn readyz_fails_while_the_database_is_away_and_recovers() {
    let db = common::TestDb::new("readyz").await;
    let dir: PathBuf =
        std::env::temp_dir().join(format!("invoicer-pg-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let proxy = Proxy::start(&dir);
    let url = format!("postgres:///{}?host={}", db.name, dir.display());
    let port = common::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let _server = tokio::process::Command::new(common::SERVER)
        .env("LEPTOS_ENV", "DEV")
        .env("DATABASE_URL", &url)
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("WORKERS", "0")
        .env("RUST_LOG", "error")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    status_within(&format!("{base}/readyz"), 200, Duration::from_secs(60)).await;

    proxy.stop(&dir).await;
    status_within(&format!("{base}/readyz"), 503, Duration::from_secs(20)).await;
    status_within(&format!("{base}/healthz"), 200, Duration::from_secs(5)).await; // the process is fine

    let _proxy = Proxy::start(&dir);
    status_within(&format!("{base}/readyz"), 200, Duration::from_secs(30)).await;
    db.cleanup().await;
}

/// Makes the test's database take no writes (as a standby does) or take them again, and cuts every
/// open connection to it, as the balancer does to the sessions of a primary that lost its role.
async fn read_only(db: &common::TestDb, on: bool) {
    use sqlx::Connection;
    let mut admin = sqlx::PgConnection::connect_with(&db.options.clone().database("postgres"))
        .await
        .unwrap();
    let set = if on {
        format!(
            "alter database \"{}\" set default_transaction_read_only = on",
            db.name
        )
    } else {
        format!(
            "alter database \"{}\" reset default_transaction_read_only",
            db.name
        )
    };
    sqlx::query(&set).execute(&mut admin).await.unwrap();
    sqlx::query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1")
        .bind(&db.name)
        .execute(&mut admin)
        .await
        .unwrap();
}

fn retry_after(res: &reqwest::Response) -> Option<u64> {
    res.headers()
        .get("retry-after")?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

#[tokio::test]
async fn a_database_that_takes_no_writes_is_503_with_retry_after_and_the_same_attempts_land_once() {
    use crate::common::pages;
    let db = common::TestDb::with_org("readonly", "Acme", "ro@example.com").await;
    let token = common::api_key(&db, "ro@example.com").await;
    let server = common::Server::start(&db, "").await;
    let base = server.base.clone();
    let browser = common::client();
    common::login(&browser, &base, "ro@example.com", "correct horse").await;
    let form_key = uuid::Uuid::new_v4().to_string();
    let form = lab::harness::invoice_form(&form_key, "Read Only Ltd");
    let body = lab::harness::api_body();
    let api = |key: &'static str| {
        reqwest::Client::new()
            .post(format!("{base}/api/v1/invoices"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(body.clone())
    };

    read_only(&db, true).await;
    status_within(&format!("{base}/readyz"), 503, Duration::from_secs(20)).await;

    // The API: 503, when to come back, a problem that names no internals.
    let res = api("ro-api-1").send().await.unwrap();
    assert_eq!(res.status(), 503);
    assert_eq!(retry_after(&res), Some(2));
    let problem = res.text().await.unwrap();
    assert!(problem.contains("/problems/unavailable"), "{problem}");
    assert!(
        !problem.to_lowercase().contains("read-only transaction"),
        "{problem}"
    );

    // The hydrated form: 503 with Retry-After.
    let res = pages::post_form(&browser, format!("{base}/rpc/create_invoice"), &form).await;
    assert_eq!(res.status(), 503);
    assert_eq!(retry_after(&res), Some(2));

    // The form without JavaScript: back to the form, which says to send it again and keeps the
    // rendered form's key and what was typed.
    let res = browser
        .post(format!("{base}/rpc/create_invoice"))
        .header("accept", "text/html")
        .header("referer", format!("{base}/invoices/new"))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_redirection(), "{}", res.status());
    let back = res.headers()["location"].to_str().unwrap().to_owned();
    assert!(back.starts_with(&format!("{base}/invoices/new?")), "{back}");
    let page = pages::text(&browser, back).await;
    assert!(page.contains("switching to another server"), "{page}");
    assert!(
        page.contains(&format!("value=\"{form_key}\"")),
        "the same key: {page}"
    );
    assert!(page.contains("Read Only Ltd"), "the typed values: {page}");

    // A Stripe event: 503 with Retry-After, so Stripe sends it again.
    let payload = invoicer_core::payments::stripe::standin::checkout_event(
        "evt_ro_1",
        "pi_ro_1",
        model::InvoiceId::from(uuid::Uuid::new_v4()),
        100,
        "usd",
    );
    let signed = invoicer_core::payments::stripe::signature::header(
        "whsec_dev_invoicer",
        chrono::Utc::now().timestamp(),
        payload.as_bytes(),
    );
    let res = reqwest::Client::new()
        .post(format!("{base}/webhooks/stripe"))
        .header("stripe-signature", signed)
        .body(payload)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert_eq!(retry_after(&res), Some(2));

    // Writes come back: the same attempts land, once each.
    read_only(&db, false).await;
    status_within(&format!("{base}/readyz"), 200, Duration::from_secs(20)).await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let res = api("ro-api-1").send().await.unwrap();
        assert_eq!(res.status(), 201);
        let created: serde_json::Value = res.json().await.unwrap();
        ids.push(created["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids[0], ids[1]);
    let mut landed = Vec::new();
    for _ in 0..2 {
        let res = pages::submit(&browser, format!("{base}/rpc/create_invoice"), &form).await;
        landed.push(res.headers()["location"].to_str().unwrap().to_owned());
    }
    assert_eq!(landed[0], landed[1]);
    let pool = db.pool().await;
    let invoices: i64 = sqlx::query_scalar("select count(*) from invoices")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(invoices, 2, "one invoice per attempt");
    server.stop().await;
    db.finish(pool).await;
}

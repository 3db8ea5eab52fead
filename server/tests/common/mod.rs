//! Process-level test harness: a fresh database per test and the real `server` binary as a child.

#![allow(dead_code)]

pub mod served;

use std::process::Stdio;
use std::str::FromStr;
use std::time::{Duration, Instant};

use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection, PgPool};
use tokio::process::{Child, Command};

pub const SERVER: &str = env!("CARGO_BIN_EXE_server");

fn base_options() -> PgConnectOptions {
    let url = std::env::var("DATABASE_URL")
        .expect("DATABASE_URL must name a Postgres to create test databases in");
    PgConnectOptions::from_str(&url).expect("DATABASE_URL is not a Postgres URL")
}

/// A database made for one test, dropped by `cleanup`.
pub struct TestDb {
    pub name: String,
    pub options: PgConnectOptions,
    url: String,
}

impl TestDb {
    pub async fn new(tag: &str) -> TestDb {
        let name = format!("invoicer_{tag}_{}", uuid::Uuid::new_v4().simple());
        let mut admin = PgConnection::connect_with(&base_options()).await.unwrap();
        sqlx::query(&format!("create database \"{name}\""))
            .execute(&mut admin)
            .await
            .unwrap();
        let mut url = url::Url::parse(&std::env::var("DATABASE_URL").unwrap()).unwrap();
        url.set_path(&format!("/{name}"));
        TestDb {
            options: base_options().database(&name),
            name,
            url: url.to_string(),
        }
    }

    pub fn url(&self) -> String {
        self.url.clone()
    }

    pub async fn pool(&self) -> PgPool {
        PgPool::connect_with(self.options.clone()).await.unwrap()
    }

    pub async fn cleanup(self) {
        let mut admin = PgConnection::connect_with(&base_options()).await.unwrap();
        sqlx::query(&format!(
            "drop database if exists \"{}\" with (force)",
            self.name
        ))
        .execute(&mut admin)
        .await
        .unwrap();
    }
}

/// Runs `server ARGS...` against `db` and returns its stdout; panics with stderr on failure.
pub async fn cli(db: &TestDb, args: &[&str]) -> String {
    let out = Command::new(SERVER)
        .args(args)
        .env("DATABASE_URL", db.url())
        .env("RUST_LOG", "warn")
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "server {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub struct Server {
    pub child: Child,
    pub base: String,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    /// Starts the binary with the given failpoints armed and waits until it answers /healthz.
    pub async fn start(db: &TestDb, failpoints: &str) -> Server {
        let port = free_port();
        let child = Command::new(SERVER)
            .env("DATABASE_URL", db.url())
            .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
            .env("INVOICER_FAILPOINT", failpoints)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let server = Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(res) = client.get(format!("{}/healthz", server.base)).send().await {
                if res.status().is_success() {
                    return server;
                }
            }
            assert!(
                Instant::now() < deadline,
                "server did not come up within 60 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for the process to exit (a failpoint) and returns its exit code.
    pub async fn exit_code(mut self) -> Option<i32> {
        tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("the server should have exited")
            .unwrap()
            .code()
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// A browser-like client: keeps cookies, does not follow redirects (tests look at them).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Logs in through the login server function, as the login form does.
pub async fn login(client: &reqwest::Client, base: &str, email: &str, password: &str) {
    let res = client
        .post(format!("{base}/rpc/login"))
        .header("accept", "text/html")
        .form(&[("email", email), ("password", password)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302, "login should redirect");
    assert_eq!(
        res.headers()["location"],
        "/invoices",
        "login should succeed"
    );
}

/// The create-invoice form's fields, as a browser without JavaScript posts them.
pub fn invoice_form(key: &str, customer: &str) -> Vec<(String, String)> {
    [
        ("idempotency_key", key),
        ("input[customer_name]", customer),
        ("input[customer_email]", "billing@example.com"),
        ("input[currency]", "usd"),
        ("input[due_date]", "2027-01-31"),
        ("input[lines][0][description]", "Consulting"),
        ("input[lines][0][quantity]", "2"),
        ("input[lines][0][unit_amount]", "150.00"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

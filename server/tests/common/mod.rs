//! Process-level test harness: a fresh database per test and the real `server` binary as a child.

#![allow(dead_code)]

pub mod pages;
pub mod rows;
pub mod served;
pub mod team;

use std::path::Path;
use std::process::Stdio;
use std::str::FromStr;
use std::time::{Duration, Instant};

use lab::harness::ServerProcess;
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

    /// A pool on this database after applying the migrations, for tests that seed data before the
    /// server process starts.
    pub async fn migrated_pool(&self) -> PgPool {
        let pool = self.pool().await;
        invoicer_core::MIGRATOR.run(&pool).await.unwrap();
        pool
    }

    /// A new database (see [`TestDb::new`]) with the org `org` made by `server admin create-org`.
    pub async fn with_org(tag: &str, org: &str, email: &str) -> TestDb {
        let db = TestDb::new(tag).await;
        create_org(&db, org, email).await;
        db
    }

    /// Closes `pool` and drops the database.
    pub async fn finish(self, pool: PgPool) {
        pool.close().await;
        self.cleanup().await;
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
        .env("LEPTOS_ENV", "DEV")
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

/// `server admin create-api-key` for the account `email`; the key.
pub async fn api_key(db: &TestDb, email: &str) -> String {
    let printed = cli(db, &["admin", "create-api-key", "--email", email]).await;
    printed.trim().to_owned()
}

/// The real `server` binary on a free loopback port, stderr shown, killed when dropped.
/// `server admin create-org` with the tests' password ("correct horse"); the new org's id.
pub async fn create_org(db: &TestDb, org: &str, email: &str) -> uuid::Uuid {
    let printed = cli(
        db,
        &[
            "admin",
            "create-org",
            "--org",
            org,
            "--email",
            email,
            "--password",
            "correct horse",
        ],
    )
    .await;
    uuid::Uuid::try_parse(printed.trim())
        .unwrap_or_else(|_| panic!("create-org prints the org id, got {printed:?}"))
}

pub struct Server {
    process: ServerProcess,
    pub base: String,
}

pub fn free_port() -> u16 {
    lab::harness::free_port().unwrap()
}

impl Server {
    /// Starts the binary with the given failpoints armed and waits until it is ready.
    pub async fn start(db: &TestDb, failpoints: &str) -> Server {
        Self::start_with(db, failpoints, &[]).await
    }

    /// As [`Server::start`], with more environment (`STRIPE_API_BASE`, ...).
    pub async fn start_with(db: &TestDb, failpoints: &str, more: &[(&str, String)]) -> Server {
        let mut env = vec![
            ("DATABASE_URL", db.url()),
            ("INVOICER_FAILPOINT", failpoints.to_owned()),
            ("RUST_LOG", "warn".to_owned()),
        ];
        env.extend(more.iter().cloned());
        let process = ServerProcess::start(Path::new(SERVER), free_port(), &env, None)
            .await
            .unwrap();
        Server {
            base: process.base.clone(),
            process,
        }
    }

    /// Waits for the process to exit (a failpoint) and returns its exit code.
    pub async fn exit_code(mut self) -> Option<i32> {
        self.process
            .wait_exit(Duration::from_secs(30))
            .await
            .expect("the server should have exited")
    }

    /// The process's peak resident memory so far (VmHWM), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        self.process.peak_rss_kib()
    }

    pub async fn stop(self) {
        let _ = self.process.kill().await;
    }
}

/// A browser-like client: keeps cookies, does not follow redirects (tests look at them).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        // A request that never answers fails the test instead of holding the suite.
        .timeout(Duration::from_secs(60))
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
        "/dashboard",
        "login should succeed"
    );
}

/// Posts the login form with `headers` added; the answer.
pub async fn post_login(
    http: &reqwest::Client,
    base: &str,
    email: &str,
    password: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    // As the login form posts without JavaScript: back to the page it came from on an error.
    let mut req = http
        .post(format!("{base}/rpc/login"))
        .header("accept", "text/html")
        .header("referer", format!("{base}/login"))
        .form(&[("email", email), ("password", password)]);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

/// A new org's owner (password "correct horse"), logged in with `http`; their address.
pub async fn signup_and_login(app: &served::TestApp, http: &reqwest::Client) -> String {
    let (email, _) = rows::new_owner(&app.pool, "Sec Co").await;
    login(http, &app.base, &email, "correct horse").await;
    email
}

pub use lab::harness::invoice_form;

/// The mail gate of a verified member, under the default allowance.
pub fn member_gate() -> invoicer_core::mail::gate::Gate {
    invoicer_core::mail::gate::Gate::new(
        invoicer_core::mail::gate::Allowance::DEFAULT,
        invoicer_core::mail::gate::Sender::Member { verified: true },
    )
}

/// An org (owner `email`) with one open invoice of `total` minor units in `currency`, made with the
/// same domain code the surfaces use, and its checkout session opened; returns (org, invoice).
pub async fn seed_invoice(
    pool: &PgPool,
    email: &str,
    total: i64,
    currency: &str,
) -> (model::OrgId, uuid::Uuid) {
    let org = invoicer_core::accounts::create_org_with_owner(pool, "Acme", email, "correct horse")
        .await
        .unwrap()
        .org_id;
    let input = rows::one_line_input(currency, "2027-01-31", total, false);
    let invoice = rows::insert_invoice(pool, org, &input).await;
    // The session the stand-in's payment events name, as the app would have created it at Stripe.
    invoicer_core::payments::stripe::standin::open_simulated_session(
        pool,
        model::InvoiceId::from(invoice),
    )
    .await
    .unwrap();
    (org, invoice)
}

/// One click of the Send button of `org` rendered with `click`, as the server function makes it.
pub async fn queue_email(
    pool: &PgPool,
    org: model::OrgId,
    click: uuid::Uuid,
    invoice: uuid::Uuid,
) -> Result<invoicer_core::surfaces::form::SendOutcome, model::error::AppError> {
    use invoicer_core::observe::{Attempt, Surface};
    let attempt = Attempt::new(Surface::Form, click.to_string(), None);
    attempt.identify(org.to_string(), Some(org));
    let gate = member_gate();
    invoicer_core::surfaces::form::queue_invoice_email(
        pool,
        &attempt,
        org,
        click,
        model::InvoiceId::from(invoice),
        gate,
    )
    .await
}

/// A real SMTP server (scripts/smtp_sink.py, aiosmtpd) on a free loopback port, storing messages in a
/// temporary folder. `TEST_PYTHON` names a Python with aiosmtpd (scripts/test sets it).
pub struct SmtpSink {
    _child: Child,
    pub port: u16,
    pub dir: std::path::PathBuf,
}

impl SmtpSink {
    pub async fn start(fail_first: u32, fail_always: bool) -> SmtpSink {
        let mut args = vec!["--fail-first".to_owned(), fail_first.to_string()];
        if fail_always {
            args.push("--fail-always".into());
        }
        Self::start_with(&args).await
    }

    /// The sink with `args` (see scripts/smtp_sink.py: `--reject-always`, `--tls-cert`, `--auth` ...).
    pub async fn start_with(args: &[String]) -> SmtpSink {
        use tokio::io::AsyncBufReadExt;
        let dir =
            std::env::temp_dir().join(format!("invoicer-smtp-{}", uuid::Uuid::new_v4().simple()));
        let python = std::env::var("TEST_PYTHON").unwrap_or_else(|_| "python3".into());
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/smtp_sink.py");
        // The free port is found by binding port 0 and letting go of it: a test running beside this
        // one can take it before the sink binds it, so a sink that exits without "ready" gets
        // another port (a few times at most).
        let mut last = None;
        for _ in 0..5 {
            let port = free_port();
            let mut cmd = Command::new(&python);
            cmd.arg(script)
                .arg("--port")
                .arg(port.to_string())
                .arg("--out")
                .arg(&dir)
                .args(args)
                .stdout(Stdio::piped())
                .kill_on_drop(true);
            let mut child = cmd
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start the SMTP sink with {python}: {e}"));
            let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
            let ready = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await;
            if matches!(ready, Ok(Ok(Some(ref l))) if l == "ready") {
                return SmtpSink {
                    _child: child,
                    port,
                    dir,
                };
            }
            last = Some(ready);
        }
        panic!("the SMTP sink did not start ({python} needs aiosmtpd): {last:?}")
    }

    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Accepted messages, oldest first.
    pub fn messages(&self) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(&self.dir)
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        names.retain(|p: &std::path::PathBuf| p.extension().is_some_and(|x| x == "eml"));
        names.sort();
        names
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect()
    }

    /// One line per AUTH attempt: `<mechanism> ok|refused tls=True|False`.
    pub fn auth_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("auth.log")).unwrap_or_default()
    }

    /// When each DATA attempt (accepted or refused) arrived, in seconds.
    pub fn attempt_times(&self) -> Vec<f64> {
        std::fs::read_to_string(self.dir.join("attempts.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    }

    /// Waits until at least `n` messages were accepted.
    pub async fn wait_for(&self, n: usize, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        loop {
            let messages = self.messages();
            if messages.len() >= n {
                return messages;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} messages after {within:?}",
                messages.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Runs the openssl `script` (bash) in a new temporary folder named after `prefix`; the folder.
pub fn openssl(prefix: &str, script: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(&dir)
        .status()
        .expect("openssl is needed for the TLS tests");
    assert!(status.success(), "openssl failed");
    dir
}

/// The Message-ID header of a raw message.
pub fn message_id(raw: &str) -> String {
    raw.lines()
        .find_map(|l| l.strip_prefix("Message-ID: "))
        .unwrap_or_else(|| panic!("no Message-ID in {raw}"))
        .trim()
        .to_owned()
}

/// `server worker` as a child process, delivering to `smtp`, with a lease of `lease_secs` (short where
/// a test waits for a takeover).
pub async fn spawn_worker(
    db: &TestDb,
    smtp: &SmtpSink,
    failpoints: &str,
    workers: u32,
    lease_secs: u32,
) -> Child {
    Command::new(SERVER)
        .arg("worker")
        .env("LEPTOS_ENV", "DEV")
        .env("DATABASE_URL", db.url())
        .env("SMTP_URL", smtp.url())
        .env("WORKERS", workers.to_string())
        .env("WORKER_LEASE_SECS", lease_secs.to_string())
        // The lease must outlast the SMTP timeout: half of it, at most 5 s. The local sink answers
        // at once, but a whole suite on two cores can hold an answer past a short timeout, and an
        // email whose answer came too late is sent again (at least once, by design).
        .env("SMTP_TIMEOUT_MS", (lease_secs * 500).min(5_000).to_string())
        .env("WORKER_POLL_MS", "50")
        .env("INVOICER_FAILPOINT", failpoints)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// Polls `sql` (a single integer) until it equals `want`, or panics after `within`.
pub async fn wait_until(pool: &PgPool, sql: &str, want: i64, within: Duration) {
    poll(sql, want, within, Duration::from_millis(25), || async {
        sqlx::query_scalar::<_, i64>(sql)
            .fetch_one(pool)
            .await
            .unwrap()
    })
    .await;
}

/// Calls `probe` every `every` until it returns `want`, or panics naming `what` after `within`.
pub async fn poll<T, F, Fut>(what: &str, want: T, within: Duration, every: Duration, mut probe: F)
where
    T: PartialEq + std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let deadline = Instant::now() + within;
    loop {
        let got = probe().await;
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {got}, wanted {want} within {within:?}"
        );
        tokio::time::sleep(every).await;
    }
}

/// `text` read by Python's csv module (RFC 4180 as spreadsheets read it): its records.
pub fn python_csv(text: &str) -> Vec<Vec<String>> {
    use std::io::Write;
    let python = std::env::var("TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut child = std::process::Command::new(python)
        .args([
            "-c",
            "import csv, json, sys; print(json.dumps(list(csv.reader(sys.stdin))))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

//! Load for `server bench http` and `server faults`: a server process of this very binary, a seeded
//! org, and the surfaces' requests as their clients send them (signed Stripe events, API posts with
//! an Idempotency-Key, the create form's server function with a session cookie).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::PgPool;
use uuid::Uuid;

/// A `server serve` child process on a loopback port. Killed (SIGKILL) when dropped.
pub struct ServerProcess {
    child: tokio::process::Child,
    pub base: String,
    pub pid: u32,
}

impl ServerProcess {
    /// Starts `serve` with `env` on top of this process's environment and waits until /readyz
    /// answers 200 (or the child exits, or 60 s pass). Its output goes to `log` (appended).
    pub async fn start(port: u16, env: &[(&str, String)], log: &Path) -> anyhow::Result<Self> {
        let mut server = Self::spawn(port, env, log)?;
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = server.child.try_wait()? {
                anyhow::bail!(
                    "the server exited during start-up ({status}); see {}",
                    log.display()
                );
            }
            let ready = http
                .get(format!("{}/readyz", server.base))
                .timeout(Duration::from_secs(1))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ready {
                return Ok(server);
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the server was not ready within 60 s; see {}",
                log.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Starts `serve` without waiting for it to be ready.
    pub fn spawn(port: u16, env: &[(&str, String)], log: &Path) -> anyhow::Result<Self> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("cannot open {}", log.display()))?;
        let mut command = tokio::process::Command::new(std::env::current_exe()?);
        command
            .arg("serve")
            .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
            .env_remove("INVOICER_FAILPOINT")
            .stdout(out.try_clone()?)
            .stderr(out)
            .kill_on_drop(true);
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command.spawn().context("cannot start the server")?;
        let pid = child.id().context("the server has no pid")?;
        Ok(ServerProcess {
            child,
            base: format!("http://127.0.0.1:{port}"),
            pid,
        })
    }

    /// Peak resident set size so far (VmHWM), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    }

    /// Waits up to `timeout` for the process to exit by itself; its exit code (None if killed by a
    /// signal), or Err if it is still running.
    pub async fn wait_exit(&mut self, timeout: Duration) -> anyhow::Result<Option<i32>> {
        let status = tokio::time::timeout(timeout, self.child.wait())
            .await
            .context("the server is still running")??;
        Ok(status.code())
    }

    /// SIGTERM: a graceful stop (requests in flight are answered, workers finish their rows), waited
    /// for up to 30 s.
    pub async fn terminate(mut self) -> anyhow::Result<()> {
        let status = tokio::process::Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .await?;
        anyhow::ensure!(status.success(), "kill -TERM {} failed", self.pid);
        self.wait_exit(Duration::from_secs(30)).await?;
        Ok(())
    }

    /// `kill -9`.
    pub async fn kill(mut self) -> anyhow::Result<()> {
        self.child.kill().await?;
        Ok(())
    }
}

/// An org with an owner who can log in, an API key, and `invoices` open invoices to pay.
pub struct Fixture {
    pub org: Uuid,
    pub user: Uuid,
    pub email: String,
    pub password: String,
    pub api_token: String,
    pub api_key_id: Uuid,
    pub invoices: Vec<Uuid>,
}

/// What every seeded invoice totals: large enough that one-cent payments never settle it.
pub const SEEDED_TOTAL_CENTS: i64 = 100_000_000;

/// Seeds a fresh org. Invoice ids are `md5('bench/' || org || '/' || n)::uuid` for n in 1..=count,
/// so pgbench scripts can name them without a lookup.
pub async fn seed(pool: &PgPool, invoices: usize) -> anyhow::Result<Fixture> {
    let tag = Uuid::new_v4().simple().to_string();
    let email = format!("load-{tag}@example.com");
    let password = "load test password".to_owned();
    let account = app::ssr::accounts::create_org_with_owner(pool, "Load", &email, &password)
        .await
        .context("creating the load org")?;
    let key =
        app::ssr::api_keys::create(pool, account.org_id, Some(account.user_id), "load").await?;
    let count = i32::try_from(invoices).context("too many invoices")?;
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let ids = sqlx::query_scalar!(
        r#"
        insert into invoices (id, org_id, number, customer_name, customer_email, currency, due_date,
                              total_cents)
        select md5('bench/' || $1::uuid || '/' || g)::uuid, $1, g, 'Load', 'load@example.com', 'usd',
               date '2030-01-01', $3
        from generate_series(1, $2::int4) g
        order by g
        returning id
        "#,
        account.org_id,
        count,
        SEEDED_TOTAL_CENTS,
    )
    .fetch_all(&mut *tx)
    .await?;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into invoice_lines (invoice_id, position, description, quantity, unit_amount_cents)
        select id, 1, 'Load', 1, total_cents from invoices where org_id = $1
        "#,
        account.org_id
    )
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    sqlx::query!(
        "insert into invoice_counters (org_id, last_number) values ($1, $2)",
        account.org_id,
        count
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Fixture {
        org: account.org_id,
        user: account.user_id,
        email,
        password,
        api_token: key.plaintext,
        api_key_id: key.id,
        invoices: ids,
    })
}

/// A client of the running server: one connection pool shared by all tasks.
#[derive(Clone)]
pub struct Target {
    http: reqwest::Client,
    pub base: String,
    secret: String,
    api_token: String,
    cookie: Option<String>,
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
        })
    }

    /// Logs in through the login server function and keeps the session cookie for `form_create`.
    pub async fn login(&mut self, email: &str, password: &str) -> anyhow::Result<()> {
        let res = self
            .http
            .post(format!("{}/rpc/login", self.base))
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
        self.cookie = Some(cookie.to_owned());
        Ok(())
    }

    /// The session id this client's cookie carries (tower-sessions stores it under the same id).
    pub fn session_id(&self) -> Option<&str> {
        self.cookie.as_deref()?.strip_prefix("invoicer_session=")
    }

    /// Signs `payload` now and delivers it, as Stripe does; the status.
    pub async fn webhook(&self, payload: &str) -> reqwest::Result<u16> {
        let signature = app::ssr::stripe::signature::header(
            &self.secret,
            chrono::Utc::now().timestamp(),
            payload.as_bytes(),
        );
        let res = self
            .http
            .post(format!("{}/webhooks/stripe", self.base))
            .header("content-type", "application/json")
            .header("stripe-signature", signature)
            .body(payload.to_owned())
            .send()
            .await?;
        let status = res.status().as_u16();
        res.bytes().await?;
        Ok(status)
    }

    /// `POST /api/v1/invoices` with this Idempotency-Key; the status and body.
    pub async fn api_create(&self, key: &str, body: &[u8]) -> reqwest::Result<(u16, Vec<u8>)> {
        let res = self
            .http
            .post(format!("{}/api/v1/invoices", self.base))
            .bearer_auth(&self.api_token)
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(body.to_vec())
            .send()
            .await?;
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
        let fields = [
            ("idempotency_key", key.as_str()),
            ("input[customer_name]", "Load Client"),
            ("input[customer_email]", "billing@example.com"),
            ("input[currency]", "usd"),
            ("input[due_date]", "2030-01-31"),
            ("input[lines][0][description]", "Consulting"),
            ("input[lines][0][quantity]", "2"),
            ("input[lines][0][unit_amount]", "150.00"),
        ];
        let mut req = self
            .http
            .post(format!("{}/rpc/create_invoice", self.base))
            .form(&fields);
        if let Some(cookie) = &self.cookie {
            req = req.header("cookie", cookie);
        }
        let res = req.send().await?;
        let status = res.status().as_u16();
        let body = res.bytes().await?;
        Ok((status, serde_json::from_slice(&body).ok()))
    }
}

/// A free loopback port.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

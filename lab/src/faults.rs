//! `lab faults`: tries to break the guarantees. Under steady mixed load (signed Stripe events,
//! some delivered twice; API posts with Idempotency-Keys; form submissions) it crashes the server at
//! each failpoint, kills it with SIGKILL at a random moment, and stops Postgres with
//! `pg_ctl stop -m immediate`, restarting each time; then it drains every retry and checks, like a
//! queue checker, that every acknowledged attempt took effect exactly once and every email left.
//!
//! Clients behave as the real ones do: an attempt is retried with the same key until it gets a
//! definitive answer. Everything runs on loopback, and every loop is bounded in count and time.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::PgPool;
use uuid::Uuid;

use lab::harness::{self, Fixture, ServerProcess, Target};

use crate::Lab;

#[derive(clap::Args, Debug)]
pub struct FaultArgs {
    /// Seconds of load in each phase (before a crash is armed, and between faults).
    #[arg(long, default_value_t = 5)]
    pub phase_secs: u64,
    /// Concurrent clients.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Shell command that stops Postgres at once (e.g. `pg_ctl -D DIR stop -m immediate`).
    #[arg(long)]
    pub pg_stop: String,
    /// Shell command that starts it again.
    #[arg(long)]
    pub pg_start: String,
    /// The SMTP server the workers send to.
    #[arg(long)]
    pub smtp_url: String,
    /// The SMTP sink's folder: one .eml file per accepted message.
    #[arg(long)]
    pub sink_dir: PathBuf,
    /// Rounds of the whole fault sequence.
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// Where the server logs go (a fresh temporary folder if unset).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

/// The failpoints, in the order they are visited: after claim before commit, after commit before
/// the response, and in the worker between the SMTP send and marking the row sent.
const FAILPOINTS: [&str; 6] = [
    "webhook.after_claim",
    "webhook.after_commit",
    "api.after_claim",
    "api.after_commit",
    "form.after_claim",
    "worker.after_send",
];

const WEBHOOK_SECRET: &str = "whsec_faults_invoicer";

/// One logical attempt, as its client saw it.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// A Stripe event (a one-cent payment through its own payment intent), how often it was
    /// delivered and how often acknowledged.
    Event {
        id: String,
        payment_intent: String,
        deliveries: u32,
        acks: u32,
    },
    /// An API create, how often it was sent to an answer, and the invoice ids in its 201 answers.
    Api {
        key: String,
        sent: u32,
        invoices: Vec<Uuid>,
    },
    /// A form submission, how often it was submitted to an answer, and the invoice ids it was
    /// answered with.
    Form {
        key: Uuid,
        sent: u32,
        invoices: Vec<Uuid>,
    },
}

#[derive(Default)]
pub(crate) struct Ledger {
    pub(crate) ops: Mutex<Vec<Op>>,
    pub(crate) requests: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) refused: Mutex<Vec<String>>,
}

pub async fn run(lab: &Lab, args: FaultArgs) -> anyhow::Result<()> {
    let work = match &args.work_dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("invoicer-faults-{}", std::process::id())),
    };
    std::fs::create_dir_all(&work)?;
    let log = work.join("server.log");
    let mut pool = lab.connect().await?;
    let fixture = Arc::new(harness::seed(&pool, 50).await?);
    let port = harness::free_port()?;
    let env = vec![
        ("STRIPE_WEBHOOK_SECRET", WEBHOOK_SECRET.to_owned()),
        ("SMTP_URL", args.smtp_url.clone()),
        // One worker per process: a process crash is at most one worker crash between send and mark.
        ("WORKERS", "1".into()),
        ("WORKER_LEASE_SECS", "2".into()),
        // The local sink answers at once; the lease must outlast the SMTP timeout.
        ("SMTP_TIMEOUT_MS", "1000".into()),
        ("WORKER_POLL_MS", "200".into()),
        ("WORKER_BACKOFF_BASE_MS", "100".into()),
        ("DATABASE_POOL_SIZE", "8".into()),
    ];
    let started = Instant::now();
    let mut server = ServerProcess::start(&lab.server, port, &env, Some(&log)).await?;
    let mut target = Target::new(&server.base, WEBHOOK_SECRET, &fixture)?;
    target.login(&fixture.email, &fixture.password).await?;

    let ledger = Arc::new(Ledger::default());
    let stop_new = Arc::new(AtomicBool::new(false));
    let drain_deadline = Arc::new(Mutex::new(None::<Instant>));
    let tag = Uuid::new_v4().simple().to_string()[..8].to_owned();
    let clients: Vec<_> = (0..args.clients)
        .map(|c| {
            tokio::spawn(client(
                c,
                tag.clone(),
                target.clone(),
                fixture.clone(),
                ledger.clone(),
                stop_new.clone(),
                drain_deadline.clone(),
            ))
        })
        .collect();

    let phase = Duration::from_secs(args.phase_secs);
    let mut crashes: BTreeMap<String, u32> = BTreeMap::new();
    let mut faults = Vec::new();
    for round in 0..args.rounds {
        for failpoint in FAILPOINTS {
            tokio::time::sleep(phase).await;
            // Replace the healthy server (gracefully: that is no crash) by one armed to die at this
            // point, and let the load reach it.
            server.terminate().await?;
            let mut armed = env.clone();
            armed.push(("INVOICER_FAILPOINT", failpoint.to_owned()));
            // It may die before it is even ready (the worker can reach its point at once).
            server = ServerProcess::spawn(&lab.server, port, &armed, Some(&log))?;
            let code = server
                .wait_exit(Duration::from_secs(30))
                .await
                .with_context(|| format!("round {round}: nothing reached {failpoint} in 30 s"))?;
            anyhow::ensure!(
                code == Some(70),
                "the server armed at {failpoint} exited with {code:?}, not 70"
            );
            *crashes.entry(failpoint.to_owned()).or_default() += 1;
            faults.push(format!("crash at {failpoint}"));
            server = ServerProcess::start(&lab.server, port, &env, Some(&log)).await?;
        }
        // kill -9 at a moment nobody chose.
        tokio::time::sleep(phase + Duration::from_millis(rand_ms(1000))).await;
        server.kill().await?;
        *crashes.entry("SIGKILL".into()).or_default() += 1;
        faults.push("kill -9".to_owned());
        server = ServerProcess::start(&lab.server, port, &env, Some(&log)).await?;

        // Postgres dies under load and comes back; the server must recover without a restart.
        tokio::time::sleep(phase).await;
        shell(&args.pg_stop).await.context("stopping Postgres")?;
        faults.push("pg_ctl stop -m immediate".to_owned());
        tokio::time::sleep(Duration::from_secs(1)).await;
        shell(&args.pg_start).await.context("starting Postgres")?;
        wait_ready(&server.base, Duration::from_secs(60))
            .await
            .context("the server did not recover after Postgres came back")?;
        // Our own connections died with it too (the pool does not ping before use).
        pool.close().await;
        pool = lab.connect().await?;
    }
    tokio::time::sleep(phase).await;

    // Drain: no new attempts; every open one is retried until answered (60 s at most).
    stop_new.store(true, Ordering::SeqCst);
    *drain_deadline.lock().unwrap() = Some(Instant::now() + Duration::from_secs(60));
    let mut unanswered = 0;
    for c in clients {
        unanswered += c.await.context("a load client panicked")?;
    }
    // The outbox drains too: every email row sent. One worker sends the backlog the load left; the
    // wait ends when it is empty, when it made no progress for 30 s, or after 10 minutes (then the
    // check reports what is unsent).
    outbox_drained(
        &pool,
        fixture.org,
        Duration::from_secs(600),
        Duration::from_secs(30),
    )
    .await?;
    server.terminate().await?;

    let report = check(&pool, &fixture, &ledger, &args.sink_dir, unanswered).await?;
    let worker_crashes: u32 = crashes.values().sum();
    println!(
        "invoicer faults: {} clients, {} s phases, {} round(s), {:.0} s in all",
        args.clients,
        args.phase_secs,
        args.rounds,
        started.elapsed().as_secs_f64()
    );
    println!("faults injected: {}", faults.join(", "));
    for (name, n) in &crashes {
        println!("  crashes {name:<22} {n}");
    }
    println!(
        "requests {}  retries {}  refused {}",
        ledger.requests.load(Ordering::Relaxed),
        ledger.retries.load(Ordering::Relaxed),
        ledger.refused.lock().unwrap().len()
    );
    report.print(worker_crashes);
    pool.close().await;
    let problems = report.problems(worker_crashes);
    let refused = ledger.refused.lock().unwrap().clone();
    anyhow::ensure!(
        problems.is_empty() && refused.is_empty(),
        "guarantees broken: {}{}",
        problems.join("; "),
        refused
            .first()
            .map(|r| format!("; refused: {r}"))
            .unwrap_or_default()
    );
    println!("OK: lost 0, duplicated 0, duplicate emails within the bound");
    Ok(())
}

pub(crate) fn rand_ms(max: u64) -> u64 {
    u64::from(Uuid::new_v4().as_u128() as u32) % max
}

pub(crate) async fn shell(command: &str) -> anyhow::Result<()> {
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .status()
        .await?;
    anyhow::ensure!(status.success(), "`{command}` failed: {status}");
    Ok(())
}

pub(crate) async fn wait_ready(base: &str, within: Duration) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let ok = http
            .get(format!("{base}/readyz"))
            .timeout(Duration::from_secs(1))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ok {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("not ready within {within:?}")
}

/// Waits until `org`'s outbox has no unsent row, it made no progress for `idle`, or `within` passed
/// (then the check reports what is unsent).
pub(crate) async fn outbox_drained(
    pool: &PgPool,
    org: Uuid,
    within: Duration,
    idle: Duration,
) -> sqlx::Result<()> {
    let deadline = Instant::now() + within;
    let (mut left, mut progressed) = (i64::MAX, Instant::now());
    while Instant::now() < deadline && progressed.elapsed() < idle {
        let now_left = unsent(pool, org).await?;
        if now_left == 0 {
            break;
        }
        if now_left < left {
            (left, progressed) = (now_left, Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

async fn unsent(pool: &PgPool, org: Uuid) -> sqlx::Result<i64> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"select count(*) as "n!" from outbox where org_id = $1 and sent_at is null and dead_at is null"#,
        org
    )
    .fetch_one(pool)
    .await
}

/// What a request's answer means to a client that must not lose its attempt.
enum Answer<T> {
    Done(T),
    /// Connection refused or cut, 409, 5xx: the same attempt again, shortly.
    Retry,
    /// A 4xx that will not change: the harness reports it (valid requests are never refused).
    Refused(String),
}

/// One load client: makes attempts one after another (event, event, API, form), each retried with
/// its key until answered; every third event is delivered once more after its acknowledgement, as
/// Stripe does, and every third API and form key is sent again after its answer. Returns how many attempts were still unanswered at the drain deadline.
pub(crate) async fn client(
    c: usize,
    tag: String,
    target: Target,
    fixture: Arc<Fixture>,
    ledger: Arc<Ledger>,
    stop_new: Arc<AtomicBool>,
    drain_deadline: Arc<Mutex<Option<Instant>>>,
) -> usize {
    let body = harness::api_body();
    let mut i: usize = 0;
    while !stop_new.load(Ordering::SeqCst) {
        let id = format!("{tag}_{c}_{i}");
        let op = match i % 4 {
            0 | 1 => {
                let invoice = fixture.invoices[(c * 7 + i) % fixture.invoices.len()];
                let (event, payment_intent) = (format!("evt_f_{id}"), format!("pi_f_{id}"));
                let payload = app::ssr::stripe::standin::checkout_event(
                    &event,
                    &payment_intent,
                    invoice,
                    1,
                    "usd",
                );
                let deliveries = if i.is_multiple_of(3) { 2 } else { 1 };
                let mut acks = 0;
                for _ in 0..deliveries {
                    let answered = until_answered(&ledger, &drain_deadline, || async {
                        match target.webhook(&payload).await {
                            Ok(200) => Answer::Done(()),
                            Ok(s) if s == 409 || s >= 500 => Answer::Retry,
                            Ok(s) => Answer::Refused(format!("event {event}: {s}")),
                            Err(_) => Answer::Retry,
                        }
                    })
                    .await;
                    if answered.is_some() {
                        acks += 1;
                    }
                }
                Op::Event {
                    id: event,
                    payment_intent,
                    deliveries,
                    acks,
                }
            }
            2 => {
                let key = format!("faults-{id}");
                let mut invoices = Vec::new();
                for _ in 0..sends(i) {
                    let invoice = until_answered(&ledger, &drain_deadline, || async {
                        match target.api_create(&key, &body).await {
                            Ok((201, bytes)) => match invoice_id_of(&bytes) {
                                Some(id) => Answer::Done(id),
                                None => Answer::Refused(format!("api {key}: 201 without an id")),
                            },
                            Ok((s, _)) if s == 409 || s >= 500 => Answer::Retry,
                            Ok((s, bytes)) => Answer::Refused(format!(
                                "api {key}: {s} {}",
                                String::from_utf8_lossy(&bytes)
                            )),
                            Err(_) => Answer::Retry,
                        }
                    })
                    .await;
                    invoices.extend(invoice);
                }
                let sent = sends(i);
                Op::Api {
                    key,
                    sent,
                    invoices,
                }
            }
            _ => {
                let key = Uuid::now_v7();
                let mut invoices = Vec::new();
                for _ in 0..sends(i) {
                    let invoice = until_answered(&ledger, &drain_deadline, || async {
                        match target.form_create_id(key).await {
                            Ok((200, Some(id))) => Answer::Done(id),
                            Ok((s, _)) if s >= 500 => Answer::Retry,
                            Ok((s, _)) => Answer::Refused(format!("form {key}: {s}")),
                            Err(_) => Answer::Retry,
                        }
                    })
                    .await;
                    invoices.extend(invoice);
                }
                Op::Form {
                    key,
                    sent: sends(i),
                    invoices,
                }
            }
        };
        // A redelivery still unanswered at the deadline counts as much as a first delivery.
        let unanswered = match &op {
            Op::Event {
                deliveries, acks, ..
            } => acks < deliveries,
            Op::Api { sent, invoices, .. } | Op::Form { sent, invoices, .. } => {
                invoices.len() < *sent as usize
            }
        };
        ledger.ops.lock().unwrap().push(op);
        if unanswered {
            // Only at the drain deadline does a client give up; the check counts it.
            return 1;
        }
        i += 1;
    }
    0
}

/// Every third API key and form key is sent once more after its answer (a client retrying after a
/// lost response), so a replay that named another invoice would be caught.
fn sends(i: usize) -> u32 {
    if (i / 4).is_multiple_of(3) {
        2
    } else {
        1
    }
}

/// Sends until the answer is definitive, or the drain deadline passes (None then).
async fn until_answered<T, F, Fut>(
    ledger: &Ledger,
    drain_deadline: &Mutex<Option<Instant>>,
    mut send: F,
) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Answer<T>>,
{
    let mut first = true;
    loop {
        ledger.requests.fetch_add(1, Ordering::Relaxed);
        if !first {
            ledger.retries.fetch_add(1, Ordering::Relaxed);
        }
        first = false;
        match send().await {
            Answer::Done(v) => return Some(v),
            Answer::Refused(why) => {
                ledger.refused.lock().unwrap().push(why);
                return None;
            }
            Answer::Retry => {}
        }
        if drain_deadline
            .lock()
            .unwrap()
            .is_some_and(|d| Instant::now() > d)
        {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) fn invoice_id_of(body: &[u8]) -> Option<Uuid> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    Uuid::try_parse(v.get("id")?.as_str()?).ok()
}

#[derive(Debug, Default)]
pub(crate) struct Report {
    events_acked: usize,
    events_applied_once: usize,
    events_lost: usize,
    payments_duplicated: usize,
    invoices_overpaid: usize,
    api_acked: usize,
    api_one_invoice: usize,
    api_lost_or_duplicated: usize,
    api_answers_differ: usize,
    form_acked: usize,
    form_one_invoice: usize,
    form_lost_or_duplicated: usize,
    form_answers_differ: usize,
    orphan_invoices: i64,
    unanswered: usize,
    emails_expected: i64,
    emails_unsent: i64,
    emails_lost: usize,
    emails_duplicated: usize,
}

impl Report {
    pub(crate) fn print(&self, worker_crashes: u32) {
        println!("{:<44} {:>8}", "check", "count");
        let rows: [(&str, String); 18] = [
            ("events acknowledged (2xx)", self.events_acked.to_string()),
            (
                "  applied exactly once",
                self.events_applied_once.to_string(),
            ),
            (
                "  lost (acknowledged, not applied)",
                self.events_lost.to_string(),
            ),
            (
                "  payments duplicated",
                self.payments_duplicated.to_string(),
            ),
            (
                "  invoices whose paid amount != payments",
                self.invoices_overpaid.to_string(),
            ),
            ("API keys answered 201", self.api_acked.to_string()),
            (
                "  with exactly one invoice",
                self.api_one_invoice.to_string(),
            ),
            (
                "  lost or duplicated",
                self.api_lost_or_duplicated.to_string(),
            ),
            (
                "  answered with different invoices",
                self.api_answers_differ.to_string(),
            ),
            ("form keys answered", self.form_acked.to_string()),
            (
                "  with exactly one invoice",
                self.form_one_invoice.to_string(),
            ),
            (
                "  lost or duplicated",
                self.form_lost_or_duplicated.to_string(),
            ),
            (
                "  answered with different invoices",
                self.form_answers_differ.to_string(),
            ),
            (
                "invoices nobody was answered for",
                self.orphan_invoices.to_string(),
            ),
            (
                "attempts unanswered after the drain",
                self.unanswered.to_string(),
            ),
            (
                "receipt emails owed / unsent",
                format!("{} / {}", self.emails_expected, self.emails_unsent),
            ),
            ("  sent but never arrived", self.emails_lost.to_string()),
            (
                "  duplicate arrivals (bound: crashes)",
                format!("{} <= {worker_crashes}", self.emails_duplicated),
            ),
        ];
        for (name, value) in rows {
            println!("{name:<44} {value:>8}");
        }
    }

    pub(crate) fn problems(&self, worker_crashes: u32) -> Vec<String> {
        let mut p = Vec::new();
        let mut require = |ok: bool, what: String| {
            if !ok {
                p.push(what)
            }
        };
        // A run that acknowledged nothing of a kind proved nothing about it.
        require(
            self.events_acked > 0 && self.api_acked > 0 && self.form_acked > 0,
            format!(
                "acknowledged: {} events, {} API creates, {} forms (each kind must be above 0)",
                self.events_acked, self.api_acked, self.form_acked
            ),
        );
        require(
            self.events_lost == 0,
            format!("{} events lost", self.events_lost),
        );
        require(
            self.events_applied_once == self.events_acked,
            format!(
                "{} of {} events applied once",
                self.events_applied_once, self.events_acked
            ),
        );
        require(
            self.payments_duplicated == 0,
            format!("{} payments duplicated", self.payments_duplicated),
        );
        require(
            self.invoices_overpaid == 0,
            format!("{} invoices paid twice", self.invoices_overpaid),
        );
        require(
            self.api_lost_or_duplicated == 0 && self.api_answers_differ == 0,
            format!(
                "API: {} lost/duplicated, {} differing answers",
                self.api_lost_or_duplicated, self.api_answers_differ
            ),
        );
        require(
            self.form_lost_or_duplicated == 0 && self.form_answers_differ == 0,
            format!(
                "form: {} lost/duplicated, {} differing answers",
                self.form_lost_or_duplicated, self.form_answers_differ
            ),
        );
        require(
            self.orphan_invoices == 0,
            format!("{} invoices nobody asked for", self.orphan_invoices),
        );
        require(
            self.unanswered == 0,
            format!("{} attempts never answered", self.unanswered),
        );
        require(
            self.emails_unsent == 0,
            format!("{} emails never sent", self.emails_unsent),
        );
        require(
            self.emails_lost == 0,
            format!("{} emails marked sent never arrived", self.emails_lost),
        );
        require(
            self.emails_duplicated <= worker_crashes as usize,
            format!(
                "{} duplicate emails > {worker_crashes} crashes",
                self.emails_duplicated
            ),
        );
        p
    }
}

pub(crate) async fn check(
    pool: &PgPool,
    fixture: &Fixture,
    ledger: &Ledger,
    sink: &Path,
    unanswered: usize,
) -> anyhow::Result<Report> {
    let ops = ledger.ops.lock().unwrap().clone();
    let mut r = Report {
        unanswered,
        ..Report::default()
    };
    let org = fixture.org;

    // Events: each acknowledged one has its stored event and exactly one payment made by it.
    // language=PostgreSQL
    let payments: HashMap<String, (i64, Option<String>)> = sqlx::query!(
        r#"
        select p.provider_payment_id, count(*) as "n!", min(p.event_id) as event_id
        from payments p where p.org_id = $1 group by p.provider_payment_id
        "#,
        org
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|row| (row.provider_payment_id, (row.n, row.event_id)))
    .collect();
    // language=PostgreSQL
    let stored: HashMap<String, i64> = sqlx::query!(
        r#"select id, count(*) as "n!" from stripe_events where org_id = $1 group by id"#,
        org
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|row| (row.id, row.n))
    .collect();
    for op in &ops {
        if let Op::Event {
            id,
            payment_intent,
            acks,
            ..
        } = op
        {
            if *acks == 0 {
                continue;
            }
            r.events_acked += 1;
            match (payments.get(payment_intent), stored.get(id)) {
                (Some((1, Some(by))), Some(1)) if by == id => r.events_applied_once += 1,
                (None, _) | (_, None) => r.events_lost += 1,
                _ => r.payments_duplicated += 1,
            }
        }
    }
    r.payments_duplicated += payments.values().filter(|(n, _)| *n > 1).count();
    // Every invoice's paid amount is the sum of its payments: nothing was applied twice.
    // language=PostgreSQL
    r.invoices_overpaid = sqlx::query_scalar!(
        r#"
        select count(*) as "n!" from invoices i
        where i.org_id = $1
          and i.amount_paid_cents <> coalesce((select sum(amount_cents) from payments p where p.invoice_id = i.id), 0)
        "#,
        org
    )
    .fetch_one(pool)
    .await? as usize;

    // API keys and form keys: exactly one invoice each, the one every answer named.
    // language=PostgreSQL
    let invoices: HashMap<Uuid, Option<String>> = sqlx::query!(
        "select id, source_key from invoices where org_id = $1 and number > $2",
        org,
        fixture.invoices.len() as i32
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|row| (row.id, row.source_key))
    .collect();
    // The key -> invoice map the API claims hold.
    // language=PostgreSQL
    let api_claims: HashMap<String, Option<Uuid>> = sqlx::query!(
        "select key, result_id from claims where scope = 'api' and owner = $1",
        fixture.api_key_id.to_string()
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|row| (row.key, row.result_id))
    .collect();
    let mut answered_for = std::collections::HashSet::new();
    for op in &ops {
        match op {
            Op::Api {
                key, invoices: ids, ..
            } if !ids.is_empty() => {
                r.api_acked += 1;
                if ids.iter().any(|id| *id != ids[0]) {
                    r.api_answers_differ += 1;
                }
                let claimed = api_claims.get(key).copied().flatten();
                if claimed == Some(ids[0])
                    && invoices.contains_key(&ids[0])
                    && answered_for.insert(ids[0])
                {
                    r.api_one_invoice += 1;
                } else {
                    r.api_lost_or_duplicated += 1;
                }
            }
            Op::Form {
                key, invoices: ids, ..
            } if !ids.is_empty() => {
                r.form_acked += 1;
                if ids.iter().any(|id| *id != ids[0]) {
                    r.form_answers_differ += 1;
                }
                let by_key: Vec<_> = invoices
                    .iter()
                    .filter(|(_, source)| source.as_deref() == Some(&format!("form:{key}")))
                    .map(|(id, _)| *id)
                    .collect();
                if by_key == [ids[0]] && answered_for.insert(ids[0]) {
                    r.form_one_invoice += 1;
                } else {
                    r.form_lost_or_duplicated += 1;
                }
            }
            _ => {}
        }
    }
    r.orphan_invoices = invoices.len() as i64 - answered_for.len() as i64;

    // Emails: one receipt per payment, every one sent, every sent one arrived, duplicates counted.
    // language=PostgreSQL
    let outbox = sqlx::query!(
        r#"select id, sent_at is not null as "sent!" from outbox where org_id = $1 and kind = 'payment_receipt'"#,
        org
    )
    .fetch_all(pool)
    .await?;
    r.emails_expected = outbox.len() as i64;
    r.emails_unsent = outbox.iter().filter(|row| !row.sent).count() as i64;
    if r.emails_expected != payments.len() as i64 {
        r.emails_unsent += (payments.len() as i64 - r.emails_expected).abs();
    }
    let arrivals = arrivals_by_message_id(sink)?;
    for row in outbox.iter().filter(|row| row.sent) {
        match arrivals.get(&row.id) {
            None => r.emails_lost += 1,
            Some(n) => r.emails_duplicated += *n as usize - 1,
        }
    }
    Ok(r)
}

/// Message-ID `<uuid@invoicer>` → how many times it arrived at the SMTP sink.
fn arrivals_by_message_id(sink: &Path) -> anyhow::Result<HashMap<Uuid, u32>> {
    let mut counts = HashMap::new();
    for entry in std::fs::read_dir(sink).with_context(|| format!("reading {}", sink.display()))? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "eml") {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        let id = text
            .lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| {
                l.strip_prefix("Message-ID:")
                    .or_else(|| l.strip_prefix("Message-Id:"))
            })
            .and_then(|v| v.trim().trim_start_matches('<').split('@').next())
            .and_then(|v| Uuid::try_parse(v).ok());
        if let Some(id) = id {
            *counts.entry(id).or_default() += 1;
        }
    }
    Ok(counts)
}

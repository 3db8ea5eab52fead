//! `lab faults`: tries to break the guarantees. Under steady mixed load (signed Stripe events,
//! some delivered twice; API posts with Idempotency-Keys; form submissions) it crashes the server at
//! each failpoint, kills it with SIGKILL at a random moment, and stops Postgres with
//! `pg_ctl stop -m immediate`, restarting each time; then it drains every retry and checks, like a
//! queue checker, that every acknowledged attempt took effect exactly once and every email left.
//!
//! Clients behave as the real ones do: an attempt is retried with the same key until it gets a
//! definitive answer. Everything runs on loopback, and every loop is bounded in count and time.

mod charges;
mod check;
mod load;
mod peppol;
mod process;
pub(crate) mod report;
pub(crate) mod schedules;
pub(crate) mod webhooks;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

use lab::harness::{self, ServerProcess, Target};

use crate::Lab;

pub(crate) use check::{check, outbox_drained};
pub(crate) use load::{invoice_id_of, Ledger, Load, Op};
pub(crate) use process::{rand_ms, shell, wait_ready};
pub(crate) use report::verdict;

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
    /// Weekly schedules that fall due during the run (the schedules phase).
    #[arg(long, default_value_t = 200)]
    pub schedules: usize,
    /// Rounds of the whole fault sequence.
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// Where the server logs go (a fresh temporary folder if unset).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    #[command(flatten)]
    pub receiver: webhooks::Receiver,
}

/// The failpoints, in the order they are visited: after claim before commit, after commit before
/// the response, in the worker between the SMTP send and marking the row sent, between Stripe's
/// answer to a charge and recording it, and between the access point taking a Peppol document and
/// recording it sent.
const FAILPOINTS: [&str; 8] = [
    "webhook.after_claim",
    "webhook.after_commit",
    "api.after_claim",
    "api.after_commit",
    "form.after_claim",
    "worker.after_send",
    "charge.after_stripe",
    "peppol.after_submit",
];

const WEBHOOK_SECRET: &str = "whsec_faults_invoicer";

pub async fn run(lab: &Lab, args: FaultArgs) -> anyhow::Result<()> {
    let work = crate::work_dir(args.work_dir.as_deref(), "faults")?;
    let log = work.join("server.log");
    let mut pool = lab.connect().await?;
    let fixture = Arc::new(harness::seed(&pool, 50).await?);
    let port = harness::free_port()?;
    // The charges phase's Stripe: its events reach whichever server is up on the port.
    let stripe = charges::stripe(WEBHOOK_SECRET).await?;
    stripe.send_events_to(&format!("http://127.0.0.1:{port}/webhooks/stripe"));
    // The Peppol phase's access point, failing a share of the submissions.
    let access_point = peppol::access_point().await?;
    let env = vec![
        ("PEPPOL_AP_URL", access_point.base.clone()),
        (
            "PEPPOL_AP_TOKEN",
            invoicer_core::peppol::LOCAL_ACCESS_POINT_TOKEN.to_owned(),
        ),
        ("STRIPE_WEBHOOK_SECRET", WEBHOOK_SECRET.to_owned()),
        ("STRIPE_API_BASE", stripe.base.clone()),
        ("STRIPE_SECRET_KEY", "sk_test_local".to_owned()),
        ("SMTP_URL", args.smtp_url.clone()),
        // One worker per process: a process crash is at most one worker crash between send and mark.
        ("WORKERS", "1".into()),
        ("WORKER_LEASE_SECS", "2".into()),
        // The local sink answers at once; the lease must outlast the SMTP timeout.
        ("SMTP_TIMEOUT_MS", "1000".into()),
        ("WORKER_POLL_MS", "200".into()),
        ("WORKER_BACKOFF_BASE_MS", "100".into()),
        ("DATABASE_POOL_SIZE", "8".into()),
        // Reminders and scheduled sends wait beyond the org's and the recipient's hourly
        // allowance; the run sends far more than a day's, to a few customers.
        ("EMAILS_PER_ORG_HOUR", "1000000".into()),
        ("EMAILS_PER_RECIPIENT_HOUR", "1000000".into()),
        // The webhook receiver listens on loopback.
        ("WEBHOOKS_ALLOW_PRIVATE", "true".into()),
    ];
    let endpoint = args.receiver.register(&pool, fixture.org).await?;
    // The schedules phase: weekly schedules and reminder steps; the clock starts at noon (the
    // reminders' hour) and runs two days ahead each phase.
    schedules::seed(&pool, fixture.org, args.schedules, 0, true).await?;
    let noon = (12 - i64::from(chrono::Timelike::hour(&chrono::Utc::now())) + 24) % 24;
    schedules::advance(&pool, noon * 3600).await?;
    let started = Instant::now();
    let mut server = ServerProcess::start(&lab.server, port, &env, Some(&log)).await?;
    let mut target = Target::new(&server.base, WEBHOOK_SECRET, &fixture)?;
    target.login(&fixture.email, &fixture.password).await?;

    let mut load = Load::start(args.clients, &target, &fixture);
    // Customers with saved methods, and invoices collected automatically all through the run.
    let customers = charges::seed(&pool, &server.base, &fixture.api_token, &stripe).await?;
    let (stop_charging, charging) = tokio::sync::watch::channel(false);
    let charging = charges::run(&server.base, &fixture.api_token, customers, charging);
    // Invoices for a buyer by Peppol, sent through the access point all through the run.
    let by_peppol = peppol::seed(&pool, fixture.org, &server.base, &fixture.api_token).await?;
    let (stop_sending, sending) = tokio::sync::watch::channel(false);
    let sending = peppol::run(&server.base, &fixture.api_token, by_peppol, sending);

    let phase = Duration::from_secs(args.phase_secs);
    let mut crashes: BTreeMap<String, u32> = BTreeMap::new();
    let mut faults = Vec::new();
    for round in 0..args.rounds {
        for failpoint in FAILPOINTS {
            tokio::time::sleep(phase).await;
            schedules::advance(&pool, schedules::STEP_SECS).await?;
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
        schedules::advance(&pool, schedules::STEP_SECS).await?;
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

    // Drain: every open attempt is retried until answered (60 s at most).
    let unanswered = load.drain(Duration::from_secs(60)).await?;
    stop_charging.send(true)?;
    let charged_invoices = charging.await??;
    stop_sending.send(true)?;
    let sent_invoices = sending.await??;
    // The clock stops: the workers catch up with every period and reminder it made due.
    let behind = schedules::settle(&pool, fixture.org, Duration::from_secs(180)).await?;
    // The outbox drains too: every email row sent. One worker sends the backlog the load left (the
    // webhooks one at a time to the one endpoint, in order: minutes of them after a full run); the
    // wait ends when it is empty, when no row was sent and no attempt made for 30 s (stuck: the
    // check reports what is unsent), or after half an hour.
    outbox_drained(
        &pool,
        fixture.org,
        Duration::from_secs(1800),
        Duration::from_secs(30),
    )
    .await?;
    let charged =
        charges::check(&pool, &stripe, &charged_invoices, Duration::from_secs(120)).await?;
    let sent = peppol::check(
        &pool,
        &access_point,
        &sent_invoices,
        Duration::from_secs(120),
    )
    .await?;
    server.terminate().await?;

    let report = check(&pool, &fixture, &load.ledger, &args.sink_dir, unanswered).await?;
    let scheduled = schedules::check(&pool, fixture.org, &args.sink_dir, behind).await?;
    // Each crash can leave a worker's emails in hand sent and not marked: each is sent again.
    let worker_crashes: u32 = crashes.values().sum::<u32>() * report::in_hand();
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
        "schedules: {} weekly, {} periods due by the clock, {} invoices, missing {}, doubled {}; \
         reminders {}, doubled {}, missing {}, not received {}; left behind at the end {behind:?}",
        args.schedules,
        scheduled.periods_due,
        scheduled.invoices,
        scheduled.missing,
        scheduled.doubled,
        scheduled.reminders,
        scheduled.doubled_reminders,
        scheduled.missing_reminders,
        scheduled.unsent_reminders,
    );
    println!(
        "charges: {} invoices collected automatically, {} payment intents, charged twice {}, \
         paid twice {}, never charged {}, unpaid {}",
        charged.invoices,
        charged.intents,
        charged.charged_twice,
        charged.paid_twice,
        charged.not_charged,
        charged.unpaid,
    );
    println!(
        "peppol: {} invoices to a buyer by Peppol, {} transmitted, {} submissions ({} failed by the \
         access point, {} repeats of a taken instance id absorbed), transmitted twice {}, lost {}",
        sent.invoices,
        sent.transmitted,
        sent.calls,
        sent.failed_calls,
        sent.repeats,
        sent.transmitted_twice,
        sent.lost,
    );
    args.receiver
        .check(&pool, fixture.org, endpoint.as_ref())
        .await?;
    anyhow::ensure!(
        sent.ok(),
        "the Peppol phase transmitted twice or lost a document: {sent:?}"
    );
    anyhow::ensure!(
        charged.ok(),
        "the charges phase charged twice or lost a charge: {charged:?}"
    );
    pool.close().await;
    anyhow::ensure!(
        scheduled.ok(),
        "the schedules phase lost or doubled work: {scheduled:?}"
    );
    verdict(&load.ledger, &report, worker_crashes)
}

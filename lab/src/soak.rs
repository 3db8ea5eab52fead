//! `lab soak`: mixed load for a long while with the retention job on, time compressed (every window
//! `--window-secs` long, the job every `--every-secs`, through `INVOICER_SOAK_RETENTION`), sampling
//! the tables that grow with traffic. It fails unless each trimmed table levels off: once a window
//! and a period have passed, its oldest row is never older than the window plus two periods (the job
//! runs once per period, on the worker's next pass), so it holds at most that much traffic. Its mean
//! rows over the second half of the run against the first are printed beside it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use uuid::Uuid;

use lab::harness::{self, ServerProcess, Target};

use crate::Lab;

#[derive(clap::Args, Debug)]
pub struct SoakArgs {
    /// How long the load runs.
    #[arg(long, default_value_t = 30)]
    pub minutes: u64,
    /// Every retention window (webhook, API, form, activity, outbox, jobs), compressed.
    #[arg(long, default_value_t = 120)]
    pub window_secs: u64,
    /// How often the retention job runs.
    #[arg(long, default_value_t = 30)]
    pub every_secs: u64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 60)]
    pub sample_secs: u64,
    /// Load clients (each cycles a new event, a resent event, an API create and a form create).
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Where the server log and emails go (a fresh temporary folder if unset).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

/// What the retention job trims (outbox rows once sent or dead), with the time it trims by, and
/// what it keeps: business rows and emails not sent yet (reported, not judged: a backlog is the
/// worker's pace, not retention's).
const TRIMMED: [(&str, &str, &str); 4] = [
    ("claims", "claims", "created_at"),
    ("attempts", "attempts", "created_at"),
    ("stripe_events", "stripe_events", "received_at"),
    (
        "outbox sent or dead",
        "outbox where sent_at is not null or dead_at is not null",
        "coalesce(sent_at, dead_at)",
    ),
];
const KEPT: [(&str, &str); 3] = [
    (
        "outbox pending",
        "outbox where sent_at is null and dead_at is null",
    ),
    ("invoices", "invoices"),
    ("payments", "payments"),
];

struct Sample {
    at: Duration,
    rows: Vec<i64>,
    bytes: Vec<i64>,
    /// Seconds since the oldest row of each trimmed table was written (0 when empty).
    oldest: Vec<f64>,
}

pub async fn run(lab: &Lab, args: SoakArgs) -> anyhow::Result<()> {
    let work = crate::work_dir(args.work_dir.as_deref(), "soak")?;
    std::fs::create_dir_all(work.join("mail"))?;
    let pool = lab.connect().await?;
    let fixture = harness::seed(&pool, 2000).await?;
    let secret = "whsec_soak_invoicer".to_owned();
    let server = ServerProcess::start(
        &lab.server,
        harness::free_port()?,
        &[
            ("STRIPE_WEBHOOK_SECRET", secret.clone()),
            ("WORKERS", "1".into()),
            (
                "INVOICER_SOAK_RETENTION",
                format!("{}/{}", args.window_secs, args.every_secs),
            ),
            ("MAIL_DIR", work.join("mail").display().to_string()),
            (
                "RUST_LOG",
                "warn,invoicer_core::jobs::retention=info".into(),
            ),
        ],
        Some(&work.join("server.log")),
    )
    .await?;
    let mut target = Target::new(&server.base, &secret, &fixture)?;
    target.login(&fixture.email, &fixture.password).await?;

    let deadline = Instant::now() + Duration::from_secs(args.minutes * 60);
    let (sent, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let tag = Uuid::new_v4().simple().to_string()[..8].to_owned();
    let clients: Vec<_> = (0..args.clients)
        .map(|client| {
            let (target, invoices, tag) = (target.clone(), fixture.invoices.clone(), tag.clone());
            let (sent, failed) = (sent.clone(), failed.clone());
            let body = harness::api_body();
            tokio::spawn(async move {
                let mut i = 0usize;
                while Instant::now() < deadline {
                    let id = format!("{tag}_{client}_{i}");
                    let event = invoicer_core::payments::stripe::standin::checkout_event(
                        &format!("evt_soak_{id}"),
                        &format!("pi_soak_{id}"),
                        model::InvoiceId::from(invoices[(client * 7919 + i) % invoices.len()]),
                        1,
                        "usd",
                    );
                    let ok = [
                        target.webhook(&event).await.is_ok_and(|s| s == 200),
                        // Stripe's retry of the same event.
                        target.webhook(&event).await.is_ok_and(|s| s == 200),
                        target
                            .api_create(&format!("soak-{id}"), &body)
                            .await
                            .is_ok_and(|(s, _)| s == 201),
                        target
                            .form_create(Uuid::now_v7())
                            .await
                            .is_ok_and(|s| s == 200),
                    ];
                    for ok in ok {
                        let counter = if ok { &sent } else { &failed };
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                }
            })
        })
        .collect();

    let started = Instant::now();
    let mut samples = Vec::new();
    println!(
        "invoicer soak: {} min, {} clients, windows {} s, retention every {} s",
        args.minutes, args.clients, args.window_secs, args.every_secs
    );
    loop {
        samples.push(sample(&pool, started.elapsed()).await?);
        if Instant::now() >= deadline {
            break;
        }
        let next = Duration::from_secs(args.sample_secs).min(deadline - Instant::now());
        tokio::time::sleep(next).await;
    }
    for client in clients {
        client.await.context("a soak client panicked")?;
    }
    let peak_rss = server.peak_rss_kib();
    server.kill().await?;

    let tables: Vec<&str> = TRIMMED
        .iter()
        .map(|(name, _, _)| *name)
        .chain(KEPT.iter().map(|(name, _)| *name))
        .collect();
    let header: Vec<String> = tables.iter().map(|t| format!("{t} rows / MiB")).collect();
    println!("\n| s | {} |", header.join(" | "));
    println!("|---:|{}", "---:|".repeat(tables.len()));
    for s in &samples {
        let cells: Vec<String> = s
            .rows
            .iter()
            .zip(&s.bytes)
            .map(|(r, b)| format!("{r} / {:.1}", *b as f64 / 1_048_576.0))
            .collect();
        println!("| {:.0} | {} |", s.at.as_secs_f64(), cells.join(" | "));
    }
    let requests = sent.load(Ordering::Relaxed);
    let failures = failed.load(Ordering::Relaxed);
    println!(
        "\n{requests} requests answered as expected, {failures} not; server peak RSS {}",
        peak_rss.map_or("unknown".to_owned(), |k| format!(
            "{:.1} MiB",
            k as f64 / 1024.0
        ))
    );
    anyhow::ensure!(failures == 0, "{failures} soak requests failed");
    // Levelled off: the job runs once per period on the worker's next pass, so once the first
    // window and period have passed no row outlives the window by more than two periods, and a
    // table holds at most that much traffic; a table nobody trims ages with the run and fails. The
    // rows are judged by age, not count, as the count follows the load's pace and the phase of the
    // sweeps against the samples; the means of the two halves are printed beside it.
    let settled = Duration::from_secs(args.window_secs + args.every_secs);
    let bound = (args.window_secs + 2 * args.every_secs) as f64;
    let judged: Vec<&Sample> = samples.iter().filter(|s| s.at >= settled).collect();
    anyhow::ensure!(
        judged.len() >= 2,
        "the run is too short to judge: make --minutes longer than the window, the period and two samples"
    );
    let (first, second) = judged.split_at(judged.len() / 2);
    let mean = |of: &[&Sample], i: usize| {
        of.iter().map(|s| s.rows[i] as f64).sum::<f64>() / of.len() as f64
    };
    let mut grew = Vec::new();
    let mut empty = Vec::new();
    for (i, (table, _, _)) in TRIMMED.iter().enumerate() {
        // A table that never held a row proves nothing about its trimming.
        if judged.iter().all(|s| s.rows[i] == 0) {
            empty.push(*table);
        }
        let oldest = judged.iter().map(|s| s.oldest[i]).fold(0.0, f64::max);
        let (before, after) = (mean(first, i), mean(second, i));
        let ratio = after / before.max(1.0);
        println!(
            "{table}: oldest row {oldest:.1} s old at most (bound {bound:.0} s); \
             mean rows {before:.0} in the first half, {after:.0} in the second ({ratio:.2}x)"
        );
        if oldest > bound {
            grew.push(*table);
        }
    }
    anyhow::ensure!(
        empty.is_empty(),
        "no rows to judge in {empty:?}: the load wrote none there"
    );
    anyhow::ensure!(
        grew.is_empty(),
        "kept growing with retention on: {grew:?} (see {})",
        work.join("server.log").display()
    );
    Ok(())
}

async fn sample(pool: &sqlx::PgPool, at: Duration) -> anyhow::Result<Sample> {
    let (mut rows, mut bytes, mut oldest) = (Vec::new(), Vec::new(), Vec::new());
    let tables = TRIMMED
        .iter()
        .map(|(_, rows_of, time)| (*rows_of, Some(*time)))
        .chain(KEPT.iter().map(|(_, rows_of)| (*rows_of, None)));
    for (rows_of, time) in tables {
        // The names are this module's constants, never input; the size is the whole table's.
        let table = rows_of.split_whitespace().next().unwrap_or(rows_of);
        let age = time.map_or("0::float8".to_owned(), |t| {
            format!("coalesce(extract(epoch from now() - min({t})), 0)::float8")
        });
        let (n, size, age): (i64, i64, f64) = sqlx::query_as(&format!(
            "select count(*), pg_total_relation_size('{table}'), {age} from {rows_of}"
        ))
        .fetch_one(pool)
        .await?;
        rows.push(n);
        bytes.push(size);
        if time.is_some() {
            oldest.push(age);
        }
    }
    Ok(Sample {
        at,
        rows,
        bytes,
        oldest,
    })
}

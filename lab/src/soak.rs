//! `lab soak`: mixed load for a long while with the retention job on, time compressed (every window
//! `--window-secs` long, the job every `--every-secs`, through `INVOICER_SOAK_RETENTION`), sampling
//! the tables that grow with traffic. It fails unless each trimmed table levels off: its rows at the
//! end are at most `--tolerance` times the most it held in the first half once a window had passed.

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
    /// Allowed growth of a trimmed table from the first half of the run to its end.
    #[arg(long, default_value_t = 1.25)]
    pub tolerance: f64,
    /// Where the server log and emails go (a fresh temporary folder if unset).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

/// What the retention job trims (outbox rows once sent or dead), and what it keeps: business rows and
/// emails not sent yet (reported, not judged: a backlog is the worker's pace, not retention's).
const TRIMMED: [(&str, &str); 4] = [
    ("claims", "claims"),
    ("attempts", "attempts"),
    ("stripe_events", "stripe_events"),
    (
        "outbox sent or dead",
        "outbox where sent_at is not null or dead_at is not null",
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
}

pub async fn run(lab: &Lab, args: SoakArgs) -> anyhow::Result<()> {
    let work = match &args.work_dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("invoicer-soak-{}", std::process::id())),
    };
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
            ("RUST_LOG", "warn,app::ssr::retention=info".into()),
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
                    let event = app::ssr::stripe::standin::checkout_event(
                        &format!("evt_soak_{id}"),
                        &format!("pi_soak_{id}"),
                        invoices[(client * 7919 + i) % invoices.len()],
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
        .chain(KEPT.iter())
        .map(|(name, _)| *name)
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
    // Levelled off: once the first window has passed and been swept, a trimmed table holds about
    // a window of traffic. Its rows at the end must stay within the tolerance of the most it held in
    // the first half after that (the most, so that the phase of the sweeps against the samples
    // does not decide); a table nobody trims grows with time and fails.
    let settled = Duration::from_secs(args.window_secs + args.every_secs);
    let half = Duration::from_secs(args.minutes * 30);
    let reference: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.at >= settled && s.at <= half)
        .collect();
    anyhow::ensure!(
        !reference.is_empty(),
        "the run is too short to judge: make --minutes longer than twice the window and the period"
    );
    let last = &samples[samples.len() - 1];
    let mut grew = Vec::new();
    for (i, (table, _)) in TRIMMED.iter().enumerate() {
        let most = reference.iter().map(|s| s.rows[i]).max().unwrap_or(0);
        let ratio = last.rows[i] as f64 / most.max(1) as f64;
        println!(
            "{table}: at most {most} rows in the first half, {} at the end ({ratio:.2}x)",
            last.rows[i]
        );
        if ratio > args.tolerance {
            grew.push(*table);
        }
    }
    anyhow::ensure!(
        grew.is_empty(),
        "kept growing with retention on: {grew:?} (see {})",
        work.join("server.log").display()
    );
    Ok(())
}

async fn sample(pool: &sqlx::PgPool, at: Duration) -> anyhow::Result<Sample> {
    let (mut rows, mut bytes) = (Vec::new(), Vec::new());
    for (_, rows_of) in TRIMMED.iter().chain(KEPT.iter()) {
        // The names are this module's constants, never input; the size is the whole table's.
        let table = rows_of.split_whitespace().next().unwrap_or(rows_of);
        let (n, size): (i64, i64) = sqlx::query_as(&format!(
            "select (select count(*) from {rows_of}), pg_total_relation_size('{table}')"
        ))
        .fetch_one(pool)
        .await?;
        rows.push(n);
        bytes.push(size);
    }
    Ok(Sample { at, rows, bytes })
}

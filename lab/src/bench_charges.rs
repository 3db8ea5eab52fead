//! `lab bench charges`: many invoices due for charging at the same moment, charged by the workers'
//! own code (`invoicer_core::jobs::charges::run_due`, one attempt per call, as the worker calls
//! it) at a local Stripe, from `--workers` tasks at once, against pgbench running the same SQL
//! (`bench/pgbench/charge_run.sql`: the lease, the read, the amount fixed, the answer recorded; the
//! Stripe call left out) with as many clients over a fresh set of as many invoices. Each side must
//! end with exactly one succeeded attempt and one payment per invoice; the report gives charges per
//! second, the per-charge p50/p99 and the time until the last is recorded.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use invoicer_core::payments::stripe::client::Stripe;
use lab::stripe_local::{Config, LocalStripe};
use sqlx::PgPool;

use crate::bench_schedules::{quantile_ms, until_idle};
use crate::pgbench;

#[derive(clap::Args, Debug)]
pub struct ChargesBenchArgs {
    /// Invoices due at once, per measurement (a multiple of each worker count).
    #[arg(long, default_value_t = 10_000)]
    pub invoices: usize,
    /// Concurrent chargers (worker tasks; pgbench clients on the other side), one measurement each.
    #[arg(long, value_delimiter = ',', default_value = "1,4,8")]
    pub workers: Vec<usize>,
    /// Where the pgbench script and logs go (a fresh temporary folder if unset).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

const SCRIPT: &str = include_str!("../../bench/pgbench/charge_run.sql");

pub async fn run(lab: &crate::Lab, args: ChargesBenchArgs) -> anyhow::Result<()> {
    lab.connect().await?.close().await;
    let most = args.workers.iter().copied().max().unwrap_or(1);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(most as u32 * 2 + 2)
        .connect(&lab.database_url)
        .await
        .context("cannot connect to DATABASE_URL")?;
    let local = LocalStripe::start("127.0.0.1:0".parse()?, Config::default()).await?;
    let stripe = Stripe::new(&local.base, Some("sk_test_local".to_owned().into()))
        .with_max_calls(most.max(1));
    let work = crate::work_dir(args.work_dir.as_deref(), "bench-charges")?;
    let script = work.join("charge_run.sql");
    std::fs::write(&script, lab::pgbench_script::expand(SCRIPT)?)?;
    println!(
        "| invoices | workers | charges/s | p50 ms | p99 ms | all charged after s | pgbench charges/s | pgbench p50 ms | pgbench p99 ms | ratio |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &workers in &args.workers {
        anyhow::ensure!(
            workers > 0 && args.invoices.is_multiple_of(workers),
            "--invoices must be a multiple of each worker count"
        );
        let ours = seed(&pool, &stripe, &local, args.invoices).await?;
        crate::bench_http::settle(&pool).await;
        let (secs, mut latencies) = charge(&pool, &stripe, workers).await?;
        check(&pool, ours, args.invoices).await?;
        let intents = local
            .payment_intents()
            .iter()
            .filter(|i| i["metadata"]["org_id"].as_str() == Some(&ours.to_string()))
            .count();
        anyhow::ensure!(
            intents == args.invoices,
            "{intents} payment intents at the local Stripe for {} invoices",
            args.invoices
        );
        let theirs = seed(&pool, &stripe, &local, args.invoices).await?;
        crate::bench_http::settle(&pool).await;
        let mut pg = pgbench::run(
            &lab.database_url,
            &work.join(format!("pgbench-{workers}")),
            pgbench::Mode::Prepared,
            &[(script.clone(), 1)],
            workers,
            pgbench::Length::PerClient((args.invoices / workers) as u64),
            &[],
        )
        .await
        .context("pgbench charge_run.sql")?;
        anyhow::ensure!(pg.failed == 0, "pgbench: {} failed charges", pg.failed);
        check(&pool, theirs, args.invoices).await?;
        latencies.sort_unstable();
        let rate = args.invoices as f64 / secs;
        println!(
            "| {} | {workers} | {rate:.0} | {:.2} | {:.2} | {secs:.1} | {:.0} | {:.2} | {:.2} | {:.2} |",
            args.invoices,
            quantile_ms(&latencies, 0.5),
            quantile_ms(&latencies, 0.99),
            pg.rate(),
            pg.quantile_ms(0.5),
            pg.quantile_ms(0.99),
            rate / pg.rate(),
        );
    }
    Ok(())
}

/// A fresh org of `n` open invoices, all collected automatically from one customer whose card is
/// saved at the local Stripe, each with its first attempt due now.
async fn seed(
    pool: &PgPool,
    stripe: &Stripe,
    local: &LocalStripe,
    n: usize,
) -> anyhow::Result<model::OrgId> {
    let fixture = lab::harness::seed(pool, n).await?;
    lab::harness::charges::due(pool, stripe, local, fixture.org, &fixture.invoices).await?;
    Ok(fixture.org)
}

/// `workers` tasks charging until nothing is due: (seconds until the last charge was recorded, each
/// charge's latency in µs).
async fn charge(pool: &PgPool, stripe: &Stripe, workers: usize) -> anyhow::Result<(f64, Vec<u64>)> {
    let (pool, stripe) = (pool.clone(), stripe.clone());
    until_idle(workers, move || {
        let (pool, stripe) = (pool.clone(), stripe.clone());
        async move {
            let handled = invoicer_core::jobs::charges::run_due(
                &pool,
                Some(&stripe),
                chrono::Utc::now(),
                1,
                Duration::from_secs(60),
                invoicer_core::mail::gate::Allowance::DEFAULT,
            )
            .await?;
            Ok(handled)
        }
    })
    .await
}

/// Exactly one succeeded attempt, one succeeded payment and a paid invoice per invoice of `org`.
async fn check(pool: &PgPool, org: model::OrgId, invoices: usize) -> anyhow::Result<()> {
    // language=PostgreSQL
    let (succeeded, payments, paid, left): (i64, i64, i64, i64) = sqlx::query_as(
        r#"
        select (select count(*) from charge_attempts where org_id = $1 and state = 'succeeded'),
               (select count(distinct invoice_id) from payments where org_id = $1 and status = 'succeeded'),
               (select count(*) from invoices where org_id = $1 and status = 'paid'),
               (select count(*) from charge_attempts where org_id = $1 and state <> 'succeeded')
        "#,
    )
    .bind(org)
    .fetch_one(pool)
    .await?;
    let n = invoices as i64;
    anyhow::ensure!(
        succeeded == n && payments == n && paid == n && left == 0,
        "expected {n} succeeded attempts, payments and paid invoices, found {succeeded}, {payments}, \
         {paid} ({left} attempts not succeeded)"
    );
    Ok(())
}

//! `lab bench schedules`: many schedules due at the same moment, handled by the scheduler's own
//! code (`invoicer_core::jobs::schedules::run::run_due`, one period per transaction, as the workers call it)
//! from `--workers` tasks at once, against pgbench running the same SQL
//! (`bench/pgbench/schedule_run.sql`) with as many clients over a fresh set of as many schedules.
//! Each side must issue exactly one invoice per schedule; the report gives runs per second, the
//! per-run p50/p99 and the time until the last is issued, for one org and for many.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use sqlx::PgPool;
use uuid::Uuid;

use crate::pgbench;

#[derive(clap::Args, Debug)]
pub struct SchedulesBenchArgs {
    /// Schedules due at once, per measurement (a multiple of the org count and of the workers).
    #[arg(long, default_value_t = 10_000)]
    pub schedules: usize,
    /// Org counts the schedules are spread over, one measurement each.
    #[arg(long, value_delimiter = ',', default_value = "1,100")]
    pub orgs: Vec<usize>,
    /// Concurrent runners (scheduler tasks; pgbench clients on the other side).
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// Where the pgbench script and logs go (a fresh temporary folder if unset).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

const SCRIPT: &str = include_str!("../../bench/pgbench/schedule_run.sql");

pub async fn run(lab: &crate::Lab, args: SchedulesBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.workers > 0 && args.schedules.is_multiple_of(args.workers),
        "--schedules must be a multiple of --workers"
    );
    lab.connect().await?.close().await;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(args.workers as u32 + 2)
        .connect(&lab.database_url)
        .await
        .context("cannot connect to DATABASE_URL")?;
    let work = crate::work_dir(args.work_dir.as_deref(), "bench-schedules")?;
    let script = work.join("schedule_run.sql");
    std::fs::write(&script, lab::pgbench_script::expand(SCRIPT)?)?;
    println!(
        "| orgs | schedules | runners | runs/s | p50 ms | p99 ms | all issued after s | pgbench runs/s | pgbench p50 ms | pgbench p99 ms | ratio |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &orgs in &args.orgs {
        anyhow::ensure!(
            orgs > 0 && args.schedules.is_multiple_of(orgs),
            "--schedules must be a multiple of each org count"
        );
        let ours = seed(&pool, orgs, args.schedules / orgs).await?;
        crate::bench_http::settle(&pool).await;
        let (secs, mut latencies) = scheduler(&pool, args.workers).await?;
        check(&pool, &ours, args.schedules).await?;
        let theirs = seed(&pool, orgs, args.schedules / orgs).await?;
        crate::bench_http::settle(&pool).await;
        let mut pg = pgbench::run(
            &lab.database_url,
            &work.join(format!("pgbench-{orgs}")),
            pgbench::Mode::Prepared,
            &[(script.clone(), 1)],
            args.workers,
            pgbench::Length::PerClient((args.schedules / args.workers) as u64),
            &[],
        )
        .await
        .context("pgbench schedule_run.sql")?;
        anyhow::ensure!(pg.failed == 0, "pgbench: {} failed runs", pg.failed);
        check(&pool, &theirs, args.schedules).await?;
        latencies.sort_unstable();
        let rate = args.schedules as f64 / secs;
        println!(
            "| {orgs} | {} | {} | {rate:.0} | {:.2} | {:.2} | {secs:.1} | {:.0} | {:.2} | {:.2} | {:.2} |",
            args.schedules,
            args.workers,
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

/// `orgs` new orgs with `each` monthly schedules each, all due today (their first run), finalizing
/// a one-line invoice with 30 days' terms. The first schedule of each org is made by the app's own
/// create; the others are copies of it. Returns the orgs.
async fn seed(pool: &PgPool, orgs: usize, each: usize) -> anyhow::Result<Vec<Uuid>> {
    let ids: Vec<Uuid> = (0..orgs).map(|_| Uuid::now_v7()).collect();
    // language=PostgreSQL
    sqlx::query(
        "insert into orgs (id, name) select id, 'Schedules ' || id from unnest($1::uuid[]) id",
    )
    .bind(&ids)
    .execute(pool)
    .await?;
    for org in ids.iter().copied().map(model::OrgId::from) {
        let mut tx = pool.begin().await?;
        let today =
            invoicer_core::jobs::schedules::org_today(&mut tx, org, chrono::Utc::now()).await?;
        let input = model::ScheduleInput::from_json(&serde_json::json!({
            "customer_name": "Retainer Client",
            "customer_email": "billing@example.com",
            "currency": "usd",
            "payment_terms_days": 30,
            "lines": [{"description": "Retainer", "quantity": 1, "unit_amount_cents": 30000}],
            "interval": "month",
            "start_date": today,
            "action": "finalize",
        }))
        .map_err(anyhow::Error::msg)?;
        let first = Uuid::now_v7();
        invoicer_core::jobs::schedules::create(
            &mut tx,
            org,
            first,
            &format!("bench:{first}"),
            &input,
            today,
        )
        .await
        .map_err(|e| anyhow::anyhow!("creating a schedule: {e:?}"))?;
        // language=PostgreSQL
        sqlx::query(
            r#"
            insert into schedules (id, org_id, template, interval, interval_count, start_date,
                                   day_of_month, end_after_count, end_date, action, missed,
                                   next_index, next_run_on, source_key)
            select gen_random_uuid(), org_id, template, interval, interval_count, start_date,
                   day_of_month, end_after_count, end_date, action, missed, next_index, next_run_on,
                   source_key || '/' || g
            from schedules, generate_series(2, $2::int4) g
            where id = $1
            "#,
        )
        .bind(first)
        .bind(each as i32)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
    }
    Ok(ids)
}

/// `workers` tasks running the scheduler until nothing is due: (seconds until the last run
/// committed, each run's latency in µs).
async fn scheduler(pool: &PgPool, workers: usize) -> anyhow::Result<(f64, Vec<u64>)> {
    let pool = pool.clone();
    until_idle(workers, move || {
        let pool = pool.clone();
        async move {
            let handled = invoicer_core::jobs::schedules::run::run_due(
                &pool,
                chrono::Utc::now(),
                1,
                "",
                invoicer_core::mail::gate::Allowance::DEFAULT,
            )
            .await?;
            Ok(handled)
        }
    })
    .await
}

/// `workers` tasks each calling `step` (one unit of work; returns how many it handled) until it
/// handles none: (seconds until the last task ended, each handled step's latency in µs).
pub(crate) async fn until_idle<F, Fut>(workers: usize, step: F) -> anyhow::Result<(f64, Vec<u64>)>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<usize>> + Send + 'static,
{
    let started = Instant::now();
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let step = step.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let at = Instant::now();
                    if step().await? == 0 {
                        return anyhow::Ok(latencies);
                    }
                    latencies.push(at.elapsed().as_micros() as u64);
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    Ok((started.elapsed().as_secs_f64(), all))
}

/// Exactly one issued invoice per schedule of `orgs`, each with its own run.
async fn check(pool: &PgPool, orgs: &[Uuid], schedules: usize) -> anyhow::Result<()> {
    // language=PostgreSQL
    let (runs, invoices, due): (i64, i64, i64) = sqlx::query_as(
        r#"
        select (select count(distinct r.invoice_id) from schedule_runs r join schedules s on s.id = r.schedule_id
                where s.org_id = any($1) and r.outcome = 'issued'),
               (select count(*) from invoices where org_id = any($1) and source_key like 'schedule:%'),
               (select count(*) from schedules where org_id = any($1) and next_index = 0)
        "#,
    )
    .bind(orgs)
    .fetch_one(pool)
    .await?;
    anyhow::ensure!(
        runs == schedules as i64 && invoices == schedules as i64 && due == 0,
        "expected {schedules} runs and invoices and none left due, found {runs} runs, {invoices} invoices, {due} due"
    );
    Ok(())
}

pub(crate) fn quantile_ms(sorted_us: &[u64], q: f64) -> f64 {
    if sorted_us.is_empty() {
        return f64::NAN;
    }
    sorted_us[((sorted_us.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0
}

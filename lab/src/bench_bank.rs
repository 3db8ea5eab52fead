//! `lab bench bank`: a statement of `--entries` booked entries (CAMT.053, the file
//! `lab::harness::bank` writes) imported by the server's own code (`bank::parse`, then
//! `bank::import::import` in one transaction, as `POST /api/v1/bank_statements` runs it inside its
//! claim), then the same file imported again (every entry a duplicate), `--rounds` times each.
//! Reported: the file's size, parse and import times, entries per second, and the process's peak
//! resident memory during each import (Linux's `VmHWM`, reset before it). Beside it pgbench runs the
//! same SQL (`bench/pgbench/bank_import.sql` and `bank_reimport.sql`) with one client, so the
//! import's database work has a ratio against Postgres alone.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use invoicer_core::bank;
use lab::harness::bank::{statement, IBAN};
use sqlx::PgPool;

use crate::pgbench;

#[derive(clap::Args, Debug)]
pub struct BankBenchArgs {
    /// Booked entries in the statement.
    #[arg(long, default_value_t = 10_000)]
    pub entries: u64,
    /// Imports of a new statement, and as many re-imports, measured (pgbench runs as many).
    #[arg(long, default_value_t = 5)]
    pub rounds: u64,
    /// Where the pgbench scripts and logs go (a fresh temporary folder if unset).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

const IMPORT: &str = include_str!("../../bench/pgbench/bank_import.sql");
const REIMPORT: &str = include_str!("../../bench/pgbench/bank_reimport.sql");

/// One import: seconds parsing, seconds in the database, entries recorded, peak RSS in MB.
struct Measured {
    parse: f64,
    import: f64,
    new: usize,
    peak_mb: f64,
}

pub async fn run(lab: &crate::Lab, args: BankBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.entries > 0 && args.entries as usize <= bank::MAX_ENTRIES,
        "--entries is 1 to {}",
        bank::MAX_ENTRIES
    );
    let pool = lab
        .connect()
        .await
        .context("cannot connect to DATABASE_URL")?;
    let fixture = lab::harness::seed(&pool, 1_000).await?;
    lab::harness::bank::own_account(&pool, fixture.org).await?;
    let today = chrono::Utc::now().date_naive();
    let work = crate::work_dir(args.work_dir.as_deref(), "bench-bank")?;

    let (mut first, mut again) = (Vec::new(), Vec::new());
    let mut bytes = 0;
    for round in 0..args.rounds {
        let file = statement(
            args.entries,
            &format!("r{round}-{}", uuid::Uuid::now_v7()),
            today,
        );
        bytes = file.len();
        let once = import(&pool, fixture.org, file.as_bytes()).await?;
        anyhow::ensure!(
            once.new == args.entries as usize,
            "{} new entries of {}",
            once.new,
            args.entries
        );
        first.push(once);
        let twice = import(&pool, fixture.org, file.as_bytes()).await?;
        anyhow::ensure!(twice.new == 0, "a re-import recorded {} entries", twice.new);
        again.push(twice);
    }
    let recorded: i64 = sqlx::query_scalar("select count(*) from bank_entries where org_id = $1")
        .bind(fixture.org)
        .fetch_one(&pool)
        .await?;
    anyhow::ensure!(
        recorded == (args.entries * args.rounds) as i64,
        "{recorded} entries recorded for {} statements of {}",
        args.rounds,
        args.entries
    );

    let vars = |tag: &str| {
        let mut vars = vec![
            ("org", fixture.org.to_string()),
            ("iban", IBAN.to_owned()),
            ("n", args.entries.to_string()),
        ];
        if !tag.is_empty() {
            vars.push(("tag", tag.to_owned()));
        }
        vars
    };
    let script = |name: &str, text: &str| -> anyhow::Result<PathBuf> {
        let path = work.join(name);
        std::fs::write(&path, lab::pgbench_script::expand(text)?)?;
        Ok(path)
    };
    let (import_sql, reimport_sql) = (
        script("bank_import.sql", IMPORT)?,
        script("bank_reimport.sql", REIMPORT)?,
    );
    let pg = |path: PathBuf, logs: &str, count: u64, tag: String| {
        let url = lab.database_url.clone();
        let logs = work.join(logs);
        let vars = vars(&tag);
        async move {
            let vars: Vec<(&str, String)> = vars.iter().map(|(k, v)| (*k, v.clone())).collect();
            let sample = pgbench::run(
                &url,
                &logs,
                pgbench::Mode::Prepared,
                &[(path, 1)],
                1,
                pgbench::Length::PerClient(count),
                &vars,
            )
            .await?;
            anyhow::ensure!(
                sample.failed == 0,
                "pgbench: {} failed transactions",
                sample.failed
            );
            Ok::<_, anyhow::Error>(sample)
        }
    };
    let mut pg_first = pg(import_sql, "pgbench-import", args.rounds, String::new()).await?;
    let tag = format!("re-{}", uuid::Uuid::now_v7());
    pg(reimport_sql.clone(), "pgbench-warm", 1, tag.clone()).await?;
    let mut pg_again = pg(reimport_sql, "pgbench-reimport", args.rounds, tag).await?;
    let pgbench_entries: i64 = sqlx::query_scalar(
        "select count(*) from bank_entries where org_id = $1 and entry_key like 'ref:pgb-%'",
    )
    .bind(fixture.org)
    .fetch_one(&pool)
    .await?;
    // Every entry of pgbench's statements but the debits' zero amounts (none) is recorded once.
    anyhow::ensure!(
        pgbench_entries == (args.entries * (args.rounds + 1)) as i64,
        "pgbench recorded {pgbench_entries} entries"
    );

    println!(
        "statement: {} entries, {:.1} MB (CAMT.053); {} rounds, medians",
        args.entries,
        bytes as f64 / 1e6,
        args.rounds
    );
    println!("| import | parse ms | database ms | entries/s (all) | entries/s (database) | peak RSS MB | pgbench ms | pgbench entries/s | ratio (database) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (what, runs, sample) in [
        ("new statement", &first, &mut pg_first),
        ("again (all duplicates)", &again, &mut pg_again),
    ] {
        let parse = median(runs.iter().map(|m| m.parse));
        let db = median(runs.iter().map(|m| m.import));
        let peak = runs.iter().map(|m| m.peak_mb).fold(0.0, f64::max);
        let pg_ms = sample.quantile_ms(0.5);
        let n = args.entries as f64;
        println!(
            "| {what} | {:.0} | {:.0} | {:.0} | {:.0} | {peak:.0} | {pg_ms:.0} | {:.0} | {:.2} |",
            parse * 1e3,
            db * 1e3,
            n / (parse + db),
            n / db,
            n / (pg_ms / 1e3),
            (pg_ms / 1e3) / db,
        );
    }
    Ok(())
}

/// `file` parsed and imported in one transaction, the peak resident memory measured over both.
async fn import(pool: &PgPool, org: model::OrgId, file: &[u8]) -> anyhow::Result<Measured> {
    reset_peak_rss();
    let started = Instant::now();
    let parsed = bank::parse(file).map_err(|e| anyhow::anyhow!("the statement: {e}"))?;
    let parse = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut tx = pool.begin().await?;
    let done = bank::import::import(&mut tx, org, uuid::Uuid::now_v7(), &parsed)
        .await
        .map_err(|e| anyhow::anyhow!("import: {e}"))?;
    tx.commit().await?;
    let import = started.elapsed().as_secs_f64();
    drop(parsed);
    Ok(Measured {
        parse,
        import,
        new: done.new_entries,
        peak_mb: peak_rss_mb(),
    })
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Resets the process's peak resident set (Linux: `5` to `/proc/self/clear_refs`).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident set since the last reset, in MB (`VmHWM`).
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

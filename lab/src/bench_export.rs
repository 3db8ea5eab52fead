//! `lab bench export`: the CSV exports of the generated big org (`lab datagen`) through a running
//! server's API, each read to the end while the server's resident memory (VmRSS) is sampled every
//! 10 ms; then the file is read back by Python's `csv` module and compared with the database (the
//! records, and for invoices the sum of the totals per currency). Prints rows, MB, seconds, rows/s,
//! the server's RSS before and at its highest during the export; fails if an export differs from the
//! database or the RSS grew by more than `--max-growth-mib`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use sqlx::PgPool;
use tokio::io::AsyncWriteExt;
use uuid::Uuid;

#[derive(clap::Args, Debug)]
pub struct ExportBenchArgs {
    /// The server.
    #[arg(long)]
    pub url: String,
    /// The generated big org's owner (`lab datagen --email`).
    #[arg(long, default_value = "reader@example.com")]
    pub email: String,
    /// The server's process id (its memory is read from /proc).
    #[arg(long)]
    pub server_pid: u32,
    /// The exports to run, comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "invoices,lines,payments,customers"
    )]
    pub kinds: Vec<String>,
    /// Python with nothing but its standard library.
    #[arg(long, env = "TEST_PYTHON", default_value = "python3")]
    pub python: String,
    /// Where the files go (a fresh temporary folder if unset; they are deleted after the check).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Fail if the server's RSS grows more than this during an export.
    #[arg(long, default_value_t = 50)]
    pub max_growth_mib: u64,
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Counts the records (after the header) and, given a column, sums it per the `currency` column in
/// minor units (two decimals; what the generator makes).
const CHECK: &str = r#"
import csv, json, sys
from decimal import Decimal
column = sys.argv[2] if len(sys.argv) > 2 else None
records, sums = 0, {}
with open(sys.argv[1], newline='', encoding='utf-8') as f:
    reader = csv.reader(f)
    header = next(reader)
    at = header.index(column) if column else None
    cur = header.index('currency') if column else None
    for row in reader:
        if len(row) != len(header):
            sys.exit('record %d has %d cells, not %d' % (records + 1, len(row), len(header)))
        records += 1
        if at is not None:
            sums[row[cur].lower()] = sums.get(row[cur].lower(), 0) + int(Decimal(row[at]) * 100)
print(json.dumps({'records': records, 'sums': sums}))
"#;

pub async fn run(pool: &PgPool, args: ExportBenchArgs) -> anyhow::Result<()> {
    let (org, user): (Uuid, Uuid) = sqlx::query_as(
        "select m.org_id, u.id from memberships m join users u on u.id = m.user_id \
         where lower(u.email) = lower($1) limit 1",
    )
    .bind(&args.email)
    .fetch_one(pool)
    .await
    .context("the reader's org (run lab datagen first)")?;
    let key =
        invoicer_core::accounts::api_keys::create_for_user(pool, org.into(), user, "export bench")
            .await?;
    let work = match &args.work_dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("invoicer-export-{}", Uuid::new_v4().simple())),
    };
    tokio::fs::create_dir_all(&work).await?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(3600))
        .build()?;
    println!("| export | rows | MB | seconds | rows/s | server RSS before MiB | peak MiB | growth MiB | matches the database |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|");
    let mut failures = Vec::new();
    for kind in &args.kinds {
        let (want_records, want_sums, column): (i64, BTreeMap<String, i64>, Option<&str>) =
            match kind.as_str() {
                "invoices" => {
                    let rows: Vec<(String, i64, i64)> = sqlx::query_as(
                        "select currency, count(*), sum(total_cents)::bigint from invoices \
                         where org_id = $1 group by currency",
                    )
                    .bind(org)
                    .fetch_all(pool)
                    .await?;
                    let count = rows.iter().map(|r| r.1).sum();
                    let sums = rows.into_iter().map(|(c, _, s)| (c, s)).collect();
                    (count, sums, Some("total"))
                }
                other => {
                    let sql = match other {
                        "lines" => "select count(*) from invoice_lines l join invoices i on i.id = l.invoice_id where i.org_id = $1",
                        "payments" => "select count(*) from payments where org_id = $1",
                        "credit_notes" => "select count(*) from credit_notes where org_id = $1",
                        "customers" => "select count(*) from customers where org_id = $1",
                        _ => bail!("no export {other}"),
                    };
                    let (count,): (i64,) = sqlx::query_as(sql).bind(org).fetch_one(pool).await?;
                    (count, BTreeMap::new(), None)
                }
            };
        // Settle, then sample the server's memory while the export runs.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = rss_kib(args.server_pid).context("the server's /proc status")?;
        let peak = Arc::new(AtomicU64::new(before));
        let done = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (peak, done, pid) = (peak.clone(), done.clone(), args.server_pid);
            tokio::spawn(async move {
                while !done.load(Ordering::Relaxed) {
                    if let Some(now) = rss_kib(pid) {
                        peak.fetch_max(now, Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
        };
        let path = work.join(format!("{kind}.csv"));
        let started = Instant::now();
        let mut res = http
            .get(format!("{}/api/v1/exports/{kind}.csv", args.url))
            .bearer_auth(&key.plaintext)
            .send()
            .await?
            .error_for_status()?;
        let mut file = tokio::fs::File::create(&path).await?;
        let mut bytes = 0u64;
        while let Some(chunk) = res.chunk().await? {
            bytes += chunk.len() as u64;
            file.write_all(&chunk).await?;
        }
        file.flush().await?;
        let secs = started.elapsed().as_secs_f64();
        done.store(true, Ordering::Relaxed);
        sampler.await?;
        let peak = peak.load(Ordering::Relaxed);
        let mut check = tokio::process::Command::new(&args.python);
        check.arg("-c").arg(CHECK).arg(&path);
        if let Some(column) = column {
            check.arg(column);
        }
        let out = check.output().await?;
        if !out.status.success() {
            bail!("{kind}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let got: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        let records = got["records"].as_i64().unwrap_or(-1);
        let sums: BTreeMap<String, i64> = serde_json::from_value(got["sums"].clone())?;
        let matches = records == want_records && (column.is_none() || sums == want_sums);
        let growth = peak.saturating_sub(before) as f64 / 1024.0;
        println!(
            "| {kind} | {records} | {:.1} | {secs:.1} | {:.0} | {:.1} | {:.1} | {growth:.1} | {} |",
            bytes as f64 / 1e6,
            records as f64 / secs,
            before as f64 / 1024.0,
            peak as f64 / 1024.0,
            if matches { "yes" } else { "NO" }
        );
        if !matches {
            failures.push(format!(
                "{kind}: {records} records (the database has {want_records}), sums {sums:?} vs {want_sums:?}"
            ));
        }
        if growth > args.max_growth_mib as f64 {
            failures.push(format!("{kind}: the server's RSS grew {growth:.1} MiB"));
        }
        let _ = tokio::fs::remove_file(&path).await;
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(())
}

//! pgbench as a yardstick: the SQL a path sends, run by pgbench with as many clients for as long,
//! so each HTTP measurement has a ratio against Postgres alone doing the same work.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Latencies (µs) and counts of one measurement.
#[derive(Debug, Default)]
pub struct Sample {
    pub done: u64,
    pub failed: u64,
    pub secs: f64,
    pub latencies_us: Vec<u64>,
    /// pgbench's per-statement average latency (ms) and the statement's first line, in script order
    /// (`-r`; with several scripts, all of theirs one after the other).
    pub statements: Vec<(f64, String)>,
}

impl Sample {
    pub fn rate(&self) -> f64 {
        self.done as f64 / self.secs
    }

    pub fn quantile_ms(&mut self, q: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return f64::NAN;
        }
        self.latencies_us.sort_unstable();
        let i = ((self.latencies_us.len() - 1) as f64 * q).round() as usize;
        self.latencies_us[i] as f64 / 1000.0
    }
}

/// How pgbench sends the statements: `Prepared` (parsed and planned once per connection, as sqlx's
/// statement cache does), or `Extended` (an unnamed statement parsed and planned with its values on
/// every execution, as the server's unprepared queries are: `.persistent(false)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Prepared,
    Extended,
}

/// How long pgbench runs: for some seconds (`-T`), or some transactions per client (`-t`; the
/// sample's seconds are then the measured wall time).
#[derive(Debug, Clone, Copy)]
pub enum Length {
    Secs(u64),
    PerClient(u64),
}

/// pgbench with `scripts` (path, weight), `clients` connections for `length`, in `mode`, `-D`
/// variables, and a per-transaction log in `logs` for the percentiles.
pub async fn run(
    database_url: &str,
    logs: &Path,
    mode: Mode,
    scripts: &[(PathBuf, u32)],
    clients: usize,
    length: Length,
    vars: &[(&str, String)],
) -> anyhow::Result<Sample> {
    let _ = std::fs::remove_dir_all(logs);
    std::fs::create_dir_all(logs)?;
    let mut command = tokio::process::Command::new("pgbench");
    command
        .args(["-n", "-l", "-r", "-M"])
        .arg(match mode {
            Mode::Prepared => "prepared",
            Mode::Extended => "extended",
        })
        .arg(format!("--log-prefix={}", logs.join("tx").display()))
        .arg(format!("-c{clients}"))
        .arg(format!("-j{}", clients.min(2)))
        .arg(match length {
            Length::Secs(secs) => format!("-T{secs}"),
            Length::PerClient(count) => format!("-t{count}"),
        });
    for (name, value) in vars {
        command.arg(format!("-D{name}={value}"));
    }
    for (script, weight) in scripts {
        command
            .arg("-f")
            .arg(format!("{}@{weight}", script.display()));
    }
    command.arg(database_url);
    let started = std::time::Instant::now();
    let out = command.output().await.context("cannot run pgbench")?;
    let elapsed = started.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    anyhow::ensure!(
        out.status.success(),
        "pgbench failed: {}\n{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut sample = Sample {
        secs: match length {
            Length::Secs(secs) => secs as f64,
            Length::PerClient(_) => elapsed,
        },
        ..Sample::default()
    };
    let mut in_statements = false;
    for line in stdout.lines() {
        if let Some(n) = line.strip_prefix("number of failed transactions: ") {
            sample.failed = n.split_whitespace().next().unwrap_or("0").parse()?;
        }
        if line.starts_with("statement latencies") {
            in_statements = true;
            continue;
        }
        if in_statements {
            // "   1.501           0  select data from ...": latency, failures, the command's line.
            let mut fields = line.split_whitespace();
            match (fields.next().map(str::parse::<f64>), fields.next()) {
                (Some(Ok(ms)), Some(_)) => {
                    let text: Vec<&str> = fields.collect();
                    sample.statements.push((ms, text.join(" ")));
                }
                _ => in_statements = line.starts_with("SQL script"),
            }
        }
    }
    // Each log line: client_id transaction_no time_us script_no epoch epoch_us. pgbench 15 reads its
    // clock lazily and logs a time of 0 for many short transactions, so a transaction's latency is
    // taken from the end times instead: each client runs its transactions back to back, so one
    // lasts from the previous one's end to its own (the first, from its logged time).
    let mut ends: HashMap<u64, Vec<(u64, u64, u64)>> = HashMap::new();
    for entry in std::fs::read_dir(logs)? {
        let text = std::fs::read_to_string(entry?.path())?;
        for line in text.lines() {
            let fields: Vec<u64> = line
                .split_whitespace()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .with_context(|| format!("pgbench log line {line:?}"))?;
            anyhow::ensure!(fields.len() >= 6, "short pgbench log line {line:?}");
            let end_us = fields[4] * 1_000_000 + fields[5];
            ends.entry(fields[0])
                .or_default()
                .push((fields[1], end_us, fields[2]));
        }
    }
    for (_, mut transactions) in ends {
        transactions.sort_unstable();
        let mut previous: Option<u64> = None;
        for (_, end_us, logged_us) in transactions {
            let latency = previous.map_or(logged_us, |p| end_us.saturating_sub(p));
            sample.latencies_us.push(latency);
            previous = Some(end_us);
        }
    }
    sample.done = sample.latencies_us.len() as u64;
    Ok(sample)
}

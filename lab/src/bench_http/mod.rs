//! `lab bench http`: each surface driven over real HTTP by 1, 16 and 64 clients for a bounded
//! time, and in the same run pgbench executing the same SQL (bench/pgbench/*.sql: the statements the
//! surface sends, in its transaction) with as many clients. Prints events/s, p50/p99 and the ratio
//! surface/pgbench, then the server's peak RSS and the owner's wasm, script and style sheet as sent.

mod drive;
mod sql;
mod workload;

pub(crate) use sql::settle;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use uuid::Uuid;

use lab::harness::{self, ServerProcess, Target};

use crate::Lab;
use drive::{drive, pick, Step};
use sql::{latest_session_row, pgbench, statement_costs};
use workload::{Workload, SCRIPTS};

#[derive(clap::Args, Debug)]
pub struct HttpBenchArgs {
    /// Seconds per measurement (each surface, each client count, HTTP and pgbench alike).
    #[arg(long, default_value_t = 10)]
    pub secs: u64,
    /// Client counts.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    pub clients: Vec<usize>,
    /// Only these workloads (webhook, webhook-dup50, webhook-dup100, api, form, form-1org).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Invoices the payments spread over.
    #[arg(long, default_value_t = 2000)]
    pub invoices: usize,
    /// Events delivered before the run, resent by the duplicate workloads.
    #[arg(long, default_value_t = 2000)]
    pub dup_events: usize,
    /// Where the pgbench scripts and logs and the server log go (a fresh temporary folder if unset).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

/// The server's pool: it inherits this process's environment.
fn server_pool_size() -> u32 {
    std::env::var("DATABASE_POOL_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}

pub async fn run(lab: &Lab, args: HttpBenchArgs) -> anyhow::Result<()> {
    let work = crate::work_dir(args.work_dir.as_deref(), "bench")?;
    for (name, text) in SCRIPTS {
        std::fs::write(work.join(name), lab::pgbench_script::expand(text)?)?;
    }
    let workloads: Vec<Workload> = Workload::ALL
        .into_iter()
        .filter(|w| args.only.is_empty() || args.only.iter().any(|o| o == w.name()))
        .collect();
    anyhow::ensure!(!workloads.is_empty(), "--only names no workload");

    let pool = lab.connect().await?;
    let fixture = harness::seed(&pool, args.invoices).await?;
    let tag = Uuid::new_v4().simple().to_string()[..8].to_owned();
    let secret = "whsec_bench_invoicer".to_owned();
    let port = harness::free_port()?;
    let server = ServerProcess::start(
        &lab.server,
        port,
        &[
            ("STRIPE_WEBHOOK_SECRET", secret.clone()),
            ("WORKERS", "0".into()),
            // The production default: every attempt is logged (to a file here).
            (
                "RUST_LOG",
                std::env::var("BENCH_SERVER_LOG").unwrap_or_else(|_| "info,sqlx=warn".into()),
            ),
        ],
        Some(&work.join("server.log")),
    )
    .await?;
    let mut target = Target::new(&server.base, &secret, &fixture)?;
    target.login(&fixture.email, &fixture.password).await?;
    let session = target.session_id().context("no session")?.to_owned();
    let session = (session, latest_session_row(&pool, fixture.user).await?);
    // Form users: one org per client, as concurrent users of a multi-tenant app are (creates within
    // one org take turns on its gapless numbering; `form-1org` measures that case). pgbench's form
    // script finds its client's org, user and session in bench_form_clients (runtime SQL: a
    // benchmark table, not part of the schema).
    let most = args.clients.iter().copied().max().unwrap_or(1);
    let mut form_targets = Vec::with_capacity(most);
    sqlx::query(
        "create table if not exists bench_form_clients \
         (client_id int primary key, org uuid not null, user_id uuid not null, session text not null, \
          sid uuid not null)",
    )
    .execute(&pool)
    .await?;
    sqlx::query("truncate bench_form_clients")
        .execute(&pool)
        .await?;
    for c in 0..most {
        let email = format!("form-{tag}-{c}@example.com");
        let account = invoicer_core::accounts::create_org_with_owner(
            &pool,
            "Form",
            &email,
            &fixture.password,
        )
        .await?;
        let mut user = Target::new(&server.base, &secret, &fixture)?;
        user.login(&email, &fixture.password).await?;
        sqlx::query("insert into bench_form_clients values ($1, $2, $3, $4, $5)")
            .bind(c as i32)
            .bind(account.org_id)
            .bind(account.user_id)
            .bind(user.session_id().context("no session")?)
            .bind(latest_session_row(&pool, account.user_id).await?)
            .execute(&pool)
            .await?;
        form_targets.push(user);
    }
    let form_targets = Arc::new(form_targets);

    // The events the duplicate workloads resend: delivered (and committed) before any measurement.
    let dup_payloads: Arc<Vec<String>> = Arc::new(
        (1..=args.dup_events)
            .map(|n| {
                let invoice = fixture.invoices[n % fixture.invoices.len()];
                invoicer_core::payments::stripe::standin::checkout_event(
                    &format!("evt_dup_{tag}_{n}"),
                    &format!("pi_dup_{tag}_{n}"),
                    model::InvoiceId::from(invoice),
                    1,
                    "usd",
                )
            })
            .collect(),
    );
    let warmup = drive(16, Duration::from_secs(600), {
        let target = target.clone();
        let payloads = dup_payloads.clone();
        let next = Arc::new(AtomicU64::new(0));
        move |_, _| {
            let target = target.clone();
            let payloads = payloads.clone();
            let next = next.clone();
            async move {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                match payloads.get(i) {
                    Some(p) => Step::Sent(target.webhook(p).await.is_ok_and(|s| s == 200)),
                    None => Step::Finished,
                }
            }
        }
    })
    .await;
    anyhow::ensure!(
        warmup.failed == 0 && warmup.done == args.dup_events as u64,
        "delivering the duplicate set failed ({} of {} ok)",
        warmup.done,
        args.dup_events
    );

    println!(
        "invoicer bench http: {} s per measurement, clients {:?}, pool {} connections, {} cores",
        args.secs,
        args.clients,
        server_pool_size(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{:<16} {:>7} {:>10} {:>8} {:>8} {:>8} | {:>10} {:>8} {:>8} | {:>6} | {:>9} {:>6}",
        "surface",
        "clients",
        "events/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "pgbench/s",
        "p50 ms",
        "p99 ms",
        "ratio",
        "floor/s",
        "ratio"
    );
    let mut markdown = vec![
        "| surface | clients | events/s | p50 ms | p99 ms | pgbench tx/s | pgbench p50 ms | pgbench p99 ms | ratio | floor tx/s | ratio to floor |".to_owned(),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|".to_owned(),
    ];
    let secs = Duration::from_secs(args.secs);
    let mut failures = 0;
    // What each statement of a surface's SQL and of its floor costs, as pgbench -r measures it.
    let mut statement_lines = Vec::new();
    for workload in workloads {
        for &clients in &args.clients {
            settle(&pool).await;
            let mut http = match workload {
                Workload::Webhook | Workload::WebhookDup50 | Workload::WebhookDup100 => {
                    let target = target.clone();
                    let invoices = Arc::new(fixture.invoices.clone());
                    let payloads = dup_payloads.clone();
                    let tag = tag.clone();
                    drive(clients, secs, move |client, i| {
                        let target = target.clone();
                        let duplicate = match workload {
                            Workload::WebhookDup100 => true,
                            Workload::WebhookDup50 => i % 2 == 1,
                            _ => false,
                        };
                        let payload = if duplicate {
                            payloads[pick(client, i, payloads.len())].clone()
                        } else {
                            let id = format!("{tag}_{}_{client}_{i}", workload.name());
                            invoicer_core::payments::stripe::standin::checkout_event(
                                &format!("evt_{id}"),
                                &format!("pi_{id}"),
                                model::InvoiceId::from(invoices[pick(client, i, invoices.len())]),
                                1,
                                "usd",
                            )
                        };
                        async move { Step::Sent(target.webhook(&payload).await.is_ok_and(|s| s == 200)) }
                    })
                    .await
                }
                Workload::Api => {
                    let target = target.clone();
                    let body = Arc::new(harness::api_body());
                    let tag = tag.clone();
                    drive(clients, secs, move |client, i| {
                        let target = target.clone();
                        let body = body.clone();
                        let key = format!("bench-{tag}-{clients}-{client}-{i}");
                        async move {
                            Step::Sent(
                                target
                                    .api_create(&key, &body)
                                    .await
                                    .is_ok_and(|(s, _)| s == 201),
                            )
                        }
                    })
                    .await
                }
                Workload::Form | Workload::FormOneOrg => {
                    let users = form_targets.clone();
                    let shared = target.clone();
                    drive(clients, secs, move |client, _| {
                        let user = match workload {
                            Workload::Form => users[client].clone(),
                            _ => shared.clone(),
                        };
                        async move {
                            Step::Sent(
                                user.form_create(Uuid::now_v7())
                                    .await
                                    .is_ok_and(|s| s == 200),
                            )
                        }
                    })
                    .await
                }
            };
            settle(&pool).await;
            let run_pgbench = |scripts: &'static [(&'static str, u32)], name: String| {
                pgbench(
                    &lab.database_url,
                    &work,
                    scripts,
                    name,
                    clients,
                    args.secs,
                    &fixture,
                    &tag,
                    args.dup_events,
                    args.invoices,
                    &session,
                )
            };
            let mut pg = run_pgbench(workload.scripts(), workload.name().to_owned())
                .await
                .with_context(|| format!("pgbench for {}", workload.name()))?;
            let mut costs = vec![format!(
                "{} at {clients} clients, its SQL: {}",
                workload.name(),
                statement_costs(&pg.statements)
            )];
            // The floor, right after, on the same database.
            let floor = match workload.floor() {
                Some(scripts) => {
                    settle(&pool).await;
                    let sample = run_pgbench(scripts, format!("{}-floor", workload.name()))
                        .await
                        .with_context(|| format!("the floor of {}", workload.name()))?;
                    failures += sample.failed;
                    costs.push(format!(
                        "{} at {clients} clients, its floor: {}",
                        workload.name(),
                        statement_costs(&sample.statements)
                    ));
                    Some(sample.rate())
                }
                None => None,
            };
            failures += http.failed + pg.failed;
            let ratio = http.rate() / pg.rate();
            let (p50, p99, pg50, pg99) = (
                http.quantile_ms(0.5),
                http.quantile_ms(0.99),
                pg.quantile_ms(0.5),
                pg.quantile_ms(0.99),
            );
            let (floor_rate, floor_ratio) = match floor {
                Some(rate) => (format!("{rate:.0}"), format!("{:.2}", http.rate() / rate)),
                None => ("-".to_owned(), "-".to_owned()),
            };
            println!(
                "{:<16} {:>7} {:>10.0} {:>8.2} {:>8.2} {:>8} | {:>10.0} {:>8.2} {:>8.2} | {:>6.2} | {:>9} {:>6}",
                workload.name(),
                clients,
                http.rate(),
                p50,
                p99,
                http.failed,
                pg.rate(),
                pg50,
                pg99,
                ratio,
                floor_rate,
                floor_ratio
            );
            markdown.push(format!(
                "| {} | {clients} | {:.0} | {p50:.2} | {p99:.2} | {:.0} | {pg50:.2} | {pg99:.2} | {ratio:.2} | {floor_rate} | {floor_ratio} |",
                workload.name(),
                http.rate(),
                pg.rate()
            ));
            statement_lines.extend(costs);
        }
    }
    match server.peak_rss_kib() {
        Some(kib) => println!("server peak RSS (VmHWM): {:.1} MiB", kib as f64 / 1024.0),
        None => println!("server peak RSS: unavailable (no /proc)"),
    }
    match transferred(&server.base).await {
        Ok(files) => {
            for f in files {
                println!(
                    "owner's {} as transferred (Accept-Encoding: br, gzip): {:.1} KiB {} ({:.1} KiB raw), {}",
                    f.path,
                    f.sent as f64 / 1024.0,
                    f.encoding,
                    f.raw as f64 / 1024.0,
                    f.cache
                )
            }
        }
        Err(e) => println!("owner's wasm: not measured ({e:#})"),
    }
    server.kill().await?;
    println!("\n{}", markdown.join("\n"));
    println!("\nper statement, pgbench's average latency in ms (-r):");
    for line in &statement_lines {
        println!("- {line}");
    }
    pool.close().await;
    anyhow::ensure!(
        failures == 0,
        "{failures} requests or transactions failed (see {})",
        work.join("server.log").display()
    );
    Ok(())
}

/// One of the files the owner's pages load, as the server sends it.
struct Sent {
    path: String,
    encoding: String,
    sent: usize,
    raw: usize,
    cache: String,
}

/// The script and wasm a page loads (named in the login page's head, hashed names and all) and its
/// style sheet, fetched as a browser does (`Accept-Encoding: br, gzip`) and as they are.
async fn transferred(base: &str) -> anyhow::Result<Vec<Sent>> {
    let http = reqwest::Client::new();
    let page = http
        .get(format!("{base}/login"))
        .send()
        .await?
        .text()
        .await?;
    let mut paths: Vec<String> = page
        .split(['"', '\''])
        .filter(|s| {
            s.starts_with("/pkg/") && [".wasm", ".js", ".css"].iter().any(|e| s.ends_with(e))
        })
        .map(str::to_owned)
        .collect();
    paths.sort();
    paths.dedup();
    anyhow::ensure!(
        paths.iter().any(|p| p.ends_with(".wasm")),
        "the login page names no wasm"
    );
    let mut files = Vec::new();
    for path in paths {
        let get = |encoding: &'static str| {
            http.get(format!("{base}{path}"))
                .header("accept-encoding", encoding)
                .send()
        };
        let res = get("br, gzip").await?.error_for_status()?;
        let header = |name: &str| {
            (res.headers().get(name))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("none")
                .to_owned()
        };
        let (encoding, cache) = (header("content-encoding"), header("cache-control"));
        let sent = res.bytes().await?.len();
        let raw = get("identity")
            .await?
            .error_for_status()?
            .bytes()
            .await?
            .len();
        files.push(Sent {
            path,
            encoding,
            sent,
            raw,
            cache,
        });
    }
    Ok(files)
}

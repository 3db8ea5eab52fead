//! `lab faults-cluster`: the fault run on the local production topology of `scripts/cluster` (three
//! replicas behind HAProxy, two workers, a primary with a synchronous standby). The same load as
//! `lab faults` — each request sent to the next of the balancer and the three replicas in turn, so a
//! form's second submit and every retry land on another process — while it kill -9s a replica and
//! restarts it, kill -9s a worker (mid-send, at some moment) and restarts it, and finally stops the
//! primary with `-m immediate` and promotes the standby. Then the same checker proves, on the new
//! primary, that every acknowledged attempt took effect exactly once and every email left.

use std::sync::Arc;
use std::time::{Duration, Instant};

use uuid::Uuid;

use lab::harness::{self, Target};

use crate::faults::{
    check, invoice_id_of, outbox_drained, rand_ms, shell, verdict, Ledger, Load, Op,
};

#[derive(clap::Args, Debug)]
pub struct ClusterFaultArgs {
    /// The cluster script (its `kill-replica`, `start-replica`, `kill-worker`, `start-worker`,
    /// `failover` commands).
    #[arg(long, default_value = "scripts/cluster")]
    pub cluster: String,
    /// The balancer.
    #[arg(long, env = "CLUSTER_URL")]
    pub url: String,
    /// The replicas, comma separated (requests are spread over the balancer and these).
    #[arg(long, value_delimiter = ',')]
    pub replicas: Vec<String>,
    /// The webhook secret the replicas verify.
    #[arg(long, env = "STRIPE_WEBHOOK_SECRET", hide_env_values = true)]
    pub webhook_secret: String,
    /// The SMTP sink's folder.
    #[arg(long, env = "CLUSTER_MAIL_DIR")]
    pub sink_dir: std::path::PathBuf,
    #[arg(long, default_value_t = 5)]
    pub phase_secs: u64,
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Only one replica kill, one worker kill and the failover (CI's short run).
    #[arg(long)]
    pub short: bool,
}

pub async fn run(lab: &crate::Lab, args: ClusterFaultArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut pool = lab.connect().await?;
    let fixture = Arc::new(harness::seed(&pool, 50).await?);
    let mut target = Target::new(&args.url, &args.webhook_secret, &fixture)?;
    target.login(&fixture.email, &fixture.password).await?;
    let mut bases = vec![args.url.clone()];
    bases.extend(args.replicas.iter().cloned());
    let target = target.spread_over(bases);

    let mut load = Load::start(args.clients, &target, &fixture);

    let phase = Duration::from_secs(args.phase_secs);
    let cluster = |command: &str| format!("{} {command}", args.cluster);
    let mut faults = Vec::new();
    let mut worker_kills = 0;
    tokio::time::sleep(phase).await;
    shell(&cluster("kill-replica 2")).await?;
    faults.push("kill -9 replica 2");
    tokio::time::sleep(phase).await;
    shell(&cluster("start-replica 2")).await?;
    faults.push("replica 2 back");
    tokio::time::sleep(phase + Duration::from_millis(rand_ms(1000))).await;
    shell(&cluster("kill-worker 1")).await?;
    worker_kills += 1;
    faults.push("kill -9 worker 1");
    tokio::time::sleep(phase).await;
    shell(&cluster("start-worker 1")).await?;
    faults.push("worker 1 back");
    if !args.short {
        tokio::time::sleep(phase + Duration::from_millis(rand_ms(1000))).await;
        shell(&cluster("kill-replica 3")).await?;
        shell(&cluster("kill-replica 1")).await?;
        faults.push("kill -9 replicas 1 and 3");
        tokio::time::sleep(phase).await;
        shell(&cluster("start-replica 1")).await?;
        shell(&cluster("start-replica 3")).await?;
        faults.push("replicas 1 and 3 back");
    }
    tokio::time::sleep(phase).await;
    // The primary dies mid-commit under load; the standby is promoted.
    let died = Instant::now();
    shell(&cluster("failover")).await?;
    faults.push("primary stopped -m immediate, standby promoted");
    let first_write = first_write_after(&target, &load.ledger, died).await?;
    tokio::time::sleep(phase).await;

    let unanswered = load.drain(Duration::from_secs(90)).await?;
    // Our own pool still points at the dead primary's connections: a fresh one, through the balancer.
    pool.close().await;
    pool = lab.connect().await?;
    outbox_drained(
        &pool,
        fixture.org,
        Duration::from_secs(300),
        Duration::from_secs(45),
    )
    .await?;
    let report = check(&pool, &fixture, &load.ledger, &args.sink_dir, unanswered).await?;
    println!(
        "invoicer faults on the cluster: {} clients, {} s phases, {:.0} s in all",
        args.clients,
        args.phase_secs,
        started.elapsed().as_secs_f64()
    );
    println!("faults injected: {}", faults.join(", "));
    println!(
        "primary death to the first acknowledged write on the new primary: {:.1} s",
        first_write.as_secs_f64()
    );
    // Each worker can have sent one email and not yet marked it when the primary dies: the failover
    // counts as one crash per worker, as a kill does for one.
    let send_crashes = worker_kills + 2;
    pool.close().await;
    verdict(&load.ledger, &report, send_crashes)
}

/// How long after `died` the first API write was acknowledged (polled every 100 ms with one
/// Idempotency-Key, as a client retrying one attempt would; the checker counts it like the others).
async fn first_write_after(
    target: &Target,
    ledger: &Ledger,
    died: Instant,
) -> anyhow::Result<Duration> {
    let key = format!("failover-probe-{}", Uuid::new_v4().simple());
    let body = harness::api_body();
    let deadline = died + Duration::from_secs(120);
    loop {
        if let Ok((201, bytes)) = target.api_create(&key, &body).await {
            let took = died.elapsed();
            let invoices = invoice_id_of(&bytes).into_iter().collect();
            ledger.ops.lock().unwrap().push(Op::Api {
                key,
                sent: 1,
                invoices,
            });
            return Ok(took);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no write succeeded within 120 s of the failover"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[derive(clap::Args, Debug)]
pub struct ClusterBenchArgs {
    /// Where requests go (the balancer, or one replica).
    #[arg(long, env = "CLUSTER_URL")]
    pub url: String,
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    #[arg(long, default_value_t = 10)]
    pub secs: u64,
}

/// `lab bench cluster`: API creates (each with its own Idempotency-Key) from `clients` concurrent
/// clients for `secs` seconds through `url`; prints creates/s and latency percentiles.
pub async fn bench(lab: &crate::Lab, args: ClusterBenchArgs) -> anyhow::Result<()> {
    let pool = lab.connect().await?;
    let fixture = harness::seed(&pool, 1).await?;
    pool.close().await;
    let target = Target::new(&args.url, "unused", &fixture)?;
    let body = harness::api_body();
    let deadline = Instant::now() + Duration::from_secs(args.secs);
    let tasks: Vec<_> = (0..args.clients)
        .map(|c| {
            let (target, body) = (target.clone(), body.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut errors = 0u64;
                let mut i = 0u64;
                while Instant::now() < deadline {
                    let key = format!("bench-{c}-{i}-{}", Uuid::new_v4().simple());
                    let sent = Instant::now();
                    match target.api_create(&key, &body).await {
                        Ok((201, _)) => latencies.push(sent.elapsed()),
                        _ => errors += 1,
                    }
                    i += 1;
                }
                (latencies, errors)
            })
        })
        .collect();
    let started = Instant::now();
    let (mut all, mut errors) = (Vec::new(), 0);
    for task in tasks {
        let (latencies, e) = task.await?;
        all.extend(latencies);
        errors += e;
    }
    let secs = started.elapsed().as_secs_f64().max(args.secs as f64);
    all.sort();
    let at = |q: f64| {
        all.get(((all.len() as f64 - 1.0) * q).round() as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "{}: {} clients, {:.0} creates/s, p50 {:.1} ms, p99 {:.1} ms, errors {errors}",
        args.url,
        args.clients,
        all.len() as f64 / secs,
        at(0.5),
        at(0.99)
    );
    Ok(())
}

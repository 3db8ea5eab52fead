//! `lab faults-cluster`: the fault run on the local production topology of `scripts/cluster` (etcd
//! ×3, Postgres ×3 under Patroni, HAProxy, three app replicas, two workers). The same load as `lab
//! faults` — each request sent to the next of the balancer and the three replicas in turn, so a
//! form's second submit and every retry land on another process — while it kills app replicas, a
//! worker, the Postgres leader (its postmaster, and the whole node), a Postgres replica, an etcd
//! member and the leader's Patroni alone, and hands over once by plan. Patroni promotes with no
//! command; the checker then proves, on the last leader, that every acknowledged attempt took effect
//! exactly once and every email left, and that no client was answered 500 or a 503 without
//! Retry-After.

use std::sync::Arc;
use std::time::{Duration, Instant};

use uuid::Uuid;

use lab::harness::{self, Target};

use crate::faults::{
    check, invoice_id_of, outbox_drained, rand_ms, schedules, shell, verdict, webhooks, Ledger,
    Load, Op,
};

#[derive(clap::Args, Debug)]
pub struct ClusterFaultArgs {
    /// The cluster script (its `kill-replica`, `start-replica`, `kill-worker`, `start-worker`,
    /// `kill-primary`, `kill-node`, `kill-patroni`, `start-node`, `kill-etcd`, `start-etcd`,
    /// `switchover`, `members`, `wait-healthy` commands).
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
    /// Only one app replica kill, one worker kill and one leader kill (CI's short run).
    #[arg(long)]
    pub short: bool,
    /// Weekly schedules made five weeks ago: the workers issue their six missed periods each (the
    /// jobs surface) while the faults run.
    #[arg(long, default_value_t = 40)]
    pub schedules: usize,
    #[command(flatten)]
    pub receiver: webhooks::Receiver,
}

/// The Postgres nodes as Patroni names them: (node number, role).
async fn members(cluster: &str) -> anyhow::Result<Vec<(u32, String)>> {
    let out = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{cluster} members"))
        .output()
        .await?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let node = words.next()?.strip_prefix("pg")?.parse().ok()?;
            Some((node, words.next()?.to_owned()))
        })
        .collect())
}

async fn node_with(cluster: &str, role: &str) -> Option<u32> {
    members(cluster)
        .await
        .ok()?
        .into_iter()
        .find_map(|(node, r)| (r == role).then_some(node))
}

/// One run's faults and what they cost.
struct Run<'a> {
    args: &'a ClusterFaultArgs,
    target: &'a Target,
    ledger: &'a Ledger,
    faults: Vec<String>,
    /// Per lost leader: what happened, and the time from it to the first write the new leader
    /// acknowledged.
    outages: Vec<(String, Duration)>,
    worker_kills: u32,
}

impl Run<'_> {
    /// The leader's postmaster dies; its Patroni hands over at once (primary_start_timeout 0).
    async fn kill_primary(&mut self) -> anyhow::Result<()> {
        self.lose_leader(
            "kill-primary",
            "SIGKILL to the leader's postmaster (node {n})",
            None,
        )
        .await
    }

    async fn cluster(&mut self, command: &str, what: &str) -> anyhow::Result<()> {
        shell(&format!("{} {command}", self.args.cluster)).await?;
        self.faults.push(what.to_owned());
        Ok(())
    }

    /// Until the cluster has a leader, a synchronous replica and three nodes again.
    async fn settle(&self) -> anyhow::Result<()> {
        shell(&format!("{} wait-healthy 120", self.args.cluster)).await
    }

    async fn phase(&self) {
        tokio::time::sleep(Duration::from_secs(self.args.phase_secs)).await;
    }

    async fn leader(&self) -> anyhow::Result<u32> {
        node_with(&self.args.cluster, "leader")
            .await
            .ok_or_else(|| anyhow::anyhow!("the cluster has no leader"))
    }

    /// The leader is lost by `command` (`{n}` is its node): waits for another node to lead and for
    /// the first write acknowledged after that, then runs `after` (`{n}` again) and waits until the
    /// cluster has a leader, a synchronous replica and three nodes again.
    async fn lose_leader(
        &mut self,
        command: &str,
        what: &str,
        after: Option<&str>,
    ) -> anyhow::Result<()> {
        self.settle().await?;
        tokio::time::sleep(Duration::from_millis(rand_ms(1000))).await;
        let old = self.leader().await?;
        let on_old = |text: &str| text.replace("{n}", &old.to_string());
        let what = on_old(what);
        let died = Instant::now();
        self.cluster(&on_old(command), &what).await?;
        let took = first_write_after(self.args, self.target, self.ledger, old, died).await?;
        println!(
            "  {what}: the new leader acknowledged a write {:.1} s later",
            took.as_secs_f64()
        );
        self.outages.push((what, took));
        if let Some(after) = after {
            self.cluster(&on_old(after), &format!("node {old} back"))
                .await?;
        }
        self.settle().await
    }
}

pub async fn run(lab: &crate::Lab, args: ClusterFaultArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut pool = lab.connect().await?;
    let fixture = Arc::new(harness::seed(&pool, 50).await?);
    let endpoint = args.receiver.register(&pool, fixture.org).await?;
    schedules::seed(&pool, fixture.org, args.schedules, 35, false).await?;
    let mut target = Target::new(&args.url, &args.webhook_secret, &fixture)?;
    target.login(&fixture.email, &fixture.password).await?;
    let mut bases = vec![args.url.clone()];
    bases.extend(args.replicas.iter().cloned());
    let target = target.spread_over(bases);

    let mut load = Load::start(args.clients, &target, &fixture);
    let mut run = Run {
        args: &args,
        target: &target,
        ledger: &load.ledger,
        faults: Vec::new(),
        outages: Vec::new(),
        worker_kills: 0,
    };

    run.phase().await;
    run.cluster("kill-replica 2", "kill -9 app replica 2")
        .await?;
    run.phase().await;
    run.cluster("start-replica 2", "app replica 2 back").await?;
    run.phase().await;
    tokio::time::sleep(Duration::from_millis(rand_ms(1000))).await;
    run.cluster("kill-worker 1", "kill -9 worker 1").await?;
    run.worker_kills += 1;
    run.phase().await;
    run.cluster("start-worker 1", "worker 1 back").await?;
    run.phase().await;
    run.kill_primary().await?;
    if !args.short {
        run.phase().await;
        // A Postgres replica: the synchronous one, so Patroni must name the other one synchronous.
        let sync = node_with(&args.cluster, "sync_standby")
            .await
            .ok_or_else(|| anyhow::anyhow!("no synchronous replica"))?;
        run.cluster(
            &format!("kill-node {sync}"),
            &format!("kill -9 the synchronous replica (node {sync})"),
        )
        .await?;
        run.phase().await;
        run.cluster(&format!("start-node {sync}"), &format!("node {sync} back"))
            .await?;
        run.settle().await?;
        run.phase().await;
        // One etcd member of three: the other two keep the quorum and the leader keeps its key.
        run.cluster("kill-etcd 1", "kill -9 etcd member 1").await?;
        run.phase().await;
        run.cluster("start-etcd 1", "etcd member 1 back").await?;
        run.settle().await?;
        run.phase().await;
        // The whole leader node (Patroni and Postgres) at once: its key expires after the ttl.
        run.lose_leader(
            "kill-node {n}",
            "kill -9 the leader node {n} (Patroni and Postgres)",
            Some("start-node {n}"),
        )
        .await?;
        run.phase().await;
        // The leader's Patroni alone: its Postgres keeps running, the balancer stops routing to it
        // within 0.6 s and cuts its sessions, the key expires, the synchronous replica is promoted;
        // Patroni, back, demotes and rewinds the old Postgres.
        run.lose_leader(
            "kill-patroni {n}",
            "kill -9 the leader's Patroni (node {n}), Postgres left running",
            Some("start-node {n}"),
        )
        .await?;
        run.phase().await;
        run.cluster("kill-replica 1", "kill -9 app replica 1")
            .await?;
        run.cluster("kill-replica 3", "kill -9 app replica 3")
            .await?;
        run.phase().await;
        run.cluster("start-replica 1", "app replica 1 back").await?;
        run.cluster("start-replica 3", "app replica 3 back").await?;
        run.phase().await;
        run.kill_primary().await?;
        run.phase().await;
        run.lose_leader("switchover", "switchover from node {n}", None)
            .await?;
    }
    run.phase().await;
    let Run {
        faults,
        outages,
        worker_kills,
        ..
    } = run;

    let unanswered = load.drain(Duration::from_secs(90)).await?;
    // Our own pool still points at a dead leader's connections: a fresh one, through the balancer.
    pool.close().await;
    pool = lab.connect().await?;
    let behind = schedules::settle(&pool, fixture.org, Duration::from_secs(180)).await?;
    // Until empty, or no progress for 45 s (stuck), or half an hour.
    outbox_drained(
        &pool,
        fixture.org,
        Duration::from_secs(1800),
        Duration::from_secs(45),
    )
    .await?;
    let report = check(&pool, &fixture, &load.ledger, &args.sink_dir, unanswered).await?;
    let scheduled = schedules::check(&pool, fixture.org, &args.sink_dir, behind).await?;
    println!(
        "invoicer faults on the cluster: {} clients, {} s phases, {:.0} s in all",
        args.clients,
        args.phase_secs,
        started.elapsed().as_secs_f64()
    );
    println!("faults injected: {}", faults.join(", "));
    let mut times: Vec<f64> = outages.iter().map(|(_, d)| d.as_secs_f64()).collect();
    times.sort_by(f64::total_cmp);
    for (what, took) in &outages {
        println!(
            "  {what}: first acknowledged write on the new leader after {:.1} s",
            took.as_secs_f64()
        );
    }
    println!(
        "leader lost {} times: to the first acknowledged write, median {:.1} s, max {:.1} s",
        times.len(),
        times[times.len() / 2],
        times[times.len() - 1]
    );
    println!(
        "schedules: {} weekly, {} periods due, {} invoices, missing {}, doubled {}; left behind {behind:?}",
        args.schedules, scheduled.periods_due, scheduled.invoices, scheduled.missing, scheduled.doubled
    );
    // Prints what the receiver got; fails the run (after the schedules' line) if it lost anything.
    let hooks = args
        .receiver
        .check(&pool, fixture.org, endpoint.as_ref())
        .await;
    let (internal, unavailable, bare) = target.answers.get();
    println!(
        "answers: 503 with Retry-After {}, 503 without {bare}, 500 {internal}",
        unavailable - bare
    );
    // Each worker can have sent one email and not yet marked it when the leader is lost: each lost
    // leader counts as one crash per worker, as a kill does for one.
    // Each is as many emails as a worker holds at once (its customer lane's places).
    let send_crashes = (worker_kills + 2 * outages.len() as u32) * crate::faults::report::in_hand();
    pool.close().await;
    anyhow::ensure!(
        scheduled.ok(),
        "the schedules lost or doubled work: {scheduled:?}"
    );
    hooks?;
    verdict(&load.ledger, &report, send_crashes)?;
    anyhow::ensure!(
        internal == 0 && bare == 0,
        "clients were answered 500 {internal} times and 503 without Retry-After {bare} times"
    );
    Ok(())
}

/// How long after `died` the first API write was acknowledged by a leader other than `old` (polled
/// every 100 ms with one Idempotency-Key, as a client retrying one attempt would; the checker counts
/// it like the others).
async fn first_write_after(
    args: &ClusterFaultArgs,
    target: &Target,
    ledger: &Ledger,
    old: u32,
    died: Instant,
) -> anyhow::Result<Duration> {
    let deadline = died + Duration::from_secs(120);
    // Writes the old leader takes before it is cut off are not the new leader's.
    loop {
        if node_with(&args.cluster, "leader")
            .await
            .is_some_and(|n| n != old)
        {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "no new leader within 120 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let key = format!("failover-probe-{}", Uuid::new_v4().simple());
    let body = harness::api_body();
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
            "no write succeeded within 120 s of losing the leader"
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

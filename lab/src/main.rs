//! `lab bench http|outbox` and `lab faults`: they drive a built `server` binary as a process
//! (scripts/bench and scripts/faults set up Postgres, SMTP and the build).

mod bench_bank;
mod bench_charges;
mod bench_export;
mod bench_http;
mod bench_outbox;
mod bench_read;
mod bench_schedules;
mod faults;
mod faults_cluster;
mod pgbench;
mod soak;

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "lab",
    about = "invoicer's benchmarks and fault harness (not shipped)"
)]
struct Args {
    /// Postgres the server and the checks use.
    #[arg(long, env = "DATABASE_URL", global = true)]
    database_url: Option<String>,
    /// The `server` binary to drive.
    #[arg(
        long,
        env = "INVOICER_SERVER_BIN",
        default_value = "target/release/server",
        global = true
    )]
    server: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Benchmarks (print numbers; not part of the test run).
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Crash the server and Postgres under load, then check nothing was lost or done twice
    /// (scripts/faults sets up a private Postgres and an SMTP server).
    Faults(faults::FaultArgs),
    /// Years of data for the read benchmarks (small: 1k invoices; medium: 200k; large: 1M).
    Datagen(lab::datagen::DatagenArgs),
    /// Mixed load for a long while with the retention job on, time compressed: the trimmed tables
    /// must level off (a debug build: the compressed windows are honoured only where failpoints are).
    Soak(soak::SoakArgs),
    /// The fault run on the topology of scripts/cluster: replicas and a worker killed, the primary
    /// stopped and the standby promoted, under load; then the same checker.
    FaultsCluster(faults_cluster::ClusterFaultArgs),
    /// The local Stripe of dev and tests (scripts/stripe-local): Checkout sessions, a hosted
    /// checkout page, signed webhook delivery.
    StripeLocal {
        #[arg(long, default_value_t = 12111)]
        port: u16,
        /// Where events go.
        #[arg(
            long,
            env = "STRIPE_LOCAL_WEBHOOK_URL",
            default_value = "http://127.0.0.1:3000/webhooks/stripe"
        )]
        webhook_url: String,
        /// The endpoint secret events are signed with (the app's STRIPE_WEBHOOK_SECRET).
        #[arg(
            long,
            env = "STRIPE_WEBHOOK_SECRET",
            default_value = "whsec_dev_invoicer",
            hide_env_values = true
        )]
        webhook_secret: String,
        /// The secret key requests must carry (the app's STRIPE_SECRET_KEY, read from the same
        /// variable).
        #[arg(
            long,
            env = "STRIPE_SECRET_KEY",
            default_value = "sk_test_local",
            hide_env_values = true
        )]
        api_key: String,
        /// Deliver each event two or three times, some at once, out of order.
        #[arg(long)]
        chaos: bool,
    },
    /// The local Peppol access point of dev and tests (scripts/peppol-local): phoss-ap's submit and
    /// status API, a ledger by SBDH instance id, failures on request, inbound deliveries.
    PeppolLocal {
        #[arg(long, default_value_t = 12112)]
        port: u16,
        /// The token requests must carry (the app's PEPPOL_AP_TOKEN).
        #[arg(
            long,
            env = "PEPPOL_AP_TOKEN",
            default_value = "peppol-local-token",
            hide_env_values = true
        )]
        token: String,
        /// The share of submissions that fail (0 to 1).
        #[arg(long, default_value_t = 0.0)]
        fail_rate: f64,
        /// Signs deliveries to the app's inbound webhook (the app's PEPPOL_INBOUND_SECRET).
        #[arg(
            long,
            env = "PEPPOL_INBOUND_SECRET",
            default_value = invoicer_core::peppol::DEV_INBOUND_SECRET,
            hide_env_values = true
        )]
        inbound_secret: String,
    },
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Commit of an outbox row -> arrival at the SMTP server (scripts/bench starts one).
    Outbox {
        #[arg(long, default_value_t = 200)]
        count: usize,
        #[arg(long)]
        smtp_url: String,
        /// The SMTP sink's folder (its attempts.log records arrival times).
        #[arg(long)]
        sink_dir: PathBuf,
        /// Then this many emails queued at once and drained by a worker with each number of places
        /// per lane in `--concurrency`: emails/s (0: none).
        #[arg(long, default_value_t = 0)]
        throughput: usize,
        #[arg(long, value_delimiter = ',', default_value = "1,8")]
        concurrency: Vec<usize>,
    },
    /// The read paths at 1/16/64 clients against a running server over `lab datagen` data.
    Read(bench_read::ReadBenchArgs),
    /// API creates through a running cluster (scripts/cluster), or one replica of it.
    Cluster(faults_cluster::ClusterBenchArgs),
    /// Every surface over HTTP at 1/16/64 clients against pgbench running the same SQL
    /// (scripts/bench starts Postgres and builds in release).
    Http(bench_http::HttpBenchArgs),
    /// Many schedules due at once: the scheduler's runs against pgbench running the same SQL.
    Schedules(bench_schedules::SchedulesBenchArgs),
    /// Many invoices due for charging at once: the workers' charges at a local Stripe against
    /// pgbench running the same SQL.
    Charges(bench_charges::ChargesBenchArgs),
    /// A bank statement of 10,000 entries imported and imported again (every entry a duplicate):
    /// entries/s and peak RSS, against pgbench running the same SQL.
    Bank(bench_bank::BankBenchArgs),
    /// The CSV exports of the generated big org through a running server, its memory sampled, each
    /// file read back by Python's csv module and compared with the database.
    Export(bench_export::ExportBenchArgs),
}

/// What every lab command needs: where the database is and which server binary to run.
pub struct Lab {
    pub database_url: String,
    pub server: PathBuf,
}

impl Lab {
    /// A pool on the database, migrated (so seeding works before the server first starts).
    pub async fn connect(&self) -> anyhow::Result<sqlx::PgPool> {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(8)
            .connect(&self.database_url)
            .await
            .context("cannot connect to DATABASE_URL")?;
        invoicer_core::MIGRATOR
            .run(&pool)
            .await
            .context("applying database migrations")?;
        Ok(pool)
    }
}

/// `given`, or else a fresh folder `invoicer-<name>-<pid>` in the temporary directory; created.
pub(crate) fn work_dir(given: Option<&Path>, name: &str) -> std::io::Result<PathBuf> {
    let dir = given.map_or_else(
        || std::env::temp_dir().join(format!("invoicer-{name}-{}", std::process::id())),
        Path::to_path_buf,
    );
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_target(false)
        .init();
    match run(args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    if let Command::StripeLocal {
        port,
        webhook_url,
        webhook_secret,
        api_key,
        chaos,
    } = args.command
    {
        let config = lab::stripe_local::Config {
            api_key,
            webhook_url: Some(webhook_url.clone()),
            webhook_secret,
            chaos,
            fail_first: 0,
            hold: None,
            ..Default::default()
        };
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let stripe = lab::stripe_local::LocalStripe::start(addr, config).await?;
        eprintln!(
            "local Stripe on {} (events to {webhook_url}{})",
            stripe.base,
            if chaos { ", chaos" } else { "" }
        );
        tokio::signal::ctrl_c().await?;
        return Ok(());
    }
    if let Command::PeppolLocal {
        port,
        token,
        fail_rate,
        inbound_secret,
    } = args.command
    {
        let config = lab::peppol_local::Config {
            token,
            fail_rate,
            inbound_secret,
        };
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let ap = lab::peppol_local::LocalAccessPoint::start(addr, config).await?;
        eprintln!(
            "local Peppol access point on {} (failing {:.0} % of submissions)",
            ap.base,
            fail_rate * 100.0
        );
        tokio::signal::ctrl_c().await?;
        return Ok(());
    }
    let lab = Lab {
        database_url: args.database_url.context("DATABASE_URL must be set")?,
        server: args.server,
    };
    match args.command {
        Command::Bench {
            command:
                BenchCommand::Outbox {
                    count,
                    smtp_url,
                    sink_dir,
                    throughput,
                    concurrency,
                },
        } => {
            bench_outbox::run(&lab, &smtp_url, &sink_dir, count).await?;
            if throughput > 0 {
                bench_outbox::throughput(&lab, &smtp_url, &sink_dir, throughput, &concurrency)
                    .await?;
            }
            Ok(())
        }
        Command::Bench {
            command: BenchCommand::Http(args),
        } => bench_http::run(&lab, args).await,
        Command::Faults(args) => faults::run(&lab, args).await,
        Command::FaultsCluster(args) => faults_cluster::run(&lab, args).await,
        Command::Datagen(args) => lab::datagen::run(&lab.connect().await?, &args)
            .await
            .map(|_| ()),
        Command::Soak(args) => soak::run(&lab, args).await,
        Command::Bench {
            command: BenchCommand::Cluster(args),
        } => faults_cluster::bench(&lab, args).await,
        Command::Bench {
            command: BenchCommand::Schedules(args),
        } => bench_schedules::run(&lab, args).await,
        Command::Bench {
            command: BenchCommand::Charges(args),
        } => bench_charges::run(&lab, args).await,
        Command::Bench {
            command: BenchCommand::Bank(args),
        } => bench_bank::run(&lab, args).await,
        Command::Bench {
            command: BenchCommand::Read(args),
        } => bench_read::run(&lab.connect().await?, args).await,
        Command::Bench {
            command: BenchCommand::Export(args),
        } => bench_export::run(&lab.connect().await?, args).await,
        Command::StripeLocal { .. } | Command::PeppolLocal { .. } => {
            unreachable!("served above")
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// The local Stripe takes its API key from the variable the app sends it from, as it takes its
    /// webhook secret: a server started with another key is answered, not refused with 401.
    #[test]
    fn the_local_stripe_reads_the_apps_secret_key() {
        let command = super::Args::command();
        let local = command
            .find_subcommand("stripe-local")
            .expect("the stripe-local command");
        let env = |id: &str| {
            local
                .get_arguments()
                .find(|a| a.get_id() == id)
                .and_then(|a| a.get_env())
                .map(|e| e.to_string_lossy().into_owned())
        };
        assert_eq!(env("api_key").as_deref(), Some("STRIPE_SECRET_KEY"));
        assert_eq!(
            env("webhook_secret").as_deref(),
            Some("STRIPE_WEBHOOK_SECRET")
        );
    }
}

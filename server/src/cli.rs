//! `server` serves; `server admin ...` manages accounts.

use anyhow::Context;
use app::ssr::{failpoint, AppState};
use clap::{Parser, Subcommand};

use crate::config::Config;

#[derive(Parser, Debug)]
#[command(name = "server", about = "invoicer: invoices that never happen twice")]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the web app (the default). Runs WORKERS outbox workers too.
    Serve,
    /// Run WORKERS outbox workers (default 1) without serving; several processes may share a database.
    Worker,
    /// Account administration.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Benchmarks (print numbers; not part of the test run).
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Crash the server and Postgres under load, then check nothing was lost or done twice
    /// (scripts/faults sets up a private Postgres and an SMTP server).
    Faults(crate::faults::FaultArgs),
    /// A local stand-in for Stripe: signed events delivered to the webhook route.
    Stripe {
        #[command(subcommand)]
        command: StripeCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Commit of an outbox row -> arrival at the SMTP server (scripts/bench-outbox starts one).
    Outbox {
        #[arg(long, default_value_t = 200)]
        count: usize,
        #[arg(long)]
        smtp_url: String,
        /// The SMTP sink's folder (its attempts.log records arrival times).
        #[arg(long)]
        sink_dir: std::path::PathBuf,
    },
    /// Every surface over HTTP at 1/16/64 clients against pgbench running the same SQL
    /// (scripts/bench starts Postgres and builds in release).
    Http(crate::bench_http::HttpBenchArgs),
}

#[derive(Subcommand, Debug)]
pub enum StripeCommand {
    /// Build an event with a fresh evt_ id, sign it with STRIPE_WEBHOOK_SECRET and POST it.
    /// EVENT is checkout.session.completed (needs --invoice) or charge.refunded (needs --payment-intent).
    Trigger {
        event: String,
        /// The invoice paid (checkout.session.completed).
        #[arg(long)]
        invoice: Option<uuid::Uuid>,
        /// Amount in minor units; defaults to what is still due on the invoice.
        #[arg(long)]
        amount: Option<i64>,
        /// The payment refunded (charge.refunded).
        #[arg(long = "payment-intent")]
        payment_intent: Option<String>,
        /// Webhook URL; defaults to this configuration's own server.
        #[arg(long)]
        url: Option<String>,
    },
    /// Re-send a stored event (same bytes) with a fresh signature.
    Resend {
        event_id: String,
        #[arg(long)]
        url: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum AdminCommand {
    /// Create an organisation and its owner; prints the org id.
    CreateOrg {
        #[arg(long)]
        org: String,
        #[arg(long)]
        email: String,
        #[arg(long)]
        password: String,
    },
    /// Create an API key for the org of the user with this email; prints the key, once.
    CreateApiKey {
        #[arg(long)]
        email: String,
        #[arg(long, default_value = "CLI key")]
        name: String,
    },
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let config = Config::from_env()?;
    match args.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(config).await,
        Command::Worker => {
            failpoint::init();
            let pool = connect_and_migrate(&config).await?;
            let (stop, workers) = start_workers(&config, &pool, config.workers.max(1))?;
            shutdown_signal().await;
            stop_workers(stop, workers).await;
            Ok(())
        }
        Command::Admin { command } => admin(config, command).await,
        Command::Stripe { command } => stripe(config, command).await,
        Command::Bench {
            command:
                BenchCommand::Outbox {
                    count,
                    smtp_url,
                    sink_dir,
                },
        } => {
            let pool = connect_and_migrate(&config).await?;
            crate::bench::outbox_latency(&pool, &smtp_url, &sink_dir, count).await
        }
        Command::Bench {
            command: BenchCommand::Http(args),
        } => crate::bench_http::run(&config, args).await,
        Command::Faults(args) => crate::faults::run(&config, args).await,
    }
}

pub(crate) async fn connect_and_migrate(config: &Config) -> anyhow::Result<sqlx::PgPool> {
    let pool = config.connect().await?;
    app::ssr::MIGRATOR
        .run(&pool)
        .await
        .context("applying database migrations")?;
    Ok(pool)
}

async fn serve(config: Config) -> anyhow::Result<()> {
    failpoint::init();
    let pool = connect_and_migrate(&config).await?;
    let conf = leptos::config::get_configuration(None)?;
    let leptos_options = conf.leptos_options;
    let addr = leptos_options.site_addr;
    if config.dev_mode && config.stripe_secret_is_default {
        tracing::info!(
            "dev mode: Stripe webhook secret is {} (set STRIPE_WEBHOOK_SECRET to change it)",
            app::ssr::state::DEV_WEBHOOK_SECRET
        );
    }
    let state = AppState {
        pool,
        leptos_options,
        settings: config.settings(),
    };
    let (stop, workers) = start_workers(&config, &state.pool, config.workers)?;
    let app = crate::web::router(state, config.secure_cookies()).await?;
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    tracing::info!("invoicer is listening: open http://{addr}/signup to start");
    axum::serve(listener, app.into_make_service())
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    stop_workers(stop, workers).await;
    Ok(())
}

type Workers = Vec<tokio::task::JoinHandle<()>>;

fn start_workers(
    config: &Config,
    pool: &sqlx::PgPool,
    count: usize,
) -> anyhow::Result<(tokio::sync::watch::Sender<bool>, Workers)> {
    let mailer = app::ssr::mail::Mailer::new(config.smtp_url.as_deref(), &config.mail_dir)
        .map_err(anyhow::Error::msg)?;
    if count > 0 && config.smtp_url.is_none() {
        tracing::info!(
            "no SMTP_URL: emails are written to {}",
            config.mail_dir.display()
        );
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let workers = (0..count)
        .map(|n| {
            let worker = app::ssr::worker::WorkerConfig {
                id: format!("{}-{}-{n}", hostname(), std::process::id()),
                ..config.worker.clone()
            };
            tokio::spawn(app::ssr::worker::run(
                pool.clone(),
                mailer.clone(),
                worker,
                stopped.clone(),
            ))
        })
        .collect();
    Ok((stop, workers))
}

/// Graceful: workers stop leasing and finish the rows they hold.
async fn stop_workers(stop: tokio::sync::watch::Sender<bool>, workers: Workers) {
    let _ = stop.send(true);
    for worker in workers {
        let _ = worker.await;
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "host".into())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = ctrl_c => {},
        _ = term.recv() => {},
    }
    tracing::info!("shutting down");
}

async fn admin(config: Config, command: AdminCommand) -> anyhow::Result<()> {
    let pool = connect_and_migrate(&config).await?;
    match command {
        AdminCommand::CreateOrg {
            org,
            email,
            password,
        } => {
            let account = app::ssr::accounts::create_org_with_owner(&pool, &org, &email, &password)
                .await
                .context("cannot create the organisation")?;
            println!("{}", account.org_id);
        }
        AdminCommand::CreateApiKey { email, name } => {
            let (user, org) = app::ssr::api_keys::org_of_user(&pool, &email)
                .await?
                .with_context(|| format!("no user with email {email}"))?;
            let key = app::ssr::api_keys::create(&pool, org, Some(user), &name).await?;
            println!("{}", key.plaintext);
        }
    }
    Ok(())
}

async fn stripe(config: Config, command: StripeCommand) -> anyhow::Result<()> {
    use app::ssr::stripe::standin;

    let secret = config.stripe_webhook_secrets[0].clone();
    let (url, event_id, payload) = match command {
        StripeCommand::Trigger {
            event,
            invoice,
            amount,
            payment_intent,
            url,
        } => {
            let (id, payload) = match event.as_str() {
                "checkout.session.completed" => {
                    let invoice = invoice.context("checkout.session.completed needs --invoice ID")?;
                    let pool = config.connect().await?;
                    let due = standin::amount_due(&pool, invoice).await?;
                    let (amount, currency) = match (amount, due) {
                        (Some(amount), Some((_, currency))) => (amount, currency),
                        (None, Some(due)) => due,
                        (Some(amount), None) => (amount, "usd".to_owned()),
                        (None, None) => anyhow::bail!(
                            "invoice {invoice} is not in this database: pass --amount CENTS to send anyway"
                        ),
                    };
                    standin::checkout_completed(invoice, amount, &currency)
                }
                "charge.refunded" => {
                    let pi = payment_intent.context("charge.refunded needs --payment-intent PI")?;
                    standin::charge_refunded(&pi)
                }
                other => anyhow::bail!(
                    "unsupported event type {other}: use checkout.session.completed or charge.refunded"
                ),
            };
            (url, id, payload)
        }
        StripeCommand::Resend { event_id, url } => {
            let pool = config.connect().await?;
            let payload = standin::stored_payload(&pool, &event_id)
                .await?
                .with_context(|| format!("no stored event {event_id}"))?;
            (url, event_id, payload)
        }
    };
    let url = url.unwrap_or_else(|| config.webhook_url());
    let (status, body) = standin::deliver(&url, &secret, &payload)
        .await
        .with_context(|| format!("cannot reach {url}"))?;
    println!("{event_id} {status}");
    if !(200..300).contains(&status) {
        anyhow::bail!("the webhook answered {status}: {body}");
    }
    Ok(())
}

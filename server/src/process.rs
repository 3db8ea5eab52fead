//! The binary's long-running jobs: serving HTTP (with in-process workers) and working the outbox,
//! each started after the migrations and stopped gracefully on SIGTERM or Ctrl-C.

use anyhow::Context;
use invoicer_core::{failpoint, AppState};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::Checked;
use crate::db;
use crate::web::MetricsAccess;

/// `server` / `server serve`: the web app, and WORKERS outbox workers beside it.
pub async fn serve(config: Checked) -> anyhow::Result<()> {
    failpoint::init(config.dev_mode);
    let pool = db::connect_and_migrate(&config.database).await?;
    let conf = leptos::config::get_configuration(None)?;
    let leptos_options = crate::assets::site(conf.leptos_options);
    let addr = leptos_options.site_addr;
    if config.dev_mode && config.stripe.secret_is_default() {
        tracing::info!(
            "dev mode: Stripe webhook secret is {} (set STRIPE_WEBHOOK_SECRET to change it)",
            invoicer_core::state::DEV_WEBHOOK_SECRET
        );
    }
    // `scripts/dev --demo`: a populated demo org, in dev mode only.
    if std::env::var("INVOICER_SEED_DEMO").is_ok_and(|v| v == "1") {
        if !config.dev_mode {
            anyhow::bail!("INVOICER_SEED_DEMO is for development (LEPTOS_ENV=DEV) only");
        }
        match invoicer_core::demo::seed(&pool).await {
            Ok(Some(_)) => tracing::info!(
                "demo org seeded: log in as {} / {}",
                invoicer_core::demo::EMAIL,
                invoicer_core::demo::PASSWORD
            ),
            Ok(None) => tracing::info!(
                "demo org already there: log in as {}",
                invoicer_core::demo::EMAIL
            ),
            Err(e) => anyhow::bail!("seeding the demo org: {e}"),
        }
    }
    let reads = db::connect_reads(&config.database)?;
    let state = AppState::new(pool, reads, config.settings());
    let workers = Workers::start(&config, &state.pool, config.workers)?;
    let metrics = match (&config.metrics.metrics_addr, &config.metrics.metrics_token) {
        (Some(_), _) => MetricsAccess::Off,
        (None, Some(token)) => MetricsAccess::Token(token.expose().to_owned()),
        (None, None) if config.dev_mode => MetricsAccess::Open,
        (None, None) => {
            tracing::info!("no METRICS_TOKEN or METRICS_ADDR: /metrics is off");
            MetricsAccess::Off
        }
    };
    if let Some(metrics_addr) = config.metrics.metrics_addr {
        let listener = tokio::net::TcpListener::bind(metrics_addr)
            .await
            .with_context(|| format!("METRICS_ADDR: cannot listen on {metrics_addr}"))?;
        tracing::info!("metrics on http://{metrics_addr}/metrics");
        let metrics_app = crate::web::metrics_router(state.clone());
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, metrics_app).await {
                tracing::error!(error = %e, "metrics listener stopped");
            }
        });
    }
    let app = crate::web::router(state, leptos_options, config.site.guard(), metrics).await?;
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    tracing::info!("invoicer is listening: open http://{addr}/signup to start");
    // The peer address is what login and sign-up limits count by (unless CLIENT_IP_HEADER).
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown_signal())
    .await?;
    workers.stop().await;
    Ok(())
}

/// `server worker`: outbox workers only (at least one); several processes may share a database.
pub async fn work(config: Checked) -> anyhow::Result<()> {
    failpoint::init(config.dev_mode);
    let pool = db::connect_and_migrate(&config.database).await?;
    let workers = Workers::start(&config, &pool, config.workers.max(1))?;
    shutdown_signal().await;
    workers.stop().await;
    Ok(())
}

struct Workers {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Workers {
    fn start(config: &Checked, pool: &sqlx::PgPool, count: usize) -> anyhow::Result<Workers> {
        let mailer = config.mail.mailer().map_err(anyhow::Error::msg)?;
        if count > 0 && config.mail.smtp_url.is_none() {
            tracing::info!(
                "no SMTP_URL: emails are written to {}",
                config.mail.dir.display()
            );
        }
        let base = &config.worker;
        let (stop, stopped) = watch::channel(false);
        let tasks = (0..count)
            .map(|n| {
                let worker = invoicer_core::worker::WorkerConfig {
                    id: format!("{}-{}-{n}", hostname(), std::process::id()),
                    ..base.clone()
                };
                tokio::spawn(invoicer_core::worker::run(
                    pool.clone(),
                    mailer.clone(),
                    worker,
                    stopped.clone(),
                ))
            })
            .collect();
        Ok(Workers { stop, tasks })
    }

    /// Graceful: workers stop leasing and finish the rows they hold.
    async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
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

//! `server` serves; `server admin ...` manages accounts.

use anyhow::Context;
use app::ssr::state::Settings;
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
    /// Serve the web app (the default).
    Serve,
    /// Account administration.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
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
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let config = Config::from_env()?;
    match args.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(config).await,
        Command::Admin { command } => admin(config, command).await,
    }
}

async fn connect_and_migrate(config: &Config) -> anyhow::Result<sqlx::PgPool> {
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
    let state = AppState {
        pool,
        leptos_options,
        settings: Settings::default(),
    };
    let app = crate::web::router(state, config.secure_cookies()).await?;
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    tracing::info!("invoicer is listening: open http://{addr}/signup to start");
    axum::serve(listener, app.into_make_service())
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    Ok(())
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
    }
    Ok(())
}

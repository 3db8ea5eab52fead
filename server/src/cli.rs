//! The command line: which of the binary's jobs to run. Serving and working live in `process`.

use anyhow::Context;
use clap::{Parser, Subcommand};

use crate::config::{Checked, Config};
use crate::{db, process};

#[derive(Parser, Debug)]
#[command(name = "server", about = "invoicer: invoices that never happen twice")]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub config: Config,
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
    /// A local stand-in for Stripe: signed events delivered to the webhook route.
    Stripe {
        #[command(subcommand)]
        command: StripeCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum StripeCommand {
    /// Build an event with a fresh evt_ id, sign it with STRIPE_WEBHOOK_SECRET and POST it. EVENT is
    /// checkout.session.completed, checkout.session.async_payment_succeeded or
    /// checkout.session.async_payment_failed (need --invoice), charge.refunded,
    /// charge.dispute.created or charge.dispute.closed (need --payment-intent).
    Trigger {
        event: String,
        /// The invoice paid (checkout events).
        #[arg(long)]
        invoice: Option<uuid::Uuid>,
        /// Amount in the currency's minor units: what a checkout pays (default: what is still due),
        /// what a dispute is about.
        #[arg(long)]
        amount: Option<i64>,
        /// The payment the event is about; checkout events make a fresh one without it (printed
        /// on stderr, to pass to later events).
        #[arg(long = "payment-intent")]
        payment_intent: Option<String>,
        /// checkout.session.completed: `paid`, `unpaid` (a delayed method) or `no_payment_required`.
        #[arg(long = "payment-status", default_value = "paid", value_parser = ["paid", "unpaid", "no_payment_required"])]
        payment_status: String,
        /// charge.refunded: the cumulative refunded amount (minor units); without it, the whole
        /// charge is refunded.
        #[arg(long = "amount-refunded")]
        amount_refunded: Option<i64>,
        /// Currency of refund and dispute events (checkout events use the invoice's).
        #[arg(long, default_value = "usd")]
        currency: String,
        /// charge.dispute.*: the dispute's id (a fresh dp_ one without it, printed on stderr).
        #[arg(long)]
        dispute: Option<String>,
        /// charge.dispute.closed: `won` or `lost`.
        #[arg(long = "dispute-status", default_value = "lost", value_parser = ["won", "lost"])]
        dispute_status: String,
        /// Send a live-mode event (default: test mode).
        #[arg(long)]
        livemode: bool,
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
    /// Let an org (one that signed itself up on a SIGNUPS=open deployment) take card payments.
    AllowPayments {
        #[arg(long)]
        org: uuid::Uuid,
    },
    /// Dev only: move the scheduler's clock forward (recurring invoices and reminders fall due as
    /// if that much time had passed); prints the total offset.
    AdvanceClock {
        #[arg(long, default_value_t = 0)]
        days: i64,
        #[arg(long, default_value_t = 0)]
        hours: i64,
    },
    /// Create an API key for the org of the user with this email; prints the key, once.
    CreateApiKey {
        #[arg(long)]
        email: String,
        #[arg(long, default_value = "CLI key")]
        name: String,
    },
}

/// Runs `command` with the configuration [`Config::check`] returned.
pub async fn run(command: Option<Command>, config: Checked) -> anyhow::Result<()> {
    match command.unwrap_or(Command::Serve) {
        Command::Serve => process::serve(config).await,
        Command::Worker => process::work(config).await,
        Command::Admin { command } => admin(config, command).await,
        Command::Stripe { command } => stripe(config, command).await,
    }
}

async fn admin(config: Checked, command: AdminCommand) -> anyhow::Result<()> {
    let pool = db::connect_and_migrate(&config.database).await?;
    match command {
        AdminCommand::CreateOrg {
            org,
            email,
            password,
        } => {
            let account =
                invoicer_core::accounts::create_org_with_owner(&pool, &org, &email, &password)
                    .await
                    .context("cannot create the organisation")?;
            println!("{}", account.org_id);
        }
        AdminCommand::AllowPayments { org } => {
            anyhow::ensure!(
                invoicer_core::accounts::allow_payments(&pool, org.into()).await?,
                "no organisation {org}"
            );
            println!("org {org} may take card payments");
        }
        AdminCommand::AdvanceClock { days, hours } => {
            anyhow::ensure!(
                config.dev_mode,
                "advance-clock moves the scheduler's clock: dev mode (LEPTOS_ENV=DEV) only"
            );
            let secs = days
                .checked_mul(86_400)
                .and_then(|d| d.checked_add(hours.checked_mul(3600)?))
                .filter(|s| s.abs() <= 100 * 365 * 86_400)
                .context("at most a hundred years")?;
            let total = invoicer_core::worker::advance_dev_clock(&pool, secs).await?;
            println!("the scheduler's clock runs {total} s ahead");
        }
        AdminCommand::CreateApiKey { email, name } => {
            let (user, org) = invoicer_core::accounts::api_keys::org_of_user(&pool, &email)
                .await?
                .with_context(|| format!("no user with email {email}"))?;
            let key =
                invoicer_core::accounts::api_keys::create_for_user(&pool, org.into(), user, &name)
                    .await?;
            println!("{}", key.plaintext);
        }
    }
    Ok(())
}

async fn stripe(config: Checked, command: StripeCommand) -> anyhow::Result<()> {
    use invoicer_core::payments::stripe::standin;

    let secret = config.stripe.webhook_secrets[0].expose().to_owned();
    let (url, event_id, payload) = match command {
        StripeCommand::Trigger {
            event,
            invoice,
            amount,
            payment_intent,
            payment_status,
            amount_refunded,
            currency,
            dispute,
            dispute_status,
            livemode,
            url,
        } => {
            let id = standin::event_id();
            let payload = match event.as_str() {
                "checkout.session.completed"
                | "checkout.session.async_payment_succeeded"
                | "checkout.session.async_payment_failed" => {
                    let invoice = invoice.with_context(|| format!("{event} needs --invoice ID"))?;
                    let pool = db::connect(&config.database).await?;
                    let due = standin::amount_due(&pool, model::InvoiceId::from(invoice)).await?;
                    // The event pays through a session the app created (simulated: no Stripe call).
                    if due.is_some() {
                        standin::open_simulated_session(&pool, model::InvoiceId::from(invoice))
                            .await?;
                    }
                    let (amount, currency) = match (amount, due) {
                        (Some(amount), Some((_, currency))) => (amount, currency),
                        (None, Some(due)) => due,
                        (Some(amount), None) => (amount, currency),
                        (None, None) => anyhow::bail!(
                            "invoice {invoice} is not in this database: pass --amount to send anyway"
                        ),
                    };
                    let payment_intent =
                        or_fresh(payment_intent, "payment intent", standin::payment_intent_id);
                    standin::Session {
                        kind: &event,
                        payment_intent: &payment_intent,
                        invoice: model::InvoiceId::from(invoice),
                        amount,
                        currency: &currency,
                        payment_status: &payment_status,
                        livemode,
                    }
                    .event(&id)
                }
                "charge.refunded" => {
                    let pi = payment_intent.context("charge.refunded needs --payment-intent PI")?;
                    let (refunded, full) = match amount_refunded {
                        Some(refunded) => (refunded, false),
                        None => (0, true),
                    };
                    standin::refund_event(&id, &pi, refunded, &currency, full, livemode)
                }
                "charge.dispute.created" | "charge.dispute.closed" => {
                    let pi = payment_intent
                        .with_context(|| format!("{event} needs --payment-intent PI"))?;
                    let amount = amount.with_context(|| format!("{event} needs --amount"))?;
                    let dispute = or_fresh(dispute, "dispute", standin::dispute_id);
                    standin::Dispute {
                        kind: &event,
                        dispute_id: &dispute,
                        payment_intent: &pi,
                        amount,
                        currency: &currency,
                        status: &dispute_status,
                        livemode,
                    }
                    .event(&id)
                }
                other => anyhow::bail!(
                    "unsupported event type {other}: see `server stripe trigger --help`"
                ),
            };
            (url, id, payload)
        }
        StripeCommand::Resend { event_id, url } => {
            let pool = db::connect(&config.database).await?;
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

/// `given`, or a fresh id from `fresh`, printed as `<what> <id>` so the next command can name it.
fn or_fresh(given: Option<String>, what: &str, fresh: impl FnOnce() -> String) -> String {
    given.unwrap_or_else(|| {
        let id = fresh();
        eprintln!("{what} {id}");
        id
    })
}

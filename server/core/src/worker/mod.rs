//! Outbox workers: woken by LISTEN/NOTIFY when a row commits (polling only as a fallback), they lease
//! due rows, send them with no transaction open, and mark them sent or failed, fenced by the lease.

use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio::sync::watch;

use crate::claim::Fence;
use crate::failpoint;
use crate::jobs::retention;
use crate::mail::{self, Mailer, RenderError};
use crate::observe::{self, Attempt, AttemptOutcome, Surface};
use crate::outbox::{self, Failure};

mod lanes;

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Names the worker in `outbox.locked_by` and the logs.
    pub id: String,
    pub batch: i64,
    /// Rows each lane works at once (WORKER_CONCURRENCY); the scheduler's lane runs a quarter of it.
    pub concurrency: usize,
    pub lease: Duration,
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    /// How often to look for due rows without a notification (retries come due on their own).
    pub poll: Duration,
    pub public_url: String,
    pub retention: crate::jobs::retention::RetentionConfig,
    /// For the rows that are calls to Stripe (expiring a Checkout session); none: nothing to call.
    pub stripe: Option<crate::payments::stripe::client::Stripe>,
    /// The Peppol access point documents are sent through (PEPPOL_AP_URL); none: they wait.
    pub peppol: Option<crate::peppol::PhossAp>,
    /// Added to the clock the scheduler reads (dev only: lets time run fast in tests and demos;
    /// production has none).
    pub clock_offset: chrono::TimeDelta,
    /// The mail gate's allowance (EMAILS_PER_ORG_HOUR, EMAILS_PER_RECIPIENT_HOUR): reminders and
    /// scheduled sends beyond it wait for their slot.
    pub mail: crate::mail::gate::Allowance,
    /// Dev mode: the scheduler's clock also runs ahead by `dev_clock` (`server admin
    /// advance-clock`), read each round.
    pub dev_clock: bool,
    /// Draws an invoice's PDF for its email (the drawing lives in the server crate); none: the
    /// email goes without it.
    pub invoice_pdf: Option<crate::mail::InvoicePdf>,
    /// Where webhook deliveries may go, and the client that delivers them under that policy.
    pub webhooks: crate::webhooks_out::guard::Policy,
    pub webhook_client: reqwest::Client,
}

impl WorkerConfig {
    /// This configuration delivering webhooks under `policy`.
    pub fn with_webhooks(mut self, policy: crate::webhooks_out::guard::Policy) -> Self {
        self.webhooks = policy;
        self.webhook_client = crate::webhooks_out::guard::client(policy);
        self
    }
}

/// Moves the dev clock forward by `secs`; returns its total offset.
pub async fn advance_dev_clock(pool: &PgPool, secs: i64) -> sqlx::Result<i64> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"
        insert into dev_clock (offset_secs) values ($1)
        on conflict (id) do update set offset_secs = dev_clock.offset_secs + excluded.offset_secs
        returning offset_secs
        "#,
        secs
    )
    .fetch_one(pool)
    .await
}

/// The scheduler's now: the clock, plus the configured offset, plus the dev clock in dev mode.
async fn scheduler_now(pool: &PgPool, config: &WorkerConfig) -> chrono::DateTime<chrono::Utc> {
    let mut now = config.now();
    if config.dev_clock {
        // language=PostgreSQL
        let ahead = sqlx::query_scalar!("select offset_secs from dev_clock")
            .fetch_optional(pool)
            .await;
        if let Ok(Some(secs)) = ahead {
            now += chrono::TimeDelta::seconds(secs);
        }
    }
    now
}

impl WorkerConfig {
    /// The scheduler's now.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now() + self.clock_offset
    }
}

impl WorkerConfig {
    /// The defaults of the configuration's variables (docs/operating.md).
    pub const DEFAULT_LEASE: Duration = Duration::from_secs(300);
    pub const DEFAULT_BACKOFF_BASE: Duration = Duration::from_secs(5);
    pub const DEFAULT_POLL: Duration = Duration::from_secs(1);
    pub const DEFAULT_CONCURRENCY: usize = 8;
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            id: format!("worker-{}", std::process::id()),
            // One row per lease: every send starts right after its lease was taken, so a slow SMTP
            // server cannot push later rows of a batch past their lease (a takeover would send twice).
            batch: 1,
            concurrency: Self::DEFAULT_CONCURRENCY,
            lease: Self::DEFAULT_LEASE,
            backoff_base: Self::DEFAULT_BACKOFF_BASE,
            backoff_cap: Duration::from_secs(3600),
            poll: Self::DEFAULT_POLL,
            public_url: format!("http://{}", crate::state::DEFAULT_SITE_ADDR),
            retention: Default::default(),
            stripe: None,
            peppol: None,
            clock_offset: chrono::TimeDelta::zero(),
            mail: crate::mail::gate::Allowance::DEFAULT,
            dev_clock: false,
            invoice_pdf: None,
            webhooks: crate::webhooks_out::guard::Policy::STRICT,
            webhook_client: crate::webhooks_out::guard::client(
                crate::webhooks_out::guard::Policy::STRICT,
            ),
        }
    }
}

/// Runs until `shutdown` turns true: a dispatcher per lane of the outbox ([`lanes`]: account
/// emails, customer emails, webhooks out, other jobs; [`WorkerConfig::concurrency`] rows at once
/// each, the orgs served in turn), the scheduler's lane (due periods and reminders) and retention.
/// Then it stops leasing and returns once the rows it holds are done.
pub async fn run(
    pool: PgPool,
    mailer: Mailer,
    config: WorkerConfig,
    shutdown: watch::Receiver<bool>,
) {
    let config = std::sync::Arc::new(config);
    // A counter that moves when a row commits (a watch: a change while a lane is busy is still
    // seen when it next waits).
    let (wake, woken) = watch::channel(0u64);
    tracing::info!(worker = %config.id, concurrency = config.concurrency, "outbox worker started");
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(listen(pool.clone(), wake, shutdown.clone()));
    for lane in crate::outbox::Lane::ALL {
        let lane = lanes::run_lane(
            pool.clone(),
            mailer.clone(),
            config.clone(),
            lane,
            woken.clone(),
            shutdown.clone(),
        );
        tasks.spawn(lane);
    }
    for _ in 0..scheduler_places(config.concurrency) {
        let runner = scheduler(
            pool.clone(),
            config.clone(),
            woken.clone(),
            shutdown.clone(),
        );
        tasks.spawn(runner);
    }
    tasks.spawn(retention_loop(
        pool.clone(),
        config.clone(),
        shutdown.clone(),
    ));
    while tasks.join_next().await.is_some() {}
    tracing::info!(worker = %config.id, "outbox worker stopped");
}

/// The scheduler's lane: this many runners side by side (each run is one transaction, found with
/// `SKIP LOCKED`), a quarter of a lane's places, so a backlog of due periods drains at the
/// database's pace without taking every pooled connection.
fn scheduler_places(concurrency: usize) -> usize {
    (concurrency / 4).max(1)
}

/// Resolves when the counter moves; never, once its sender is gone (no listener: the lanes poll).
pub(super) async fn moved(counter: &mut watch::Receiver<u64>) {
    if counter.changed().await.is_err() {
        std::future::pending::<()>().await
    }
}

/// Wakes every lane when a row commits (LISTEN/NOTIFY), reading every notification as it comes so
/// the notifying backends never block on a full socket; without a listener, the lanes poll.
async fn listen(pool: PgPool, wake: watch::Sender<u64>, mut shutdown: watch::Receiver<bool>) {
    let mut listener = match PgListener::connect_with(&pool).await {
        Ok(mut l) => match l.listen("outbox").await {
            Ok(()) => l,
            Err(e) => {
                tracing::warn!(error = %e, "outbox worker: LISTEN failed, polling only");
                return;
            }
        },
        Err(e) => {
            tracing::warn!(error = %e, "outbox worker: no listener connection, polling only");
            return;
        }
    };
    while !*shutdown.borrow() {
        tokio::select! {
            got = listener.recv() => match got {
                Ok(_) => wake.send_modify(|n| *n = n.wrapping_add(1)),
                // Postgres is down: recv() fails at once until it is back; the lanes poll meanwhile.
                Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            },
            _ = shutdown.changed() => {}
        }
    }
}

/// One runner of the scheduler's lane: due periods and reminders, again at once while it finds
/// work, else after the poll interval or a notification.
async fn scheduler(
    pool: PgPool,
    config: std::sync::Arc<WorkerConfig>,
    mut wake: watch::Receiver<u64>,
    mut shutdown: watch::Receiver<bool>,
) {
    while !*shutdown.borrow() {
        if scheduled_work(&pool, &config).await > 0 {
            continue;
        }
        tokio::select! {
            _ = moved(&mut wake) => {}
            _ = tokio::time::sleep(config.poll) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// Retention, once per period overall (its claim), looked at every poll interval.
async fn retention_loop(
    pool: PgPool,
    config: std::sync::Arc<WorkerConfig>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut done_for = String::new();
    while !*shutdown.borrow() {
        let period = config.retention.current_period();
        if period != done_for {
            match retention::run_once(&pool, &period, &config.retention).await {
                Ok(_) => done_for = period,
                Err(e) => {
                    tracing::warn!(worker = %config.id, error = %e, "retention job failed; will retry")
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(config.poll) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// Runs up to a batch of due schedule periods and of due reminders; returns how many.
async fn scheduled_work(pool: &PgPool, config: &WorkerConfig) -> usize {
    const BATCH: usize = 10;
    let now = scheduler_now(pool, config).await;
    let runs = crate::jobs::schedules::run::run_due(
        pool,
        now,
        BATCH,
        &config.public_url,
        config.mail,
    )
    .await
    .unwrap_or_else(|e| {
        tracing::warn!(worker = %config.id, error = %e, "scheduler: run failed; will retry");
        0
    });
    let charges = crate::jobs::charges::run_due(
        pool,
        config.stripe.as_ref(),
        now,
        BATCH as i64,
        config.lease,
        config.mail,
    )
    .await
    .unwrap_or_else(|e| {
        tracing::warn!(worker = %config.id, error = %e, "charges: run failed; will retry");
        0
    });
    let fees = crate::jobs::late_fees::run_due(pool, now, BATCH, &config.public_url, config.mail)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(worker = %config.id, error = %e, "late fees: run failed; will retry");
            0
        });
    let peppol = crate::peppol::send::poll_due(pool, config.peppol.as_ref(), BATCH as i64)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(worker = %config.id, error = %e, "peppol: status poll failed; will retry");
            0
        });
    let reminders = crate::jobs::reminders::run_due(pool, now, BATCH, config.mail)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(worker = %config.id, error = %e, "reminders: run failed; will retry");
            0
        });
    // Invoices that fell due, for the endpoints that want to know (the event key keeps each to
    // one event, whichever worker writes it).
    let overdue = crate::webhooks_out::emit_overdue(pool, 100)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(worker = %config.id, error = %e, "webhooks: overdue scan failed; will retry");
            0
        });
    runs + charges + fees + peppol + reminders + usize::from(overdue > 0)
}

/// Leases one batch and processes it; returns how many rows it held.
pub async fn drain_once(
    pool: &PgPool,
    mailer: &Mailer,
    config: &WorkerConfig,
) -> sqlx::Result<usize> {
    let rows = outbox::lease_due(pool, &config.id, config.batch, config.lease).await?;
    let held = rows.len();
    for row in rows {
        process(pool, mailer, config, row).await?;
    }
    Ok(held)
}

/// Does a leased row's work (an email, a call, a delivery, an import batch) with no transaction
/// open, and marks it sent or failed, fenced by its lease.
pub async fn process(
    pool: &PgPool,
    mailer: &Mailer,
    config: &WorkerConfig,
    row: outbox::Leased,
) -> sqlx::Result<()> {
    {
        let attempt = Attempt::new(Surface::Job, row.id.to_string(), None);
        attempt.identify(outbox::QUEUE, None);
        // A failure is (what the invoice page shows, the whole text for the log, permanent?): a
        // tenant sees a plain class, never the mail server's own words or ours.
        let sent = if row.kind == outbox::Kind::ExpireCheckout.as_str() {
            failpoint::hit("worker.before_send");
            crate::payments::checkout::expire_at_stripe(config.stripe.as_ref(), &row.payload).await
        } else if row.kind == outbox::Kind::StripeRefund.as_str() {
            failpoint::hit("worker.before_send");
            crate::payments::refunds::at_stripe(pool, config.stripe.as_ref(), &row).await
        } else if row.kind == outbox::Kind::DetachPaymentMethod.as_str() {
            failpoint::hit("worker.before_send");
            let provider = config.stripe.as_ref();
            crate::payments::saved::detach_at_provider(pool, provider, &row.payload).await
        } else if row.kind == outbox::Kind::PeppolSend.as_str() {
            crate::peppol::send::transmit(pool, config.peppol.as_ref(), &row, config.lease).await
        } else if row.kind == outbox::Kind::CustomerImport.as_str() {
            crate::customers::imports::apply(pool, &row.payload).await
        } else if row.kind == outbox::Kind::Webhook.as_str() {
            failpoint::hit("worker.before_send");
            let (client, policy) = (&config.webhook_client, config.webhooks);
            crate::webhooks_out::deliver::deliver(pool, client, policy, row.id, &row.payload).await
        } else {
            let pdf = config.invoice_pdf.as_ref();
            match mail::render(pool, &row, &config.public_url, mailer.from(), pdf).await {
                Ok(message) => {
                    failpoint::hit("worker.before_send");
                    mailer
                        .send(message)
                        .await
                        .map_err(|e| (e.class.describe().to_owned(), e.detail, e.class.permanent()))
                }
                Err(RenderError::Permanent(e)) => {
                    Err(("the email could not be prepared".to_owned(), e, true))
                }
                Err(RenderError::Db(e)) => Err((
                    "temporary error while preparing the email".to_owned(),
                    e.to_string(),
                    false,
                )),
            }
        };
        let (id, attempts) = (row.id, row.attempts);
        match sent {
            Ok(()) => {
                // The email is out; a crash here redelivers it after the lease (same Message-ID).
                failpoint::hit("worker.after_send");
                let (result, outcome) = match outbox::mark_sent(pool, row).await? {
                    Fence::Held => ("sent", AttemptOutcome::Won),
                    Fence::TakenOver => {
                        tracing::warn!(row = %id, "outbox: lease was taken over; not marking");
                        ("fenced", AttemptOutcome::InFlight)
                    }
                };
                metrics::counter!("invoicer_outbox_sends_total", "result" => result).increment(1);
                observe::log_and_count(&attempt, outcome);
            }
            Err((shown, error, permanent)) => {
                // A webhook's endpoint gets three days of retries, up to six hours apart.
                let cap = if row.kind == outbox::Kind::Webhook.as_str() {
                    crate::webhooks_out::deliver::BACKOFF_CAP
                } else {
                    config.backoff_cap
                };
                let failure =
                    outbox::mark_failed(pool, row, &shown, permanent, config.backoff_base, cap)
                        .await?;
                let (result, outcome) = match failure {
                    Failure::Retry(_) => ("retry", AttemptOutcome::Failed),
                    Failure::Dead => ("dead", AttemptOutcome::Failed),
                    Failure::Fenced => ("fenced", AttemptOutcome::InFlight),
                };
                metrics::counter!("invoicer_outbox_sends_total", "result" => result).increment(1);
                observe::log_and_count(&attempt, outcome);
                match failure {
                    Failure::Retry(delay) => tracing::warn!(row = %id, attempt = attempts,
                        delay_ms = delay.as_millis() as u64, %error, "outbox: send failed, will retry"),
                    Failure::Dead => tracing::error!(row = %id, attempt = attempts, %error,
                        "outbox: send failed for good; the row is dead"),
                    Failure::Fenced => {
                        tracing::warn!(row = %id, "outbox: lease was taken over")
                    }
                }
            }
        }
    }
    Ok(())
}

//! The outbox and its workers against Postgres and a real SMTP server.

use std::time::Duration;

use crate::common::rows::{execute, scalar, scalars};
use crate::common::served::TestApp;
use crate::common::{self, message_id, queue_email, SmtpSink};
use invoicer_core::claim::Fence;
use invoicer_core::mail::Mailer;
use invoicer_core::outbox::{self, Failure};
use invoicer_core::surfaces::form::SendOutcome;
use invoicer_core::worker::{self, WorkerConfig};
use sqlx::PgPool;
use uuid::Uuid;

const LEASE: Duration = Duration::from_secs(300);

fn config(id: &str) -> WorkerConfig {
    WorkerConfig {
        id: id.into(),
        backoff_base: Duration::from_millis(200),
        poll: Duration::from_millis(50),
        ..Default::default()
    }
}

/// Every worker's lease runs out now, and the rows they held come due again (leasing pushed their
/// next attempt to the lease's end).
async fn outlive_leases(pool: &PgPool) {
    execute(
        pool,
        "update claims set locked_until = now() - interval '1 second' where scope = 'job'",
    )
    .await;
    execute(pool, "update outbox set next_attempt_at = now()").await;
}

fn mailer(sink: &SmtpSink) -> Mailer {
    Mailer::new(
        Some(&sink.url()),
        None,
        std::path::Path::new("unused"),
        Duration::from_secs(10),
        invoicer_core::mail::DEV_FROM,
    )
    .unwrap()
}

/// Runs a worker until nothing is due.
async fn drain(pool: &PgPool, mailer: &Mailer, id: &str) {
    while worker::drain_once(pool, mailer, &config(id)).await.unwrap() > 0 {}
}

/// An invoice of one dollar and its email queued; (org, invoice).
async fn one_email(pool: &PgPool) -> (model::OrgId, Uuid) {
    let (org, invoice) = common::seed_invoice(pool, "o@example.com", 100, "usd").await;
    queue_email(pool, org, Uuid::new_v4(), invoice)
        .await
        .unwrap();
    (org, invoice)
}

/// Every row may be tried `max_attempts` times; drains them into `refusing` with no backoff until
/// none is left to try.
async fn drain_refused(pool: &PgPool, refusing: &SmtpSink, max_attempts: i32) {
    execute(
        pool,
        &format!("update outbox set max_attempts = {max_attempts}"),
    )
    .await;
    let fast = WorkerConfig {
        backoff_base: Duration::ZERO,
        ..config("w1")
    };
    while worker::drain_once(pool, &mailer(refusing), &fast)
        .await
        .unwrap()
        > 0
    {}
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_double_clicked_send_emails_once(pool: PgPool) {
    let sink = SmtpSink::start(0, false).await;
    let (org, invoice) = common::seed_invoice(&pool, "o@example.com", 4_200, "usd").await;
    let click = Uuid::new_v4();
    let first = queue_email(&pool, org, click, invoice).await.unwrap();
    let second = queue_email(&pool, org, click, invoice).await.unwrap();
    let SendOutcome::Queued(row) = first else {
        panic!("{first:?}")
    };
    assert_eq!(second, SendOutcome::AlreadyQueued(row));

    drain(&pool, &mailer(&sink), "w1").await;
    let messages = sink.wait_for(1, Duration::from_secs(10)).await;
    drain(&pool, &mailer(&sink), "w1").await;
    assert_eq!(sink.messages().len(), 1, "one email");
    assert_eq!(
        message_id(&messages[0]),
        format!("<{row}@invoicer>"),
        "the outbox id is the Message-ID"
    );
    assert!(
        messages[0].contains("Invoice INV-000001"),
        "{}",
        messages[0]
    );
    assert!(messages[0].contains("$42.00"));
    let sent: bool = scalar(&pool, "select sent_at is not null from outbox").await;
    assert!(sent);

    // Another org cannot send this invoice.
    let (other, _) = common::seed_invoice(&pool, "x@example.com", 1, "usd").await;
    assert!(queue_email(&pool, other, Uuid::new_v4(), invoice)
        .await
        .is_err());
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_payment_webhook_sends_one_receipt_even_when_redelivered(pool: PgPool) {
    let sink = SmtpSink::start(0, false).await;
    let app = TestApp::spawn(pool.clone()).await;
    let (_, invoice) = app.invoice(5_000, "eur").await;
    let (_, payload) = invoicer_core::payments::stripe::standin::checkout_completed(
        model::InvoiceId::from(invoice),
        5_000,
        "eur",
    );
    assert_eq!(app.deliver(&payload).await.0, 200);
    assert_eq!(app.deliver(&payload).await.0, 200);
    assert_eq!(
        app.deliver(&common::served::with_new_event_id(&payload))
            .await
            .0,
        200
    );
    drain(&pool, &mailer(&sink), "w1").await;
    let messages = sink.wait_for(1, Duration::from_secs(10)).await;
    drain(&pool, &mailer(&sink), "w1").await;
    assert_eq!(sink.messages().len(), 1);
    assert!(messages[0].contains("Receipt for INV-000001"));
    assert!(messages[0].contains("50.00"), "{}", messages[0]);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn smtp_451_three_times_then_sent_on_attempt_four_with_growing_delays(pool: PgPool) {
    let sink = SmtpSink::start(3, false).await;
    one_email(&pool).await;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(worker::run(
        pool.clone(),
        mailer(&sink),
        config("w1"),
        stopped,
    ));
    sink.wait_for(1, Duration::from_secs(30)).await;
    stop.send(true).unwrap();
    running.await.unwrap();

    let (attempts, sent): (i32, bool) =
        sqlx::query_as("select attempts, sent_at is not null from outbox")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((attempts, sent), (4, true));
    let times = sink.attempt_times();
    assert_eq!(times.len(), 4);
    let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    // Retry n waits at least the jittered backoff's floor: 0.75 × 0.2 s × 2^(n−1). Jitter may make
    // one gap shorter than the last, never shorter than its floor.
    for (n, gap) in gaps.iter().enumerate() {
        let floor = 0.75 * 0.2 * f64::from(1u32 << n);
        assert!(
            *gap >= floor,
            "retry {}: waited {gap:.3} s, at least {floor} s: {gaps:?}",
            n + 1
        );
    }
    assert!(
        gaps[2] > gaps[0],
        "the third wait is longer than the first: {gaps:?}"
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_always_failing_email_goes_dead_and_retry_revives_it(pool: PgPool) {
    let refusing = SmtpSink::start(0, true).await;
    let (org, invoice) = one_email(&pool).await;
    drain_refused(&pool, &refusing, 3).await;
    let (attempts, dead, error): (i32, bool, Option<String>) =
        sqlx::query_as("select attempts, dead_at is not null, last_error from outbox")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((attempts, dead), (3, true));
    assert_eq!(
        error.as_deref(),
        Some("temporarily refused by the mail server"),
        "a plain class is kept for the UI, not the server's words"
    );
    let rows = outbox::for_invoice(&pool, org, model::InvoiceId::from(invoice))
        .await
        .unwrap();
    assert_eq!(rows[0].status.as_str(), "dead");

    let id: Uuid = scalar(&pool, "select id from outbox").await;
    let (other, _) = common::seed_invoice(&pool, "x@example.com", 1, "usd").await;
    assert!(
        !outbox::revive(&pool, other, id, common::member_gate())
            .await
            .unwrap()
            .unwrap(),
        "only its org can retry it"
    );
    assert!(outbox::revive(&pool, org, id, common::member_gate())
        .await
        .unwrap()
        .unwrap());
    let accepting = SmtpSink::start(0, false).await;
    drain(&pool, &mailer(&accepting), "w1").await;
    assert_eq!(
        accepting.wait_for(1, Duration::from_secs(10)).await.len(),
        1
    );
    assert_eq!(
        outbox::for_invoice(&pool, org, model::InvoiceId::from(invoice))
            .await
            .unwrap()[0]
            .status
            .as_str(),
        "sent"
    );
}

/// What the invoice page says of an email through its life: a first attempt under way is
/// "sending", not "retrying" (nothing failed yet); after a failure it is "retrying" until sent.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_email_in_flight_is_sending_and_retrying_only_after_a_failure(pool: PgPool) {
    let (org, invoice) = one_email(&pool).await;
    let status = |pool: PgPool| async move {
        outbox::for_invoice(&pool, org, model::InvoiceId::from(invoice))
            .await
            .unwrap()[0]
            .status
            .as_str()
    };
    assert_eq!(status(pool.clone()).await, "queued");
    let mut first = outbox::lease_due(&pool, "w1", 10, LEASE).await.unwrap();
    assert_eq!(status(pool.clone()).await, "sending");
    let failed = outbox::mark_failed(
        &pool,
        first.pop().unwrap(),
        "temporarily refused by the mail server",
        false,
        Duration::ZERO,
        Duration::ZERO,
    )
    .await
    .unwrap();
    assert_ne!(failed, Failure::Fenced);
    assert_eq!(status(pool.clone()).await, "retrying");
    let mut second = outbox::lease_due(&pool, "w1", 10, LEASE).await.unwrap();
    assert_eq!(status(pool.clone()).await, "retrying", "a retry under way");
    assert_eq!(
        outbox::mark_sent(&pool, second.pop().unwrap())
            .await
            .unwrap(),
        Fence::Held
    );
    assert_eq!(status(pool.clone()).await, "sent");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_worker_whose_lease_was_taken_over_cannot_complete_the_row(pool: PgPool) {
    one_email(&pool).await;
    let mut slow = outbox::lease_due(&pool, "slow", 10, LEASE).await.unwrap();
    assert_eq!(slow.len(), 1);
    assert!(
        outbox::lease_due(&pool, "other", 10, LEASE)
            .await
            .unwrap()
            .is_empty(),
        "a fresh lease is respected"
    );

    // The slow worker stalls past its lease; another takes the row over.
    outlive_leases(&pool).await;
    let mut fast = outbox::lease_due(&pool, "fast", 10, LEASE).await.unwrap();
    assert_eq!(fast.len(), 1);
    assert_eq!(fast[0].attempts, 2);

    // A lease is settled once (the type consumes it), so the two late settlements are tried by two
    // holders that both lost their lease: `slow` to `fast`, then `fast` to `third`.
    let failed = outbox::mark_failed(
        &pool,
        slow.pop().unwrap(),
        "late",
        false,
        Duration::ZERO,
        Duration::ZERO,
    )
    .await
    .unwrap();
    assert_eq!(failed, Failure::Fenced);
    outlive_leases(&pool).await;
    let mut third = outbox::lease_due(&pool, "third", 10, LEASE).await.unwrap();
    assert_eq!(third.len(), 1);
    assert_eq!(
        outbox::mark_sent(&pool, fast.pop().unwrap()).await.unwrap(),
        Fence::TakenOver,
        "fenced"
    );
    assert_eq!(
        outbox::mark_sent(&pool, third.pop().unwrap())
            .await
            .unwrap(),
        Fence::Held
    );
    let (sent, error): (bool, Option<String>) =
        sqlx::query_as("select sent_at is not null, last_error from outbox")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((sent, error), (true, None));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn retention_trims_every_table_that_grows_with_traffic_once_per_period(pool: PgPool) {
    use invoicer_core::jobs::retention::{run_once, RetentionConfig};
    // language=PostgreSQL
    execute(&pool, "insert into claims (scope, owner, key, status, completed_at, created_at)
         select 'webhook', 'default', 'evt_old_' || n, 'done', now(), now() - interval '31 days' from generate_series(1, 5) n
         union all select 'webhook', 'default', 'evt_new', 'done', now(), now() - interval '29 days'
         union all select 'api', 'client', 'old', 'done', now(), now() - interval '25 hours'
         union all select 'api', 'client', 'new', 'done', now(), now()
         union all select 'form', 'org', 'ancient', 'done', now(), now() - interval '400 days'
         union all select 'job', 'outbox', 'old-run', 'done', now(), now() - interval '8 days'").await;
    execute(
        &pool,
        "insert into stripe_events (account, id, type, payload, outcome, received_at)
         values ('default', 'evt_old_1', 't', '{}', 'ignored', now() - interval '31 days'),
                ('default', 'evt_new', 't', '{}', 'ignored', now() - interval '29 days')",
    )
    .await;
    // language=PostgreSQL
    sqlx::raw_sql(
        "insert into refunds (provider, provider_payment_id, amount_refunded_cents, full_refund, event_id, received_at)
         values ('stripe', 'pi_old', 0, true, 'evt_r1', now() - interval '31 days'),
                ('stripe', 'pi_new', 0, true, 'evt_r2', now() - interval '1 day');
         insert into attempts (surface, owner, key, outcome, duration_ms, created_at)
         select 'api', 'client', 'k' || n, 'rejected', 1, now() - interval '91 days' from generate_series(1, 3) n
         union all select 'api', 'client', 'recent', 'won', 1, now() - interval '89 days';
         insert into outbox (id, kind, payload, sent_at, dead_at, created_at)
         values (gen_random_uuid(), 'invoice_email', '{}', now() - interval '31 days', null, now() - interval '31 days'),
                (gen_random_uuid(), 'invoice_email', '{}', null, now() - interval '31 days', now() - interval '31 days'),
                (gen_random_uuid(), 'invoice_email', '{}', now() - interval '29 days', null, now() - interval '29 days'),
                (gen_random_uuid(), 'invoice_email', '{}', null, null, now() - interval '60 days')",
    )
    .execute(&pool)
    .await
    .unwrap();
    // language=PostgreSQL
    sqlx::raw_sql(
        "insert into orgs (id, name) values ('00000000-0000-7000-8000-00000000000a', 'Hooks');
         insert into webhook_endpoints (id, org_id, url, events, secret, source_key)
         values ('00000000-0000-7000-8000-00000000000b', '00000000-0000-7000-8000-00000000000a',
                 'https://example.com/', '{customer.created}', 'whsec_AAAA', 'k');
         insert into webhook_events (id, org_id, type, source_key, body, created_at)
         values ('00000000-0000-7000-8000-0000000000e1', '00000000-0000-7000-8000-00000000000a',
                 'customer.created', 'old', '{}', now() - interval '31 days'),
                ('00000000-0000-7000-8000-0000000000e2', '00000000-0000-7000-8000-00000000000a',
                 'customer.created', 'new', '{}', now() - interval '29 days');
         insert into webhook_attempts (id, org_id, endpoint_id, event_id, outbox_id, latency_ms, attempted_at)
         values (gen_random_uuid(), '00000000-0000-7000-8000-00000000000a', '00000000-0000-7000-8000-00000000000b',
                 '00000000-0000-7000-8000-0000000000e1', gen_random_uuid(), 5, now() - interval '31 days'),
                (gen_random_uuid(), '00000000-0000-7000-8000-00000000000a', '00000000-0000-7000-8000-00000000000b',
                 '00000000-0000-7000-8000-0000000000e2', gen_random_uuid(), 5, now() - interval '29 days')",
    )
    .execute(&pool)
    .await
    .unwrap();
    let config = RetentionConfig {
        batch: 2,
        ..RetentionConfig::new(30, Duration::from_secs(24 * 3600)).unwrap()
    };
    let report = run_once(&pool, "2026-11-30T14", &config)
        .await
        .unwrap()
        .expect("first run of the period");
    assert_eq!(
        (
            report.webhook_claims,
            report.webhook_events,
            report.api_claims,
            report.job_claims
        ),
        (5, 1, 1, 1)
    );
    assert_eq!(
        (
            report.form_claims,
            report.orphan_facts,
            report.attempts,
            report.outbox_rows
        ),
        (1, 1, 3, 2),
        "form keys after 30 days, refunds after the webhook window, attempts after 90 days, \
         sent and dead emails after 30 days"
    );
    assert_eq!(report.webhooks_out, 2, "an old event and an old attempt");
    let events: i64 = scalar(&pool, "select count(*) from webhook_events").await;
    assert_eq!(events, 1, "the newer event stays");
    let pending: i64 = scalar(
        &pool,
        "select count(*) from outbox where sent_at is null and dead_at is null",
    )
    .await;
    assert_eq!(pending, 1, "an email still to send is never trimmed");
    assert_eq!(
        run_once(&pool, "2026-11-30T14", &config).await.unwrap(),
        None,
        "once per period"
    );
    let left: Vec<String> = scalars(
        &pool,
        "select key from claims where scope <> 'job' order by key",
    )
    .await;
    assert_eq!(left, ["evt_new", "new"], "recent claims are kept");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_row_whose_holders_keep_dying_goes_dead_instead_of_looping(pool: PgPool) {
    one_email(&pool).await;
    execute(&pool, "update outbox set max_attempts = 2").await;
    for _ in 0..2 {
        // A worker leases it and dies: its lease runs out, the row comes due again.
        assert_eq!(
            outbox::lease_due(&pool, "doomed", 1, LEASE)
                .await
                .unwrap()
                .len(),
            1
        );
        outlive_leases(&pool).await;
    }
    assert!(outbox::lease_due(&pool, "third", 1, LEASE)
        .await
        .unwrap()
        .is_empty());
    let (dead, error): (bool, String) =
        sqlx::query_as("select dead_at is not null, last_error from outbox")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(dead);
    assert!(error.contains("stopped answering 2 times"), "{error}");
    let held: i64 = scalar(
        &pool,
        "select count(*) from claims where scope = 'job' and owner = 'outbox'",
    )
    .await;
    assert_eq!(
        held, 0,
        "its claim is released, so Retry can lease it again"
    );
}

/// An invitation that cannot be delivered dies without its link: no token rests in the outbox, and
/// "retry" does not revive it (the owner resends the invitation instead, with a new link).
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_dead_account_email_drops_its_link_and_is_not_revived(pool: PgPool) {
    let refusing = SmtpSink::start(0, true).await;
    let owner = format!("owner-{}@example.com", Uuid::new_v4().simple());
    let account =
        invoicer_core::accounts::create_org_with_owner(&pool, "Co", &owner, "correct horse")
            .await
            .unwrap();
    let mut tx = pool.begin().await.unwrap();
    invoicer_core::accounts::invitations::invite(
        &mut tx,
        account.org_id,
        &invoicer_core::accounts::audit::Actor::user(account.user_id, &owner),
        "new@example.com",
        model::Role::Member,
        "form:1",
        common::member_gate(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    drain_refused(&pool, &refusing, 1).await;
    let (id, dead, token): (Uuid, bool, Option<String>) = sqlx::query_as(
        "select id, dead_at is not null, payload->>'token' from outbox where kind = 'invitation'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(dead);
    assert_eq!(token, None, "the link went with the row's death");
    assert!(
        !outbox::revive(&pool, account.org_id, id, common::member_gate())
            .await
            .unwrap()
            .unwrap()
    );
}

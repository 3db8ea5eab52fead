//! Payment reminders: each step at most once per invoice, from 09:00 in the org's zone, only while
//! the invoice is open and unpaid, the latest due step only after downtime, opt-outs honoured, and
//! never queued after a payment committed.

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::rows::{insert_invoice, one_line_input};

const ALLOWANCE: invoicer_core::mail::gate::Allowance =
    invoicer_core::mail::gate::Allowance::DEFAULT;

struct Org {
    id: model::OrgId,
    user: Uuid,
}

async fn org_with_steps(pool: &PgPool, steps: &[(i32, &str)]) -> Org {
    let (_, account) = crate::common::rows::new_owner(pool, "Acme").await;
    let steps: Vec<_> = steps
        .iter()
        .map(|(o, m)| invoicer_core::jobs::reminders::Step {
            offset_days: *o,
            message: (*m).to_owned(),
        })
        .collect();
    invoicer_core::jobs::reminders::check(&steps).unwrap();
    let mut tx = pool.begin().await.unwrap();
    invoicer_core::jobs::reminders::save_steps(&mut tx, account.org_id, &steps)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    Org {
        id: account.org_id,
        user: account.user_id,
    }
}

async fn invoice_due(pool: &PgPool, org: model::OrgId, due: &str) -> Uuid {
    insert_invoice(pool, org, &one_line_input("eur", due, 10_000, false)).await
}

/// `hour`:00 on `date` in `org`'s zone.
async fn at(pool: &PgPool, org: model::OrgId, date: &str, hour: i32) -> DateTime<Utc> {
    sqlx::query_scalar(
        "select ($2::date::timestamp at time zone (select time_zone from orgs where id = $1)) \
         + make_interval(hours => $3)",
    )
    .bind(org)
    .bind(date.parse::<NaiveDate>().unwrap())
    .bind(hour)
    .fetch_one(pool)
    .await
    .unwrap()
}

async fn run(pool: &PgPool, now: DateTime<Utc>) -> usize {
    invoicer_core::jobs::reminders::run_due(pool, now, 100, ALLOWANCE)
        .await
        .unwrap()
}

/// (step, outcome) of `invoice`'s reminders, by step.
async fn reminders(pool: &PgPool, invoice: Uuid) -> Vec<(i32, String)> {
    sqlx::query_as(
        "select offset_days, outcome from reminders where invoice_id = $1 order by offset_days",
    )
    .bind(invoice)
    .fetch_all(pool)
    .await
    .unwrap()
}

async fn emails(pool: &PgPool, invoice: Uuid) -> i64 {
    sqlx::query_scalar("select count(*) from outbox where kind = 'reminder' and invoice_id = $1")
        .bind(invoice)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn each_step_goes_once_from_nine_and_only_the_latest_after_downtime(pool: PgPool) {
    let org = org_with_steps(
        &pool,
        &[(-3, "Coming up."), (0, "Due today."), (7, "A week late.")],
    )
    .await;
    let a = invoice_due(&pool, org.id, "2027-03-10").await;
    assert_eq!(
        run(&pool, at(&pool, org.id, "2027-03-06", 12).await).await,
        0,
        "too early"
    );
    assert_eq!(
        run(&pool, at(&pool, org.id, "2027-03-07", 8).await).await,
        0,
        "before nine"
    );
    assert_eq!(
        run(&pool, at(&pool, org.id, "2027-03-07", 9).await).await,
        1
    );
    assert_eq!(
        run(&pool, at(&pool, org.id, "2027-03-07", 15).await).await,
        0,
        "once"
    );
    assert_eq!(
        run(&pool, at(&pool, org.id, "2027-03-10", 10).await).await,
        1
    );
    assert_eq!(
        run(&pool, at(&pool, org.id, "2027-03-30", 10).await).await,
        1,
        "late, once"
    );
    assert_eq!(
        run(&pool, at(&pool, org.id, "2027-04-30", 10).await).await,
        0
    );
    let sent = |steps: &[i32]| -> Vec<(i32, String)> {
        steps.iter().map(|s| (*s, "sent".to_owned())).collect()
    };
    assert_eq!(reminders(&pool, a).await, sent(&[-3, 0, 7]));
    assert_eq!(emails(&pool, a).await, 3);
    // Downtime across every step: only the last goes, the others are skipped.
    let b = invoice_due(&pool, org.id, "2027-05-10").await;
    assert_eq!(
        run(&pool, at(&pool, org.id, "2027-05-20", 10).await).await,
        1
    );
    assert_eq!(
        reminders(&pool, b).await,
        [
            (-3, "skipped".to_owned()),
            (0, "skipped".to_owned()),
            (7, "sent".to_owned())
        ]
    );
    assert_eq!(emails(&pool, b).await, 1);
    // Each sent one is a job attempt on the activity page, with its invoice.
    let attempts: i64 = sqlx::query_scalar(
        "select count(*) from attempts where surface = 'job' and owner like 'reminder:%' and outcome = 'won'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(attempts, 4);
}

/// A step that fell due more than the catch-up days ago is not sent (nor counted as due); orgs
/// without steps have nothing due; the metrics' backlog counts what a run would send.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_step_missed_beyond_the_catch_up_is_not_sent_and_the_backlog_counts_the_rest(
    pool: PgPool,
) {
    use invoicer_core::jobs::reminders::{backlog, CATCH_UP_DAYS};
    let org = org_with_steps(&pool, &[(0, "Due today."), (7, "A week late.")]).await;
    let quiet = org_with_steps(&pool, &[]).await;
    invoice_due(&pool, quiet.id, "2027-02-01").await;
    // Its last step (+7) fell due on 2027-01-17: more than 30 days before 2027-02-20.
    let stale = invoice_due(&pool, org.id, "2027-01-10").await;
    // Its last step fell due on 2027-02-17.
    let late = invoice_due(&pool, org.id, "2027-02-10").await;
    assert_eq!(CATCH_UP_DAYS, 30);
    let now = at(&pool, org.id, "2027-02-20", 10).await;
    assert_eq!(backlog(&pool, now).await.unwrap(), 1);
    assert_eq!(run(&pool, now).await, 1);
    assert_eq!(backlog(&pool, now).await.unwrap(), 0);
    assert_eq!(reminders(&pool, stale).await, []);
    assert_eq!(emails(&pool, stale).await, 0);
    assert_eq!(
        reminders(&pool, late).await,
        [(0, "skipped".to_owned()), (7, "sent".to_owned())]
    );
    // On the catch-up's last day the stale one would still have gone.
    let edge = at(&pool, org.id, "2027-02-16", 10).await;
    assert_eq!(backlog(&pool, edge).await.unwrap(), 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn paid_void_and_opted_out_invoices_get_none(pool: PgPool) {
    let org = org_with_steps(&pool, &[(1, "Late.")]).await;
    let paid = invoice_due(&pool, org.id, "2027-03-10").await;
    let mut tx = pool.begin().await.unwrap();
    let input = model::PaymentInput {
        amount_cents: 10_000,
        method: model::PaymentMethod::Cash,
        paid_on: "2026-12-01".parse().unwrap(),
        reference: String::new(),
    };
    invoicer_core::payments::manual::record(
        &mut tx,
        org.id,
        model::InvoiceId::from(paid),
        Uuid::now_v7(),
        "test:paid",
        &input,
        Some(org.user),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let off = invoice_due(&pool, org.id, "2027-03-10").await;
    let mut tx = pool.begin().await.unwrap();
    assert!(invoicer_core::jobs::reminders::set_invoice_off(
        &mut tx,
        org.id,
        model::InvoiceId::from(off),
        true
    )
    .await
    .unwrap());
    tx.commit().await.unwrap();
    let voided = invoice_due(&pool, org.id, "2027-03-10").await;
    let mut tx = pool.begin().await.unwrap();
    invoicer_core::invoicing::lifecycle::apply(
        &mut tx,
        org.id,
        model::InvoiceId::from(voided),
        invoicer_core::invoicing::lifecycle::Action::Void,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let draft = insert_invoice(
        &pool,
        org.id,
        &one_line_input("eur", "2027-03-10", 500, true),
    )
    .await;
    assert_eq!(
        run(&pool, at(&pool, org.id, "2027-03-20", 10).await).await,
        0
    );
    for invoice in [paid, off, voided, draft] {
        assert_eq!(emails(&pool, invoice).await, 0);
    }
    // Back on: one reminder.
    let mut tx = pool.begin().await.unwrap();
    invoicer_core::jobs::reminders::set_invoice_off(
        &mut tx,
        org.id,
        model::InvoiceId::from(off),
        false,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        run(&pool, at(&pool, org.id, "2027-03-20", 10).await).await,
        1
    );
    // Within the org's allowance: with none left, the reminder waits for the hour's next slot.
    let waiting = invoice_due(&pool, org.id, "2027-03-11").await;
    let one = invoicer_core::mail::gate::Allowance {
        per_org_hour: 1,
        per_recipient_hour: 100,
    };
    let now = at(&pool, org.id, "2027-03-20", 10).await;
    assert_eq!(
        invoicer_core::jobs::reminders::run_due(&pool, now, 100, one)
            .await
            .unwrap(),
        1
    );
    let wait: f64 = sqlx::query_scalar(
        "select extract(epoch from next_attempt_at - now())::float8 from outbox where invoice_id = $1",
    )
    .bind(waiting)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(
        wait > 3000.0,
        "the hour's one email is spent: it waits {wait} s"
    );
}

/// A full payment and the reminder run, at once, thirty times: never a reminder queued after the
/// payment committed (the reminder's row is written after its check, under the invoice's lock).
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_payment_racing_the_reminder_run_never_gets_a_reminder_after_it(pool: PgPool) {
    let org = org_with_steps(&pool, &[(0, "Due today.")]).await;
    let now = at(&pool, org.id, "2027-03-10", 10).await;
    let mut sent = 0;
    for trial in 0..30 {
        let invoice = invoice_due(&pool, org.id, "2027-03-10").await;
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(2));
        let (p, b) = (pool.clone(), barrier.clone());
        let user = org.user;
        let payer = tokio::spawn(async move {
            b.wait().await;
            let mut tx = p.begin().await.unwrap();
            let input = model::PaymentInput {
                amount_cents: 10_000,
                method: model::PaymentMethod::BankTransfer,
                paid_on: "2026-12-01".parse().unwrap(),
                reference: String::new(),
            };
            invoicer_core::payments::manual::record(
                &mut tx,
                org.id,
                model::InvoiceId::from(invoice),
                Uuid::now_v7(),
                &format!("test:{trial}"),
                &input,
                Some(user),
            )
            .await
            .unwrap();
            tx.commit().await.unwrap();
            // The database's clock once the payment is committed.
            sqlx::query_scalar::<_, DateTime<Utc>>("select clock_timestamp()")
                .fetch_one(&p)
                .await
                .unwrap()
        });
        let (p, b) = (pool.clone(), barrier.clone());
        let reminder = tokio::spawn(async move {
            b.wait().await;
            invoicer_core::jobs::reminders::run_due(&p, now, 1, ALLOWANCE)
                .await
                .unwrap()
        });
        let paid_at = payer.await.unwrap();
        reminder.await.unwrap();
        let written: Option<DateTime<Utc>> =
            sqlx::query_scalar("select created_at from reminders where invoice_id = $1")
                .bind(invoice)
                .fetch_optional(&pool)
                .await
                .unwrap();
        if let Some(written) = written {
            assert!(
                written < paid_at,
                "trial {trial}: a reminder after the payment"
            );
            sent += 1;
        }
        // Whatever happened, the paid invoice gets nothing more.
        assert_eq!(run(&pool, now).await, 0);
    }
    // Both orders happened: the check above held in each, not in one order only.
    assert!(
        sent > 0 && sent < 30,
        "the race went one way in all 30 trials ({sent} reminders before the payment): nothing raced"
    );
}

/// The reminder's email: the step's message, what is still to pay, and the customer's page.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_reminder_email_carries_the_message_the_amount_and_the_link(pool: PgPool) {
    let org = org_with_steps(&pool, &[(7, "Kindly settle this week.")]).await;
    let invoice = invoice_due(&pool, org.id, "2027-03-10").await;
    assert_eq!(
        run(&pool, at(&pool, org.id, "2027-03-17", 10).await).await,
        1
    );
    let dir = std::env::temp_dir().join(format!("invoicer-reminder-{}", Uuid::new_v4().simple()));
    let mailer = invoicer_core::mail::Mailer::new(
        None,
        None,
        &dir,
        std::time::Duration::from_secs(5),
        invoicer_core::mail::DEV_FROM,
    )
    .unwrap();
    let config = invoicer_core::worker::WorkerConfig {
        public_url: "http://invoicer.test".into(),
        ..Default::default()
    };
    while invoicer_core::worker::drain_once(&pool, &mailer, &config)
        .await
        .unwrap()
        > 0
    {}
    let mail: String = std::fs::read_dir(&dir)
        .unwrap()
        .map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap())
        .collect::<String>()
        // Quoted-printable's soft line breaks.
        .replace("=\r\n", "")
        .replace("=\n", "");
    let token: String = sqlx::query_scalar("select public_token from invoices where id = $1")
        .bind(invoice)
        .fetch_one(&pool)
        .await
        .unwrap();
    for fact in [
        "Subject: Reminder: invoice",
        "was due on 2027-03-10",
        "Kindly settle this week.",
        "100.00",
        &format!("http://invoicer.test/i/{token}"),
    ] {
        assert!(mail.contains(fact), "{fact} in {mail}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The invoice page's and the customer page's toggles: submitted twice, reminders are off once,
/// and nothing is sent; a viewer cannot turn them off (the teams test covers every role).
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_pages_toggles_turn_reminders_off(pool: PgPool) {
    use crate::common::served::TestApp;
    use crate::common::{client, login, pages};
    let app = TestApp::spawn(pool).await;
    let (email, account) = crate::common::rows::new_owner(&app.pool, "Acme").await;
    let org = account.org_id;
    let mut tx = app.pool.begin().await.unwrap();
    let step = invoicer_core::jobs::reminders::Step {
        offset_days: 1,
        message: "Late.".into(),
    };
    invoicer_core::jobs::reminders::save_steps(&mut tx, org, &[step])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let invoice = invoice_due(&app.pool, org, "2027-03-10").await;
    let http = client();
    login(&http, &app.base, &email, "correct horse").await;
    let toggle = [
        ("what", "invoice".to_owned()),
        ("id", invoice.to_string()),
        ("idempotency_key", model::form_key(org).to_string()),
        ("off", "true".to_owned()),
    ];
    let url = format!("{}/rpc/set_reminders", app.base);
    let (a, b) = tokio::join!(
        pages::post_form(&http, url.clone(), &toggle),
        pages::post_form(&http, url.clone(), &toggle)
    );
    assert!(a.status().as_u16() < 400 && b.status().as_u16() < 400);
    let off: bool = sqlx::query_scalar("select reminders_off from invoices where id = $1")
        .bind(invoice)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(off);
    assert_eq!(
        run(&app.pool, at(&app.pool, org, "2027-03-20", 10).await).await,
        0
    );
    let claims: i64 = sqlx::query_scalar(
        "select count(*) from claims where scope = 'form' and owner like '%/toggle_reminders'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(claims, 1, "one claim for the double submit");
    // The invoice page shows it off.
    let page = pages::text(&http, format!("{}/invoices/{invoice}", app.base)).await;
    assert!(page.contains("Payment reminders: off."), "{page}");
}

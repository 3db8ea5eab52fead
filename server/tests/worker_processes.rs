//! Worker processes that die at the worst moments, and several sharing one database.

use std::collections::HashSet;
use std::time::Duration;

use crate::common::queue_email;
use crate::common::rows::scalar;
use crate::common::{self, message_id, spawn_worker, wait_until, SmtpSink, TestDb};
use uuid::Uuid;

const UNSENT: &str = "select count(*) from outbox where sent_at is null";

async fn setup(tag: &str) -> (TestDb, sqlx::PgPool, model::OrgId, Uuid) {
    let db = TestDb::new(tag).await;
    let pool = db.migrated_pool().await;
    let (org, invoice) = common::seed_invoice(&pool, "o@example.com", 4_200, "usd").await;
    (db, pool, org, invoice)
}

/// How `worker` exits, waited for at most 30 seconds.
async fn exit_status(worker: &mut tokio::process::Child) -> std::process::ExitStatus {
    tokio::time::timeout(Duration::from_secs(30), worker.wait())
        .await
        .unwrap()
        .unwrap()
}

/// One invoice email queued and a worker run with `failpoint` that dies there (exit code 70).
async fn crash_with_one_email(tag: &str, failpoint: &str) -> (TestDb, sqlx::PgPool, SmtpSink) {
    let (db, pool, org, invoice) = setup(tag).await;
    let sink = SmtpSink::start(0, false).await;
    queue_email(&pool, org, Uuid::new_v4(), invoice)
        .await
        .unwrap();
    let mut crashing = spawn_worker(&db, &sink, failpoint, 1, 1).await;
    let code = exit_status(&mut crashing).await;
    assert_eq!(code.code(), Some(70), "died at {failpoint}");
    (db, pool, sink)
}

/// A database with `n` invoice emails queued in one statement, and a sink to send them to.
async fn queued(tag: &str, n: i32) -> (TestDb, sqlx::PgPool, SmtpSink) {
    let (db, pool, org, invoice) = setup(tag).await;
    sqlx::query(
        "insert into outbox (id, org_id, invoice_id, kind, payload)
         select gen_random_uuid(), $1, $2, 'invoice_email', jsonb_build_object('invoice_id', $2::text)
         from generate_series(1, $3)",
    )
    .bind(org)
    .bind(invoice)
    .bind(n)
    .execute(&pool)
    .await
    .unwrap();
    (db, pool, SmtpSink::start(0, false).await)
}

#[tokio::test]
async fn killed_between_send_and_mark_the_email_is_redelivered_once_with_the_same_message_id() {
    let (db, pool, sink) = crash_with_one_email("worker_after_send", "worker.after_send").await;
    assert_eq!(sink.messages().len(), 1);
    wait_until(&pool, UNSENT, 1, Duration::from_secs(1)).await; // sent, but not marked

    let _worker = spawn_worker(&db, &sink, "", 1, 1).await;
    wait_until(&pool, UNSENT, 0, Duration::from_secs(30)).await;
    let messages = sink.messages();
    assert_eq!(
        messages.len(),
        2,
        "exactly one duplicate after one crash between send and mark"
    );
    assert_eq!(
        message_id(&messages[0]),
        message_id(&messages[1]),
        "recognisable downstream"
    );
    let attempts: i32 = scalar(&pool, "select attempts from outbox").await;
    assert_eq!(attempts, 2);
    db.finish(pool).await;
}

#[tokio::test]
async fn killed_before_the_send_the_email_goes_out_exactly_once_after_takeover() {
    let (db, pool, sink) = crash_with_one_email("worker_before_send", "worker.before_send").await;
    assert!(sink.messages().is_empty());

    let _worker = spawn_worker(&db, &sink, "", 1, 1).await;
    wait_until(&pool, UNSENT, 0, Duration::from_secs(30)).await;
    assert_eq!(sink.messages().len(), 1);
    db.finish(pool).await;
}

#[tokio::test]
async fn two_worker_processes_drain_500_rows_each_sent_once() {
    let (db, pool, sink) = queued("worker_pair", 500).await;
    let _a = spawn_worker(&db, &sink, "", 2, 30).await;
    let _b = spawn_worker(&db, &sink, "", 2, 30).await;
    wait_until(&pool, UNSENT, 0, Duration::from_secs(120)).await;
    let messages = sink.wait_for(500, Duration::from_secs(10)).await;
    assert_eq!(messages.len(), 500, "none twice");
    let ids: HashSet<String> = messages.iter().map(|m| message_id(m)).collect();
    assert_eq!(ids.len(), 500, "every row once");
    // locked_by names the sender: "<host>-<pid>-<n>"; both processes took part.
    let processes: i64 = scalar(&pool, "select count(distinct regexp_replace(locked_by, '-[0-9]+$', '')) from outbox where sent_at is not null").await;
    assert_eq!(processes, 2, "both worker processes sent rows");
    db.finish(pool).await;
}

#[tokio::test]
async fn sigterm_stops_leasing_and_leaves_no_row_half_held() {
    let (db, pool, sink) = queued("worker_sigterm", 300).await;
    let mut worker = spawn_worker(&db, &sink, "", 1, 30).await;
    sink.wait_for(1, Duration::from_secs(30)).await;
    let pid = worker.id().unwrap() as i32;
    // SIGTERM, as a process manager stops it.
    assert_eq!(unsafe { libc_kill(pid, 15) }, 0);
    let status = exit_status(&mut worker).await;
    assert!(status.success(), "a clean exit: {status:?}");
    let held: i64 = scalar(&pool, "select count(*) from claims where scope = 'job' and owner = 'outbox' and status = 'in_progress'").await;
    assert_eq!(held, 0, "the rows it held were finished before it exited");
    let sent: i64 = scalar(
        &pool,
        "select count(*) from outbox where sent_at is not null",
    )
    .await;
    assert_eq!(
        sent as usize,
        sink.messages().len(),
        "every email that went out is marked, and only those"
    );
    assert!(sent < 300, "it stopped before draining everything ({sent})");
    db.finish(pool).await;
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

//! The webhook survives the process dying at the worst moments, and the stand-in CLI works end to end.

use crate::common::{self, cli, create_org, rows, Server, TestDb};
use sqlx::PgPool;

/// An org with one open invoice of 42.00 usd.
async fn seed_invoice(pool: &PgPool) -> uuid::Uuid {
    common::seed_invoice(pool, "owner@example.com", 4_200, "usd")
        .await
        .1
}

async fn deliver(base: &str, payload: &str) -> Result<u16, reqwest::Error> {
    let secret = invoicer_core::state::DEV_WEBHOOK_SECRET;
    invoicer_core::payments::stripe::standin::deliver(
        &format!("{base}/webhooks/stripe"),
        secret,
        payload,
    )
    .await
    .map(|(status, _)| status)
}

async fn payments_and_state(pool: &PgPool, invoice: uuid::Uuid) -> (i64, String, i64) {
    sqlx::query_as(
        "select (select count(*) from payments), status, amount_paid_cents from invoices where id = $1",
    )
    .bind(invoice)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Crash at `failpoint`, restart clean, let Stripe retry: the payment is recorded exactly once.
async fn crash_then_retry(failpoint: &str, committed_before_crash: bool) {
    let db = TestDb::new("webhook_crash").await;
    create_org(&db, "Warmup", "w@example.com").await; // applies migrations
    let pool = db.pool().await;
    let invoice = seed_invoice(&pool).await;
    let (_, payload) = invoicer_core::payments::stripe::standin::checkout_completed(
        model::InvoiceId::from(invoice),
        4_200,
        "usd",
    );

    let server = Server::start(&db, failpoint).await;
    let first = deliver(&server.base, &payload).await;
    assert!(
        first.is_err(),
        "Stripe sees no answer when the process dies: {first:?}"
    );
    assert_eq!(server.exit_code().await, Some(70));
    let expected_after_crash = if committed_before_crash {
        (1, "paid".to_owned(), 4_200)
    } else {
        (0, "open".to_owned(), 0)
    };
    assert_eq!(
        payments_and_state(&pool, invoice).await,
        expected_after_crash
    );

    // Stripe retries the same event (freshly signed) until it gets a 2xx.
    let server = Server::start(&db, "").await;
    assert_eq!(deliver(&server.base, &payload).await.unwrap(), 200);
    assert_eq!(deliver(&server.base, &payload).await.unwrap(), 200);
    assert_eq!(
        payments_and_state(&pool, invoice).await,
        (1, "paid".to_owned(), 4_200)
    );
    let claims: i64 = rows::scalar(
        &pool,
        "select count(*) from claims where scope = 'webhook' and status = 'done'",
    )
    .await;
    assert_eq!(claims, 1);

    server.stop().await;
    db.finish(pool).await;
}

#[tokio::test]
async fn a_crash_after_the_claim_before_commit_loses_nothing() {
    crash_then_retry("webhook.after_claim", false).await;
}

#[tokio::test]
async fn a_crash_after_commit_before_the_response_duplicates_nothing() {
    crash_then_retry("webhook.after_commit", true).await;
}

#[tokio::test]
async fn the_stand_in_cli_triggers_and_resends_signed_events() {
    let db = TestDb::new("stripe_cli").await;
    let pool = db.migrated_pool().await;
    let invoice = seed_invoice(&pool).await;
    let server = Server::start(&db, "").await;
    let url = format!("{}/webhooks/stripe", server.base);
    let invoice_arg = invoice.to_string();

    let out = cli(
        &db,
        &[
            "stripe",
            "trigger",
            "checkout.session.completed",
            "--invoice",
            &invoice_arg,
            "--url",
            &url,
        ],
    )
    .await;
    let (event_id, status) = out
        .trim()
        .split_once(' ')
        .expect("prints the event id and the status");
    assert!(event_id.starts_with("evt_"), "{out}");
    assert_eq!(status, "200");
    assert_eq!(
        payments_and_state(&pool, invoice).await,
        (1, "paid".to_owned(), 4_200),
        "the amount due was paid"
    );

    let out = cli(&db, &["stripe", "resend", event_id, "--url", &url]).await;
    assert_eq!(out.trim(), format!("{event_id} 200"));
    assert_eq!(
        payments_and_state(&pool, invoice).await.0,
        1,
        "a resend is a duplicate"
    );

    let pi: String = rows::scalar(&pool, "select provider_payment_id from payments").await;
    cli(
        &db,
        &[
            "stripe",
            "trigger",
            "charge.refunded",
            "--payment-intent",
            &pi,
            "--url",
            &url,
        ],
    )
    .await;
    assert_eq!(payments_and_state(&pool, invoice).await.1, "refunded");

    server.stop().await;
    db.finish(pool).await;
}

//! The Stripe webhook through the real router over real HTTP, with real signatures and Postgres.

use crate::common;
use crate::common::rows;
use crate::common::served::{payment_intent, with_new_event_id, TestApp, OLD_SECRET, SECRET};
use invoicer_core::payments::stripe::standin;
use sqlx::PgPool;

const PAYMENTS: &str = "select count(*) from payments";
const EVENTS: &str = "select count(*) from stripe_events";
const CLAIMS: &str = "select count(*) from claims";

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_same_delivery_twice_records_one_payment(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, invoice) = app.invoice(5_000, "usd").await;
    let (_, payload) = standin::checkout_completed(model::InvoiceId::from(invoice), 5_000, "usd");
    assert_eq!(app.deliver(&payload).await, (200, "ok".into()));
    assert_eq!(
        app.deliver(&payload).await,
        (200, "already processed".into())
    );
    assert_eq!(app.count(PAYMENTS).await, 1);
    assert_eq!(app.count(EVENTS).await, 1);
    assert_eq!(app.invoice_state(invoice).await, ("paid".into(), 5_000));
    // Both deliveries are on the activity page, the replay too with the org and invoice of the
    // stored event.
    let attempts: Vec<(String, Option<model::OrgId>, Option<uuid::Uuid>)> =
        sqlx::query_as("select outcome, org_id, invoice_id from attempts order by id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        attempts,
        [
            ("won".to_owned(), Some(org), Some(invoice)),
            ("replay".to_owned(), Some(org), Some(invoice)),
        ]
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn fifty_concurrent_deliveries_record_one_payment(pool: PgPool) {
    let app = std::sync::Arc::new(TestApp::spawn(pool).await);
    let (_, invoice) = app.invoice(5_000, "usd").await;
    let (_, payload) = standin::checkout_completed(model::InvoiceId::from(invoice), 5_000, "usd");
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(50));
    let deliveries: Vec<_> = (0..50)
        .map(|_| {
            let (app, payload, barrier) = (app.clone(), payload.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                // Each delivery is signed afresh, as Stripe's retries are.
                app.deliver(&payload).await.0
            })
        })
        .collect();
    for delivery in deliveries {
        assert_eq!(delivery.await.unwrap(), 200);
    }
    assert_eq!(app.count(PAYMENTS).await, 1);
    assert_eq!(app.count(EVENTS).await, 1);
    assert_eq!(app.count(CLAIMS).await, 1);
    assert_eq!(app.invoice_state(invoice).await, ("paid".into(), 5_000));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn two_event_ids_for_one_payment_record_one_payment(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice) = app.invoice(5_000, "usd").await;
    let (_, first) = standin::checkout_completed(model::InvoiceId::from(invoice), 5_000, "usd");
    let second = with_new_event_id(&first);
    assert_eq!(app.deliver(&first).await.0, 200);
    assert_eq!(app.deliver(&second).await.0, 200);
    assert_eq!(
        app.count(PAYMENTS).await,
        1,
        "the payment intent is the business key"
    );
    assert_eq!(app.count(EVENTS).await, 2, "both events are on record");
    let outcomes: Vec<String> = rows::scalars(
        &app.pool,
        "select outcome from stripe_events order by received_at",
    )
    .await;
    assert_eq!(outcomes, ["applied", "ignored"]);
    assert_eq!(app.invoice_state(invoice).await, ("paid".into(), 5_000));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn partial_payments_add_up_before_the_invoice_is_paid(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice) = app.invoice(5_000, "usd").await;
    let (_, part) = standin::checkout_completed(model::InvoiceId::from(invoice), 2_000, "usd");
    assert_eq!(app.deliver(&part).await.0, 200);
    assert_eq!(app.invoice_state(invoice).await, ("open".into(), 2_000));
    let (_, rest) = standin::checkout_completed(model::InvoiceId::from(invoice), 3_000, "usd");
    assert_eq!(app.deliver(&rest).await.0, 200);
    assert_eq!(app.invoice_state(invoice).await, ("paid".into(), 5_000));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_secret_being_rotated_out_still_verifies(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice) = app.invoice(100, "usd").await;
    let (_, payload) = standin::checkout_completed(model::InvoiceId::from(invoice), 100, "usd");
    assert_eq!(app.deliver_with(OLD_SECRET, &payload).await.0, 200);
    assert_eq!(app.count(PAYMENTS).await, 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn bad_signatures_are_400_and_write_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice) = app.invoice(5_000, "usd").await;
    let (_, payload) = standin::checkout_completed(model::InvoiceId::from(invoice), 5_000, "usd");
    let body = payload.as_bytes().to_vec();
    let now = common::served::chrono_now();
    let good = invoicer_core::payments::stripe::signature::v1(SECRET, now, &body);
    // Through the route, stale timestamps are far outside the window (the exact 299/301 s boundary is
    // unit-tested with a fixed clock; here a second can pass between signing and checking).
    let cases: Vec<(Option<String>, Vec<u8>, &str)> = vec![
        (None, body.clone(), "missing Stripe-Signature header"),
        (
            Some(String::new()),
            body.clone(),
            "missing Stripe-Signature header",
        ),
        (
            Some("garbage".into()),
            body.clone(),
            "malformed Stripe-Signature header",
        ),
        (
            Some(format!("t=abc,v1={good}")),
            body.clone(),
            "malformed Stripe-Signature header",
        ),
        (
            Some(format!("t={now},v0={good}")),
            body.clone(),
            "no v1 signature in Stripe-Signature header",
        ),
        (
            Some(format!("t={now},v1=bad")),
            body.clone(),
            "no signature matches the payload",
        ),
        (
            Some(invoicer_core::payments::stripe::signature::header(
                "whsec_wrong",
                now,
                &body,
            )),
            body.clone(),
            "no signature matches the payload",
        ),
        (
            Some(format!("t={now},v1={good}")),
            payload.replace("5000", "9").into_bytes(),
            "no signature matches the payload",
        ),
        (
            Some(invoicer_core::payments::stripe::signature::header(
                SECRET,
                now - 400,
                &body,
            )),
            body.clone(),
            "timestamp outside the tolerance",
        ),
        (
            Some(invoicer_core::payments::stripe::signature::header(
                SECRET,
                now + 400,
                &body,
            )),
            body.clone(),
            "timestamp outside the tolerance",
        ),
    ];
    for (signature, body, reason) in cases {
        let (status, text) = app.post_raw(signature.as_deref(), body).await;
        assert_eq!(
            (status, text.as_str()),
            (400, reason),
            "signature {signature:?}"
        );
    }
    // Signed, but not JSON: refused after verification.
    let junk = b"{not json".to_vec();
    let header = invoicer_core::payments::stripe::signature::header(SECRET, now, &junk);
    assert_eq!(
        app.post_raw(Some(&header), junk).await,
        (400, "invalid payload".into())
    );

    assert_eq!(app.count(EVENTS).await, 0);
    assert_eq!(app.count(CLAIMS).await, 0);
    assert_eq!(app.count(PAYMENTS).await, 0);
    assert_eq!(app.invoice_state(invoice).await, ("open".into(), 0));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_oversized_body_is_413(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let body = vec![b' '; 1024 * 1024 + 1];
    let header = invoicer_core::payments::stripe::signature::header(
        SECRET,
        common::served::chrono_now(),
        &body,
    );
    assert_eq!(app.post_raw(Some(&header), body).await.0, 413);
    assert_eq!(app.count(CLAIMS).await, 0);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn unknown_invoices_and_wrong_currencies_are_anomalies_not_retries(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice) = app.invoice(5_000, "usd").await;
    let (_, unknown) =
        standin::checkout_completed(model::InvoiceId::from(uuid::Uuid::new_v4()), 5_000, "usd");
    assert_eq!(app.deliver(&unknown).await.0, 200, "retrying cannot fix it");
    let (_, euros) = standin::checkout_completed(model::InvoiceId::from(invoice), 5_000, "eur");
    assert_eq!(app.deliver(&euros).await.0, 200);
    let rows: Vec<(String, Option<String>)> =
        sqlx::query_as("select outcome, detail from stripe_events order by received_at")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|(o, _)| o == "anomaly"), "{rows:?}");
    assert!(
        rows[1].1.as_deref().unwrap().contains("the event says eur"),
        "{rows:?}"
    );
    assert_eq!(app.count(PAYMENTS).await, 0);
    assert_eq!(app.invoice_state(invoice).await, ("open".into(), 0));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn other_event_types_are_recorded_and_answered_200(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let payload = r#"{"id":"evt_other_1","object":"event","type":"customer.created","data":{"object":{"id":"cus_1"}}}"#;
    assert_eq!(app.deliver(payload).await, (200, "ok".into()));
    assert_eq!(
        app.deliver(payload).await,
        (200, "already processed".into())
    );
    let outcome: String = rows::scalar(&app.pool, "select outcome from stripe_events").await;
    assert_eq!(outcome, "ignored");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_refund_moves_paid_to_refunded_and_a_late_payment_event_changes_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice) = app.invoice(5_000, "usd").await;
    let (_, paid) = standin::checkout_completed(model::InvoiceId::from(invoice), 5_000, "usd");
    let refund = charge_refunded(&payment_intent(&paid));
    assert_eq!(app.deliver(&paid).await.0, 200);
    assert_eq!(app.deliver(&refund).await.0, 200);
    assert_eq!(app.invoice_state(invoice).await.0, "refunded");
    // Another event for the same payment arriving late must not resurrect the invoice.
    assert_eq!(app.deliver(&with_new_event_id(&paid)).await.0, 200);
    assert_eq!(app.invoice_state(invoice).await, ("refunded".into(), 0));
    assert_eq!(app.count(PAYMENTS).await, 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_refund_before_its_payment_is_kept_and_applied_when_the_payment_arrives(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice) = app.invoice(5_000, "usd").await;
    let (_, paid) = standin::checkout_completed(model::InvoiceId::from(invoice), 5_000, "usd");
    let refund = charge_refunded(&payment_intent(&paid));
    assert_eq!(app.deliver(&refund).await.0, 200);
    let deferred: String = rows::scalar(&app.pool, "select outcome from stripe_events").await;
    assert_eq!(deferred, "deferred");
    assert_eq!(app.invoice_state(invoice).await.0, "open");

    assert_eq!(app.deliver(&paid).await.0, 200);
    assert_eq!(
        app.invoice_state(invoice).await,
        ("refunded".into(), 0),
        "never shown as paid"
    );
    assert_eq!(app.count(PAYMENTS).await, 1);
    assert_eq!(
        app.count("select count(*) from refunds where full_refund")
            .await,
        1,
        "the refund is a fact of that payment"
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_payment_and_its_refund_arriving_together_never_lose_the_refund(pool: PgPool) {
    // Different event ids, so different claims: only the lock on the payment makes them take turns.
    let app = std::sync::Arc::new(TestApp::spawn(pool).await);
    let mut pairs = Vec::new();
    for _ in 0..15 {
        let (_, invoice) = app.invoice(5_000, "usd").await;
        let (_, paid) = standin::checkout_completed(model::InvoiceId::from(invoice), 5_000, "usd");
        let refund = charge_refunded(&payment_intent(&paid));
        pairs.push((invoice, paid, refund));
    }
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(30));
    let mut deliveries = Vec::new();
    for (_, paid, refund) in &pairs {
        for payload in [paid.clone(), refund.clone()] {
            let (app, barrier) = (app.clone(), barrier.clone());
            deliveries.push(tokio::spawn(async move {
                barrier.wait().await;
                app.deliver(&payload).await.0
            }));
        }
    }
    for d in deliveries {
        assert_eq!(d.await.unwrap(), 200);
    }
    for (invoice, _, _) in &pairs {
        assert_eq!(app.invoice_state(*invoice).await, ("refunded".into(), 0));
    }
    assert_eq!(app.count("select count(*) from refunds").await, 15);
    assert_eq!(
        app.count("select count(*) from invoices where payment_state = 'refunded'")
            .await,
        15
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn refunding_one_of_two_payments_reopens_the_invoice_for_what_is_due(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice) = app.invoice(5_000, "usd").await;
    let (_, first) = standin::checkout_completed(model::InvoiceId::from(invoice), 2_000, "usd");
    let (_, second) = standin::checkout_completed(model::InvoiceId::from(invoice), 3_000, "usd");
    assert_eq!(app.deliver(&first).await.0, 200);
    assert_eq!(app.deliver(&second).await.0, 200);
    assert_eq!(app.invoice_state(invoice).await, ("paid".into(), 5_000));
    let refund = charge_refunded(&payment_intent(&first));
    assert_eq!(app.deliver(&refund).await.0, 200);
    assert_eq!(app.invoice_state(invoice).await, ("open".into(), 3_000));
    let rest = charge_refunded(&payment_intent(&second));
    assert_eq!(app.deliver(&rest).await.0, 200);
    assert_eq!(app.invoice_state(invoice).await.1, 0);
}

/// `charge.refunded` for the whole charge of `payment_intent` (the amount left to Stripe).
fn charge_refunded(payment_intent: &str) -> String {
    standin::refund_event(&standin::event_id(), payment_intent, 0, "usd", true, false)
}

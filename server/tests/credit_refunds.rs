//! Credit notes that credit lines, and those that pay money back: through Stripe (planned with the
//! credit note, made by a worker under a key named by the credit note, once even across a crash) or
//! outside the app (then the payments that money came from stay).

use std::sync::Arc;
use std::time::Duration;

use invoicer_core::payments::stripe::client::Stripe;
use invoicer_core::worker::{drain_once, WorkerConfig};
use lab::stripe_local::{Config, LocalStripe};
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio::sync::Semaphore;
use uuid::Uuid;

use crate::checkout::{
    drain_calls, no_redirects, open_invoice, press_pay, session_id, with_stripe,
};
use crate::common::served::{ApiResponse, TestApp};
use crate::common::{cli, create_org, poll, rows, wait_until, Server, TestDb};

fn text(res: &ApiResponse) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

async fn credit(app: &TestApp, key: &str, invoice: Uuid, idem: &str, body: Value) -> ApiResponse {
    let path = format!("/api/v1/invoices/{invoice}/credit_notes");
    app.post_to(&path, Some(key), Some(idem), &body.to_string())
        .await
}

/// What a line of the API's invoice output is worth: its amount less its share of the discount,
/// plus its tax.
fn worth(line: &Value) -> i64 {
    line["amount_cents"].as_i64().unwrap() - line["discount_cents"].as_i64().unwrap()
        + line["tax_cents"].as_i64().unwrap()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn crediting_lines_credits_their_worth_and_never_more_than_a_line_has(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, key) = app.api_client().await;
    let rate = app
        .post_to(
            "/api/v1/tax_rates",
            Some(&key),
            Some("vat"),
            &json!({"name": "VAT", "percent": 19}).to_string(),
        )
        .await
        .json()["id"]
        .clone();
    let body = json!({
        "customer_name": "Ada",
        "customer_email": "ada@example.com",
        "currency": "eur",
        "due_date": "2027-02-28",
        "discount": {"percent": 10},
        "lines": [
            {"description": "Hosting", "quantity": 3, "unit_amount_cents": 3_333, "tax_rate_id": rate},
            {"description": "Support", "quantity": 1.5, "unit_amount_cents": 9_900}
        ]
    });
    let made = app
        .post_invoice(Some(&key), Some("inv"), &body.to_string())
        .await;
    assert_eq!(made.status, 201, "{}", text(&made));
    let inv = made.json();
    let invoice: Uuid = inv["id"].as_str().unwrap().parse().unwrap();
    let lines = inv["lines"].as_array().unwrap();
    assert_eq!(
        (lines[0]["line_id"].as_i64(), lines[1]["line_id"].as_i64()),
        (Some(1), Some(2))
    );
    let (hosting, support) = (worth(&lines[0]), worth(&lines[1]));
    assert_eq!(hosting + support, inv["total_cents"].as_i64().unwrap());

    let reason = "Returned";
    for (k, bad) in [
        (
            "b1",
            json!({"lines": [{"line_id": 1, "quantity": 1}], "amount_cents": 5, "reason": reason}),
        ),
        (
            "b2",
            json!({"lines": [{"line_id": 1, "quantity": 1}, {"line_id": 1, "quantity": 1}], "reason": reason}),
        ),
        ("b3", json!({"lines": [], "reason": reason})),
        (
            "b4",
            json!({"lines": [{"line_id": 1, "quantity": 0}], "reason": reason}),
        ),
    ] {
        let res = credit(&app, &key, invoice, k, bad).await;
        assert_eq!(res.status, 422, "{k}: {}", text(&res));
    }
    let res = credit(
        &app,
        &key,
        invoice,
        "b5",
        json!({"lines": [{"line_id": 7, "quantity": 1}], "reason": reason}),
    )
    .await;
    assert_eq!(
        res.status,
        409,
        "a line the invoice does not have: {}",
        text(&res)
    );
    let res = credit(
        &app,
        &key,
        invoice,
        "b6",
        json!({"lines": [{"line_id": 2, "quantity": 1.501}], "reason": reason}),
    )
    .await;
    assert_eq!(res.status, 409, "more than the line has: {}", text(&res));

    // One of three: a third of the line's worth, rounded half up.
    let one = credit(
        &app,
        &key,
        invoice,
        "c1",
        json!({"lines": [{"line_id": 1, "quantity": 1}], "reason": reason}),
    )
    .await;
    assert_eq!(one.status, 201, "{}", text(&one));
    let one = one.json();
    assert_eq!(one["total_cents"].as_i64(), Some((2 * hosting + 3) / 6));
    assert_eq!(one["lines"][0]["description"], "Hosting");
    assert_eq!(one["lines"][0]["quantity"], 1.0);
    // The rest of both lines: together, everything the invoice asked for.
    let rest = credit(
        &app,
        &key,
        invoice,
        "c2",
        json!({"lines": [{"line_id": 1, "quantity": 2}, {"line_id": 2, "quantity": 1.5}], "reason": reason}),
    )
    .await;
    assert_eq!(rest.status, 201, "{}", text(&rest));
    assert_eq!(
        rest.json()["total_cents"].as_i64().unwrap() + one["total_cents"].as_i64().unwrap(),
        hosting + support
    );
    let got = app
        .get(&key, &format!("/api/v1/invoices/{invoice}"))
        .await
        .json();
    assert_eq!(got["amount_due_cents"], 0);
    let res = credit(
        &app,
        &key,
        invoice,
        "c3",
        json!({"lines": [{"line_id": 1, "quantity": 0.001}], "reason": reason}),
    )
    .await;
    assert_eq!(res.status, 409, "nothing left of the line: {}", text(&res));
    assert_eq!(app.count("select count(*) from credit_notes").await, 2);
}

/// An invoice of `app`'s new org paid by card at the local Stripe, after `manual_cents` recorded by
/// hand: (invoice, API key, payment intent).
async fn paid_by_card(
    app: &TestApp,
    stripe: &LocalStripe,
    manual_cents: i64,
) -> (Uuid, String, String) {
    let (_, key) = app.api_client().await;
    let (invoice, page) = open_invoice(app, &key).await;
    if manual_cents > 0 {
        let res = app
            .post_to(
                &format!("/api/v1/invoices/{invoice}/payments"),
                Some(&key),
                Some("transfer"),
                &json!({"amount_cents": manual_cents, "method": "bank_transfer", "paid_on": "2026-12-01"})
                    .to_string(),
            )
            .await;
        assert_eq!(res.status, 201, "{}", text(&res));
    }
    let (status, location) = press_pay(&no_redirects(), &app.base, &page).await;
    assert_eq!(status, 303);
    stripe.pay(&session_id(&location), "card").await.unwrap();
    let sql =
        format!("select count(*) from invoices where id = '{invoice}' and payment_state = 'paid'");
    wait_until(&app.pool, &sql, 1, Duration::from_secs(30)).await;
    let intent: String = sqlx::query_scalar(
        "select provider_payment_id from payments where invoice_id = $1 and provider = 'stripe'",
    )
    .bind(invoice)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    (invoice, key, intent)
}

/// 39,900 paid: 20,000 by transfer, 19,900 by card. Only the card's money can go back through
/// Stripe; a credit note that asks for it is issued `pending`, and the worker's refund (one, under
/// the credit note's key) leaves the invoice paid: what it asks for once credited (20,000) is what
/// it kept. `charge.refunded` confirms it.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_credit_note_refunds_card_money_through_stripe_once(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, Config::default()).await;
    let (invoice, key, intent) = paid_by_card(&app, &stripe, 20_000).await;
    let reason = "Cancelled";

    let all = credit(
        &app,
        &key,
        invoice,
        "too-much",
        json!({"reason": reason, "refund": "stripe"}),
    )
    .await;
    assert_eq!(all.status, 409, "{}", text(&all));
    assert!(
        text(&all).contains("19900"),
        "says how much can go back: {}",
        text(&all)
    );
    assert_eq!(app.count("select count(*) from credit_notes").await, 0);
    assert_eq!(
        app.count("select count(*) from outbox where kind = 'stripe_refund'")
            .await,
        0
    );

    let body = json!({"amount_cents": 19_900, "reason": reason, "refund": "stripe"});
    let made = credit(&app, &key, invoice, "back", body.clone()).await;
    assert_eq!(made.status, 201, "{}", text(&made));
    let note = made.json();
    assert_eq!(
        (note["refund"].as_str(), note["refund_state"].as_str()),
        (Some("stripe"), Some("pending"))
    );
    let again = credit(&app, &key, invoice, "back", body).await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert!(
        stripe.refunds().is_empty(),
        "the worker makes the refund, not the request"
    );

    drain_calls(&app, &stripe).await;
    drain_calls(&app, &stripe).await;
    let refunds = stripe.refunds();
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    assert_eq!(refunds[0]["amount"], 19_900);
    assert_eq!(refunds[0]["payment_intent"], intent.as_str());
    assert_eq!(refunds[0]["metadata"]["credit_note_id"], note["id"]);
    let read = app
        .get(
            &key,
            &format!("/api/v1/credit_notes/{}", note["id"].as_str().unwrap()),
        )
        .await
        .json();
    assert_eq!(
        (
            read["refund_state"].as_str(),
            read["refunded_cents"].as_i64()
        ),
        (Some("refunded"), Some(19_900))
    );
    assert_eq!(
        app.money(invoice).await,
        ("paid".into(), "paid".into(), 20_000)
    );
    // Stripe's charge.refunded arrives and agrees: nothing changes.
    let confirmed = "select count(*) from stripe_events where type = 'charge.refunded'";
    wait_until(&app.pool, confirmed, 1, Duration::from_secs(30)).await;
    assert_eq!(
        app.money(invoice).await,
        ("paid".into(), "paid".into(), 20_000)
    );
    // Nothing left on the card: another Stripe refund is refused, nothing issued.
    let more = credit(
        &app,
        &key,
        invoice,
        "more",
        json!({"amount_cents": 100, "reason": reason, "refund": "stripe"}),
    )
    .await;
    assert_eq!(more.status, 409, "{}", text(&more));
}

/// A client of the local Stripe that retries fast (tests).
fn stripe_client(stripe: &LocalStripe) -> Stripe {
    Stripe::new(&stripe.base, Some("sk_test_local".into())).with_backoff(Duration::from_millis(10))
}

/// A worker named `id` that leases a row for `lease` and retries a failed row at once.
fn worker(
    stripe: &LocalStripe,
    id: &str,
    lease: Duration,
) -> (WorkerConfig, invoicer_core::mail::Mailer) {
    let config = WorkerConfig {
        id: id.into(),
        lease,
        backoff_base: Duration::ZERO,
        stripe: Some(stripe_client(stripe)),
        ..Default::default()
    };
    let dir = std::env::temp_dir().join(format!("invoicer-refund-{}", Uuid::new_v4().simple()));
    let mailer = invoicer_core::mail::Mailer::new(
        None,
        None,
        &dir,
        Duration::from_secs(5),
        invoicer_core::mail::DEV_FROM,
    )
    .unwrap();
    (config, mailer)
}

/// A credit note of `cents` paid back through Stripe, issued under the API key `idem`: its id.
async fn refund_by_credit_note(
    app: &TestApp,
    key: &str,
    invoice: Uuid,
    idem: &str,
    cents: i64,
) -> Uuid {
    let body = json!({"amount_cents": cents, "reason": "Late", "refund": "stripe"});
    let made = credit(app, key, invoice, idem, body).await;
    assert_eq!(made.status, 201, "{}", text(&made));
    made.json()["id"].as_str().unwrap().parse().unwrap()
}

/// (state, Stripe's refund id, failure) of what `credit_note` planned to refund of `intent`.
async fn planned(
    pool: &PgPool,
    credit_note: Uuid,
    intent: &str,
) -> (String, Option<String>, Option<String>) {
    sqlx::query_as(
        "select state, stripe_refund_id, failure from credit_note_refunds
         where credit_note_id = $1 and provider_payment_id = $2",
    )
    .bind(credit_note)
    .bind(intent)
    .fetch_one(pool)
    .await
    .unwrap()
}

fn still_pending() -> (String, Option<String>, Option<String>) {
    ("pending".into(), None, None)
}

/// Waits until the local Stripe has received `n` refund requests (answered or still held).
async fn refund_requests(stripe: &LocalStripe, n: u64) {
    let within = Duration::from_secs(10);
    poll(
        "refund requests at Stripe",
        n,
        within,
        Duration::from_millis(5),
        || async move { stripe.refund_calls() },
    )
    .await;
}

/// Another request under the refund's Idempotency-Key is still in progress at Stripe (a worker
/// whose lease ran out while it waited, say), so Stripe answers the worker 409. That says "not
/// yet", never "no": the refund stays pending, the row is tried again, and the next try gets the
/// one refund Stripe made.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_409_from_stripe_leaves_the_refund_pending_and_is_tried_again(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, Config::default()).await;
    let (invoice, key, intent) = paid_by_card(&app, &stripe, 0).await;
    // The receipt goes first: the refund's row is the only one due next.
    drain_calls(&app, &stripe).await;
    let note = refund_by_credit_note(&app, &key, invoice, "cn", 4_000).await;

    // The worker's request, under its key, from an earlier holder: held by Stripe while it is made.
    let hold = Arc::new(Semaphore::new(0));
    stripe.hold_refunds(hold.clone());
    let earlier = tokio::spawn({
        let (client, intent) = (stripe_client(&stripe), intent.clone());
        async move {
            let metadata = [("credit_note_id", note.to_string())];
            let key = invoicer_core::payments::refunds::idempotency_key(note, &intent);
            client.create_refund(&intent, 4_000, &metadata, &key).await
        }
    });
    refund_requests(&stripe, 1).await;
    let (config, mailer) = worker(&stripe, "worker", Duration::from_secs(60));
    assert_eq!(drain_once(&app.pool, &mailer, &config).await.unwrap(), 1);
    assert_eq!(
        planned(&app.pool, note, &intent).await,
        still_pending(),
        "a 409 is not a refusal"
    );
    let (dead, error): (bool, Option<String>) = sqlx::query_as(
        "select dead_at is not null, last_error from outbox where kind = 'stripe_refund'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(!dead && error.is_some(), "to be tried again: {error:?}");

    hold.add_permits(100);
    let made = earlier.await.unwrap().unwrap();
    drain_calls(&app, &stripe).await;
    assert_eq!(
        planned(&app.pool, note, &intent).await,
        ("succeeded".into(), Some(made.id.clone()), None)
    );
    assert_eq!(stripe.refunds().len(), 1, "{:?}", stripe.refunds());
    assert_eq!(
        app.money(invoice).await,
        ("paid".into(), "paid".into(), 35_900)
    );
}

/// A worker's call is still at Stripe when its lease runs out and a second worker takes the row
/// over. The second's call under the same key is answered 409 (not a refusal); when the first's
/// answer comes, the row is no longer the first's and it records nothing. The next holder stores
/// the one refund Stripe made.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_worker_whose_lease_was_taken_over_records_nothing_about_the_refund(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, Config::default()).await;
    let (invoice, key, intent) = paid_by_card(&app, &stripe, 0).await;
    drain_calls(&app, &stripe).await;
    let hold = Arc::new(Semaphore::new(0));
    stripe.hold_refunds(hold.clone());
    let note = refund_by_credit_note(&app, &key, invoice, "cn", 4_000).await;

    let (config, mailer) = worker(&stripe, "first", Duration::from_secs(1));
    let first = tokio::spawn({
        let pool = app.pool.clone();
        async move { drain_once(&pool, &mailer, &config).await.unwrap() }
    });
    refund_requests(&stripe, 1).await;
    // The first's lease runs out while Stripe still has its request.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let (config, mailer) = worker(&stripe, "second", Duration::from_secs(60));
    assert_eq!(
        drain_once(&app.pool, &mailer, &config).await.unwrap(),
        1,
        "the second took the row over"
    );
    assert_eq!(
        planned(&app.pool, note, &intent).await,
        still_pending(),
        "the second's 409 is not a refusal"
    );

    hold.add_permits(100);
    assert_eq!(first.await.unwrap(), 1);
    assert_eq!(stripe.refunds().len(), 1, "Stripe made the first's refund");
    assert_eq!(
        planned(&app.pool, note, &intent).await,
        still_pending(),
        "the first holds the row no more: it records nothing"
    );

    drain_calls(&app, &stripe).await;
    let made = stripe.refunds();
    assert_eq!(made.len(), 1, "{made:?}");
    let id = made[0]["id"].as_str().map(str::to_owned);
    assert_eq!(
        planned(&app.pool, note, &intent).await,
        ("succeeded".into(), id, None)
    );
    assert_eq!(
        app.money(invoice).await,
        ("paid".into(), "paid".into(), 35_900)
    );
}

/// Stripe forgets an Idempotency-Key after 24 hours. A refund whose first call was answered but
/// never stored, retried a day later, would make a second refund under the forgotten key: it
/// looks the refund up by its metadata first and stores that one. A refund as old that Stripe
/// never made is made.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_refund_retried_past_stripes_key_memory_finds_its_refund_and_makes_no_second(
    pool: PgPool,
) {
    let (app, stripe) = with_stripe(pool, Config::default()).await;
    let (invoice, key, intent) = paid_by_card(&app, &stripe, 0).await;
    let note = refund_by_credit_note(&app, &key, invoice, "cn", 4_000).await;
    // The first worker's call, whose answer was lost (a crash before the commit).
    let metadata = [("credit_note_id", note.to_string())];
    let lost = stripe_client(&stripe)
        .create_refund(
            &intent,
            4_000,
            &metadata,
            &invoicer_core::payments::refunds::idempotency_key(note, &intent),
        )
        .await
        .unwrap();
    // A day later: Stripe has forgotten the key, and the row is as old.
    assert!(stripe.forget_idempotency_keys() >= 1);
    let a_day_ago = "update outbox set created_at = created_at - interval '25 hours'
                     where kind = 'stripe_refund'";
    sqlx::query(a_day_ago).execute(&app.pool).await.unwrap();

    drain_calls(&app, &stripe).await;
    let made = stripe.refunds();
    assert_eq!(made.len(), 1, "one refund: {made:?}");
    assert_eq!(stripe.refund_calls(), 1, "found, not asked for again");
    assert_eq!(
        planned(&app.pool, note, &intent).await,
        ("succeeded".into(), Some(lost.id.clone()), None)
    );
    assert_eq!(
        app.money(invoice).await,
        ("paid".into(), "paid".into(), 35_900)
    );

    // As old, and never made at Stripe: looked for, not found, made once.
    let other = refund_by_credit_note(&app, &key, invoice, "cn-2", 1_000).await;
    sqlx::query(a_day_ago).execute(&app.pool).await.unwrap();
    drain_calls(&app, &stripe).await;
    let made = stripe.refunds();
    assert_eq!(made.len(), 2, "{made:?}");
    assert_eq!(made[1]["amount"], 1_000);
    assert_eq!(made[1]["metadata"]["credit_note_id"], other.to_string());
    assert_eq!(
        planned(&app.pool, other, &intent).await,
        (
            "succeeded".into(),
            made[1]["id"].as_str().map(str::to_owned),
            None
        )
    );
}

/// Money a credit note paid back outside the app came from the payments: the one it depends on
/// cannot be deleted.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_payment_a_manual_refund_depends_on_cannot_be_deleted(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let made = app
        .post_invoice(
            Some(&key),
            Some("inv"),
            &crate::common::served::invoice_body("Ada"),
        )
        .await;
    let invoice: Uuid = made.json()["id"].as_str().unwrap().parse().unwrap();
    let paid = app
        .post_to(
            &format!("/api/v1/invoices/{invoice}/payments"),
            Some(&key),
            Some("p"),
            &json!({"amount_cents": 39_900, "method": "cash", "paid_on": "2026-12-01"}).to_string(),
        )
        .await;
    let payment: Uuid = paid.json()["id"].as_str().unwrap().parse().unwrap();
    let back = credit(
        &app,
        &key,
        invoice,
        "m",
        json!({"amount_cents": 900, "reason": "Broken", "refund": "manual"}),
    )
    .await;
    assert_eq!(back.json()["refunded_cents"], 900);
    let err = crate::common::rows::delete_payment(&app.pool, org, invoice, payment)
        .await
        .unwrap_err();
    assert!(
        matches!(err, invoicer_core::payments::manual::PaymentError::Refunded),
        "{err}"
    );
}

/// The worker dies after Stripe made the refund and before it was stored. The next worker, once
/// the lease is stale, sends the same key and parameters: Stripe answers with the refund it made,
/// and there is one refund, one credit note, and the invoice as one refund leaves it.
#[tokio::test]
async fn a_crash_after_stripe_refunded_refunds_once() {
    let db = TestDb::new("refund_crash").await;
    create_org(&db, "Acme", "refund@example.com").await;
    let key = cli(
        &db,
        &["admin", "create-api-key", "--email", "refund@example.com"],
    )
    .await;
    let key = key.trim().to_owned();
    let pool = db.pool().await;
    let stripe = LocalStripe::start(
        "127.0.0.1:0".parse().unwrap(),
        Config {
            webhook_secret: invoicer_core::state::DEV_WEBHOOK_SECRET.to_owned(),
            ..Config::default()
        },
    )
    .await
    .unwrap();
    let env = [
        ("STRIPE_API_BASE", stripe.base.clone()),
        ("INVOICER_PUBLIC_URL", "http://invoicer.test".to_owned()),
        ("WORKER_LEASE_SECS", "2".to_owned()),
        ("SMTP_TIMEOUT_MS", "500".to_owned()),
    ];
    let server = Server::start_with(&db, "refund.after_stripe", &env).await;
    stripe.send_events_to(&format!("{}/webhooks/stripe", server.base));
    let http = reqwest::Client::new();
    let created: Value = http
        .post(format!("{}/api/v1/invoices", server.base))
        .bearer_auth(&key)
        .header("idempotency-key", "inv")
        .header("content-type", "application/json")
        .body(crate::common::served::invoice_body("Ada"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let invoice = created["id"].as_str().unwrap().to_owned();
    let token = created["public_url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let (status, location) = press_pay(&no_redirects(), &server.base, &format!("/i/{token}")).await;
    assert_eq!(status, 303);
    stripe.pay(&session_id(&location), "card").await.unwrap();
    let paid =
        format!("select count(*) from invoices where id = '{invoice}' and payment_state = 'paid'");
    wait_until(&pool, &paid, 1, Duration::from_secs(30)).await;

    let res = http
        .post(format!(
            "{}/api/v1/invoices/{invoice}/credit_notes",
            server.base
        ))
        .bearer_auth(&key)
        .header("idempotency-key", "cn")
        .header("content-type", "application/json")
        .body(json!({"amount_cents": 4_000, "reason": "Late", "refund": "stripe"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        201,
        "the credit note committed before the worker started"
    );
    assert_eq!(
        server.exit_code().await,
        Some(70),
        "died at refund.after_stripe"
    );
    assert_eq!(stripe.refunds().len(), 1, "Stripe made the refund");
    let pending: i64 = rows::scalar(
        &pool,
        "select count(*) from credit_note_refunds where state = 'pending'",
    )
    .await;
    assert_eq!(pending, 1, "we never stored it");

    let server = Server::start_with(&db, "", &env).await;
    stripe.send_events_to(&format!("{}/webhooks/stripe", server.base));
    let made = "select count(*) from credit_note_refunds where state = 'succeeded'";
    wait_until(&pool, made, 1, Duration::from_secs(60)).await;
    assert_eq!(stripe.refund_calls(), 2, "the same key asked again");
    assert_eq!(stripe.refunds().len(), 1, "and refunded nothing more");
    let stored: String =
        rows::scalar(&pool, "select stripe_refund_id from credit_note_refunds").await;
    assert_eq!(stored, stripe.refunds()[0]["id"].as_str().unwrap());
    assert_eq!(
        rows::scalar::<i64>(&pool, "select count(*) from credit_notes").await,
        1
    );
    let money: (String, String, i64) = sqlx::query_as(
        "select status, payment_state, amount_paid_cents from invoices where id = $1::uuid",
    )
    .bind(&invoice)
    .fetch_one(&pool)
    .await
    .unwrap();
    // What the invoice asks for once credited (35,900) is what was kept: paid.
    assert_eq!(money, ("paid".into(), "paid".into(), 35_900));
    server.stop().await;
    db.finish(pool).await;
}

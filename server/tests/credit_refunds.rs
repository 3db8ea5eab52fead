//! Credit notes that credit lines, and those that pay money back: through Stripe (planned with the
//! credit note, made by a worker under a key named by the credit note, once even across a crash) or
//! outside the app (then the payments that money came from stay).

use std::time::Duration;

use lab::stripe_local::{Config, LocalStripe};
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::checkout::{
    drain_calls, no_redirects, open_invoice, press_pay, session_id, with_stripe,
};
use crate::common::served::{ApiResponse, TestApp};
use crate::common::{cli, create_org, rows, wait_until, Server, TestDb};

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

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
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
#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
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

/// Money a credit note paid back outside the app came from the payments: the one it depends on
/// cannot be deleted.
#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
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
    let mut tx = app.pool.begin().await.unwrap();
    let actor = app::ssr::audit::Actor::operator();
    let err = app::ssr::manual_payments::delete(&mut tx, org, invoice, payment, &actor)
        .await
        .unwrap_err();
    assert!(
        matches!(err, app::ssr::manual_payments::PaymentError::Refunded),
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
            webhook_secret: app::ssr::state::DEV_WEBHOOK_SECRET.to_owned(),
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

//! A customer's credit balance (what their invoices kept beyond what they ask for) applied to
//! another of their open invoices: once per attempt, never more than the balance, whoever races
//! for it.

use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::{ApiResponse, TestApp};

fn text(res: &ApiResponse) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

/// An invoice of `cents` in `currency` for `customer`: its id.
async fn invoice_for(app: &TestApp, key: &str, customer: &str, cents: i64, currency: &str) -> Uuid {
    let body = json!({
        "customer_id": customer,
        "customer_name": "Ada",
        "customer_email": "ada@example.com",
        "currency": currency,
        "due_date": "2027-02-28",
        "lines": [{"description": "Work", "quantity": 1, "unit_amount_cents": cents}]
    });
    let res = app
        .post_invoice(
            Some(key),
            Some(&Uuid::new_v4().to_string()),
            &body.to_string(),
        )
        .await;
    assert_eq!(res.status, 201, "{}", text(&res));
    res.json()["id"].as_str().unwrap().parse().unwrap()
}

async fn pay(app: &TestApp, key: &str, invoice: Uuid, cents: i64) {
    let res = app
        .post_to(
            &format!("/api/v1/invoices/{invoice}/payments"),
            Some(key),
            Some(&Uuid::new_v4().to_string()),
            &json!({"amount_cents": cents, "method": "bank_transfer", "paid_on": "2026-12-01"})
                .to_string(),
        )
        .await;
    assert_eq!(res.status, 201, "{}", text(&res));
}

async fn apply(app: &TestApp, key: &str, invoice: Uuid, idem: &str, body: Value) -> ApiResponse {
    app.post_to(
        &format!("/api/v1/invoices/{invoice}/apply_credit"),
        Some(key),
        Some(idem),
        &body.to_string(),
    )
    .await
}

/// An org with a customer: (API key, customer id).
async fn customer(app: &TestApp) -> (String, String) {
    let (_, key) = app.api_client().await;
    let res = app
        .post_to(
            "/api/v1/customers",
            Some(&key),
            Some("ada"),
            &json!({"name": "Ada", "email": "ada@example.com"}).to_string(),
        )
        .await;
    assert_eq!(res.status, 201, "{}", text(&res));
    (key, res.json()["id"].as_str().unwrap().to_owned())
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_overpayment_and_a_kept_credit_pay_the_customers_next_invoice_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (key, ada) = customer(&app).await;
    // 2,000 paid too much on one invoice; a credit note of 1,000 on a paid one keeps the money.
    let over = invoice_for(&app, &key, &ada, 10_000, "eur").await;
    pay(&app, &key, over, 12_000).await;
    let kept = invoice_for(&app, &key, &ada, 3_000, "eur").await;
    pay(&app, &key, kept, 3_000).await;
    let credited = app
        .post_to(
            &format!("/api/v1/invoices/{kept}/credit_notes"),
            Some(&key),
            Some("cn"),
            &json!({"amount_cents": 1_000, "reason": "Late"}).to_string(),
        )
        .await;
    assert_eq!(credited.status, 201, "{}", text(&credited));
    let next = invoice_for(&app, &key, &ada, 5_000, "eur").await;
    let dollars = invoice_for(&app, &key, &ada, 5_000, "usd").await;

    let res = apply(&app, &key, dollars, "usd", json!({})).await;
    assert_eq!(res.status, 409, "no credit in dollars: {}", text(&res));
    let res = apply(&app, &key, next, "too-much", json!({"amount_cents": 3_001})).await;
    assert_eq!(res.status, 409, "{}", text(&res));
    let res = apply(&app, &key, next, "zero", json!({"amount_cents": 0})).await;
    assert_eq!(res.status, 422, "{}", text(&res));

    let first = apply(&app, &key, next, "all", json!({})).await;
    assert_eq!(first.status, 200, "{}", text(&first));
    assert_eq!(first.json()["amount_paid_cents"], 3_000);
    assert_eq!(first.json()["payment_state"], "partially_paid");
    let again = apply(&app, &key, next, "all", json!({})).await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.body, first.body);
    // The invoices the money came from ask for what they asked for, and still have it.
    assert_eq!(
        app.money(over).await,
        ("paid".into(), "paid".into(), 10_000)
    );
    assert_eq!(app.money(kept).await, ("paid".into(), "paid".into(), 2_000));
    assert_eq!(
        app.money(next).await,
        ("open".into(), "partially_paid".into(), 3_000)
    );
    let res = apply(&app, &key, next, "more", json!({})).await;
    assert_eq!(res.status, 409, "nothing left: {}", text(&res));
    // The rest, paid by hand, pays the invoice.
    pay(&app, &key, next, 2_000).await;
    assert_eq!(app.money(next).await, ("paid".into(), "paid".into(), 5_000));

    // Another org's invoice is not found.
    let (other, _) = customer(&app).await;
    let res = apply(&app, &other, next, "theirs", json!({})).await;
    assert_eq!(res.status, 404, "{}", text(&res));
}

/// Ten invoices of one customer ask at once for a balance of 3,000: the balance is spent exactly,
/// never twice.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn applications_racing_for_one_balance_spend_it_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (key, ada) = customer(&app).await;
    let over = invoice_for(&app, &key, &ada, 1_000, "eur").await;
    pay(&app, &key, over, 4_000).await;
    let mut targets = Vec::new();
    for _ in 0..10 {
        targets.push(invoice_for(&app, &key, &ada, 1_000, "eur").await);
    }
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(targets.len()));
    let app = std::sync::Arc::new(app);
    let runs: Vec<_> = targets
        .iter()
        .map(|&t| {
            let (app, key, barrier) = (app.clone(), key.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                apply(&app, &key, t, &format!("a-{t}"), json!({}))
                    .await
                    .status
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for run in runs {
        statuses.push(run.await.unwrap());
    }
    statuses.sort();
    assert_eq!(statuses, [200, 200, 200, 409, 409, 409, 409, 409, 409, 409]);
    let moved = app
        .count("select coalesce(sum(amount_cents), 0)::bigint from credit_applications")
        .await;
    assert_eq!(moved, 3_000);
    assert_eq!(app.money(over).await, ("paid".into(), "paid".into(), 1_000));
}

//! The dashboard: its figures equal the same figures computed here from the rows themselves.

use std::collections::BTreeMap;

use chrono::{Datelike, NaiveDate};
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::TestApp;
use crate::common::{self, pages};

async fn send(app: &TestApp, method: &str, path: &str, key: &str, body: Value) -> Value {
    app.call_ok(method, path, key, &body).await
}

/// The figures from the rows: (outstanding, overdue, aging) per currency.
async fn owed_from_rows(
    pool: &PgPool,
    org: model::OrgId,
    today: NaiveDate,
) -> BTreeMap<String, (i64, i64, [i64; 5])> {
    let rows: Vec<(String, String, i64, NaiveDate)> = sqlx::query_as(
        "select status, currency, total_cents - amount_credited_cents - amount_paid_cents, due_date \
         from invoices where org_id = $1",
    )
    .bind(org)
    .fetch_all(pool)
    .await
    .unwrap();
    let mut out: BTreeMap<String, (i64, i64, [i64; 5])> = BTreeMap::new();
    for (status, currency, due, due_date) in rows {
        if !(status == "open" || status == "uncollectible") || due <= 0 {
            continue;
        }
        let late = (today - due_date).num_days();
        let e = out.entry(currency).or_default();
        e.0 += due;
        let bucket = match late {
            ..=0 => 0,
            1..=30 => 1,
            31..=60 => 2,
            61..=90 => 3,
            _ => 4,
        };
        if late > 0 {
            e.1 += due;
        }
        e.2[bucket] += due;
    }
    out
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_dashboard_adds_up_as_the_rows_do(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (email, account) = crate::common::rows::new_owner(&app.pool, "Dash Co").await;
    let org = account.org_id;
    let key = crate::common::rows::owners_key(&app.pool, &account).await;
    let today: NaiveDate = crate::common::rows::scalar(
        &app.pool,
        "select (now() at time zone time_zone)::date from orgs",
    )
    .await;
    let customer = send(
        &app,
        "POST",
        "/api/v1/customers",
        &key,
        json!({"name": "Big Debtor", "email": "big@example.com"}),
    )
    .await;
    let customer = customer["id"].as_str().unwrap().to_owned();
    // Open invoices due across every bucket, in two currencies, one partly paid, one credited.
    let mut ids = Vec::new();
    for (days, cents, currency, saved) in [
        (-5_i64, 10_000, "eur", true),
        (10, 20_000, "eur", true),
        (45, 30_000, "eur", false),
        (75, 40_000, "eur", true),
        (120, 50_000, "eur", false),
        (3, 7_000, "usd", false),
    ] {
        let due = today - chrono::Days::new(0) - chrono::TimeDelta::days(days);
        let mut body = json!({
            "currency": currency, "due_date": due,
            "lines": [{"description": "Work", "quantity": 1, "unit_amount_cents": cents}],
        });
        if saved {
            body["customer_id"] = json!(customer);
        } else {
            // Typed customers are told apart by their email.
            body["customer_name"] = json!(format!("Walk-in {days}"));
            body["customer_email"] = json!(format!("walkin{days}@example.com"));
        }
        let made = send(&app, "POST", "/api/v1/invoices", &key, body).await;
        ids.push(made["id"].as_str().unwrap().to_owned());
    }
    send(
        &app,
        "POST",
        &format!("/api/v1/invoices/{}/payments", ids[1]),
        &key,
        json!({"amount_cents": 5_000, "method": "bank_transfer", "paid_on": today}),
    )
    .await;
    send(
        &app,
        "POST",
        &format!("/api/v1/invoices/{}/credit_notes", ids[2]),
        &key,
        json!({"amount_cents": 1_000, "reason": "Late", "refund": "none"}),
    )
    .await;

    let browser = common::client();
    common::login(&browser, &app.base, &email, "correct horse").await;
    let res = pages::post_form(
        &browser,
        format!("{}/rpc/get_dashboard", app.base),
        &Vec::<(String, String)>::new(),
    )
    .await;
    assert_eq!(res.status(), 200);
    let d: Value = res.json().await.unwrap();

    let want = owed_from_rows(&app.pool, org, today).await;
    let got: BTreeMap<String, (i64, i64, [i64; 5])> = d["owed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let aging: Vec<i64> = o["aging_cents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            (
                o["currency"].as_str().unwrap().to_owned(),
                (
                    o["outstanding_cents"].as_i64().unwrap(),
                    o["overdue_cents"].as_i64().unwrap(),
                    aging.try_into().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(want["eur"].0, 10_000 + 15_000 + 29_000 + 40_000 + 50_000);
    assert!(
        want["eur"].2.iter().all(|b| *b > 0),
        "every bucket has an invoice: {want:?}"
    );

    // Received this month: the manual payment.
    let received = &d["received"][0];
    assert_eq!(received["currency"], "eur");
    assert_eq!(received["this_month_cents"], 5_000);
    assert_eq!(received["this_quarter_cents"], 5_000);

    // This month's invoicing: every invoice was finalized today; the credit note too.
    let month = today.with_day(1).unwrap().to_string();
    let eur_month = d["revenue"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["currency"] == "eur" && r["month"] == month.as_str())
        .unwrap();
    assert_eq!(eur_month["invoiced_cents"], 150_000);
    assert_eq!(eur_month["credited_cents"], 1_000);

    // The saved customer owes the most: its three invoices, less the payment.
    let top = &d["debtors"][0];
    assert_eq!(top["name"], "Big Debtor");
    assert_eq!(top["owed_cents"], 10_000 + 15_000 + 40_000);
    assert_eq!(top["currency"], "eur");
    assert_eq!(d["debtors"][1]["name"], "Walk-in 120");
    assert_eq!(d["debtors"][1]["owed_cents"], 50_000);

    // The page itself.
    let html = crate::common::pages::text(&browser, format!("{}/dashboard", app.base)).await;
    assert!(html.contains("<svg"), "a server-rendered chart: {html}");
    assert!(html.contains("revenue-table"), "a table beside it");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_big_orgs_dashboard_comes_from_memory_for_a_few_seconds_a_small_ones_never(
    pool: sqlx::PgPool,
) {
    use invoicer_core::reports::dashboard::{cached, BIG};
    let email = format!("{}@example.com", Uuid::new_v4().simple());
    let big = invoicer_core::accounts::create_org_with_owner(&pool, "Big", &email, "correct horse")
        .await
        .unwrap()
        .org_id;
    // A quarter of the generated invoices are open, a twentieth uncollectible.
    lab::datagen::org(&pool, big, BIG * 4).await.unwrap();
    let first = cached(&pool, big).await.unwrap();
    assert!(first.owed_invoices > BIG, "{}", first.owed_invoices);
    let again = cached(&pool, big).await.unwrap();
    assert_eq!(
        again.as_of, first.as_of,
        "the second read is the first one's"
    );
    assert_eq!(again, first);

    let email = format!("{}@example.com", Uuid::new_v4().simple());
    let small =
        invoicer_core::accounts::create_org_with_owner(&pool, "Small", &email, "correct horse")
            .await
            .unwrap()
            .org_id;
    lab::datagen::org(&pool, small, 40).await.unwrap();
    let first = cached(&pool, small).await.unwrap();
    let again = cached(&pool, small).await.unwrap();
    assert!(
        again.as_of > first.as_of,
        "a small org's figures are read every time"
    );
}

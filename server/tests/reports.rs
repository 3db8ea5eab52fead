//! Reports: the aging report's figures equal sums made here from the rows; the CSV, read back by
//! Python's `csv` module, says the same, and a customer named like a formula stays text.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::served::TestApp;
use crate::common::{self, rows};

async fn send(app: &TestApp, path: &str, key: &str, body: Value) -> Value {
    let res = app
        .http
        .post(format!("{}{path}", app.base))
        .bearer_auth(key)
        .header("idempotency-key", Uuid::new_v4().to_string())
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let body: Value = res.json().await.unwrap();
    assert!(status < 300, "{path}: {status} {body}");
    body
}

/// `text` read by Python's csv module: its rows.
fn python_csv(text: &str) -> Vec<Vec<String>> {
    use std::io::Write;
    let python = std::env::var("TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut child = std::process::Command::new(python)
        .args([
            "-c",
            "import csv, json, sys; print(json.dumps(list(csv.reader(sys.stdin))))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn the_aging_report_adds_up_and_its_csv_says_the_same(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let email = format!("{}@example.com", Uuid::new_v4().simple());
    let account =
        app::ssr::accounts::create_org_with_owner(&app.pool, "Aging Co", &email, "correct horse")
            .await
            .unwrap();
    let org = account.org_id;
    let key = app::ssr::api_keys::create_for_user(&app.pool, org, account.user_id, "t")
        .await
        .unwrap()
        .plaintext;
    let today: NaiveDate = rows::scalar(
        &app.pool,
        "select (now() at time zone time_zone)::date from orgs",
    )
    .await;
    let evil = "=HYPERLINK(\"http://evil.example\",\"click\")";
    let customer = send(
        &app,
        "/api/v1/customers",
        &key,
        json!({"name": evil, "email": "evil@example.com"}),
    )
    .await;
    let customer = customer["id"].as_str().unwrap().to_owned();
    for (days, cents, saved, currency) in [
        (-3_i64, 1_000, true, "eur"),
        (20, 2_000, true, "eur"),
        (50, 3_000, false, "eur"),
        (80, 4_000, true, "eur"),
        (200, 5_000, false, "usd"),
    ] {
        let mut body = json!({
            "currency": currency, "due_date": today - chrono::TimeDelta::days(days),
            "lines": [{"description": "Work", "quantity": 1, "unit_amount_cents": cents}],
        });
        if saved {
            body["customer_id"] = json!(customer);
        } else {
            body["customer_name"] = json!("Walk-in");
            body["customer_email"] = json!("Walk-In@Example.com");
        }
        send(&app, "/api/v1/invoices", &key, body).await;
    }
    // Paid in full: not in the report.
    let paid = send(
        &app,
        "/api/v1/invoices",
        &key,
        json!({
            "currency": "eur", "due_date": today, "customer_id": customer,
            "lines": [{"description": "Paid", "quantity": 1, "unit_amount_cents": 9_999}],
        }),
    )
    .await;
    send(
        &app,
        &format!("/api/v1/invoices/{}/payments", paid["id"].as_str().unwrap()),
        &key,
        json!({"amount_cents": 9_999, "method": "cash", "paid_on": today}),
    )
    .await;

    // The sums made here, from the rows: (name, currency) → [buckets..., total].
    let found: Vec<(Option<Uuid>, String, String, i64, NaiveDate, String)> = sqlx::query_as(
        "select customer_id, customer_name, currency, total_cents - amount_credited_cents - amount_paid_cents, \
         due_date, status from invoices where org_id = $1",
    )
    .bind(org)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let mut want: BTreeMap<(String, String), [i64; 6]> = BTreeMap::new();
    for (_, name, currency, due, due_date, status) in found {
        if status != "open" || due <= 0 {
            continue;
        }
        let late = (today - due_date).num_days();
        let bucket = match late {
            ..=0 => 0,
            1..=30 => 1,
            31..=60 => 2,
            61..=90 => 3,
            _ => 4,
        };
        let e = want.entry((name, currency)).or_default();
        e[bucket] += due;
        e[5] += due;
    }

    let api = app.get(&key, "/api/v1/reports/aging").await;
    assert_eq!(api.status, 200);
    let api = api.json();
    let got: BTreeMap<(String, String), [i64; 6]> = api["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let n = |f: &str| r[f].as_i64().unwrap();
            (
                (
                    r["name"].as_str().unwrap().to_owned(),
                    r["currency"].as_str().unwrap().to_owned(),
                ),
                [
                    n("current_cents"),
                    n("days_1_30_cents"),
                    n("days_31_60_cents"),
                    n("days_61_90_cents"),
                    n("over_90_cents"),
                    n("total_cents"),
                ],
            )
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(api["data"][0]["name"], evil, "the biggest debt first");
    assert_eq!(api["data"][0]["total_cents"], 7_000);

    // The CSV, for the owner's session: what the API says, the formula kept as text.
    let browser = common::client();
    common::login(&browser, &app.base, &email, "correct horse").await;
    let res = browser
        .get(format!("{}/reports/aging.csv", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    let text = res.text().await.unwrap();
    let table = python_csv(&text);
    assert_eq!(table[0][0], "customer");
    assert_eq!(table.len(), 1 + api["data"].as_array().unwrap().len());
    let evil_row = table.iter().find(|r| r[1] == "evil@example.com").unwrap();
    assert_eq!(evil_row[0], format!("'{evil}"), "a formula is neutralised");
    assert_eq!(evil_row[2], "EUR");
    assert_eq!(evil_row[8], "70.00");
    let walk_in = table.iter().find(|r| r[2] == "USD").unwrap();
    assert_eq!(
        (walk_in[0].as_str(), walk_in[7].as_str()),
        ("Walk-in", "50.00")
    );

    // Without a session: nothing.
    let anonymous = common::client();
    let res = anonymous
        .get(format!("{}/reports/aging.csv", app.base))
        .send()
        .await
        .unwrap();
    assert!(res.status() == 401 || res.status() == 303 || res.status() == 302);
}

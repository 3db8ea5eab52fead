//! Reports: the aging report's figures equal sums made here from the rows; the CSV, read back by
//! Python's `csv` module, says the same, and a customer named like a formula stays text.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::served::TestApp;
use crate::common::{self, rows};

async fn send(app: &TestApp, path: &str, key: &str, body: Value) -> Value {
    app.call_ok("POST", path, key, &body).await
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_aging_report_adds_up_and_its_csv_says_the_same(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (email, account) = crate::common::rows::new_owner(&app.pool, "Aging Co").await;
    let org = account.org_id;
    let key = crate::common::rows::owners_key(&app.pool, &account).await;
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
    let table = crate::common::python_csv(&text);
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

/// (currency, category, percent in thousandths)
type RateKey = (String, Option<String>, i64);

/// The tax summary of `query` through the API.
async fn tax_report(app: &TestApp, key: &str, query: &str) -> (u16, Value) {
    let res = app
        .http
        .get(format!("{}/api/v1/reports/tax{query}", app.base))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap())
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_tax_summary_adds_up_per_rate_and_splits_credit_notes_back_into_net_and_tax(
    pool: sqlx::PgPool,
) {
    let app = TestApp::spawn(pool).await;
    let (email, account) = crate::common::rows::new_owner(&app.pool, "Tax Co").await;
    let org = account.org_id;
    let key = crate::common::rows::owners_key(&app.pool, &account).await;
    let today: NaiveDate = rows::scalar(
        &app.pool,
        "select (now() at time zone time_zone)::date from orgs",
    )
    .await;
    let mut rates = BTreeMap::new();
    for (name, body) in [
        ("19", json!({"name": "VAT 19%", "percent": 19})),
        ("7", json!({"name": "VAT 7%", "percent": 7})),
        (
            "K",
            json!({"name": "EU supply", "percent": 0, "category": "K"}),
        ),
    ] {
        let rate = send(&app, "/api/v1/tax_rates", &key, body).await;
        rates.insert(name, rate["id"].as_str().unwrap().to_owned());
    }
    let invoice = |currency: &str, lines: &[(i64, Option<&str>)]| {
        json!({
            "currency": currency, "due_date": today, "customer_name": "Buyer",
            "customer_email": "buyer@example.com",
            "lines": lines.iter().map(|(cents, rate)| {
                let mut line = json!({"description": "Work", "quantity": 1, "unit_amount_cents": cents});
                if let Some(rate) = rate {
                    line["tax_rate_id"] = json!(rates[rate]);
                }
                line
            }).collect::<Vec<_>>(),
        })
    };
    let two_rates = send(
        &app,
        "/api/v1/invoices",
        &key,
        invoice("eur", &[(10_000, Some("19")), (10_000, Some("7"))]),
    )
    .await;
    let one_rate = send(
        &app,
        "/api/v1/invoices",
        &key,
        invoice("eur", &[(10_000, Some("19")), (5_000, None)]),
    )
    .await;
    send(
        &app,
        "/api/v1/invoices",
        &key,
        invoice("usd", &[(30_000, Some("K"))]),
    )
    .await;
    // Not in the summary: a draft, a void invoice, and one finalized before the period.
    let mut draft = invoice("eur", &[(70_000, Some("19"))]);
    draft["draft"] = json!(true);
    send(&app, "/api/v1/invoices", &key, draft).await;
    let voided = send(
        &app,
        "/api/v1/invoices",
        &key,
        invoice("eur", &[(80_000, Some("19"))]),
    )
    .await;
    send(
        &app,
        &format!("/api/v1/invoices/{}/void", voided["id"].as_str().unwrap()),
        &key,
        json!({}),
    )
    .await;
    let old = send(
        &app,
        "/api/v1/invoices",
        &key,
        invoice("eur", &[(90_000, Some("19"))]),
    )
    .await;
    sqlx::query("update invoices set finalized_at = now() - interval '400 days' where id = $1")
        .bind(Uuid::parse_str(old["id"].as_str().unwrap()).unwrap())
        .execute(&app.pool)
        .await
        .unwrap();
    // Credit notes: the 19 % line in full (119.00), and 50.00 over both rates of the first.
    let credit = |invoice: &Value| {
        format!(
            "/api/v1/invoices/{}/credit_notes",
            invoice["id"].as_str().unwrap()
        )
    };
    send(
        &app,
        &credit(&one_rate),
        &key,
        json!({"lines": [{"line_id": 1, "quantity": 1}], "reason": "Returned"}),
    )
    .await;
    send(
        &app,
        &credit(&two_rates),
        &key,
        json!({"amount_cents": 5_000, "reason": "Goodwill"}),
    )
    .await;

    let (status, report) = tax_report(&app, &key, "").await;
    assert_eq!(status, 200, "{report}");
    // The default period: the quarter so far.
    assert_eq!(report["to"], json!(today));
    assert!(report["from"].as_str().unwrap().ends_with("-01"));

    // The invoices' rows equal sums made here from the stored lines.
    let found: Vec<(String, Option<String>, i64, i64, i64, i64)> = sqlx::query_as(
        "select i.currency, tr.category, coalesce(l.tax_percent_milli, 0)::bigint, \
                sum(l.amount_cents - l.discount_cents)::bigint, sum(l.tax_cents)::bigint, \
                count(distinct i.id) \
         from invoices i join invoice_lines l on l.invoice_id = i.id \
         left join tax_rates tr on tr.id = l.tax_rate_id \
         where i.org_id = $1 and i.status not in ('draft', 'void') \
           and i.finalized_at > now() - interval '1 day' \
         group by 1, 2, 3",
    )
    .bind(org)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let want: BTreeMap<RateKey, (i64, i64, i64)> = found
        .into_iter()
        .map(|(c, cat, p, base, tax, n)| ((c, cat, p), (base, tax, n)))
        .collect();
    let row_of = |r: &Value| {
        (
            (
                r["currency"].as_str().unwrap().to_owned(),
                r["category"].as_str().map(str::to_owned),
                r["percent_milli"].as_i64().unwrap(),
            ),
            (
                r["taxable_cents"].as_i64().unwrap(),
                r["tax_cents"].as_i64().unwrap(),
                r["count"].as_i64().unwrap(),
            ),
        )
    };
    let rows_of = |documents: &str| -> BTreeMap<_, _> {
        report["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["documents"] == documents)
            .map(row_of)
            .collect()
    };
    assert_eq!(rows_of("invoices"), want);
    assert_eq!(
        want[&("eur".into(), Some("S".into()), 19_000)],
        (20_000, 3_800, 2)
    );
    let nineteen = report["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["documents"] == "invoices" && r["percent_milli"] == 19_000)
        .unwrap();
    assert_eq!(nineteen["names"], json!(["VAT 19%"]));

    // Credit notes: the line back at its rate; the amount over the rates in proportion to what each
    // came to (107.00 and 119.00 of 226.00: 23.67 and, last, what is left, 26.33), each net of its
    // tax rounded half up.
    let credits = rows_of("credit_notes");
    let eur = |category: &str, percent: i64| ("eur".to_owned(), Some(category.to_owned()), percent);
    assert_eq!(credits[&eur("S", 7_000)], (2_212, 155, 1));
    assert_eq!(credits[&eur("S", 19_000)], (10_000 + 2_213, 1_900 + 420, 2));
    assert_eq!(credits.len(), 2);
    let credited: i64 = rows::scalar(
        &app.pool,
        "select sum(total_cents)::bigint from credit_notes",
    )
    .await;
    let sum: i64 = credits.values().map(|(base, tax, _)| base + tax).sum();
    assert_eq!(sum, credited, "the split adds up to what was credited");

    // Net: invoices less credit notes, per currency.
    let net_eur = report["net"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["currency"] == "eur")
        .unwrap();
    let invoiced: (i64, i64) = want
        .iter()
        .filter(|(k, _)| k.0 == "eur")
        .fold((0, 0), |a, (_, v)| (a.0 + v.0, a.1 + v.1));
    assert_eq!(
        (
            net_eur["taxable_cents"].as_i64().unwrap(),
            net_eur["tax_cents"].as_i64().unwrap()
        ),
        (invoiced.0 - 2_212 - 12_213, invoiced.1 - 155 - 2_320)
    );

    // A period before everything: only the old invoice.
    let year_ago = today - chrono::TimeDelta::days(400);
    let (_, past) = tax_report(&app, &key, &format!("?from={year_ago}&to={year_ago}")).await;
    assert_eq!(past["data"].as_array().unwrap().len(), 1, "{past}");
    assert_eq!(past["data"][0]["taxable_cents"], 90_000);

    // Bad periods: 400 with what is wrong.
    for query in [
        "?from=2027-02-01&to=2027-01-31",
        "?from=01/02/2027",
        "?from=2000-01-01&to=2027-01-01",
    ] {
        let (status, body) = tax_report(&app, &key, query).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(!body["detail"].as_str().unwrap().is_empty());
    }

    // The CSV says the same, read back by Python.
    let browser = common::client();
    common::login(&browser, &app.base, &email, "correct horse").await;
    let res = browser
        .get(format!("{}/reports/tax.csv", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let table = crate::common::python_csv(&res.text().await.unwrap());
    assert_eq!(table[0][0], "currency");
    let line = table
        .iter()
        .find(|r| r[1] == "credit notes" && r[3] == "7")
        .unwrap();
    assert_eq!((line[5].as_str(), line[6].as_str()), ("22.12", "1.55"));
    let net = table
        .iter()
        .find(|r| r[0] == "EUR" && r[1] == "net")
        .unwrap();
    assert_eq!(
        net[5],
        format!(
            "{}.{:02}",
            (invoiced.0 - 14_425) / 100,
            (invoiced.0 - 14_425) % 100
        )
    );
    // The page shows the rows.
    let page = crate::common::pages::text(&browser, format!("{}/reports/tax", app.base)).await;
    assert!(page.contains("VAT 19% 19 % (S)"), "{page}");
    assert!(page.contains("No tax rate"));
}

//! Exports: every kind streamed through the API and the owner's session, read back by Python's
//! `csv` module and compared with the rows in the database; the list's filters apply; formula
//! cells are neutralised; bad names and filters are refused.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::rows;
use crate::common::served::TestApp;

/// The records of an export as maps of column → value.
fn table(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut records = crate::common::python_csv(text).into_iter();
    let header = records.next().expect("a header record");
    records
        .map(|r| {
            assert_eq!(r.len(), header.len(), "every record has every column");
            header.iter().cloned().zip(r).collect()
        })
        .collect()
}

async fn export(app: &TestApp, key: &str, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let res = app
        .http
        .get(format!("{}/api/v1/exports/{path}", app.base))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    (status, headers, res.text().await.unwrap())
}

async fn post(app: &TestApp, key: &str, path: &str, body: Value) -> Value {
    app.call_ok("POST", path, key, &body).await
}

/// Document numbers are owner text (the number format): one that reads as a formula reaches every
/// export as text, as names and descriptions do.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_number_format_that_reads_as_a_formula_stays_text(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let format = "=HYPERLINK(\"http://evil.example\")-{seq}";
    sqlx::query("update orgs set number_format = $2, credit_note_format = $2 where id = $1")
        .bind(org)
        .bind(format)
        .execute(&app.pool)
        .await
        .unwrap();
    let invoice = post(
        &app,
        &key,
        "/api/v1/invoices",
        json!({"customer_name": "Plain Co", "customer_email": "plain@example.com",
               "currency": "eur", "due_date": "2030-01-31",
               "lines": [{"description": "Work", "quantity": 1, "unit_amount_cents": 1_000}]}),
    )
    .await;
    let number = invoice["number"].as_str().unwrap().to_owned();
    assert!(number.starts_with("=HYPERLINK"), "{number}");
    let id = invoice["id"].as_str().unwrap().to_owned();
    post(
        &app,
        &key,
        &format!("/api/v1/invoices/{id}/payments"),
        json!({"amount_cents": 500, "method": "cash", "paid_on": "2020-01-02", "reference": "r"}),
    )
    .await;
    let note = post(
        &app,
        &key,
        &format!("/api/v1/invoices/{id}/credit_notes"),
        json!({"amount_cents": 100, "reason": "r"}),
    )
    .await;
    let note_number = note["number"].as_str().unwrap().to_owned();
    for (path, column, want) in [
        ("invoices.csv", "number", &number),
        ("lines.csv", "invoice_number", &number),
        ("payments.csv", "invoice_number", &number),
        ("credit_notes.csv", "number", &note_number),
    ] {
        let (status, _, text) = export(&app, &key, path).await;
        assert_eq!(status, 200, "{path}: {text}");
        let records = table(&text);
        assert!(!records.is_empty(), "{path}");
        for record in records {
            assert_eq!(record[column], format!("'{want}"), "{path}: {record:?}");
        }
    }
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn every_export_streams_what_the_database_holds_filtered_like_its_list(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (email, account) = crate::common::rows::new_owner(&app.pool, "Export Co").await;
    let org = account.org_id;
    let key = crate::common::rows::owners_key(&app.pool, &account).await;
    // 2,500 invoices (three pages), their lines, customers and payments; another org beside it.
    lab::datagen::org(&app.pool, org, 2_500).await.unwrap();
    lab::datagen::other_orgs(&app.pool, 1, 50).await.unwrap();
    let evil = "=HYPERLINK(\"http://evil.example\",\"x\")";
    let customer = post(
        &app,
        &key,
        "/api/v1/customers",
        json!({"name": evil, "email": "evil@example.com"}),
    )
    .await;
    let invoice = post(
        &app,
        &key,
        "/api/v1/invoices",
        json!({"customer_id": customer["id"], "currency": "eur", "due_date": "2030-01-31",
               "lines": [{"description": "+cmd|' /C calc'!A0", "quantity": 1, "unit_amount_cents": 1_000}]}),
    )
    .await;
    let invoice_id = invoice["id"].as_str().unwrap().to_owned();
    post(
        &app,
        &key,
        &format!("/api/v1/invoices/{invoice_id}/credit_notes"),
        json!({"amount_cents": 300, "reason": "@SUM(1)"}),
    )
    .await;

    // Invoices: every one of the org's, newest first, as the database has them.
    let (status, headers, text) = export(&app, &key, "invoices.csv").await;
    assert_eq!(status, 200, "{text}");
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    assert!(
        headers.get("content-length").is_none(),
        "streamed, not built whole first"
    );
    let invoices = table(&text);
    let want: Vec<(Uuid, Option<String>, String, i64)> = sqlx::query_as(
        "select id, number_text, status, total_cents from invoices where org_id = $1 \
         order by created_at desc, id desc",
    )
    .bind(org)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(invoices.len(), want.len());
    assert_eq!(want.len(), 2_501);
    for (row, (id, number, status, total)) in invoices.iter().zip(&want) {
        assert_eq!(row["id"], id.to_string());
        assert_eq!(row["number"], number.clone().unwrap_or_default());
        assert_eq!(&row["status"], status);
        assert_eq!(
            row["total"],
            model::plain_amount(*total, &row["currency"].to_lowercase())
        );
    }
    let ours = invoices.iter().find(|r| r["id"] == invoice_id).unwrap();
    assert_eq!(
        ours["customer_name"],
        format!("'{evil}"),
        "a formula stays text"
    );
    assert_eq!(
        (ours["credited"].as_str(), ours["due"].as_str()),
        ("3.00", "7.00")
    );

    // Filtered like the list: paid ones, the overdue ones, a search.
    for (query, sql) in [
        ("status=paid", "status = 'paid'"),
        (
            "status=overdue",
            "status in ('open', 'uncollectible') and due_date < current_date",
        ),
        ("payment_state=refunded", "payment_state = 'refunded'"),
        ("q=inv-00001", "lower(number_text) like 'inv-00001%'"),
    ] {
        let (status, _, text) = export(&app, &key, &format!("invoices.csv?{query}")).await;
        assert_eq!(status, 200, "{query}: {text}");
        let got: Vec<String> = table(&text).into_iter().map(|r| r["id"].clone()).collect();
        let mut want: Vec<String> = rows::scalars_for::<Uuid>(
            &app.pool,
            &format!("select id from invoices where org_id = $1 and {sql}"),
            org,
        )
        .await
        .into_iter()
        .map(|id| id.to_string())
        .collect();
        let mut sorted = got.clone();
        sorted.sort();
        want.sort();
        assert!(!want.is_empty(), "{query}");
        assert_eq!(sorted, want, "{query}");
    }

    // Lines: every line of the listed invoices, their amounts adding up.
    let (_, _, text) = export(&app, &key, "lines.csv").await;
    let lines = table(&text);
    let (count, cents): (i64, i64) = sqlx::query_as(
        "select count(*), sum(l.amount_cents)::bigint from invoice_lines l \
         join invoices i on i.id = l.invoice_id where i.org_id = $1",
    )
    .bind(org)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(lines.len() as i64, count);
    let summed: i64 = lines
        .iter()
        .map(|l| (l["amount"].parse::<f64>().unwrap() * 100.0).round() as i64)
        .sum();
    assert_eq!(summed, cents);
    assert!(lines
        .iter()
        .any(|l| l["description"] == "'+cmd|' /C calc'!A0"));

    // Payments: all, then a period.
    let (_, _, text) = export(&app, &key, "payments.csv").await;
    let payments = table(&text);
    let count: i64 = rows::scalar_for(
        &app.pool,
        "select count(*) from payments where org_id = $1",
        org,
    )
    .await;
    assert_eq!(payments.len() as i64, count);
    assert!(count > 1_000, "more than a page");
    let mut days: Vec<&str> = payments.iter().map(|p| p["paid_on"].as_str()).collect();
    days.sort();
    let middle = days[days.len() / 2].to_owned();
    let (_, _, text) = export(
        &app,
        &key,
        &format!("payments.csv?from={middle}&to={middle}"),
    )
    .await;
    let on_the_day = table(&text);
    assert_eq!(
        on_the_day.len(),
        payments.iter().filter(|p| p["paid_on"] == middle).count()
    );
    assert!(!on_the_day.is_empty());

    // Credit notes and customers.
    let (_, _, text) = export(&app, &key, "credit_notes.csv").await;
    let notes = table(&text);
    assert_eq!(notes.len(), 1);
    assert_eq!(
        (
            notes[0]["total"].as_str(),
            notes[0]["reason"].as_str(),
            notes[0]["invoice_id"].as_str()
        ),
        ("3.00", "'@SUM(1)", invoice_id.as_str())
    );
    let (_, _, text) = export(&app, &key, "customers.csv").await;
    let customers = table(&text);
    let count: i64 = rows::scalar_for(
        &app.pool,
        "select count(*) from customers where org_id = $1",
        org,
    )
    .await;
    assert_eq!(customers.len() as i64, count);
    let (_, _, text) = export(&app, &key, "customers.csv?q=evil").await;
    let found = table(&text);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["name"], format!("'{evil}"));

    // Refused: an unknown export, a bad filter, no key.
    let (status, _, _) = export(&app, &key, "orgs.csv").await;
    assert_eq!(status, 404);
    for query in [
        "invoices.csv?status=lost",
        "payments.csv?from=yesterday",
        "payments.csv?from=2027-02-01&to=2027-01-01",
    ] {
        let (status, _, body) = export(&app, &key, query).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(body.contains("bad-query"), "{body}");
    }
    let res = app
        .http
        .get(format!("{}/api/v1/exports/invoices.csv", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);

    // The owner's session gets the same file.
    let browser = crate::common::client();
    crate::common::login(&browser, &app.base, &email, "correct horse").await;
    let res = browser
        .get(format!("{}/exports/credit_notes.csv", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(table(&res.text().await.unwrap()), notes);
}

//! A customer's statement: every invoice, payment, credit note and refund of theirs in a period,
//! the balance running from what they owed before it, on the owner's page, the customer's page
//! `/s/{token}` and as a PDF; the balance due is what their invoices still ask for.

use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::{ApiResponse, TestApp};
use crate::common::{client, login, pages};

fn text(res: &ApiResponse) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

async fn post(app: &TestApp, key: &str, path: &str, body: serde_json::Value) -> serde_json::Value {
    let res = app
        .post_to(
            path,
            Some(key),
            Some(&Uuid::new_v4().to_string()),
            &body.to_string(),
        )
        .await;
    assert!(res.status < 300, "{path}: {}", text(&res));
    res.json()
}

async fn invoice(app: &TestApp, key: &str, customer: &str, cents: i64, currency: &str) -> String {
    let body = json!({
        "customer_id": customer, "customer_name": "Ada", "customer_email": "ada@example.com",
        "currency": currency, "due_date": "2027-02-28",
        "lines": [{"description": "Work", "quantity": 1, "unit_amount_cents": cents}]
    });
    post(app, key, "/api/v1/invoices", body).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn pay(app: &TestApp, key: &str, invoice: &str, cents: i64, on: &str) {
    let path = format!("/api/v1/invoices/{invoice}/payments");
    let body = json!({"amount_cents": cents, "method": "bank_transfer", "paid_on": on, "reference": "T-1"});
    post(app, key, &path, body).await;
}

/// What `customer`'s finalized invoices still ask for in `currency`, from the invoices' own
/// derived amounts (not from the statement's entries).
async fn owed(pool: &PgPool, customer: Uuid, currency: &str) -> i64 {
    sqlx::query_scalar(
        "select coalesce(sum(total_cents - amount_credited_cents - amount_paid_cents), 0)::bigint \
         from invoices where customer_id = $1 and currency = $2 and status not in ('draft', 'void')",
    )
    .bind(customer)
    .bind(currency)
    .fetch_one(pool)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn a_statement_runs_the_balance_to_what_the_invoices_still_ask_for(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let email = format!("{}@example.com", Uuid::new_v4().simple());
    let account =
        app::ssr::accounts::create_org_with_owner(&app.pool, "Acme", &email, "correct horse")
            .await
            .unwrap();
    let key = app::ssr::api_keys::create_for_user(&app.pool, account.org_id, account.user_id, "t")
        .await
        .unwrap()
        .plaintext;
    let ada = post(
        &app,
        &key,
        "/api/v1/customers",
        json!({"name": "Ada Lovelace", "email": "ada@example.com"}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let bob = post(
        &app,
        &key,
        "/api/v1/customers",
        json!({"name": "Bob", "email": "bob@example.com"}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let today = app::ssr::manual_payments::org_today(&app.pool, account.org_id)
        .await
        .unwrap();
    let yesterday = (today - chrono::Days::new(1)).to_string();
    // Ada: 100.00, 60.00 paid yesterday, 10.00 credited; 50.00 paid in full today, then 20.00 of
    // it credited and paid back; 7.00 in dollars; one invoice voided. Bob's are not hers.
    let a = invoice(&app, &key, &ada, 10_000, "eur").await;
    pay(&app, &key, &a, 6_000, &yesterday).await;
    post(
        &app,
        &key,
        &format!("/api/v1/invoices/{a}/credit_notes"),
        json!({"amount_cents": 1_000, "reason": "Late"}),
    )
    .await;
    let b = invoice(&app, &key, &ada, 5_000, "eur").await;
    pay(&app, &key, &b, 5_000, &today.to_string()).await;
    post(
        &app,
        &key,
        &format!("/api/v1/invoices/{b}/credit_notes"),
        json!({"amount_cents": 2_000, "reason": "Broken", "refund": "manual"}),
    )
    .await;
    invoice(&app, &key, &ada, 700, "usd").await;
    let void = invoice(&app, &key, &ada, 99_900, "eur").await;
    post(
        &app,
        &key,
        &format!("/api/v1/invoices/{void}/void"),
        json!({}),
    )
    .await;
    invoice(&app, &key, &bob, 12_300, "eur").await;

    let ada_id: Uuid = ada.parse().unwrap();
    let (eur, usd) = (
        owed(&app.pool, ada_id, "eur").await,
        owed(&app.pool, ada_id, "usd").await,
    );
    assert_eq!((eur, usd), (3_000, 700), "the invoices' own amounts");

    let mut conn = app.pool.acquire().await.unwrap();
    let whole = app::ssr::statements::Period {
        from: today - chrono::Days::new(30),
        to: today,
    };
    let (statement, token) =
        app::ssr::statements::statement(&mut conn, account.org_id, ada_id, whole)
            .await
            .unwrap()
            .unwrap();
    let sections: Vec<_> = statement
        .sections
        .iter()
        .map(|s| (s.currency.as_str(), s.opening_cents, s.closing_cents))
        .collect();
    assert_eq!(sections, [("eur", 0, eur), ("usd", 0, usd)]);
    let kinds: Vec<_> = statement.sections[0]
        .entries
        .iter()
        .map(|e| e.kind.as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "payment",
            "invoice",
            "invoice",
            "payment",
            "credit_note",
            "credit_note",
            "refund"
        ],
        "by day, then invoices before what pays or corrects them"
    );
    let last = statement.sections[0].entries.last().unwrap();
    assert_eq!(
        last.balance_cents, eur,
        "the running balance ends on the closing one"
    );
    // Today only: yesterday's payment is brought forward.
    let today_only = app::ssr::statements::Period {
        from: today,
        to: today,
    };
    let (short, _) = app::ssr::statements::statement(&mut conn, account.org_id, ada_id, today_only)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            short.sections[0].opening_cents,
            short.sections[0].closing_cents
        ),
        (-6_000, eur)
    );

    // The customer's page and its PDF.
    let page = pages::get(&app.http, format!("{}/s/{token}", app.base)).await;
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["x-robots-tag"], "noindex, nofollow");
    let html = page.text().await.unwrap();
    assert!(
        !html.contains("<script"),
        "no script on the customer's pages"
    );
    for fact in [
        "Ada Lovelace",
        "Acme",
        "Balance due",
        "€30.00",
        "$7.00",
        "Refund, outside the app",
    ] {
        assert!(html.contains(fact), "{fact} in {html}");
    }
    assert!(
        !html.contains("123.00") && !html.contains("999.00"),
        "neither Bob's nor the void one"
    );
    let pdf = pages::bytes(&app.http, format!("{}/s/{token}/pdf", app.base)).await;
    let (pdf, _, _) = crate::public_page::pdf_text(&pdf);
    for fact in [
        "STATEMENT",
        "Ada Lovelace",
        "Balance due",
        "€30.00",
        "$7.00",
    ] {
        assert!(pdf.contains(fact), "{fact} in {pdf}");
    }
    let unknown = pages::get(&app.http, format!("{}/s/{}", app.base, "0".repeat(64))).await;
    assert_eq!(unknown.status(), 404);
    let backwards = pages::get(
        &app.http,
        format!("{}/s/{token}?from=2027-02-01&to=2027-01-01", app.base),
    )
    .await;
    assert_eq!(backwards.status(), 400);
    let too_long = pages::get(
        &app.http,
        format!("{}/s/{token}?from=1990-01-01&to=2027-01-01", app.base),
    )
    .await;
    assert_eq!(too_long.status(), 400);

    // The owner's page shows the same statement and links to the customer's.
    let http = client();
    login(&http, &app.base, &email, "correct horse").await;
    let owner = pages::text(&http, format!("{}/customers/{ada}/statement", app.base)).await;
    assert!(
        owner.contains("€30.00") && owner.contains(&format!("/s/{token}")),
        "{owner}"
    );
    let (_, theirs) = app.api_client().await;
    let theirs_customer = post(
        &app,
        &theirs,
        "/api/v1/customers",
        json!({"name": "Eve", "email": "eve@example.com"}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = pages::get(
        &http,
        format!("{}/customers/{theirs_customer}/statement", app.base),
    )
    .await;
    assert!(
        !res.text().await.unwrap().contains("Statement of Eve"),
        "another org's customer is not shown"
    );
}

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

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_statement_runs_the_balance_to_what_the_invoices_still_ask_for(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (email, account) = crate::common::rows::new_owner(&app.pool, "Acme").await;
    let key = crate::common::rows::owners_key(&app.pool, &account).await;
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
    let today = invoicer_core::payments::manual::org_today(&app.pool, account.org_id)
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
    let whole = invoicer_core::customers::statements::Period {
        from: today - chrono::Days::new(30),
        to: today,
    };
    let (statement, token) = invoicer_core::customers::statements::statement(
        &mut conn,
        account.org_id,
        model::CustomerId::from(ada_id),
        whole,
    )
    .await
    .unwrap()
    .unwrap();
    let token = token.expect("a customer has a statement link");
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
    let today_only = invoicer_core::customers::statements::Period {
        from: today,
        to: today,
    };
    let (short, _) = invoicer_core::customers::statements::statement(
        &mut conn,
        account.org_id,
        model::CustomerId::from(ada_id),
        today_only,
    )
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

/// An org's owner (logged in on the returned client), with one customer "Ada Lovelace" who has an
/// invoice: (org, customer, logged-in client).
async fn owner_with_customer(app: &TestApp) -> (model::OrgId, Uuid, reqwest::Client) {
    let (email, account) = crate::common::rows::new_owner(&app.pool, "Acme").await;
    let key = crate::common::rows::owners_key(&app.pool, &account).await;
    let ada = post(
        app,
        &key,
        "/api/v1/customers",
        json!({"name": "Ada Lovelace", "email": "ada@example.com"}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    invoice(app, &key, &ada, 10_000, "eur").await;
    let http = client();
    login(&http, &app.base, &email, "correct horse").await;
    (account.org_id, ada.parse().unwrap(), http)
}

/// The customer's statement token as stored (none: no link).
async fn statement_token(pool: &PgPool, customer: Uuid) -> Option<String> {
    sqlx::query_scalar("select statement_token from customers where id = $1")
        .bind(customer)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The status of the customer's page at `path` (no session: as the customer opens it).
async fn status(app: &TestApp, path: &str) -> u16 {
    pages::get(&app.http, format!("{}{path}", app.base))
        .await
        .status()
        .as_u16()
}

/// Presses a button of the customer's page, rendered afresh (a new key).
async fn press(app: &TestApp, http: &reqwest::Client, customer: Uuid, action: &str) -> u16 {
    pages::post_form(
        http,
        format!("{}/rpc/customer_action", app.base),
        &[
            ("customer_id", customer.to_string()),
            ("action", action.to_owned()),
            ("idempotency_key", Uuid::now_v7().to_string()),
        ],
    )
    .await
    .status()
    .as_u16()
}

/// What the audit log says was done to customers, oldest first: (action, subject).
async fn customer_audit(pool: &PgPool, org: model::OrgId) -> Vec<(String, String)> {
    sqlx::query_as(
        "select action, subject from audit_events where org_id = $1 and action like 'customer.%' \
         order by created_at, id",
    )
    .bind(org)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// "New statement link" replaces the customer's link: the old token answers 404 at once (page and
/// PDF, as an unknown token), the new one opens; a double click of one rendered button replaces it
/// once, and the replacement is in the audit log.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_new_statement_link_stops_the_old_one_at_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, ada, http) = owner_with_customer(&app).await;
    let old = statement_token(&app.pool, ada).await.expect("a link");
    assert_eq!(status(&app, &format!("/s/{old}")).await, 200);

    let key = Uuid::now_v7().to_string();
    let click = || {
        http.post(format!("{}/rpc/customer_action", app.base))
            .form(&[
                ("customer_id", ada.to_string()),
                ("action", "new_link".to_owned()),
                ("idempotency_key", key.clone()),
            ])
            .send()
    };
    let (a, b) = tokio::join!(click(), click());
    assert!(a.unwrap().status().as_u16() < 400);
    assert!(b.unwrap().status().as_u16() < 400);
    let new = statement_token(&app.pool, ada).await.expect("a new link");
    assert_ne!(new, old);
    assert_eq!(status(&app, &format!("/s/{old}")).await, 404);
    assert_eq!(status(&app, &format!("/s/{old}/pdf")).await, 404);
    assert_eq!(status(&app, &format!("/s/{new}")).await, 200);
    assert_eq!(status(&app, &format!("/s/{new}/pdf")).await, 200);
    // The same rendered button again: nothing replaced a second time.
    assert!(click().await.unwrap().status().as_u16() < 400);
    assert_eq!(
        statement_token(&app.pool, ada).await.as_deref(),
        Some(&*new)
    );
    assert_eq!(
        customer_audit(&app.pool, org).await,
        [(
            "customer.statement_link_replaced".to_owned(),
            "Ada Lovelace".to_owned()
        )]
    );
    // The customer's page shows the new link, and the owner's statement page links to it.
    let page = pages::text(&http, format!("{}/customers/{ada}", app.base)).await;
    assert!(
        page.contains(&format!("/s/{new}")) && !page.contains(&old),
        "{page}"
    );
    let statement = pages::text(&http, format!("{}/customers/{ada}/statement", app.base)).await;
    assert!(statement.contains(&format!("/s/{new}")), "{statement}");
}

/// Archiving a customer withdraws their statement link (404 at once), and unarchiving does not
/// bring it back: the customer has no link until a new one is made, which an archived customer is
/// refused; the old link never works again.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_archived_customers_statement_link_stops_and_unarchiving_does_not_revive_it(
    pool: PgPool,
) {
    let app = TestApp::spawn(pool).await;
    let (org, ada, http) = owner_with_customer(&app).await;
    let old = statement_token(&app.pool, ada).await.expect("a link");
    assert_eq!(status(&app, &format!("/s/{old}")).await, 200);

    assert!(press(&app, &http, ada, "archive").await < 400);
    assert_eq!(status(&app, &format!("/s/{old}")).await, 404);
    assert_eq!(status(&app, &format!("/s/{old}/pdf")).await, 404);
    assert_eq!(statement_token(&app.pool, ada).await, None);
    // No new link while archived.
    assert_eq!(press(&app, &http, ada, "new_link").await, 400);
    assert_eq!(statement_token(&app.pool, ada).await, None);

    assert!(press(&app, &http, ada, "unarchive").await < 400);
    assert_eq!(statement_token(&app.pool, ada).await, None, "not revived");
    assert_eq!(status(&app, &format!("/s/{old}")).await, 404);
    let page = pages::text(&http, format!("{}/customers/{ada}", app.base)).await;
    assert!(page.contains("No statement link"), "{page}");
    // The owner's statement still shows, without a customer's page to link to.
    let statement = pages::text(&http, format!("{}/customers/{ada}/statement", app.base)).await;
    assert!(
        statement.contains("€100.00")
            && statement.contains("has no statement link")
            && !statement.contains(&format!("/s/{old}")),
        "{statement}"
    );

    assert!(press(&app, &http, ada, "new_link").await < 400);
    let new = statement_token(&app.pool, ada).await.expect("a new link");
    assert_ne!(new, old);
    assert_eq!(status(&app, &format!("/s/{new}")).await, 200);
    assert_eq!(status(&app, &format!("/s/{old}")).await, 404);
    let actions: Vec<String> = customer_audit(&app.pool, org)
        .await
        .into_iter()
        .map(|(action, _)| action)
        .collect();
    assert_eq!(
        actions,
        [
            "customer.archived",
            "customer.unarchived",
            "customer.statement_link_replaced"
        ]
    );
}

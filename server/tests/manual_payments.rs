//! Money recorded by hand: a payment taken outside Stripe, once per attempt (a rendered form, an
//! Idempotency-Key), moving the invoice's payment state as Stripe's payments do; deleted by an owner
//! (audited, the state derived again); refused for drafts, void invoices and other orgs' invoices.

use futures::future::join_all;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::rows::{audit_count, count_rows, insert_invoice, one_line_input, scalar_for};
use crate::common::served::TestApp;
use crate::common::{client, login, pages};

const PASSWORD: &str = "correct horse";

/// An org with an open invoice of `total` eur and an owner's API key: (org, owner email, invoice, key).
async fn open_invoice(app: &TestApp, total: i64) -> (model::OrgId, String, Uuid, String) {
    let email = format!("{}@example.com", Uuid::new_v4().simple());
    let account =
        invoicer_core::accounts::create_org_with_owner(&app.pool, "Acme", &email, PASSWORD)
            .await
            .unwrap();
    let input = one_line_input("eur", "2027-01-31", total, false);
    let invoice = insert_invoice(&app.pool, account.org_id, &input).await;
    let key = crate::common::rows::owners_key(&app.pool, &account).await;
    (account.org_id, email, invoice, key)
}

fn text(res: &crate::common::served::ApiResponse) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

fn payment(amount: i64, reference: &str) -> String {
    json!({"amount_cents": amount, "method": "bank_transfer", "paid_on": "2026-12-01", "reference": reference})
        .to_string()
}

/// (status, payment_state, amount_paid_cents)
async fn state(app: &TestApp, invoice: Uuid) -> (String, String, i64) {
    app.money(invoice).await
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn partial_payments_add_up_to_paid_and_more_is_an_overpayment(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, _, invoice, key) = open_invoice(&app, 10_000).await;
    let path = format!("/api/v1/invoices/{invoice}/payments");

    let first = app
        .post_to(&path, Some(&key), Some("p1"), &payment(4_000, "SEPA 1"))
        .await;
    assert_eq!(first.status, 201, "{}", text(&first));
    let body = first.json();
    assert_eq!(body["source"], "manual");
    assert_eq!(body["method"], "bank_transfer");
    assert_eq!(body["amount_cents"], 4000);
    assert_eq!(body["paid_on"], "2026-12-01");
    assert_eq!(body["reference"], "SEPA 1");
    assert_eq!(
        first.header("location"),
        Some(format!("{path}/{}", body["id"].as_str().unwrap()).as_str())
    );
    assert_eq!(
        state(&app, invoice).await,
        ("open".into(), "partially_paid".into(), 4000)
    );

    let rest = app
        .post_to(&path, Some(&key), Some("p2"), &payment(6_000, "SEPA 2"))
        .await;
    assert_eq!(rest.status, 201);
    assert_eq!(
        state(&app, invoice).await,
        ("paid".into(), "paid".into(), 10_000)
    );

    // More than is due: recorded, and the invoice shows what it was overpaid by.
    let more = app
        .post_to(&path, Some(&key), Some("p3"), &payment(500, ""))
        .await;
    assert_eq!(more.status, 201);
    assert_eq!(
        state(&app, invoice).await,
        ("paid".into(), "paid".into(), 10_500)
    );
    let got = app
        .get(&key, &format!("/api/v1/invoices/{invoice}"))
        .await
        .json();
    assert_eq!(got["amount_paid_cents"], 10_500);

    let listed = app.get(&key, &path).await;
    assert_eq!(listed.status, 200);
    let amounts: Vec<i64> = listed.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["amount_cents"].as_i64().unwrap())
        .collect();
    assert_eq!(amounts, [4000, 6000, 500], "oldest first");
    let one = app.get(&key, first.header("location").unwrap()).await;
    assert_eq!(one.status, 200);
    assert_eq!(one.json()["id"], body["id"]);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn one_key_records_one_payment_even_twenty_at_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, _, invoice, key) = open_invoice(&app, 10_000).await;
    let path = format!("/api/v1/invoices/{invoice}/payments");
    let body = payment(2_500, "cheque 7");
    let answers =
        join_all((0..20).map(|_| app.post_to(&path, Some(&key), Some("same"), &body))).await;
    let created: Vec<_> = answers.iter().filter(|a| a.status == 201).collect();
    assert!(
        answers.iter().all(|a| a.status == 201 || a.status == 409),
        "{:?}",
        answers.iter().map(|a| a.status).collect::<Vec<_>>()
    );
    assert!(!created.is_empty());
    let ids: std::collections::BTreeSet<_> =
        created.iter().map(|a| a.json()["id"].to_string()).collect();
    assert_eq!(ids.len(), 1, "every 201 names the same payment");
    assert_eq!(
        count_rows(&app.pool, "payments where invoice_id = $1", invoice).await,
        1
    );
    assert_eq!(state(&app, invoice).await.2, 2_500);

    // Twenty different keys at once: twenty payments, every one counted (they take turns on the
    // invoice's row).
    let keys: Vec<String> = (0..20).map(|n| format!("k{n}")).collect();
    let small = payment(100, "");
    let answers = join_all(
        keys.iter()
            .map(|k| app.post_to(&path, Some(&key), Some(k), &small)),
    )
    .await;
    assert!(answers.iter().all(|a| a.status == 201));
    assert_eq!(state(&app, invoice).await.2, 2_500 + 20 * 100);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn drafts_void_invoices_other_orgs_and_bad_input_record_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, _, invoice, key) = open_invoice(&app, 10_000).await;
    let (_, _, theirs, _) = open_invoice(&app, 10_000).await;
    let draft = insert_invoice(
        &app.pool,
        org,
        &one_line_input("eur", "2027-01-31", 500, true),
    )
    .await;
    let post = |id: Uuid, k: &'static str, body: String| {
        let app = &app;
        let key = key.clone();
        async move {
            app.post_to(
                &format!("/api/v1/invoices/{id}/payments"),
                Some(&key),
                Some(k),
                &body,
            )
            .await
        }
    };

    let res = post(theirs, "a", payment(100, "")).await;
    assert_eq!(res.status, 404, "another org's invoice: {}", text(&res));
    let res = post(draft, "b", payment(100, "")).await;
    assert_eq!(res.status, 409, "{}", text(&res));
    assert!(text(&res).contains("draft"), "{}", text(&res));

    for (k, body) in [
        (
            "c",
            json!({"amount_cents": 0, "method": "cash", "paid_on": "2026-12-01"}),
        ),
        (
            "d",
            json!({"amount_cents": 100, "method": "gold", "paid_on": "2026-12-01"}),
        ),
        (
            "e",
            json!({"amount_cents": 100, "method": "cash", "paid_on": "2999-01-01"}),
        ),
        (
            "f",
            json!({"amount_cents": 100, "method": "cash", "paid_on": "2026-12-01", "reference": "x".repeat(201)}),
        ),
        (
            "g",
            json!({"amount_cents": 100, "method": "cash", "paid_on": "2026-12-01", "extra": 1}),
        ),
    ] {
        let res = post(invoice, k, body.to_string()).await;
        assert_eq!(res.status, 422, "{k}: {}", text(&res));
        assert!(
            !text(&res).contains("sqlx") && !text(&res).contains("SQL"),
            "{}",
            text(&res)
        );
    }
    // The refused keys stay usable: nothing was claimed for them.
    let res = post(invoice, "e", payment(100, "")).await;
    assert_eq!(res.status, 201, "{}", text(&res));

    sqlx::query("update invoices set status = 'void', public_token = null where id = $1")
        .bind(invoice)
        .execute(&app.pool)
        .await
        .unwrap();
    let res = post(invoice, "h", payment(100, "")).await;
    assert_eq!(res.status, 409, "{}", text(&res));
    assert_eq!(
        count_rows(&app.pool, "payments where org_id = $1", org).await,
        1
    );
}

/// The invoice page's form, posted twice as a double click sends it: one payment; an owner deletes
/// it (once, audited, the invoice unpaid again); a member may record but not delete.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_double_submitted_form_records_one_payment_and_an_owner_deletes_it(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, email, invoice, _) = open_invoice(&app, 10_000).await;
    let http = client();
    login(&http, &app.base, &email, PASSWORD).await;
    let html = pages::text(&http, format!("{}/invoices/{invoice}", app.base)).await;
    assert!(html.contains("Record a payment"), "the form is on the page");
    let form_key = record_form_key(&html);
    assert!(model::form_key_fits(form_key.parse().unwrap(), org));
    let form = [
        ("invoice_id", invoice.to_string()),
        ("idempotency_key", form_key.clone()),
        ("form[amount]", "100.00".to_owned()),
        ("form[method]", "bank_transfer".to_owned()),
        ("form[paid_on]", "2026-12-01".to_owned()),
        ("form[reference]", "SEPA 9".to_owned()),
    ];
    let url = format!("{}/rpc/record_payment", app.base);
    let (a, b) = tokio::join!(
        pages::submit(&http, url.clone(), &form),
        pages::submit(&http, url.clone(), &form)
    );
    assert!(a.status().as_u16() < 400 && b.status().as_u16() < 400);
    assert_eq!(
        count_rows(&app.pool, "payments where invoice_id = $1", invoice).await,
        1
    );
    assert_eq!(
        state(&app, invoice).await,
        ("paid".into(), "paid".into(), 10_000)
    );
    // Through the one claim: a single form claim for the rendered key, done.
    let claims = count_rows(
        &app.pool,
        "claims where scope = 'form' and owner = $1::text || '/record_payment' and status = 'done'",
        org,
    )
    .await;
    assert_eq!(claims, 1);

    let page = pages::text(&http, format!("{}/invoices/{invoice}", app.base)).await;
    assert!(
        page.contains("SEPA 9") && page.contains("Bank transfer"),
        "listed"
    );
    let payment: Uuid = scalar_for(
        &app.pool,
        "select id from payments where invoice_id = $1",
        invoice,
    )
    .await;
    let button = model::form_key(org).to_string();
    let delete = [
        ("invoice_id", invoice.to_string()),
        ("payment_id", payment.to_string()),
        ("idempotency_key", button),
    ];
    let url = format!("{}/rpc/delete_payment", app.base);
    let (a, b) = tokio::join!(
        pages::submit(&http, url.clone(), &delete),
        pages::submit(&http, url.clone(), &delete)
    );
    assert!(a.status().as_u16() < 400 && b.status().as_u16() < 400);
    assert_eq!(
        count_rows(&app.pool, "payments where invoice_id = $1", invoice).await,
        0
    );
    assert_eq!(
        state(&app, invoice).await,
        ("open".into(), "unpaid".into(), 0)
    );
    assert_eq!(audit_count(&app.pool, org, "payment.deleted").await, 1);
}

/// The record form's key on an invoice page.
fn record_form_key(html: &str) -> String {
    let form = &html[html.find("record-payment").expect("the record form")..];
    let marker = "name=\"idempotency_key\" value=\"";
    let at = form.find(marker).expect("its key") + marker.len();
    form[at..at + 36].to_owned()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn members_record_but_only_owners_delete_and_a_refunded_payment_stays(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, _, invoice, key) = open_invoice(&app, 10_000).await;
    let path = format!("/api/v1/invoices/{invoice}/payments");
    let made = app
        .post_to(&path, Some(&key), Some("m"), &payment(3_000, ""))
        .await;
    let payment: Uuid = made.json()["id"].as_str().unwrap().parse().unwrap();

    let member = format!("member-{}@example.com", Uuid::new_v4().simple());
    let user = invoicer_core::accounts::create_org_with_owner(&app.pool, "Mine", &member, PASSWORD)
        .await
        .unwrap()
        .user_id;
    sqlx::query("insert into memberships (user_id, org_id, role) values ($1, $2, 'member')")
        .bind(user)
        .bind(org)
        .execute(&app.pool)
        .await
        .unwrap();
    let http = client();
    login(&http, &app.base, &member, PASSWORD).await;
    let switched = http
        .post(format!("{}/rpc/switch_org", app.base))
        .form(&[("org_id", org.to_string())])
        .send()
        .await
        .unwrap();
    assert!(switched.status().as_u16() < 400);
    let delete = [
        ("invoice_id", invoice.to_string()),
        ("payment_id", payment.to_string()),
        ("idempotency_key", model::form_key(org).to_string()),
    ];
    let refused =
        pages::post_form(&http, format!("{}/rpc/delete_payment", app.base), &delete).await;
    assert_eq!(refused.status(), 403);
    assert_eq!(
        count_rows(&app.pool, "payments where id = $1", payment).await,
        1
    );

    // A refund that depends on the payment keeps it, whoever asks.
    sqlx::query(
        "insert into refunds (provider, provider_payment_id, amount_refunded_cents, full_refund, event_id) \
         select provider, provider_payment_id, 1000, false, 'manual-refund' from payments where id = $1",
    )
    .bind(payment)
    .execute(&app.pool)
    .await
    .unwrap();
    let err = crate::common::rows::delete_payment(&app.pool, org, invoice, payment)
        .await
        .unwrap_err();
    assert!(
        matches!(err, invoicer_core::payments::manual::PaymentError::Refunded),
        "{err}"
    );
}

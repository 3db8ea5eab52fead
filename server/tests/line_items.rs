//! Line items as invoices have them, through the API: decimal quantities, the org's tax rates per
//! line, a discount, notes and payment terms; totals computed by the server and stored.

use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::TestApp;

async fn tax_rate(app: &TestApp, token: &str, name: &str, percent: f64) -> String {
    let body = json!({ "name": name, "percent": percent }).to_string();
    let key = Uuid::new_v4().to_string();
    let res = app
        .post_to("/api/v1/tax_rates", Some(token), Some(&key), &body)
        .await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    res.json()["id"].as_str().unwrap().to_owned()
}

fn body(lines: Value, extra: Value) -> String {
    let mut body = json!({
        "customer_name": "Ada",
        "customer_email": "ada@example.com",
        "currency": "usd",
        "due_date": "2027-02-28",
        "lines": lines,
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body.to_string()
}

async fn create(app: &TestApp, token: &str, body: &str) -> Value {
    let key = Uuid::new_v4().to_string();
    let res = app.post_invoice(Some(token), Some(&key), body).await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    res.json()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn totals_follow_the_rounding_rule_and_are_stored(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let vat = tax_rate(&app, &token, "VAT", 20.0).await;
    let city = tax_rate(&app, &token, "City tax", 8.875).await;
    // 1.5 × 150.00 = 225.00; 3 × 3.33 = 9.99; 2 × 10.00 = 20.00: subtotal 254.99.
    // 10 % off: 25.499 → 25.50, shared 22.50 / 1.00 / 2.00 by largest remainder (the 0.99 line's
    // remainder, 0.9, is largest).
    // VAT 20 % of 202.50 = 40.50; city 8.875 % of 8.99 = 0.7978… → 0.80 (per line, half up).
    let invoice = create(
        &app,
        &token,
        &body(
            json!([
                { "description": "Design", "quantity": 1.5, "unit_amount_cents": 15_000, "tax_rate_id": vat },
                { "description": "Parking", "quantity": 3, "unit_amount_cents": 333, "tax_rate_id": city },
                { "description": "Printing", "quantity": 2.0, "unit_amount_cents": 1_000 },
            ]),
            json!({ "discount": { "percent": 10 }, "notes": "Thanks!" }),
        ),
    )
    .await;
    assert_eq!(invoice["subtotal_cents"], 25_499);
    assert_eq!(invoice["discount_cents"], 2_550);
    assert_eq!(invoice["tax_cents"], 4_130);
    assert_eq!(invoice["total_cents"], 25_499 - 2_550 + 4_130);
    assert_eq!(invoice["discount"], json!({ "percent": 10 }));
    assert_eq!(invoice["notes"], "Thanks!");
    let lines = invoice["lines"].as_array().unwrap();
    assert_eq!(lines[0]["quantity"], 1.5);
    assert_eq!(
        lines[2]["quantity"], 2,
        "a whole quantity is an integer in JSON"
    );
    let shares: Vec<i64> = lines
        .iter()
        .map(|l| l["discount_cents"].as_i64().unwrap())
        .collect();
    assert_eq!(shares, [2_250, 100, 200]);
    let taxes: Vec<(String, i64)> = invoice["taxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["amount_cents"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        taxes,
        [("VAT".to_owned(), 4_050), ("City tax".to_owned(), 80)]
    );
    assert_eq!(invoice["taxes"][1]["percent"], 8.875);

    // What was stored is what was answered.
    let id = invoice["id"].as_str().unwrap();
    let got = app
        .get(&token, &format!("/api/v1/invoices/{id}"))
        .await
        .json();
    for field in [
        "subtotal_cents",
        "discount_cents",
        "tax_cents",
        "total_cents",
        "taxes",
        "lines",
    ] {
        assert_eq!(got[field], invoice[field], "{field}");
    }
    let stored = app
        .count(&format!(
            "select total_cents from invoices where id = '{id}' and \
             total_cents = subtotal_cents - discount_cents + tax_cents"
        ))
        .await;
    assert_eq!(stored, 25_499 - 2_550 + 4_130);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn another_orgs_tax_rate_is_a_422_that_claims_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let (_, other) = app.api_client().await;
    let theirs = tax_rate(&app, &other, "VAT", 20.0).await;
    let mine = tax_rate(&app, &token, "VAT", 20.0).await;
    let with_rate = |rate: &str| {
        body(
            json!([
                { "description": "A", "quantity": 1, "unit_amount_cents": 100 },
                { "description": "B", "quantity": 1, "unit_amount_cents": 100, "tax_rate_id": rate },
            ]),
            json!({}),
        )
    };
    let refused = app
        .post_invoice(Some(&token), Some("k-1"), &with_rate(&theirs))
        .await;
    assert_eq!(refused.status, 422);
    assert_eq!(
        refused.json()["errors"]["lines[1].tax_rate_id"],
        "Choose one of your tax rates."
    );
    let unknown = app
        .post_invoice(
            Some(&token),
            Some("k-1"),
            &with_rate(&Uuid::new_v4().to_string()),
        )
        .await;
    assert_eq!(unknown.status, 422);
    // Nothing was claimed: the same key, corrected, creates the invoice.
    let created = app
        .post_invoice(Some(&token), Some("k-1"), &with_rate(&mine))
        .await;
    assert_eq!(created.status, 201);
    assert_eq!(created.json()["tax_cents"], 20);
    assert_eq!(app.count("select count(*) from invoices").await, 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn discounts_and_quantities_out_of_bounds_are_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let line = json!([{ "description": "A", "quantity": 2, "unit_amount_cents": 1_000 }]);
    for (extra, field) in [
        (json!({ "discount": { "amount_cents": 2_001 } }), "discount"),
        (json!({ "discount": { "percent": 100.5 } }), "discount"),
        (json!({ "payment_terms_days": 366 }), "payment_terms_days"),
        (json!({ "notes": "x".repeat(2001) }), "notes"),
        (json!({ "due_date": null }), "due_date"),
    ] {
        let res = app
            .post_invoice(Some(&token), Some("k"), &body(line.clone(), extra.clone()))
            .await;
        assert_eq!(res.status, 422, "{extra}");
        assert!(
            res.json()["errors"][field].is_string(),
            "{extra}: {}",
            res.json()
        );
    }
    for quantity in [json!(0.0005), json!(0), json!(1_000_001), json!(-1)] {
        let lines = json!([{ "description": "A", "quantity": quantity, "unit_amount_cents": 1 }]);
        let res = app
            .post_invoice(Some(&token), Some("k"), &body(lines, json!({})))
            .await;
        assert_eq!(res.status, 422, "quantity {quantity}");
    }
    // A fixed discount of the whole subtotal is allowed: a free invoice.
    let free = create(
        &app,
        &token,
        &body(line, json!({ "discount": { "amount_cents": 2_000 } })),
    )
    .await;
    assert_eq!(free["total_cents"], 0);
    assert_eq!(app.count("select count(*) from invoices").await, 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn payment_terms_set_the_due_date_at_finalization(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (_, token) = app.api_client().await;
    let line = json!([{ "description": "A", "quantity": 1, "unit_amount_cents": 1_000 }]);
    let today = chrono::Utc::now().date_naive();
    // Finalized at once: due 30 days from today (the org's time zone is UTC).
    let open = create(
        &app,
        &token,
        &body(
            line.clone(),
            json!({ "due_date": null, "payment_terms_days": 30 }),
        ),
    )
    .await;
    assert_eq!(
        open["due_date"],
        (today + chrono::Days::new(30)).to_string()
    );
    assert_eq!(open["payment_terms_days"], 30);

    // A draft made some days ago: finalizing it sets the due date from the day it is issued.
    let draft = create(
        &app,
        &token,
        &body(line, json!({ "draft": true, "payment_terms_days": 14 })),
    )
    .await;
    let id: Uuid = draft["id"].as_str().unwrap().parse().unwrap();
    sqlx::query("update invoices set due_date = date '2026-01-15' where id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .unwrap();
    let finalized = app
        .post_to(
            &format!("/api/v1/invoices/{id}/finalize"),
            Some(&token),
            Some("fin-1"),
            "",
        )
        .await;
    assert_eq!(
        finalized.status,
        200,
        "{}",
        String::from_utf8_lossy(&finalized.body)
    );
    assert_eq!(
        finalized.json()["due_date"],
        (today + chrono::Days::new(14)).to_string()
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn duplicate_copies_taxes_discount_notes_and_terms(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let vat = tax_rate(&app, &token, "VAT", 21.0).await;
    let original = create(
        &app,
        &token,
        &body(
            json!([{ "description": "A", "quantity": 2.25, "unit_amount_cents": 1_000, "tax_rate_id": vat }]),
            json!({ "discount": { "amount_cents": 250 }, "notes": "N", "payment_terms_days": 15 }),
        ),
    )
    .await;
    let id = original["id"].as_str().unwrap();
    let copy = app
        .post_to(
            &format!("/api/v1/invoices/{id}/duplicate"),
            Some(&token),
            Some("dup-1"),
            "",
        )
        .await;
    assert_eq!(copy.status, 201, "{}", String::from_utf8_lossy(&copy.body));
    let copy = copy.json();
    for field in [
        "subtotal_cents",
        "discount",
        "discount_cents",
        "tax_cents",
        "total_cents",
        "taxes",
        "lines",
        "notes",
        "payment_terms_days",
    ] {
        assert_eq!(copy[field], original[field], "{field}");
    }
    assert_eq!(copy["status"], "draft");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn tax_rates_are_created_once_per_key_and_listed(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let body = r#"{"name": "VAT", "percent": 20}"#;
    let first = app
        .post_to("/api/v1/tax_rates", Some(&token), Some("t-1"), body)
        .await;
    assert_eq!(first.status, 201);
    let again = app
        .post_to("/api/v1/tax_rates", Some(&token), Some("t-1"), body)
        .await;
    assert_eq!((again.status, &again.body), (201, &first.body));
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    for bad in [
        r#"{"name": "VAT", "percent": 100.5}"#,
        r#"{"name": "VAT", "percent": 1.0005}"#,
        r#"{"name": " ", "percent": 5}"#,
        r#"{"name": "VAT"}"#,
    ] {
        let res = app
            .post_to("/api/v1/tax_rates", Some(&token), Some("t-2"), bad)
            .await;
        assert_eq!(res.status, 422, "{bad}");
    }
    let list = app.get(&token, "/api/v1/tax_rates").await.json();
    let data = list["data"].as_array().unwrap();
    assert_eq!(data.len(), 1);
    assert_eq!(data[0]["percent"], 20);
    // Another org sees none of them.
    let (_, other) = app.api_client().await;
    let theirs = app.get(&other, "/api/v1/tax_rates").await.json();
    assert_eq!(theirs["data"], json!([]));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn save_customer_creates_the_customer_with_the_invoice_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let line = json!([{ "description": "A", "quantity": 1, "unit_amount_cents": 1_000 }]);
    let request = body(line.clone(), json!({ "save_customer": true }));
    let first = app.post_invoice(Some(&token), Some("s-1"), &request).await;
    assert_eq!(
        first.status,
        201,
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    let again = app.post_invoice(Some(&token), Some("s-1"), &request).await;
    assert_eq!(again.body, first.body);
    let customer = first.json()["customer_id"].as_str().unwrap().to_owned();
    let saved = app
        .get(&token, &format!("/api/v1/customers/{customer}"))
        .await;
    assert_eq!(saved.status, 200);
    assert_eq!(saved.json()["email"], "ada@example.com");
    assert_eq!(app.count("select count(*) from customers").await, 1);
    // With a picked customer it is a contradiction, refused.
    let both = body(
        line,
        json!({ "save_customer": true, "customer_id": customer }),
    );
    let refused = app.post_invoice(Some(&token), Some("s-2"), &both).await;
    assert_eq!(refused.status, 422);
    assert!(refused.json()["errors"]["save_customer"].is_string());
}

/// The form and the API create an invoice through one command, so they refuse the same input the
/// same way: another org's customer and another org's tax rate are the same field errors on both,
/// found inside the claimed transaction, which rolls back (no claim, no invoice, no number); the same
/// keys, corrected, then create one invoice each.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_form_and_the_api_refuse_an_input_with_the_same_fields(pool: PgPool) {
    use crate::common::{client, login, pages};

    let app = TestApp::spawn(pool).await;
    let (org, token) = app.api_client().await;
    let (_, other) = app.api_client().await;
    let theirs = tax_rate(&app, &other, "VAT", 20.0).await;
    let mine = tax_rate(&app, &token, "VAT", 20.0).await;
    let customer = json!({ "name": "Theirs", "email": "theirs@example.com" }).to_string();
    let key = Uuid::new_v4().to_string();
    let made = (app.post_to("/api/v1/customers", Some(&other), Some(&key), &customer)).await;
    assert_eq!(made.status, 201);
    let their_customer = made.json()["id"].as_str().unwrap().to_owned();

    // With a picked customer, the API leaves the name and email out and the form sends them blank:
    // either passes the field checks as sent.
    let api_body = |customer: Option<&str>, rate: &str| {
        let mut body = json!({
            "customer_name": "", "customer_email": "", "currency": "usd", "due_date": "2030-01-31",
            "lines": [{ "description": "A", "quantity": 1, "unit_amount_cents": 100, "tax_rate_id": rate }],
        });
        match customer {
            Some(id) => {
                body["customer_id"] = id.into();
                let fields = body.as_object_mut().unwrap();
                fields.remove("customer_name");
                fields.remove("customer_email");
            }
            None => {
                body["customer_name"] = "Ada".into();
                body["customer_email"] = "ada@example.com".into();
            }
        }
        body.to_string()
    };
    let refused = (app.post_invoice(
        Some(&token),
        Some("k-1"),
        &api_body(Some(&their_customer), &theirs),
    ))
    .await;
    assert_eq!(
        refused.status,
        422,
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    let api_fields: Vec<String> = refused.json()["errors"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let with_their_rate =
        (app.post_invoice(Some(&token), Some("k-1"), &api_body(None, &theirs))).await;
    assert_eq!(with_their_rate.status, 422);
    let api_rate_fields: Vec<String> = with_their_rate.json()["errors"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();

    // The form, as the owner of the same org.
    let email: String = sqlx::query_scalar(
        "select u.email from users u join memberships m on m.user_id = u.id where m.org_id = $1",
    )
    .bind(org)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let http = client();
    login(&http, &app.base, &email, "correct horse").await;
    let form_key = model::form_key(org).to_string();
    let form = |customer: Option<&str>, rate: &str| {
        let mut form = crate::common::invoice_form(&form_key, "");
        form.retain(|(k, _)| k != "input[customer_email]");
        match customer {
            Some(id) => form.extend([
                ("input[customer_id]".to_owned(), id.to_owned()),
                ("input[customer_email]".to_owned(), String::new()),
            ]),
            None => {
                form.retain(|(k, _)| k != "input[customer_name]");
                form.extend([
                    ("input[customer_name]".to_owned(), "Ada".to_owned()),
                    (
                        "input[customer_email]".to_owned(),
                        "ada@example.com".to_owned(),
                    ),
                ]);
            }
        }
        form.push(("input[lines][0][tax_rate_id]".to_owned(), rate.to_owned()));
        form
    };
    let url = format!("{}/rpc/create_invoice", app.base);
    let fields_of = |body: &str| -> Vec<String> {
        let error: Value = serde_json::from_str(body).unwrap();
        error["error"]["Invalid"]["fields"]
            .as_object()
            .unwrap_or_else(|| panic!("{body}"))
            .keys()
            .cloned()
            .collect()
    };
    let res = pages::post_form(&http, url.clone(), &form(Some(&their_customer), &theirs)).await;
    assert_eq!(res.status(), 422);
    assert_eq!(fields_of(&res.text().await.unwrap()), api_fields);
    let res = pages::post_form(&http, url.clone(), &form(None, &theirs)).await;
    assert_eq!(res.status(), 422);
    assert_eq!(fields_of(&res.text().await.unwrap()), api_rate_fields);
    assert_eq!(
        api_fields,
        ["customer_id"],
        "the customer is the first of the org's rules"
    );
    assert_eq!(api_rate_fields, ["lines[0].tax_rate_id"]);
    assert_eq!(app.count("select count(*) from invoices").await, 0);
    assert_eq!(
        app.count(&format!(
            "select count(*) from claims where key in ('k-1', '{form_key}')"
        ))
        .await,
        0
    );
    assert_eq!(app.count("select count(*) from invoice_counters").await, 0);

    // Corrected, the same keys create one invoice each.
    let created = (app.post_invoice(Some(&token), Some("k-1"), &api_body(None, &mine))).await;
    assert_eq!(created.status, 201);
    let res = pages::post_form(&http, url, &form(None, &mine)).await;
    assert!(res.status().is_success(), "{}", res.status());
    assert_eq!(app.count("select count(*) from invoices").await, 2);
}

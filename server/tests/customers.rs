//! Customers through the public API: created once per Idempotency-Key like invoices, searched by
//! the start of a name or email, scoped to their org.

use std::sync::Arc;

use crate::common::rows;
use crate::common::served::{ApiResponse, TestApp};
use sqlx::PgPool;

fn body(name: &str, email: &str) -> String {
    serde_json::json!({
        "name": name,
        "email": email,
        "billing_address": "1 Main Street, Springfield",
        "tax_id": "DE123456789",
    })
    .to_string()
}

async fn post(app: &TestApp, token: &str, key: &str, body: &str) -> ApiResponse {
    app.post_to("/api/v1/customers", Some(token), Some(key), body)
        .await
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_customer_is_created_once_per_key_and_replayed_byte_for_byte(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let first = post(&app, &token, "cust-1", &body("Ada", "ada@example.com")).await;
    assert_eq!(
        first.status,
        201,
        "{:?}",
        String::from_utf8_lossy(&first.body)
    );
    let id = first.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(
        first.header("location"),
        Some(format!("/api/v1/customers/{id}").as_str())
    );
    let again = post(&app, &token, "cust-1", &body("Ada", "ada@example.com")).await;
    assert_eq!((again.status, &again.body), (201, &first.body));
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    let other = post(&app, &token, "cust-1", &body("Eve", "eve@example.com")).await;
    assert_eq!(other.status, 422, "the key names another request");
    assert_eq!(app.count("select count(*) from customers").await, 1);
    let got = app.get(&token, &format!("/api/v1/customers/{id}")).await;
    assert_eq!(got.json()["tax_id"], "DE123456789");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn fifty_concurrent_posts_with_one_key_make_one_customer(pool: PgPool) {
    let app = Arc::new(TestApp::spawn(pool).await);
    let (_, token) = app.api_client().await;
    let posts = (0..50).map(|_| {
        let (app, token) = (app.clone(), token.clone());
        tokio::spawn(async move {
            post(&app, &token, "same", &body("Bob", "bob@example.com"))
                .await
                .status
        })
    });
    for p in posts.collect::<Vec<_>>() {
        let status = p.await.unwrap();
        assert!(status == 201 || status == 409, "{status}");
    }
    assert_eq!(app.count("select count(*) from customers").await, 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_invalid_customer_is_422_writes_nothing_and_keeps_the_key_usable(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let bad = post(&app, &token, "k", &body(" ", "not-an-email")).await;
    assert_eq!(bad.status, 422);
    let errors = &bad.json()["errors"];
    assert!(
        errors["name"].is_string() && errors["email"].is_string(),
        "{errors}"
    );
    assert_eq!(app.count("select count(*) from customers").await, 0);
    assert_eq!(
        post(&app, &token, "k", &body("Cy", "cy@example.com"))
            .await
            .status,
        201
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn customers_are_searched_by_prefix_and_scoped_to_their_org(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    for (i, (name, email)) in [
        ("Ada Lovelace", "ada@math.example"),
        ("Adam Smith", "adam@econ.example"),
        ("Grace Hopper", "grace@navy.example"),
        ("100% Cotton Ltd", "sales@cotton.example"),
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(
            post(&app, &token, &format!("k{i}"), &body(name, email))
                .await
                .status,
            201
        );
    }
    let names = |r: ApiResponse| -> Vec<String> {
        r.json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names(app.get(&token, "/api/v1/customers?q=ADA").await),
        ["Ada Lovelace", "Adam Smith"]
    );
    assert_eq!(
        names(app.get(&token, "/api/v1/customers?q=grace%40").await),
        ["Grace Hopper"]
    );
    assert_eq!(
        names(app.get(&token, "/api/v1/customers?q=100%25").await),
        ["100% Cotton Ltd"]
    );
    assert!(
        names(app.get(&token, "/api/v1/customers?q=%25").await).is_empty(),
        "% is literal"
    );
    assert_eq!(names(app.get(&token, "/api/v1/customers").await).len(), 4);
    assert_eq!(
        app.get(&token, "/api/v1/customers?limit=0").await.status,
        400
    );

    // Another org sees none of them, and their ids are 404 to it.
    let (_, other) = app.api_client().await;
    assert!(names(app.get(&other, "/api/v1/customers").await).is_empty());
    let id: String = rows::scalar(&app.pool, "select id::text from customers limit 1").await;
    assert_eq!(
        app.get(&other, &format!("/api/v1/customers/{id}"))
            .await
            .status,
        404
    );
}

async fn patch_customer(
    app: &TestApp,
    token: &str,
    id: &str,
    key: &str,
    body: &str,
) -> ApiResponse {
    let res = app
        .http
        .patch(format!("{}/api/v1/customers/{id}", app.base))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .header("content-type", "application/merge-patch+json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    ApiResponse::read(res).await
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_invoice_takes_its_customers_details_and_keeps_them_once_finalized(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let customer = post(&app, &token, "c", &body("Ada", "ada@example.com"))
        .await
        .json();
    let cid = customer["id"].as_str().unwrap().to_owned();
    let invoice = |draft: bool| {
        serde_json::json!({
            "customer_id": cid,
            "currency": "usd",
            "due_date": "2027-02-28",
            "draft": draft,
            "lines": [{ "description": "Work", "quantity": 1, "unit_amount_cents": 1000 }],
        })
        .to_string()
    };
    let open = app
        .post_invoice(Some(&token), Some("i-1"), &invoice(false))
        .await;
    assert_eq!(open.status, 201, "{}", String::from_utf8_lossy(&open.body));
    let open = open.json();
    assert_eq!(open["customer_name"], "Ada");
    assert_eq!(open["customer_email"], "ada@example.com");
    assert_eq!(open["customer_address"], "1 Main Street, Springfield");
    assert_eq!(open["customer_tax_id"], "DE123456789");
    let draft = app
        .post_invoice(Some(&token), Some("i-2"), &invoice(true))
        .await
        .json();

    // The customer moves (and the same request again is the replay).
    let move_customer = || {
        let body = r#"{"billing_address": "2 New Road", "tax_id": null}"#;
        patch_customer(&app, &token, &cid, "p-1", body)
    };
    let moved = move_customer().await;
    assert_eq!(
        moved.status,
        200,
        "{}",
        String::from_utf8_lossy(&moved.body)
    );
    assert_eq!(moved.json()["billing_address"], "2 New Road");
    assert_eq!(moved.json()["name"], "Ada", "untouched fields stay");
    assert_eq!(moved.json()["tax_id"], serde_json::Value::Null);
    let replay = move_customer().await;
    assert_eq!((replay.status, &replay.body), (200, &moved.body));
    assert_eq!(
        patch_customer(&app, &token, &cid, "p-2", r#"{"email": "nope"}"#)
            .await
            .status,
        422
    );

    // The finalized invoice keeps what it was finalized with; the draft takes the new address when
    // it is finalized.
    let id = open["id"].as_str().unwrap();
    let again = app
        .get(&token, &format!("/api/v1/invoices/{id}"))
        .await
        .json();
    assert_eq!(again["customer_address"], "1 Main Street, Springfield");
    let draft_id = draft["id"].as_str().unwrap();
    let finalized = app
        .post_to(
            &format!("/api/v1/invoices/{draft_id}/finalize"),
            Some(&token),
            Some("f"),
            "",
        )
        .await
        .json();
    assert_eq!(finalized["customer_address"], "2 New Road");
    assert_eq!(finalized["customer_tax_id"], serde_json::Value::Null);

    // Another org's customer cannot be named.
    let (_, other) = app.api_client().await;
    let refused = app
        .post_invoice(Some(&other), Some("i-x"), &invoice(false))
        .await;
    assert_eq!(refused.status, 422);
    assert!(refused.json()["errors"]["customer_id"].is_string());
    assert_eq!(
        patch_customer(&app, &other, &cid, "p-x", r#"{"name": "Eve"}"#)
            .await
            .status,
        404
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_customer_form_creates_once_per_rendered_form(pool: PgPool) {
    use invoicer_core::observe::{Attempt, Surface};
    use invoicer_core::surfaces::customer_forms::customer_from_form;
    use invoicer_core::surfaces::form::Saved;

    let app = Arc::new(TestApp::spawn(pool.clone()).await);
    let (org, _) = app.api_client().await;
    let input: model::CustomerInput =
        serde_json::from_str(&body("Grace", "grace@example.com")).unwrap();
    let key = uuid::Uuid::now_v7();
    let runs = (0..20).map(|_| {
        let (pool, input) = (pool.clone(), input.clone());
        tokio::spawn(async move {
            let attempt = Attempt::new(Surface::Form, key.to_string(), None);
            customer_from_form(&pool, &attempt, org, key, &input)
                .await
                .unwrap()
        })
    });
    let mut ids = std::collections::HashSet::new();
    let mut created = 0;
    for run in runs {
        match run.await.unwrap() {
            Saved::Created(id) => {
                created += 1;
                ids.insert(id);
            }
            Saved::Replayed(id) => {
                ids.insert(id);
            }
            Saved::KeyReused => panic!("same content is a replay"),
        }
    }
    assert_eq!((created, ids.len()), (1, 1));
    assert_eq!(app.count("select count(*) from customers").await, 1);
    let mut other = input.clone();
    other.name = "Grace Hopper".into();
    let attempt = Attempt::new(Surface::Form, key.to_string(), None);
    assert_eq!(
        customer_from_form(&pool, &attempt, org, key, &other)
            .await
            .unwrap(),
        Saved::KeyReused
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_name_sent_with_a_customer_must_still_be_valid(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let customer = post(&app, &token, "c", &body("Ada", "ada@example.com"))
        .await
        .json();
    let invoice = serde_json::json!({
        "customer_id": customer["id"],
        "customer_name": "bad\u{0}name",
        "currency": "usd",
        "due_date": "2027-02-28",
        "lines": [{ "description": "Work", "quantity": 1, "unit_amount_cents": 1000 }],
    })
    .to_string();
    let refused = app.post_invoice(Some(&token), Some("i"), &invoice).await;
    assert_eq!(refused.status, 422);
    assert!(refused.json()["errors"]["customer_name"].is_string());
    // Sent empty is not "left out".
    let empty = invoice.replace("bad\\u0000name", "");
    assert!(empty.contains(r#""customer_name":"""#), "{empty}");
    assert_eq!(
        app.post_invoice(Some(&token), Some("i"), &empty)
            .await
            .status,
        422
    );
    assert_eq!(app.count("select count(*) from invoices").await, 0);
}

//! Customers through the public API: created once per Idempotency-Key like invoices, searched by
//! the start of a name or email, scoped to their org.

use std::sync::Arc;

use crate::common::served::{ApiResponse, TestApp};
use sqlx::PgPool;

fn body(name: &str, email: &str) -> String {
    serde_json::json!({
        "name": name,
        "email": email,
        "billing_address": "1 Main Street, Springfield",
        "tax_id": "US-42",
    })
    .to_string()
}

async fn post(app: &TestApp, token: &str, key: &str, body: &str) -> ApiResponse {
    app.post_to("/api/v1/customers", Some(token), Some(key), body)
        .await
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
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
    assert_eq!(got.json()["tax_id"], "US-42");
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
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

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
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

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
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
    let id: String = sqlx::query_scalar("select id::text from customers limit 1")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        app.get(&other, &format!("/api/v1/customers/{id}"))
            .await
            .status,
        404
    );
}

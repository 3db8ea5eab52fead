//! Secrets are answered once and stored nowhere an answer is replayed from: every API write whose
//! answer carries a secret (found in the OpenAPI document, so a new one cannot be missed) stores
//! its answer redacted, replays it redacted with a header saying so, and the activity page shows
//! the stored answer only.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::common::served::TestApp;
use crate::common::{client, login};

/// The writes whose success answers name a field `secret`, as `METHOD path`.
fn writes_answering_a_secret(spec: &Value) -> BTreeSet<String> {
    let schemas = &spec["components"]["schemas"];
    let mut found = BTreeSet::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if !matches!(method.as_str(), "post" | "put" | "patch" | "delete") {
                continue;
            }
            let answers_secret = op["responses"]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(status, _)| status.starts_with('2'))
                .any(|(_, response)| names_secret(&response["content"], schemas, 0));
            if answers_secret {
                found.insert(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    found
}

/// Whether `schema` (or what it refers to, or holds) has a property named `secret`.
fn names_secret(schema: &Value, schemas: &Value, depth: u32) -> bool {
    if depth > 8 {
        return false;
    }
    match schema {
        Value::Object(map) => map.iter().any(|(name, inner)| {
            if name == "$ref" {
                let target = inner.as_str().unwrap().rsplit('/').next().unwrap();
                names_secret(&schemas[target], schemas, depth + 1)
            } else if name == "properties" && inner.get("secret").is_some() {
                true
            } else {
                names_secret(inner, schemas, depth + 1)
            }
        }),
        Value::Array(items) => items.iter().any(|i| names_secret(i, schemas, depth + 1)),
        _ => false,
    }
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn every_answer_with_a_secret_is_stored_and_replayed_redacted(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, key) = app.api_client().await;
    let spec: Value = app
        .http
        .get(format!("{}/api/v1/openapi.json", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed = writes_answering_a_secret(&spec);
    let exercised = [
        "POST /api/v1/webhook_endpoints",
        "POST /api/v1/webhook_endpoints/{id}/rotate_secret",
    ];
    assert_eq!(
        listed,
        exercised.iter().map(|s| s.to_string()).collect(),
        "every write that answers a secret is exercised below"
    );

    let call = async |path: &str, idem: &str, body: Value| {
        let mut req = app
            .http
            .post(format!("{}{path}", app.base))
            .bearer_auth(&key)
            .header("idempotency-key", idem);
        if !body.is_null() {
            req = req.json(&body);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        (status, headers, res.json::<Value>().await.unwrap())
    };
    let register = json!({"url": "https://hooks.example/in", "events": ["invoice.paid"]});
    let (status, _, endpoint) = call("/api/v1/webhook_endpoints", "reg", register.clone()).await;
    assert_eq!(status, 201, "{endpoint}");
    let id = endpoint["id"].as_str().unwrap().to_owned();
    let rotate = format!("/api/v1/webhook_endpoints/{id}/rotate_secret");
    for (path, idem, body) in [
        ("/api/v1/webhook_endpoints".to_owned(), "reg", register),
        (rotate.clone(), "rot", Value::Null),
    ] {
        let first = if idem == "reg" {
            (status, endpoint.clone())
        } else {
            let (status, _, body) = call(&path, idem, body.clone()).await;
            (status, body)
        };
        let secret = first.1["secret"].as_str().unwrap().to_owned();
        assert!(secret.starts_with("whsec_"), "{path}: {}", first.1);
        let stored: Vec<u8> =
            sqlx::query_scalar("select response_body from claims where scope = 'api' and key = $1")
                .bind(idem)
                .fetch_one(&app.pool)
                .await
                .unwrap();
        let stored = String::from_utf8(stored).unwrap();
        assert!(!stored.contains(&secret), "{path}: stored {stored}");
        assert!(!stored.contains("whsec_"), "{path}: stored {stored}");
        assert!(stored.contains("[redacted]"), "{path}: stored {stored}");
        let (status, headers, replayed) = call(&path, idem, body).await;
        assert_eq!(status, first.0, "{path}: the same status");
        assert_eq!(replayed["secret"], "[redacted]", "{path}");
        assert_eq!(replayed["id"], first.1["id"], "{path}");
        assert_eq!(headers["idempotent-replayed"], "true", "{path}");
        assert_eq!(headers["idempotent-redacted"], "true", "{path}");
        // The live secret is still the one the endpoint signs with.
        let live: String =
            sqlx::query_scalar("select secret from webhook_endpoints where id = $1::uuid")
                .bind(&id)
                .fetch_one(&app.pool)
                .await
                .unwrap();
        if path == rotate {
            assert_eq!(live, secret, "the rotation's secret is the one in force");
        }
    }
}

/// The activity page shows each API attempt's stored answer: never a secret, to anyone.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_activity_page_shows_no_secret(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (email, account) = crate::common::rows::new_owner(&app.pool, "Act Co").await;
    let key = crate::common::rows::owners_key(&app.pool, &account).await;
    let res = app
        .http
        .post(format!("{}/api/v1/webhook_endpoints", app.base))
        .bearer_auth(&key)
        .header("idempotency-key", "act-1")
        .json(&json!({"url": "https://hooks.example/in", "events": ["invoice.paid"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let secret = res.json::<Value>().await.unwrap()["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    let http = client();
    login(&http, &app.base, &email, "correct horse").await;
    let page = crate::common::pages::text(&http, format!("{}/activity", app.base)).await;
    assert!(page.contains("act-1"), "the attempt is listed");
    assert!(page.contains("[redacted]"), "its stored answer is shown");
    assert!(!page.contains(&secret), "the secret is not");
}

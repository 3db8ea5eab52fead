//! The public API over real HTTP against the real router and Postgres.

use std::sync::Arc;

use crate::common;
use crate::common::rows;
use crate::common::served::{invoice_body, TestApp};
use sqlx::PgPool;

const INVOICES: &str = "select count(*) from invoices";

fn problem_type(r: &common::served::ApiResponse) -> String {
    assert_eq!(
        r.header("content-type"),
        Some("application/problem+json"),
        "{r:?}"
    );
    r.json()["type"].as_str().unwrap().to_owned()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_replay_returns_the_same_status_and_byte_identical_body(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let body = invoice_body("Ada");
    let first = app.post_invoice(Some(&token), Some("order-1"), &body).await;
    assert_eq!(
        first.status,
        201,
        "{:?}",
        String::from_utf8_lossy(&first.body)
    );
    assert_eq!(first.header("idempotent-replayed"), None);
    let invoice = first.json();
    assert_eq!(invoice["number"], "INV-000001");
    assert_eq!(invoice["total_cents"], 12 * 2_500 + 9_900);
    assert_eq!(invoice["status"], "open");
    assert_eq!(
        first.header("location").unwrap(),
        format!("/api/v1/invoices/{}", invoice["id"].as_str().unwrap())
    );

    // The same request written differently (key order, whitespace) is the same request.
    let reordered: serde_json::Value = serde_json::from_str(&body).unwrap();
    let reordered = serde_json::to_string_pretty(&reordered).unwrap();
    for replay_body in [&body, &reordered] {
        let replay = app
            .post_invoice(Some(&token), Some("order-1"), replay_body)
            .await;
        assert_eq!(replay.status, 201);
        assert_eq!(replay.body, first.body, "byte-identical");
        assert_eq!(replay.header("location"), first.header("location"));
        assert_eq!(replay.header("content-type"), Some("application/json"));
        assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    }
    // A quoted structured-field string names the same key.
    let quoted = app
        .post_invoice(Some(&token), Some("\"order-1\""), &body)
        .await;
    assert_eq!(
        (quoted.status, quoted.body.clone()),
        (201, first.body.clone())
    );
    assert_eq!(app.count(INVOICES).await, 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn twenty_concurrent_posts_with_one_key_make_one_invoice(pool: PgPool) {
    let app = Arc::new(TestApp::spawn(pool).await);
    let (_, token) = app.api_client().await;
    let body = invoice_body("Ada");
    let barrier = Arc::new(tokio::sync::Barrier::new(20));
    let posts: Vec<_> = (0..20)
        .map(|_| {
            let (app, token, body, barrier) =
                (app.clone(), token.clone(), body.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                app.post_invoice(Some(&token), Some("concurrent-1"), &body)
                    .await
            })
        })
        .collect();
    let mut responses = Vec::new();
    for post in posts {
        responses.push(post.await.unwrap());
    }
    let originals: Vec<_> = responses
        .iter()
        .filter(|r| r.status == 201 && r.header("idempotent-replayed").is_none())
        .collect();
    assert_eq!(
        originals.len(),
        1,
        "exactly one request created the invoice"
    );
    let original = originals[0].body.clone();
    let (mut replays, mut in_flight) = (0, 0);
    for r in &responses {
        match (r.status, r.header("idempotent-replayed")) {
            (201, None) => {}
            (201, Some("true")) => {
                assert_eq!(r.body, original);
                replays += 1;
            }
            (409, None) => {
                assert!(r.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
                assert_eq!(problem_type(r), "/problems/in-flight");
                in_flight += 1;
            }
            other => panic!("unexpected response {other:?}: {r:?}"),
        }
    }
    assert_eq!(replays + in_flight, 19);
    assert_eq!(app.count(INVOICES).await, 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_reused_key_with_another_body_is_422_and_the_original_survives_changes(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let first = app
        .post_invoice(Some(&token), Some("k-1"), &invoice_body("Ada"))
        .await;
    assert_eq!(first.status, 201);

    let other = app
        .post_invoice(Some(&token), Some("k-1"), &invoice_body("Bob"))
        .await;
    assert_eq!(other.status, 422);
    assert_eq!(problem_type(&other), "/problems/idempotency-key-reused");
    assert_eq!(
        other.json()["title"],
        "Idempotency-Key already used with a different request"
    );

    // The invoice changes (voided); the replay still returns what the first call returned.
    sqlx::query("update invoices set status = 'void'")
        .execute(&app.pool)
        .await
        .unwrap();
    let replay = app
        .post_invoice(Some(&token), Some("k-1"), &invoice_body("Ada"))
        .await;
    assert_eq!((replay.status, &replay.body), (201, &first.body));
    assert_eq!(replay.json()["status"], "open");
    assert_eq!(app.count(INVOICES).await, 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_same_key_from_two_clients_makes_two_invoices(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org_a, token_a) = app.api_client().await;
    let (org_b, token_b) = app.api_client().await;
    let a = app
        .post_invoice(Some(&token_a), Some("shared"), &invoice_body("Ada"))
        .await;
    let b = app
        .post_invoice(Some(&token_b), Some("shared"), &invoice_body("Ada"))
        .await;
    assert_eq!((a.status, b.status), (201, 201));
    assert_eq!(b.header("idempotent-replayed"), None);
    assert_ne!(a.json()["id"], b.json()["id"]);
    let orgs: Vec<model::OrgId> =
        rows::scalars(&app.pool, "select org_id from invoices order by org_id").await;
    let mut expected = vec![org_a, org_b];
    expected.sort();
    assert_eq!(orgs, expected);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn bad_requests_get_problems_and_consume_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let body = invoice_body("Ada");

    let missing = app.post_invoice(Some(&token), None, &body).await;
    assert_eq!(
        (missing.status, problem_type(&missing).as_str()),
        (400, "/problems/idempotency-key")
    );
    for bad in ["", "has space", &"k".repeat(256)] {
        let r = app.post_invoice(Some(&token), Some(bad), &body).await;
        assert_eq!(r.status, 400, "key {bad:?}");
    }
    let no_token = app.post_invoice(None, Some("k"), &body).await;
    assert_eq!(
        (no_token.status, no_token.header("www-authenticate")),
        (401, Some("Bearer"))
    );
    let wrong = app
        .post_invoice(Some("ik_not_a_key"), Some("k"), &body)
        .await;
    assert_eq!(
        (wrong.status, problem_type(&wrong).as_str()),
        (401, "/problems/unauthorized")
    );

    let malformed = app.post_invoice(Some(&token), Some("k"), "{not json").await;
    assert_eq!(
        (malformed.status, problem_type(&malformed).as_str()),
        (400, "/problems/malformed-json")
    );
    let too_big = app
        .post_invoice(Some(&token), Some("k"), &" ".repeat(1024 * 1024 + 1))
        .await;
    assert_eq!(
        (too_big.status, problem_type(&too_big).as_str()),
        (413, "/problems/too-large")
    );

    // Invalid: 422 with per-field errors; not stored, so the same key then works.
    let mut invalid: serde_json::Value = serde_json::from_str(&body).unwrap();
    invalid["customer_email"] = "nope".into();
    invalid["lines"][1]["quantity"] = 0.into();
    let r = app
        .post_invoice(Some(&token), Some("k"), &invalid.to_string())
        .await;
    assert_eq!(r.status, 422);
    let errors = &r.json()["errors"];
    assert!(errors["customer_email"].is_string(), "{errors}");
    assert!(errors["lines[1].quantity"].is_string(), "{errors}");
    let wrong_type = app
        .post_invoice(Some(&token), Some("k"), r#"{"customer_name": 5}"#)
        .await;
    assert_eq!(wrong_type.status, 422);
    // Found by schemathesis: a NUL character reached Postgres and became a 500.
    let mut nul: serde_json::Value = serde_json::from_str(&body).unwrap();
    nul["customer_name"] = "Ada\u{0}".into();
    let r = app
        .post_invoice(Some(&token), Some("k"), &nul.to_string())
        .await;
    let message = r.json()["errors"]["customer_name"].clone();
    assert_eq!(
        (r.status, message.as_str()),
        (422, Some(model::CONTROL_CHARACTER))
    );
    assert_eq!(
        app.count("select count(*) from claims").await,
        0,
        "nothing was claimed"
    );

    let ok = app.post_invoice(Some(&token), Some("k"), &body).await;
    assert_eq!(ok.status, 201);
    assert_eq!(ok.header("idempotent-replayed"), None);
    // No internal text anywhere.
    for r in [&missing, &no_token, &wrong, &malformed, &too_big] {
        let text = String::from_utf8_lossy(&r.body).to_lowercase();
        assert!(
            !text.contains("sqlx") && !text.contains("postgres"),
            "{text}"
        );
    }
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_expired_key_is_new_again_and_the_sweep_deletes_expired_claims(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let first = app
        .post_invoice(Some(&token), Some("old"), &invoice_body("Ada"))
        .await;
    assert_eq!(first.status, 201);
    // The default TTL is 24 h: age the claim past it instead of waiting.
    sqlx::query("update claims set created_at = now() - interval '25 hours'")
        .execute(&app.pool)
        .await
        .unwrap();
    let again = app
        .post_invoice(Some(&token), Some("old"), &invoice_body("Bob"))
        .await;
    assert_eq!(
        again.status, 201,
        "an expired key names nothing: even another body is a new request"
    );
    assert_eq!(again.header("idempotent-replayed"), None);
    assert_eq!(app.count(INVOICES).await, 2);

    for key in ["a", "b", "c"] {
        assert_eq!(
            app.post_invoice(Some(&token), Some(key), &invoice_body("C"))
                .await
                .status,
            201
        );
    }
    sqlx::query("update claims set created_at = now() - interval '25 hours' where key <> 'a'")
        .execute(&app.pool)
        .await
        .unwrap();
    let swept = invoicer_core::jobs::retention::sweep_claims(
        &app.pool,
        invoicer_core::claim::Surface::Api,
        std::time::Duration::from_secs(24 * 3600),
        2,
    )
    .await
    .unwrap();
    assert_eq!(swept, 3, "old, b and c, in batches of 2");
    let left: Vec<String> = rows::scalars(&app.pool, "select key from claims").await;
    assert_eq!(left, ["a"]);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn reads_are_org_scoped(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token_a) = app.api_client().await;
    let (_, token_b) = app.api_client().await;
    let mut ids = Vec::new();
    for (i, customer) in ["First", "Second", "Third"].iter().enumerate() {
        let r = app
            .post_invoice(
                Some(&token_a),
                Some(&format!("k{i}")),
                &invoice_body(customer),
            )
            .await;
        ids.push(r.json()["id"].as_str().unwrap().to_owned());
    }
    let list = app.get(&token_a, "/api/v1/invoices?limit=2").await;
    assert_eq!(list.status, 200);
    let data = list.json()["data"].as_array().unwrap().clone();
    assert_eq!(data.len(), 2);
    assert_eq!(data[0]["customer_name"], "Third", "newest first");
    assert_eq!(data[0]["lines"].as_array().unwrap().len(), 2);
    assert_eq!(
        app.get(&token_a, "/api/v1/invoices?limit=0").await.status,
        400
    );

    let own = app
        .get(&token_a, &format!("/api/v1/invoices/{}", ids[0]))
        .await;
    assert_eq!(
        (own.status, own.json()["customer_name"].as_str()),
        (200, Some("First"))
    );
    let other = app
        .get(&token_b, &format!("/api/v1/invoices/{}", ids[0]))
        .await;
    assert_eq!(
        (other.status, problem_type(&other).as_str()),
        (404, "/problems/not-found")
    );
    assert_eq!(
        app.get(&token_b, "/api/v1/invoices").await.json()["data"],
        serde_json::json!([])
    );
    assert_eq!(
        app.get(&token_a, "/api/v1/invoices/not-a-uuid")
            .await
            .status,
        404
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_revoked_key_is_401(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, token) = app.api_client().await;
    assert_eq!(app.get(&token, "/api/v1/invoices").await.status, 200);
    let id: uuid::Uuid = rows::scalar(&app.pool, "select id from api_keys").await;
    let operator = invoicer_core::accounts::audit::Actor::operator();
    assert!(
        invoicer_core::accounts::api_keys::revoke(&app.pool, org, &operator, true, id)
            .await
            .unwrap()
    );
    assert_eq!(app.get(&token, "/api/v1/invoices").await.status, 401);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_openapi_document_names_the_routes(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let doc: serde_json::Value = reqwest::get(format!("{}/api/v1/openapi.json", app.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths["/api/v1/invoices"]["post"].is_object());
    assert!(paths["/api/v1/invoices"]["get"].is_object());
    assert!(paths["/api/v1/invoices/{id}"]["get"].is_object());
    let params = paths["/api/v1/invoices"]["post"]["parameters"]
        .as_array()
        .unwrap();
    assert!(params
        .iter()
        .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header"));
    let list = &paths["/api/v1/invoices"]["get"]["parameters"][0];
    assert_eq!(
        (&list["name"], &list["in"], &list["required"]),
        (&"limit".into(), &"query".into(), &false.into())
    );
}

/// A body whose value does not read is a 422 naming the field (`lines[1].unit_amount_cents`), and
/// leaves the key usable: the corrected body creates the invoice.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_value_that_does_not_read_is_named_by_its_field(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let mut body: serde_json::Value = serde_json::from_str(&invoice_body("Ada")).unwrap();
    body["lines"][1]["unit_amount_cents"] = "ninety-nine".into();
    let refused = app
        .post_invoice(Some(&token), Some("k-typed"), &body.to_string())
        .await;
    assert_eq!(refused.status, 422, "{}", refused.json());
    assert_eq!(problem_type(&refused), "/problems/invalid-invoice");
    let errors = refused.json()["errors"].clone();
    let why = errors["lines[1].unit_amount_cents"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("ninety-nine"), "{errors}");
    assert_eq!(app.count(INVOICES).await, 0, "a refusal writes nothing");
    let created = app
        .post_invoice(Some(&token), Some("k-typed"), &invoice_body("Ada"))
        .await;
    assert_eq!(created.status, 201, "{}", created.json());
    assert_eq!(app.count(INVOICES).await, 1);
}

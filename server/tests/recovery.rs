//! A recovered account keeps nothing its thief left: a password reset or change revokes the API
//! keys the user made, withdraws their open invitations and disables the webhook endpoints they
//! registered in the last seven days, and tells the other owners; and a change of where the org is
//! paid, or of who it is on its e-invoices, asks for the password again and is never silent.

use std::net::IpAddr;

use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::rows::{emailed_token, scalar_for};
use crate::common::served::TestApp;
use crate::common::{client, login, pages};

const HERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

/// An org with its owner (`victim`) and a second owner who never logs in; returns (org, victim's
/// id, victim's address, the other owner's address).
async fn org_of_two_owners(pool: &PgPool) -> (model::OrgId, Uuid, String, String) {
    let victim = format!("{}@example.com", Uuid::new_v4().simple());
    let account =
        invoicer_core::accounts::create_org_with_owner(pool, "Two Co", &victim, "old password")
            .await
            .unwrap();
    let other = format!("{}@example.com", Uuid::new_v4().simple());
    let other_id = Uuid::new_v4();
    sqlx::query(
        "insert into users (id, email, password_hash, email_verified_at) values ($1, $2, 'x', now())",
    )
    .bind(other_id)
    .bind(&other)
    .execute(pool)
    .await
    .unwrap();
    sqlx::query("insert into memberships (user_id, org_id, role) values ($1, $2, 'owner')")
        .bind(other_id)
        .bind(account.org_id)
        .execute(pool)
        .await
        .unwrap();
    (account.org_id, account.user_id, victim, other)
}

async fn api(app: &TestApp, method: &str, path: &str, key: &str, body: Value) -> (u16, Value) {
    let res = app.call(method, path, key, &body).await;
    (
        res.status,
        serde_json::from_slice(&res.body).unwrap_or(Value::Null),
    )
}

/// What the thief leaves while holding the account: a key, an endpoint registered with it (and
/// one registered long before, which stays), an invitation. Returns (key, new endpoint, old one).
async fn leave_behind(
    app: &TestApp,
    org: model::OrgId,
    victim: Uuid,
    email: &str,
) -> (String, Uuid, Uuid) {
    let key = invoicer_core::accounts::api_keys::create_for_user(&app.pool, org, victim, "thief")
        .await
        .unwrap()
        .plaintext;
    let mut ids = Vec::new();
    for url in ["https://old.example/in", "https://thief.example/in"] {
        let body = json!({"url": url, "events": ["invoice.paid"]});
        let (status, endpoint) = api(app, "POST", "/api/v1/webhook_endpoints", &key, body).await;
        assert_eq!(status, 201, "{endpoint}");
        ids.push(Uuid::parse_str(endpoint["id"].as_str().unwrap()).unwrap());
    }
    sqlx::query(
        "update webhook_endpoints set created_at = now() - interval '8 days' where id = $1",
    )
    .bind(ids[0])
    .execute(&app.pool)
    .await
    .unwrap();
    let mut tx = app.pool.begin().await.unwrap();
    invoicer_core::accounts::invitations::invite(
        &mut tx,
        org,
        &invoicer_core::accounts::audit::Actor::user(victim, email),
        "accomplice@example.com",
        model::Role::Owner,
        &format!("form:{}", Uuid::now_v7()),
        crate::common::member_gate(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    (key, ids[1], ids[0])
}

/// After a reset or change: the key is refused, the new endpoint disabled, the old one not, the
/// invitation withdrawn, each in the audit log, and the other owner told.
async fn nothing_left(
    app: &TestApp,
    org: model::OrgId,
    key: &str,
    new: Uuid,
    old: Uuid,
    other: &str,
) {
    let (status, _) = api(
        app,
        "PATCH",
        "/api/v1/org",
        key,
        json!({"bank": {"iban": "DE89370400440532013000"}}),
    )
    .await;
    assert_eq!(status, 401, "the thief's key no longer works");
    let iban: String = scalar_for(&app.pool, "select bank_iban from orgs where id = $1", org).await;
    assert_eq!(iban, "");
    let state = |id: Uuid| {
        sqlx::query_as::<_, (Option<String>,)>(
            "select disabled_reason from webhook_endpoints where id = $1",
        )
        .bind(id)
        .fetch_one(&app.pool)
    };
    assert_eq!(
        state(new).await.unwrap().0.as_deref(),
        Some("credentials_reset")
    );
    assert_eq!(state(old).await.unwrap().0, None, "older than 7 days: kept");
    let open: i64 = scalar_for(
        &app.pool,
        "select count(*) from invitations where org_id = $1 and revoked_at is null",
        org,
    )
    .await;
    assert_eq!(open, 0, "the invitation is withdrawn");
    for action in [
        "api_key.revoked",
        "invitation.revoked",
        "webhook_endpoint.disabled",
    ] {
        assert_eq!(
            crate::common::rows::audit_count(&app.pool, org, action).await,
            1,
            "{action}"
        );
    }
    let told: Value = sqlx::query_scalar(
        "select payload from outbox where kind = 'credentials_notice' and payload->>'to' = $1",
    )
    .bind(other)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(told["api_keys"], 1, "{told}");
    assert_eq!(told["invitations"], 1, "{told}");
    assert_eq!(told["endpoints"][0]["id"], new.to_string(), "{told}");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_reset_takes_back_what_the_thief_left_and_tells_the_owners(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, victim, email, other) = org_of_two_owners(&app.pool).await;
    let (key, new, old) = leave_behind(&app, org, victim, &email).await;

    // The owner recovers the account by the emailed link.
    invoicer_core::accounts::request_reset(&app.pool, &email, &format!("form:{}", Uuid::now_v7()))
        .await
        .unwrap();
    let token = emailed_token(&app.pool, "reset_password", &email).await;
    invoicer_core::accounts::reset_password(&app.pool, &token, "a new password", HERE)
        .await
        .unwrap();
    nothing_left(&app, org, &key, new, old, &other).await;
    let notice: Value = sqlx::query_scalar(
        "select payload from outbox where kind = 'account_notice' and payload->>'to' = $1",
    )
    .bind(&email)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(notice["taken_back"]["api_keys"], 1, "{notice}");
    assert_eq!(
        notice["taken_back"]["endpoints"][0],
        "https://thief.example/in"
    );
    let to_self: i64 = scalar_for(
        &app.pool,
        "select count(*) from outbox where kind = 'credentials_notice' and payload->>'to' = $1",
        &email,
    )
    .await;
    assert_eq!(
        to_self, 0,
        "the user's own notice says it; the other owners get theirs"
    );

    // One click of an owner enables the endpoint again.
    let http = client();
    login(&http, &app.base, &email, "a new password").await;
    let key = model::form_key(org).to_string();
    let form = [("idempotency_key", key.as_str()), ("id", &new.to_string())];
    let res = pages::post_form(
        &http,
        format!("{}/rpc/enable_webhook_endpoint", app.base),
        &form,
    )
    .await;
    assert!(res.status().as_u16() < 400, "{}", res.status());
    let disabled: Option<chrono::DateTime<chrono::Utc>> = scalar_for(
        &app.pool,
        "select disabled_at from webhook_endpoints where id = $1",
        new,
    )
    .await;
    assert_eq!(disabled, None);
    assert_eq!(
        crate::common::rows::audit_count(&app.pool, org, "webhook_endpoint.enabled").await,
        1
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_password_change_takes_back_what_the_thief_left(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, victim, email, other) = org_of_two_owners(&app.pool).await;
    let (key, new, old) = leave_behind(&app, org, victim, &email).await;
    let http = client();
    login(&http, &app.base, &email, "old password").await;
    let form = [("current", "old password"), ("password", "a new password")];
    let res = pages::post_form(&http, format!("{}/rpc/change_password", app.base), &form).await;
    assert!(res.status().as_u16() < 400, "{}", res.status());
    nothing_left(&app, org, &key, new, old, &other).await;
}

/// The bank form as the settings page posts it.
fn bank_form<'a>(key: &'a str, iban: &'a str, password: &'a str) -> Vec<(&'static str, &'a str)> {
    vec![
        ("idempotency_key", key),
        ("bank[holder]", "Two Co"),
        ("bank[iban]", iban),
        ("bank[bic]", ""),
        ("bank[other]", ""),
        ("bank[reference]", "{number}"),
        ("password", password),
    ]
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn where_the_org_is_paid_changes_only_with_the_password_and_never_silently(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, victim, email, other) = org_of_two_owners(&app.pool).await;
    let http = client();
    login(&http, &app.base, &email, "old password").await;
    // Signed in 11 minutes ago.
    sqlx::query("update user_sessions set authenticated_at = now() - interval '11 minutes' where user_id = $1")
        .bind(victim)
        .execute(&app.pool)
        .await
        .unwrap();
    let url = format!("{}/rpc/save_bank_details", app.base);
    let key = model::form_key(org).to_string();
    let iban_now =
        || scalar_for::<String>(&app.pool, "select bank_iban from orgs where id = $1", org);

    for (password, says) in [
        ("", "Enter your password"),
        ("wrong guess", "not your password"),
    ] {
        let res = pages::post_form(
            &http,
            url.clone(),
            &bank_form(&key, "NL91ABNA0417164300", password),
        )
        .await;
        assert_eq!(res.status(), 422);
        assert!(res.text().await.unwrap().contains(says), "{says}");
        assert_eq!(iban_now().await, "", "nothing saved");
    }
    // The same form (the same key) with the password: saved, logged masked, every owner told.
    let res = pages::post_form(
        &http,
        url.clone(),
        &bank_form(&key, "NL91ABNA0417164300", "old password"),
    )
    .await;
    assert!(res.status().as_u16() < 400, "{}", res.status());
    assert_eq!(iban_now().await, "NL91ABNA0417164300");
    let detail: Value = sqlx::query_scalar(
        "select detail from audit_events where org_id = $1 and action = 'org.bank_details_changed'",
    )
    .bind(org)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let text = detail.to_string();
    assert!(text.contains("…4300"), "{text}");
    assert!(!text.contains("NL91ABNA"), "the IBAN is masked: {text}");
    for to in [&email, &other] {
        let told: Value = sqlx::query_scalar(
            "select payload from outbox where kind = 'org_change_notice' and payload->>'to' = $1",
        )
        .bind(to)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!(told["changes"][1]["new"], "…4300", "{told}");
    }
    // Proved just now: a second change within 10 minutes needs no password.
    let key = model::form_key(org).to_string();
    let res = pages::post_form(
        &http,
        url.clone(),
        &bank_form(&key, "DE89370400440532013000", ""),
    )
    .await;
    assert!(res.status().as_u16() < 400, "{}", res.status());
    assert_eq!(iban_now().await, "DE89370400440532013000");

    // The API changes it too, and is in the log and the owners' mail as well.
    let api_key =
        invoicer_core::accounts::api_keys::create_for_user(&app.pool, org, victim, "books")
            .await
            .unwrap()
            .plaintext;
    let (status, body) = api(
        &app,
        "PATCH",
        "/api/v1/org",
        &api_key,
        json!({"vat_id": "DE123456789"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let actor: String = scalar_for(
        &app.pool,
        "select actor_email from audit_events where org_id = $1 and action = 'org.identity_changed'",
        org,
    )
    .await;
    assert!(
        actor.starts_with("API key ik_") && actor.contains(&email),
        "{actor}"
    );
    let told: i64 = scalar_for(
        &app.pool,
        "select count(*) from outbox where kind = 'org_change_notice' and payload->>'changes' like '%vat_id%' and org_id = $1",
        org,
    )
    .await;
    assert_eq!(told, 2, "both owners");
}

/// What hands out the org's power asks for the password too: a session signed in 11 minutes ago
/// makes no API key (which could change the bank details through the API) and registers no
/// webhook endpoint without it.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn keys_and_endpoints_are_made_only_with_the_password(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, victim, email, _) = org_of_two_owners(&app.pool).await;
    let http = client();
    login(&http, &app.base, &email, "old password").await;
    sqlx::query("update user_sessions set authenticated_at = now() - interval '11 minutes' where user_id = $1")
        .bind(victim)
        .execute(&app.pool)
        .await
        .unwrap();
    let key = model::form_key(org).to_string();
    let keys = async |password: &'static str| {
        let form = vec![
            ("idempotency_key", key.clone()),
            ("name", "books".to_owned()),
            ("role", "owner".to_owned()),
            ("password", password.to_owned()),
        ];
        pages::post_form(&http, format!("{}/rpc/create_api_key", app.base), &form).await
    };
    let refused = keys("").await;
    assert_eq!(refused.status(), 422);
    assert!(refused
        .text()
        .await
        .unwrap()
        .contains("Enter your password"));
    let made: i64 = scalar_for(
        &app.pool,
        "select count(*) from api_keys where org_id = $1",
        org,
    )
    .await;
    assert_eq!(made, 0);
    let endpoint_key = model::form_key(org).to_string();
    let form = [
        ("idempotency_key", endpoint_key.as_str()),
        ("url", "https://hooks.example/in"),
        ("events[]", "invoice.paid"),
        ("password", ""),
    ];
    let refused = pages::post_form(
        &http,
        format!("{}/rpc/create_webhook_endpoint", app.base),
        &form,
    )
    .await;
    assert_eq!(refused.status(), 422);
    // With it: the key is made (the same rendered form).
    let made = keys("old password").await;
    assert!(made.status().as_u16() < 400, "{}", made.status());
    let made: i64 = scalar_for(
        &app.pool,
        "select count(*) from api_keys where org_id = $1",
        org,
    )
    .await;
    assert_eq!(made, 1);
}

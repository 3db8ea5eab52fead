//! The links an account is emailed: password reset and address verification tokens are single
//! use, short lived and stored hashed; "forgot password" tells nothing and a reset ends every other
//! session; an unverified account cannot email or make keys; an address changes only when its
//! link is followed.

use std::sync::Arc;

use invoicer_core::accounts::{self, TokenError};
use sqlx::PgPool;
use tokio::sync::Barrier;
use uuid::Uuid;

use crate::common::rows::{audit_count, emailed_token, execute, scalar, scalar_for};
use crate::common::served::TestApp;
use crate::common::team::{browser, form, org, rpc, PASSWORD};
use crate::common::{client, login, pages};

const LOOPBACK: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn reset_and_verification_tokens_are_single_use_short_lived_and_stored_hashed(pool: PgPool) {
    let org = org(&pool).await;
    assert!(accounts::request_reset(&pool, &org.owner_email, "form:1")
        .await
        .unwrap());
    // The same form again: no second token, no second email.
    assert!(!accounts::request_reset(&pool, &org.owner_email, "form:1")
        .await
        .unwrap());
    // An unknown address: nothing written (the caller answers the same).
    assert!(
        !accounts::request_reset(&pool, "nobody@example.com", "form:2")
            .await
            .unwrap()
    );
    let emails: i64 = scalar(
        &pool,
        "select count(*) from outbox where kind = 'reset_password'",
    )
    .await;
    assert_eq!(emails, 1);
    let token = emailed_token(&pool, "reset_password", &org.owner_email).await;
    // Stored as its hash only.
    let (stored, hours): (Vec<u8>, f64) = sqlx::query_as(
        "select token_hash, (extract(epoch from expires_at - created_at) / 3600)::float8 from user_tokens",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(stored, accounts::token_hash(&token));
    assert!((hours - 1.0).abs() < 0.01, "valid for an hour: {hours}");
    // Two uses at once: one resets, the other is told the link was used.
    let barrier = Arc::new(Barrier::new(2));
    let uses: Vec<_> = ["first password!", "second password"]
        .into_iter()
        .map(|p| {
            let (pool, token, barrier) = (pool.clone(), token.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                accounts::reset_password(&pool, &token, p, LOOPBACK).await
            })
        })
        .collect();
    let mut ok = 0;
    for u in uses {
        match u.await.unwrap() {
            Ok(user) => {
                ok += 1;
                assert_eq!(user, org.owner);
            }
            Err(TokenError::Used) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(ok, 1);
    // Expired links are refused.
    accounts::request_reset(&pool, &org.owner_email, "form:3")
        .await
        .unwrap();
    let late = emailed_token(&pool, "reset_password", &org.owner_email).await;
    execute(
        &pool,
        "update user_tokens set expires_at = now() - interval '1 second' where used_at is null",
    )
    .await;
    assert!(matches!(
        accounts::reset_password(&pool, &late, "third password", LOOPBACK).await,
        Err(TokenError::Expired)
    ));
    // Verification: 7 days, once; it also proves a new address.
    let mut tx = pool.begin().await.unwrap();
    let new_email = format!("moved-{}@example.com", Uuid::new_v4().simple());
    accounts::queue_verification(&mut tx, org.owner, &new_email, None)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let token = emailed_token(&pool, "verify_email", &new_email).await;
    accounts::verify_email(&pool, &token, LOOPBACK)
        .await
        .unwrap();
    assert!(matches!(
        accounts::verify_email(&pool, &token, LOOPBACK).await,
        Err(TokenError::Used)
    ));
    let email: String = scalar_for(&pool, "select email from users where id = $1", org.owner).await;
    assert_eq!(email, new_email);
    assert!(matches!(
        accounts::verify_email(&pool, "zz", LOOPBACK).await,
        Err(TokenError::Unknown)
    ));
}

/// "Forgot password" answers the same for any address and is throttled; the emailed link sets the
/// password, ends every other session, and logs the browser that used it in.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_reset_ends_every_other_session_and_forgot_password_tells_nothing(pool: PgPool) {
    let app = TestApp::spawn_with(pool, |s| {
        s.limits.account_emails_per_address_hour = 3;
    })
    .await;
    let org = org(&app.pool).await;
    let first = browser(&app, &org.owner_email).await;
    let second = browser(&app, &org.owner_email).await;
    let anon = client();
    // As the page's plain form post does (Accept: text/html; a refusal comes back in the redirect)
    // for the answers compared, as a script would for the throttled one (its status).
    let ask_as = |email: &str, accept: &'static str| {
        anon.post(format!("{}/rpc/forgot_password", app.base))
            .header("accept", accept)
            .form(&[
                ("idempotency_key", Uuid::now_v7().to_string()),
                ("email", email.to_owned()),
            ])
            .send()
    };
    let ask = |email: &str| ask_as(email, "text/html");
    let known = ask(&org.owner_email).await.unwrap();
    let unknown = ask("nobody@example.com").await.unwrap();
    assert_eq!(known.status(), unknown.status());
    assert_eq!(known.headers()["location"], unknown.headers()["location"]);
    assert_eq!(known.text().await.unwrap(), unknown.text().await.unwrap());
    ask("third@example.com").await.unwrap();
    let throttled = ask_as(&org.owner_email, "*/*").await.unwrap();
    assert_eq!(throttled.status(), 429);
    let token = emailed_token(&app.pool, "reset_password", &org.owner_email).await;
    let third = client();
    let res = pages::submit(
        &third,
        format!("{}/rpc/reset_password", app.base),
        &[("token", token.as_str()), ("password", "a brand new one")],
    )
    .await;
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], "/dashboard");
    assert_eq!(rpc(&first, &app, "list_invoices", &[]).await, 401);
    assert_eq!(rpc(&second, &app, "list_invoices", &[]).await, 401);
    assert_eq!(rpc(&third, &app, "list_invoices", &[]).await, 200);
    let audit = audit_count(&app.pool, org.id, "user.password_reset").await;
    assert_eq!(audit, 1);
}

/// A new sign-up can log in and work, but not email invoices or make API keys before following the
/// verification link.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_unverified_account_cannot_email_or_make_keys_until_verified(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let http = client();
    let email = format!("new-{}@example.com", Uuid::new_v4().simple());
    let res = pages::submit(
        &http,
        format!("{}/rpc/signup", app.base),
        &[
            ("org_name", "Fresh Co"),
            ("email", email.as_str()),
            ("password", PASSWORD),
        ],
    )
    .await;
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], "/signup?sent=1");
    login(&http, &app.base, &email, PASSWORD).await;
    let key = form(&[
        ("idempotency_key", Uuid::now_v7().to_string()),
        ("name", "k".into()),
    ]);
    assert_eq!(rpc(&http, &app, "create_api_key", &key).await, 403);
    let token = emailed_token(&app.pool, "verify_email", &email).await;
    let res = pages::submit(
        &http,
        format!("{}/rpc/confirm_email", app.base),
        &[("token", token.as_str())],
    )
    .await;
    assert_eq!(res.status(), 302);
    assert_eq!(rpc(&http, &app, "create_api_key", &key).await, 200);
}

/// Changing the address sends a link to the new one; the address changes when it is followed.
/// Key creation and revocation are in the audit log with who did them.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_address_change_waits_for_its_link_and_keys_are_audited(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org(&app.pool).await;
    let here = browser(&app, &org.owner_email).await;
    let new_email = format!("moved-{}@example.com", Uuid::new_v4().simple());
    let asked = rpc(
        &here,
        &app,
        "change_email",
        &form(&[
            ("idempotency_key", Uuid::now_v7().to_string()),
            ("password", PASSWORD.into()),
            ("email", new_email.clone()),
        ]),
    )
    .await;
    assert!(asked < 400, "{asked}");
    let email: String = scalar_for(
        &app.pool,
        "select email from users where id = $1",
        org.owner,
    )
    .await;
    assert_eq!(email, org.owner_email, "not before the link is followed");
    let token = emailed_token(&app.pool, "verify_email", &new_email).await;
    assert!(rpc(&here, &app, "confirm_email", &form(&[("token", token)])).await < 400);
    let email: String = scalar_for(
        &app.pool,
        "select email from users where id = $1",
        org.owner,
    )
    .await;
    assert_eq!(email, new_email);

    assert_eq!(
        rpc(
            &here,
            &app,
            "create_api_key",
            &form(&[
                ("idempotency_key", Uuid::now_v7().to_string()),
                ("name", "ci".into())
            ])
        )
        .await,
        200
    );
    let key: Uuid = scalar_for(
        &app.pool,
        "select id from api_keys where org_id = $1",
        org.id,
    )
    .await;
    assert!(
        rpc(
            &here,
            &app,
            "revoke_api_key",
            &form(&[("id", key.to_string())])
        )
        .await
            < 400
    );
    let rows: Vec<(String, String)> = sqlx::query_as(
        "select action, actor_email from audit_events where org_id = $1 order by created_at, id",
    )
    .bind(org.id)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let actions: Vec<&str> = rows.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(
        actions,
        ["user.email_changed", "api_key.created", "api_key.revoked"]
    );
    assert!(rows[1..].iter().all(|(_, who)| who == &new_email));
}

//! Invitations: a link used by many browsers at once makes one account; links expire, are
//! resent and withdrawn, explain themselves, and join an existing account to another org; a
//! double-submitted invite sends one email; the outbox keeps no link once it is sent.

use std::sync::Arc;

use invoicer_core::accounts::audit::Actor;
use invoicer_core::accounts::{invitations, members, TokenError};
use model::Role;
use sqlx::PgPool;
use tokio::sync::Barrier;
use uuid::Uuid;

use crate::common::rows::{emailed_token, scalar_for};
use crate::common::served::TestApp;
use crate::common::team::{browser, form, invite, org, rpc, PASSWORD};
use crate::common::{client, pages};

/// Eight browsers follow one invitation link at once: one account, one membership, and every
/// other use is told the link was used.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn concurrent_use_of_one_invitation_makes_one_account(pool: PgPool) {
    let org = org(&pool).await;
    let email = format!("new-{}@example.com", Uuid::new_v4().simple());
    invite(&pool, &org, &email, Role::Member).await;
    let token = emailed_token(&pool, "invitation", &email).await;
    let barrier = Arc::new(Barrier::new(8));
    let uses: Vec<_> = (0..8)
        .map(|_| {
            let (pool, token, barrier) = (pool.clone(), token.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                invitations::accept(&pool, &token, "a new password").await
            })
        })
        .collect();
    let mut accepted = 0;
    for u in uses {
        match u.await.unwrap() {
            Ok(a) => {
                accepted += 1;
                assert_eq!((a.org, a.role), (org.id, Role::Member));
            }
            Err(TokenError::Used) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(accepted, 1);
    let (users, members): (i64, i64) = sqlx::query_as(
        "select (select count(*) from users where lower(email) = lower($1)), \
                (select count(*) from memberships m join users u on u.id = m.user_id \
                 where lower(u.email) = lower($1) and m.org_id = $2)",
    )
    .bind(&email)
    .bind(org.id)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((users, members), (1, 1));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn invitation_links_expire_explain_themselves_and_join_existing_accounts(pool: PgPool) {
    let org = org(&pool).await;
    // Expired after 7 days.
    let late = format!("late-{}@example.com", Uuid::new_v4().simple());
    let id = invite(&pool, &org, &late, Role::Viewer).await;
    let token = emailed_token(&pool, "invitation", &late).await;
    let expires: chrono::DateTime<chrono::Utc> = scalar_for(
        &pool,
        "select expires_at from invitations where id = $1",
        id,
    )
    .await;
    let days = (expires - chrono::Utc::now()).num_hours();
    assert!((167..=168).contains(&days), "valid for 7 days: {days} h");
    sqlx::query("update invitations set expires_at = now() - interval '1 second' where id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .unwrap();
    assert!(matches!(
        invitations::accept(&pool, &token, "a new password").await,
        Err(TokenError::Expired)
    ));
    // Resending gives a new link and 7 more days; the old link is dead.
    let owner = Actor::user(org.owner, &org.owner_email);
    let mut tx = pool.begin().await.unwrap();
    invitations::resend(&mut tx, org.id, &owner, id, crate::common::member_gate())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let fresh = emailed_token(&pool, "invitation", &late).await;
    assert_ne!(fresh, token);
    assert!(matches!(
        invitations::preview(&pool, &token).await,
        Err(TokenError::Unknown)
    ));
    // Revoked: the link says so.
    let mut tx = pool.begin().await.unwrap();
    invitations::revoke(&mut tx, org.id, &owner, id)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    match invitations::accept(&pool, &fresh, "a new password").await {
        Err(TokenError::Invalid(message)) => assert!(message.contains("withdrawn"), "{message}"),
        other => panic!("revoked: {other:?}"),
    }
    // An existing account joins with its own password, and keeps its other org.
    let other = self::org(&pool).await;
    invite(&pool, &org, &other.owner_email, Role::Member).await;
    let token = emailed_token(&pool, "invitation", &other.owner_email).await;
    assert!(
        invitations::preview(&pool, &token)
            .await
            .unwrap()
            .existing_account
    );
    assert!(matches!(
        invitations::accept(&pool, &token, "not the password").await,
        Err(TokenError::Invalid(_))
    ));
    let joined = invitations::accept(&pool, &token, PASSWORD).await.unwrap();
    assert_eq!(joined.user, other.owner);
    let orgs = members::orgs_of(&pool, other.owner).await.unwrap();
    assert_eq!(orgs.len(), 2);
    // Used: explained.
    assert!(matches!(
        invitations::accept(&pool, &token, PASSWORD).await,
        Err(TokenError::Used)
    ));
    // Once sent, the outbox keeps no link: the token lives only in the inbox.
    let leased =
        invoicer_core::outbox::lease_due(&pool, "test", 100, std::time::Duration::from_secs(60))
            .await
            .unwrap();
    assert!(!leased.is_empty());
    for row in leased {
        let fence = invoicer_core::outbox::mark_sent(&pool, row).await.unwrap();
        assert_eq!(fence, invoicer_core::claim::Fence::Held);
    }
    let (sent, with_token): (i64, i64) = sqlx::query_as(
        "select count(*) filter (where sent_at is not null), count(*) filter (where payload ? 'token') \
         from outbox where kind = 'invitation'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(sent >= 3, "{sent}");
    assert_eq!(with_token, 0);
}

/// A double-clicked invite (two submits of one rendered form, at once) is one invitation and one
/// email; the invitee's link then creates their account with the role.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_double_submitted_invitation_sends_one_email(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org(&app.pool).await;
    let owner = browser(&app, &org.owner_email).await;
    let key = Uuid::now_v7().to_string();
    let body = form(&[
        ("idempotency_key", key),
        ("email", "Double@Example.com".into()),
        ("role", "viewer".into()),
    ]);
    let (a, b) = tokio::join!(
        rpc(&owner, &app, "invite_member", &body),
        rpc(&owner, &app, "invite_member", &body)
    );
    assert!(a < 400 && b < 400, "{a} {b}");
    assert_eq!(
        app.count("select count(*) from invitations where lower(email) = 'double@example.com'")
            .await,
        1
    );
    assert_eq!(
        app.count("select count(*) from outbox where kind = 'invitation'")
            .await,
        1
    );
    // Accepting in a fresh browser logs it in as a viewer of the org.
    let token = emailed_token(&app.pool, "invitation", "double@example.com").await;
    let fresh = client();
    let res = pages::submit(
        &fresh,
        format!("{}/rpc/accept_invitation", app.base),
        &[("token", token.as_str()), ("password", "viewer's password")],
    )
    .await;
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], "/dashboard");
    assert_eq!(rpc(&fresh, &app, "list_invoices", &[]).await, 200);
    let refused = rpc(
        &fresh,
        &app,
        "add_tax_rate",
        &form(&[
            ("idempotency_key", Uuid::now_v7().to_string()),
            ("name", "VAT".into()),
            ("percent", "20".into()),
        ]),
    )
    .await;
    assert_eq!(refused, 403);
}

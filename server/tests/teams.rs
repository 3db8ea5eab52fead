//! Members and roles: what each role may do, for sessions and API keys alike; the last-owner rule
//! under concurrent demotions; a removed member's sessions ending at once.

use std::sync::Arc;

use invoicer_core::accounts::audit::Actor;
use invoicer_core::accounts::members;
use model::{Action, Role};
use sqlx::PgPool;
use tokio::sync::Barrier;
use uuid::Uuid;

use crate::common::rows::{audit_count, count_rows, scalar_for, scalars_for};
use crate::common::served::TestApp;
use crate::common::team::{add_user, browser, form, org, rpc};

/// The role × action table, written out: what the code must allow, independent of how it does.
const TABLE: [(Action, [bool; 3]); 9] = [
    //                             owner  member viewer
    (Action::Read, [true, true, true]),
    (Action::EditInvoices, [true, true, false]),
    (Action::SendEmail, [true, true, false]),
    (Action::ManageOwnApiKeys, [true, true, false]),
    (Action::ManageAllApiKeys, [true, false, false]),
    (Action::ManageOrg, [true, false, false]),
    (Action::ManageMembers, [true, false, false]),
    (Action::ReadAudit, [true, false, false]),
    (Action::DeletePayments, [true, false, false]),
];

fn allowed(role: Role, action: Action) -> bool {
    let (_, row) = TABLE.iter().find(|(a, _)| *a == action).unwrap();
    row[match role {
        Role::Owner => 0,
        Role::Member => 1,
        Role::Viewer => 2,
    }]
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn every_role_may_do_what_the_table_says_for_sessions_and_api_keys(pool: PgPool) {
    assert_eq!(
        TABLE.len(),
        Action::ALL.len(),
        "the table names every action"
    );
    let org = org(&pool).await;
    for role in Role::ALL {
        let user = match role {
            Role::Owner => org.owner,
            _ => add_user(&pool, org.id, role).await.0,
        };
        // The role as a session reads it from the database.
        let session = invoicer_core::accounts::auth::for_login(&pool, user, Some(org.id))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(session.role, role);
        // A key with the same role, as the API reads it.
        let email: String = scalar_for(&pool, "select email from users where id = $1", user).await;
        let key = invoicer_core::accounts::api_keys::create(
            &pool,
            org.id,
            &Actor::user(user, &email),
            &invoicer_core::accounts::api_keys::KeyRequest {
                name: "k",
                role,
                expires_at: None,
            },
        )
        .await
        .unwrap();
        let client = invoicer_core::accounts::api_keys::authenticate(&pool, &key.plaintext)
            .await
            .unwrap()
            .unwrap();
        for action in Action::ALL {
            let want = allowed(role, action);
            assert_eq!(
                session.clone().allowed(action).is_ok(),
                want,
                "session of a {role:?}: {action:?}"
            );
            assert_eq!(client.may(action), want, "key of a {role:?}: {action:?}");
        }
    }
}

/// Two owners demote each other at the same moment, many times over: each time one demotion wins
/// and the other is refused, and the org keeps exactly one owner.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn concurrent_demotions_never_leave_an_org_without_an_owner(pool: PgPool) {
    for round in 0..10 {
        let org = org(&pool).await;
        let (other, other_email) = add_user(&pool, org.id, Role::Owner).await;
        let barrier = Arc::new(Barrier::new(2));
        let demote = |actor: Actor, target: Uuid| {
            let (pool, barrier) = (pool.clone(), barrier.clone());
            tokio::spawn(async move {
                let mut tx = pool.begin().await.unwrap();
                barrier.wait().await;
                let done =
                    members::change_role(&mut tx, org.id, &actor, target, Role::Member).await;
                tx.commit().await.unwrap();
                done
            })
        };
        let a = demote(Actor::user(org.owner, &org.owner_email), other);
        let b = demote(Actor::user(other, &other_email), org.owner);
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        let refused = [&a, &b]
            .iter()
            .filter(|r| matches!(r, Err(members::MemberError::LastOwner)))
            .count();
        assert_eq!(
            (a.is_ok() as usize + b.is_ok() as usize, refused),
            (1, 1),
            "round {round}: {a:?} {b:?}"
        );
        let owners: i64 = count_rows(
            &pool,
            "memberships where org_id = $1 and role = 'owner'",
            org.id,
        )
        .await;
        assert_eq!(owners, 1, "round {round}");
    }
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_last_owner_can_be_neither_removed_nor_demoted_nor_leave(pool: PgPool) {
    let org = org(&pool).await;
    let owner = Actor::user(org.owner, &org.owner_email);
    let (second, _) = add_user(&pool, org.id, Role::Member).await;
    sqlx::query("update memberships set role = 'viewer' where user_id = $1")
        .bind(second)
        .execute(&pool)
        .await
        .unwrap();
    let mut tx = pool.begin().await.unwrap();
    assert!(matches!(
        members::change_role(&mut tx, org.id, &owner, org.owner, Role::Member).await,
        Err(members::MemberError::LastOwner)
    ));
    assert!(matches!(
        members::remove(&mut tx, org.id, &owner, org.owner).await,
        Err(members::MemberError::LastOwner)
    ));
    // With a second owner, the first may leave.
    members::change_role(&mut tx, org.id, &owner, second, Role::Owner)
        .await
        .unwrap();
    members::remove(&mut tx, org.id, &owner, org.owner)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let actions: Vec<String> = scalars_for(
        &pool,
        "select action from audit_events where org_id = $1 order by created_at, id",
        org.id,
    )
    .await;
    assert_eq!(actions, ["member.role_changed", "member.left"]);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn removing_a_member_ends_their_sessions_at_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org(&app.pool).await;
    let (member, email) = add_user(&app.pool, org.id, Role::Member).await;
    let theirs = browser(&app, &email).await;
    assert_eq!(rpc(&theirs, &app, "list_invoices", &[]).await, 200);
    let owner = browser(&app, &org.owner_email).await;
    let removed = rpc(
        &owner,
        &app,
        "remove_member",
        &form(&[
            ("idempotency_key", Uuid::now_v7().to_string()),
            ("user_id", member.to_string()),
        ]),
    )
    .await;
    assert!(removed < 400, "{removed}");
    assert_eq!(rpc(&theirs, &app, "list_invoices", &[]).await, 401);
    let ended: i64 = app
        .count(&format!(
            "select count(*) from user_sessions where user_id = '{member}' and ended_at is null"
        ))
        .await;
    assert_eq!(ended, 0);
    let audit: i64 = audit_count(&app.pool, org.id, "member.removed").await;
    assert_eq!(audit, 1);
}

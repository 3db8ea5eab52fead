//! Teams: roles and what each may do, the last-owner rule under concurrent demotions, invitation,
//! verification and reset links (lifetimes, single use, concurrent use), sessions, API keys that
//! belong to a member, the audit log. Database tests call the domain code; HTTP tests go through the
//! real router, and enumerate every server function and API route rather than sample them.

use std::sync::Arc;

use invoicer_core::accounts::{self, TokenError};
use invoicer_core::audit::Actor;
use invoicer_core::{api_keys, invitations, members};
use model::{Action, Role};
use sqlx::PgPool;
use tokio::sync::Barrier;
use uuid::Uuid;

use crate::common::pages;
use crate::common::rows::{audit_count, count_rows, execute, scalar, scalar_for, scalars_for};
use crate::common::served::TestApp;
use crate::common::{client, login};

const PASSWORD: &str = "correct horse";
const LOOPBACK: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

/// An org and its owner.
struct Org {
    id: Uuid,
    owner: Uuid,
    owner_email: String,
}

async fn org(pool: &PgPool) -> Org {
    let owner_email = format!("owner-{}@example.com", Uuid::new_v4().simple());
    let account = accounts::create_org_with_owner(pool, "Team Co", &owner_email, PASSWORD)
        .await
        .unwrap();
    Org {
        id: account.org_id,
        owner: account.user_id,
        owner_email,
    }
}

/// A user whose only membership is `org`, with `role` (verified, password `PASSWORD`).
async fn add_user(pool: &PgPool, org: Uuid, role: Role) -> (Uuid, String) {
    let email = format!("{}-{}@example.com", role.as_str(), Uuid::new_v4().simple());
    let account = accounts::create_org_with_owner(pool, "Own", &email, PASSWORD)
        .await
        .unwrap();
    sqlx::query("update memberships set org_id = $2, role = $3 where user_id = $1")
        .bind(account.user_id)
        .bind(org)
        .bind(role.as_str())
        .execute(pool)
        .await
        .unwrap();
    (account.user_id, email)
}

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
        let session = invoicer_core::auth::for_login(&pool, user, Some(org.id))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(session.role, role);
        // A key with the same role, as the API reads it.
        let email: String = scalar_for(&pool, "select email from users where id = $1", user).await;
        let key = invoicer_core::api_keys::create(
            &pool,
            org.id,
            &Actor::user(user, &email),
            &invoicer_core::api_keys::KeyRequest {
                name: "k",
                role,
                expires_at: None,
            },
        )
        .await
        .unwrap();
        let client = invoicer_core::api_keys::authenticate(&pool, &key.plaintext)
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

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_key_never_acts_above_its_creator(pool: PgPool) {
    use invoicer_core::api_keys::{authenticate, create, CreateError, KeyRequest};
    let org = org(&pool).await;
    let (member, email) = add_user(&pool, org.id, Role::Member).await;
    let actor = Actor::user(member, &email);
    let ask = |role| KeyRequest {
        name: "k",
        role,
        expires_at: None,
    };
    assert!(matches!(
        create(&pool, org.id, &actor, &ask(Role::Owner)).await,
        Err(CreateError::RoleTooHigh)
    ));
    let key = create(&pool, org.id, &actor, &ask(Role::Member))
        .await
        .unwrap();
    assert_eq!(
        authenticate(&pool, &key.plaintext)
            .await
            .unwrap()
            .unwrap()
            .role,
        Role::Member
    );
    // The creator is demoted: the key drops with them.
    let owner = Actor::user(org.owner, &org.owner_email);
    let mut tx = pool.begin().await.unwrap();
    members::change_role(&mut tx, org.id, &owner, member, Role::Viewer)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        authenticate(&pool, &key.plaintext)
            .await
            .unwrap()
            .unwrap()
            .role,
        Role::Viewer
    );
    // An expired key stops.
    let soon = create(
        &pool,
        org.id,
        &owner,
        &KeyRequest {
            name: "soon",
            role: Role::Viewer,
            expires_at: Some(chrono::Utc::now() + chrono::Duration::hours(1)),
        },
    )
    .await
    .unwrap();
    assert!(authenticate(&pool, &soon.plaintext)
        .await
        .unwrap()
        .is_some());
    sqlx::query("update api_keys set expires_at = now() - interval '1 second' where id = $1")
        .bind(soon.id)
        .execute(&pool)
        .await
        .unwrap();
    assert!(authenticate(&pool, &soon.plaintext)
        .await
        .unwrap()
        .is_none());
    // The creator leaves: the key stops, at once.
    let mut tx = pool.begin().await.unwrap();
    members::remove(&mut tx, org.id, &owner, member)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(authenticate(&pool, &key.plaintext).await.unwrap().is_none());
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

/// The token an email carries, read from its outbox row as the inbox would.
pub(crate) async fn emailed_token(pool: &PgPool, kind: &str, to: &str) -> String {
    sqlx::query_scalar(
        "select payload->>'token' from outbox where kind = $1 and lower(payload->>'to') = lower($2) \
         order by created_at desc, id desc limit 1",
    )
    .bind(kind)
    .bind(to)
    .fetch_one(pool)
    .await
    .unwrap()
}

async fn invite(pool: &PgPool, org: &Org, email: &str, role: Role) -> Uuid {
    let mut tx = pool.begin().await.unwrap();
    let id = invitations::invite(
        &mut tx,
        org.id,
        &Actor::user(org.owner, &org.owner_email),
        email,
        role,
        &format!("form:{}", Uuid::now_v7()),
        crate::common::member_gate(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    id
}

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

// --- HTTP ------------------------------------------------------------------------------------------

/// Logs a fresh browser in as `email`.
async fn browser(app: &TestApp, email: &str) -> reqwest::Client {
    let http = client();
    login(&http, &app.base, email, PASSWORD).await;
    http
}

/// POSTs a server function's form the way the hydrated app does (no `Accept: text/html`, so a
/// refusal answers with its status): the status.
async fn rpc(
    http: &reqwest::Client,
    app: &TestApp,
    endpoint: &str,
    form: &[(String, String)],
) -> u16 {
    pages::post_form(http, format!("{}/rpc/{endpoint}", app.base), form)
        .await
        .status()
        .as_u16()
}

fn form(pairs: &[(&str, String)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// Server functions anyone may call without a session (they make or use one).
const PUBLIC: [&str; 8] = [
    "signup",
    "signups_open",
    "login",
    "logout",
    "accept_invitation",
    "confirm_email",
    "forgot_password",
    "reset_password",
];
/// Server functions that only read the session's org.
const READS: [&str; 32] = [
    "current_user",
    "list_invoices",
    "get_invoice",
    "list_api_keys",
    "get_draft",
    "list_customers",
    "list_tax_rates",
    "get_customer",
    "get_statement",
    "list_schedules",
    "get_schedule",
    "new_schedule_form",
    "edit_schedule_form",
    "list_quotes",
    "get_quote",
    "new_quote_form",
    "edit_quote_form",
    "get_dashboard",
    "get_aging_report",
    "get_tax_report",
    "webhooks_page",
    "get_webhook_endpoint",
    "import_form",
    "get_customer_import",
    "get_org_settings",
    "activity",
    "team_page",
    "invitation",
    "account_page",
    "list_sessions",
    "list_orgs",
    "audit_log",
];
/// Changes to one's own account or session, which every role may make.
const OWN_ACCOUNT: [&str; 8] = [
    "change_password",
    "revoke_own_api_keys",
    "change_email",
    "resend_verification",
    "end_session",
    "end_other_sessions",
    "switch_org",
    "leave_org",
];

/// Every state-changing server function of the org with a body that passes its argument parsing:
/// a refusal then comes from the role check, nothing else.
fn org_changes(ids: &Ids) -> Vec<(&'static str, Vec<(String, String)>)> {
    let key = || Uuid::now_v7().to_string();
    let invoice = ids.invoice.to_string();
    let mut create = crate::common::invoice_form(&key(), "Refused Co");
    create.retain(|(k, _)| k != "idempotency_key");
    create.push(("idempotency_key".into(), key()));
    let mut draft = crate::common::invoice_form(&key(), "Refused Co");
    draft.retain(|(k, _)| k != "idempotency_key");
    draft.extend(form(&[
        ("invoice_id", ids.draft.to_string()),
        ("idempotency_key", key()),
        ("version", "1".into()),
    ]));
    vec![
        ("create_invoice", create),
        ("simulate_payment", form(&[("invoice_id", invoice.clone())])),
        (
            "create_api_key",
            form(&[
                ("idempotency_key", key()),
                ("name", "x".into()),
                ("role", "viewer".into()),
            ]),
        ),
        ("revoke_api_key", form(&[("id", ids.api_key.to_string())])),
        (
            "send_invoice",
            form(&[("invoice_id", invoice.clone()), ("idempotency_key", key())]),
        ),
        (
            "invoice_action",
            form(&[
                ("invoice_id", invoice.clone()),
                ("action", "void".into()),
                ("idempotency_key", key()),
            ]),
        ),
        (
            "duplicate_invoice",
            form(&[("invoice_id", invoice.clone()), ("idempotency_key", key())]),
        ),
        ("update_draft", draft),
        (
            "save_customer",
            form(&[
                ("idempotency_key", key()),
                ("input[name]", "Refused Co".into()),
                ("input[email]", "refused@example.com".into()),
            ]),
        ),
        (
            "customer_action",
            form(&[
                ("customer_id", Uuid::now_v7().to_string()),
                ("action", "archive".into()),
                ("idempotency_key", key()),
            ]),
        ),
        (
            "save_org_details",
            form(&[
                ("idempotency_key", key()),
                ("details[legal_name]", "Refused GmbH".into()),
                ("details[address][country]", "DE".into()),
            ]),
        ),
        (
            "save_org_settings",
            form(&[
                ("idempotency_key", key()),
                ("settings[time_zone]", "UTC".into()),
                ("settings[number_format]", "INV-{seq:6}".into()),
                ("settings[number_reset]", "never".into()),
            ]),
        ),
        (
            "add_tax_rate",
            form(&[
                ("idempotency_key", key()),
                ("name", "VAT".into()),
                ("percent", "20".into()),
            ]),
        ),
        (
            "archive_tax_rate",
            form(&[("idempotency_key", key()), ("id", ids.tax_rate.to_string())]),
        ),
        (
            "retry_email",
            form(&[
                ("id", ids.email.to_string()),
                ("invoice_id", invoice.clone()),
            ]),
        ),
        (
            "save_bank_details",
            form(&[
                ("idempotency_key", key()),
                ("bank[iban]", "NL91ABNA0417164300".into()),
                ("bank[reference]", "{number}".into()),
            ]),
        ),
        (
            "credit_invoice",
            form(&[
                ("invoice_id", invoice.clone()),
                ("idempotency_key", key()),
                ("amount", "1.00".into()),
                ("reason", "refused".into()),
            ]),
        ),
        (
            "create_schedule",
            form(&[
                ("idempotency_key", key()),
                ("input[customer_name]", "Refused Co".into()),
                ("input[customer_email]", "r@example.com".into()),
                ("input[currency]", "usd".into()),
                ("input[payment_terms_days]", "14".into()),
                ("input[lines][0][description]", "x".into()),
                ("input[lines][0][quantity]", "1".into()),
                ("input[lines][0][unit_amount]", "1.00".into()),
                ("schedule[interval]", "month".into()),
                ("schedule[start_date]", "2099-01-01".into()),
            ]),
        ),
        (
            "update_schedule",
            form(&[
                ("schedule_id", Uuid::now_v7().to_string()),
                ("idempotency_key", key()),
                ("input[customer_name]", "Refused Co".into()),
                ("input[customer_email]", "r@example.com".into()),
                ("input[currency]", "usd".into()),
                ("input[payment_terms_days]", "14".into()),
                ("input[lines][0][description]", "x".into()),
                ("input[lines][0][quantity]", "1".into()),
                ("input[lines][0][unit_amount]", "1.00".into()),
            ]),
        ),
        (
            "save_branding",
            form(&[
                ("idempotency_key", key()),
                ("branding[accent_color]", "#112233".into()),
                ("branding[footer_text]", "Refused".into()),
            ]),
        ),
        ("remove_logo", form(&[("idempotency_key", key())])),
        (
            "create_quote",
            form(&[
                ("idempotency_key", key()),
                ("input[customer_name]", "Refused Co".into()),
                ("input[customer_email]", "r@example.com".into()),
                ("input[currency]", "usd".into()),
                ("input[payment_terms_days]", "14".into()),
                ("input[lines][0][description]", "x".into()),
                ("input[lines][0][quantity]", "1".into()),
                ("input[lines][0][unit_amount]", "1.00".into()),
                ("quote[expires_on]", "2099-01-01".into()),
            ]),
        ),
        (
            "update_quote",
            form(&[
                ("quote_id", Uuid::now_v7().to_string()),
                ("idempotency_key", key()),
                ("input[customer_name]", "Refused Co".into()),
                ("input[customer_email]", "r@example.com".into()),
                ("input[currency]", "usd".into()),
                ("input[payment_terms_days]", "14".into()),
                ("input[lines][0][description]", "x".into()),
                ("input[lines][0][quantity]", "1".into()),
                ("input[lines][0][unit_amount]", "1.00".into()),
                ("quote[expires_on]", "2099-01-01".into()),
            ]),
        ),
        (
            "send_quote",
            form(&[
                ("id", Uuid::now_v7().to_string()),
                ("idempotency_key", key()),
            ]),
        ),
        (
            "pause_schedule",
            form(&[
                ("id", Uuid::now_v7().to_string()),
                ("idempotency_key", key()),
                ("pause", "true".into()),
            ]),
        ),
        (
            "set_reminders",
            form(&[
                ("what", "invoice".into()),
                ("id", invoice.clone()),
                ("idempotency_key", key()),
                ("off", "true".into()),
            ]),
        ),
        (
            "save_reminders",
            form(&[
                ("idempotency_key", key()),
                ("steps[0][offset_days]", "3".into()),
                ("steps[0][message]", "Please pay.".into()),
            ]),
        ),
        (
            "apply_credit",
            form(&[
                ("invoice_id", invoice.clone()),
                ("idempotency_key", key()),
                ("amount", "1.00".into()),
            ]),
        ),
        (
            "record_payment",
            form(&[
                ("invoice_id", invoice.clone()),
                ("idempotency_key", key()),
                ("form[amount]", "1.00".into()),
                ("form[method]", "cash".into()),
                ("form[paid_on]", "2026-12-01".into()),
            ]),
        ),
        (
            "delete_payment",
            form(&[
                ("invoice_id", invoice.clone()),
                ("payment_id", ids.payment.to_string()),
                ("idempotency_key", key()),
            ]),
        ),
        (
            "invite_member",
            form(&[
                ("idempotency_key", key()),
                ("email", "refused@example.com".into()),
                ("role", "owner".into()),
            ]),
        ),
        (
            "resend_invitation",
            form(&[
                ("idempotency_key", key()),
                ("id", ids.invitation.to_string()),
            ]),
        ),
        (
            "revoke_invitation",
            form(&[
                ("idempotency_key", key()),
                ("id", ids.invitation.to_string()),
            ]),
        ),
        (
            "apply_customer_import",
            form(&[("idempotency_key", key()), ("id", key())]),
        ),
        (
            "create_webhook_endpoint",
            form(&[
                ("idempotency_key", key()),
                ("url", "https://example.com/hook".into()),
                ("events[]", "invoice.paid".into()),
            ]),
        ),
        (
            "delete_webhook_endpoint",
            form(&[("idempotency_key", key()), ("id", key())]),
        ),
        (
            "rotate_webhook_secret",
            form(&[("idempotency_key", key()), ("id", key())]),
        ),
        (
            "enable_webhook_endpoint",
            form(&[("idempotency_key", key()), ("id", key())]),
        ),
        (
            "redeliver_webhook",
            form(&[
                ("idempotency_key", key()),
                ("endpoint_id", key()),
                ("event_id", key()),
            ]),
        ),
        (
            "change_role",
            form(&[
                ("idempotency_key", key()),
                ("user_id", ids.owner.to_string()),
                ("role", "viewer".into()),
            ]),
        ),
        (
            "remove_member",
            form(&[
                ("idempotency_key", key()),
                ("user_id", ids.owner.to_string()),
            ]),
        ),
    ]
}

/// Rows of the owner's org that the refused requests name.
struct Ids {
    owner: Uuid,
    invoice: Uuid,
    draft: Uuid,
    api_key: Uuid,
    tax_rate: Uuid,
    email: Uuid,
    invitation: Uuid,
    payment: Uuid,
}

async fn seed_org_rows(app: &TestApp) -> (Org, Ids) {
    let org = org(&app.pool).await;
    let org_id = org.id;
    let make = |draft: bool| {
        let pool = app.pool.clone();
        async move {
            let input = model::InvoiceInput {
                customer_name: "Ada".into(),
                customer_email: "ada@example.com".into(),
                currency: "usd".into(),
                due_date: Some("2030-01-31".parse().unwrap()),
                lines: vec![model::LineInput {
                    description: "Work".into(),
                    quantity: model::Thousandths::whole(1),
                    unit_amount_cents: 1000,
                    tax_rate_id: None,
                }],
                draft,
                customer_id: None,
                ..Default::default()
            };
            let mut tx = pool.begin().await.unwrap();
            let invoice =
                invoicer_core::invoices::insert(&mut tx, Uuid::now_v7(), org_id, None, &input, "")
                    .await
                    .unwrap();
            tx.commit().await.unwrap();
            invoice.id
        }
    };
    let invoice = make(false).await;
    let draft = make(true).await;
    let key = invoicer_core::api_keys::create_for_user(&app.pool, org.id, org.owner, "owner's")
        .await
        .unwrap();
    let tax_rate: Uuid = scalar_for(&app.pool, "insert into tax_rates (id, org_id, name, percent_milli) values (gen_random_uuid(), $1, 'VAT', 20000) returning id", org.id).await;
    let email: Uuid = sqlx::query_scalar(
        "insert into outbox (id, org_id, invoice_id, kind, payload, dead_at) \
         values (gen_random_uuid(), $1, $2, 'invoice_email', '{}', now()) returning id",
    )
    .bind(org.id)
    .bind(invoice)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let invitation = invite(&app.pool, &org, "invited@example.com", Role::Member).await;
    let payment = Uuid::now_v7();
    let mut tx = app.pool.begin().await.unwrap();
    let cash = model::PaymentInput {
        amount_cents: 100,
        method: model::PaymentMethod::Cash,
        paid_on: "2026-12-01".parse().unwrap(),
        reference: String::new(),
    };
    invoicer_core::manual_payments::record(&mut tx, org.id, invoice, payment, "seed", &cash, None)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let ids = Ids {
        owner: org.owner,
        invoice,
        draft,
        api_key: key.id,
        tax_rate,
        email,
        invitation,
        payment,
    };
    (org, ids)
}

/// What the org looks like, to show that refused requests changed nothing.
async fn snapshot(pool: &PgPool, org: Uuid) -> Vec<i64> {
    let sql = "select array[\
        (select count(*) from invoices where org_id = $1), \
        (select count(*) from invoices where org_id = $1 and status = 'void'), \
        (select count(*) from api_keys where org_id = $1 and revoked_at is null), \
        (select count(*) from tax_rates where org_id = $1 and archived_at is null), \
        (select count(*) from customers where org_id = $1), \
        (select count(*) from outbox where org_id = $1), \
        (select count(*) from invitations where org_id = $1 and revoked_at is null), \
        (select count(*) from memberships where org_id = $1), \
        (select count(*) from memberships where org_id = $1 and role = 'owner'), \
        (select count(*) from audit_events where org_id = $1), \
        (select count(*) from payments where org_id = $1), \
        (select count(*) from quotes where org_id = $1), \
        (select count(*) from orgs where id = $1 and (accent_color is not null or footer_text <> ''))]";
    sqlx::query_scalar(sql)
        .bind(org)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Every registered server function is classified; a viewer is refused (403) every one that changes
/// the org, and a removed member (401) every one but the public ones, and nothing changes.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn viewers_and_removed_members_are_refused_every_state_changing_server_function(
    pool: PgPool,
) {
    let app = TestApp::spawn(pool).await;
    let (org, ids) = seed_org_rows(&app).await;
    let changes = org_changes(&ids);
    // The enumeration is the registry's, not a sample: a new server function fails this test until
    // it is classified here.
    let mut registered: Vec<String> = leptos::server_fn::axum::server_fn_paths()
        .filter_map(|(path, _)| path.strip_prefix("/rpc/").map(str::to_owned))
        .collect();
    registered.sort();
    registered.dedup();
    let mut classified: Vec<String> = PUBLIC
        .iter()
        .chain(READS.iter())
        .chain(OWN_ACCOUNT.iter())
        .map(|s| (*s).to_owned())
        .chain(changes.iter().map(|(e, _)| (*e).to_owned()))
        .collect();
    classified.sort();
    assert_eq!(
        registered, classified,
        "every server function is classified"
    );

    let (_, viewer_email) = add_user(&app.pool, org.id, Role::Viewer).await;
    let viewer = browser(&app, &viewer_email).await;
    let (removed, removed_email) = add_user(&app.pool, org.id, Role::Member).await;
    let gone = browser(&app, &removed_email).await;
    let mut tx = app.pool.begin().await.unwrap();
    members::remove(
        &mut tx,
        org.id,
        &Actor::user(org.owner, &org.owner_email),
        removed,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let before = snapshot(&app.pool, org.id).await;
    for (endpoint, body) in &changes {
        assert_eq!(
            rpc(&viewer, &app, endpoint, body).await,
            403,
            "viewer: {endpoint}"
        );
        assert_eq!(
            rpc(&gone, &app, endpoint, body).await,
            401,
            "removed member: {endpoint}"
        );
    }
    for endpoint in READS.iter().chain(OWN_ACCOUNT.iter()) {
        if *endpoint == "current_user" {
            // Answers "nobody" rather than refusing.
            let who = pages::post(&gone, format!("{}/rpc/current_user", app.base)).await;
            assert_eq!(who.text().await.unwrap(), "null");
            continue;
        }
        // Every argument any of them takes, so each reaches its session check.
        let any_args = form(&[
            ("id", ids.invoice.to_string()),
            ("org_id", org.id.to_string()),
            ("archived", "false".into()),
            ("token", "x".into()),
            ("current", "x".into()),
            ("password", "a new password".into()),
            ("email", "x@example.com".into()),
            ("idempotency_key", Uuid::now_v7().to_string()),
        ]);
        let status = rpc(&gone, &app, endpoint, &any_args).await;
        assert!(
            status == 401 || (*endpoint == "invitation" && status == 400),
            "removed member: {endpoint} answered {status}"
        );
    }
    // Every read, as the viewer: answered (never refused as a write) and writing nothing.
    let any_args = form(&[
        ("id", ids.invoice.to_string()),
        ("archived", "false".into()),
        ("token", "x".into()),
    ]);
    for endpoint in READS {
        let status = rpc(&viewer, &app, endpoint, &any_args).await;
        // The audit log is the owners' (ReadAudit): the one read a viewer is refused.
        let refused = if endpoint == "audit_log" { 403 } else { 0 };
        assert!(
            status < 500 && status != 401 && (status != 403 || refused == 403),
            "viewer: {endpoint} answered {status}"
        );
        if refused == 403 {
            assert_eq!(status, 403, "viewer: {endpoint}");
        }
    }
    assert_eq!(snapshot(&app.pool, org.id).await, before, "nothing changed");
    // The viewer still reads.
    assert_eq!(rpc(&viewer, &app, "list_invoices", &[]).await, 200);
}

/// The OpenAPI document the tests below (and the contract run) walk describes exactly what the
/// router serves under `/api/v1`: no route left undocumented, none documented that is not served.
/// The document's own route is the one it does not describe.
#[test]
fn the_openapi_document_describes_every_route_the_router_serves() {
    use utoipa::OpenApi;
    let doc = serde_json::to_value(server::api::ApiDoc::openapi()).unwrap();
    let mut documented = std::collections::BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.insert((method.to_uppercase(), path.clone()));
        }
    }
    let served: std::collections::BTreeSet<_> = server::api::served()
        .into_iter()
        .filter(|(_, path)| path.starts_with("/api/v1/") && *path != "/api/v1/openapi.json")
        .map(|(method, path)| (method, path.to_owned()))
        .collect();
    assert!(served.len() >= 16, "the router's routes: {served:?}");
    assert_eq!(served, documented);
}

/// The API's routes, from its own OpenAPI document: a viewer's key is refused (403) every route
/// that writes, a key whose creator left (401) every route, and nothing changes.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn viewer_keys_and_keys_of_removed_members_are_refused_every_api_write(pool: PgPool) {
    use invoicer_core::api_keys::{create, KeyRequest};
    let app = TestApp::spawn(pool).await;
    let (org, ids) = seed_org_rows(&app).await;
    let owner = Actor::user(org.owner, &org.owner_email);
    let viewer_key = create(
        &app.pool,
        org.id,
        &owner,
        &KeyRequest {
            name: "read only",
            role: Role::Viewer,
            expires_at: None,
        },
    )
    .await
    .unwrap();
    let (member, _) = add_user(&app.pool, org.id, Role::Member).await;
    let member_key = invoicer_core::api_keys::create_for_user(&app.pool, org.id, member, "theirs")
        .await
        .unwrap();
    let mut tx = app.pool.begin().await.unwrap();
    members::remove(&mut tx, org.id, &owner, member)
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let doc = app
        .get(&viewer_key.plaintext, "/api/v1/openapi.json")
        .await
        .json();
    let mut routes = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let concrete = path.replace("{id}", &ids.invoice.to_string());
            routes.push((method.to_uppercase(), concrete));
        }
    }
    let writes: Vec<_> = routes.iter().filter(|(m, _)| m != "GET").collect();
    assert!(writes.len() >= 9, "the API's writes: {writes:?}");
    let before = snapshot(&app.pool, org.id).await;
    for (method, path) in &routes {
        let send = |token: &str| {
            app.http
                .request(method.parse().unwrap(), format!("{}{path}", app.base))
                .bearer_auth(token)
                .header("idempotency-key", Uuid::now_v7().to_string())
                .header("if-match", "\"1\"")
                .header("content-type", "application/json")
                .body(r#"{"name":"x"}"#)
                .send()
        };
        let viewer = send(&viewer_key.plaintext).await.unwrap().status().as_u16();
        if method == "GET" {
            // The seeded invoice names no parties: not an e-invoice (409), but readable.
            let einvoice = path.ends_with("/einvoice") && viewer == 409;
            assert!(
                viewer == 200 || viewer == 404 || einvoice,
                "a viewer reads {path}: {viewer}"
            );
        } else {
            assert_eq!(viewer, 403, "viewer key: {method} {path}");
        }
        if path.ends_with("openapi.json") {
            continue;
        }
        let removed = send(&member_key.plaintext).await.unwrap().status().as_u16();
        assert_eq!(removed, 401, "removed member's key: {method} {path}");
    }
    assert_eq!(snapshot(&app.pool, org.id).await, before, "nothing changed");
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

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_double_submitted_key_form_makes_one_key_shown_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org(&app.pool).await;
    let owner = browser(&app, &org.owner_email).await;
    let body = form(&[
        ("idempotency_key", Uuid::now_v7().to_string()),
        ("name", "deploys".into()),
        ("role", "viewer".into()),
    ]);
    let post = || async {
        let res = pages::post_form(&owner, format!("{}/rpc/create_api_key", app.base), &body).await;
        assert_eq!(res.status(), 200);
        res.json::<model::CreatedApiKey>().await.unwrap()
    };
    let (a, b) = tokio::join!(post(), post());
    assert_eq!(
        app.count("select count(*) from api_keys where name = 'deploys'")
            .await,
        1
    );
    assert_eq!(a.id, b.id);
    assert_eq!(a.prefix, b.prefix);
    // Exactly one answer carries the key; it works with the API, with the role asked for.
    let keys: Vec<String> = [a.plaintext, b.plaintext].into_iter().flatten().collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(keys[0].starts_with(&a.prefix));
    let client = api_keys::authenticate(&app.pool, &keys[0])
        .await
        .unwrap()
        .expect("the key shown works");
    assert_eq!((client.key_id, client.role), (a.id, Role::Viewer));
    // A later repeat still names the same key, without it; other values are refused.
    assert_eq!(post().await.plaintext, None);
    let mut changed = body.clone();
    changed[1].1 = "other".into();
    assert_eq!(rpc(&owner, &app, "create_api_key", &changed).await, 400);
    assert_eq!(app.count("select count(*) from api_keys").await, 1);
    // A new rendered form makes a new key.
    let mut next = body.clone();
    next[0].1 = Uuid::now_v7().to_string();
    assert_eq!(rpc(&owner, &app, "create_api_key", &next).await, 200);
    assert_eq!(app.count("select count(*) from api_keys").await, 2);
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

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_session_switches_between_its_users_orgs(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let first = org(&app.pool).await;
    let second = org(&app.pool).await;
    invite(&app.pool, &second, &first.owner_email, Role::Viewer).await;
    let token = emailed_token(&app.pool, "invitation", &first.owner_email).await;
    invitations::accept(&app.pool, &token, PASSWORD)
        .await
        .unwrap();
    let http = browser(&app, &first.owner_email).await;
    let sessions = invoicer_core::auth::sessions(&app.pool, first.owner, Uuid::nil())
        .await
        .unwrap();
    assert_eq!(sessions.len(), 1);
    // Acting for the first org (an owner): may add a tax rate.
    let rate = || {
        form(&[
            ("idempotency_key", Uuid::now_v7().to_string()),
            ("name", "VAT".into()),
            ("percent", "20".into()),
        ])
    };
    assert!(rpc(&http, &app, "add_tax_rate", &rate()).await < 400);
    let switched = rpc(
        &http,
        &app,
        "switch_org",
        &form(&[("org_id", second.id.to_string())]),
    )
    .await;
    assert!(switched < 400, "{switched}");
    // Now a viewer of the second: refused, and its reads are the second org's.
    assert_eq!(rpc(&http, &app, "add_tax_rate", &rate()).await, 403);
    let acting: Uuid = scalar_for(
        &app.pool,
        "select org_id from user_sessions where user_id = $1",
        first.owner,
    )
    .await;
    assert_eq!(acting, second.id);
    // An org the user does not belong to: not found, nothing switched.
    let third = org(&app.pool).await;
    assert_eq!(
        rpc(
            &http,
            &app,
            "switch_org",
            &form(&[("org_id", third.id.to_string())])
        )
        .await,
        404
    );
}

/// Retention ends sessions idle past the cookie's expiry, deletes ended ones after the outbox window
/// and tokens a month past their expiry; live sessions and fresh tokens stay.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn retention_ends_idle_sessions_and_forgets_old_ones_and_old_tokens(pool: PgPool) {
    use invoicer_core::retention::{run_once, RetentionConfig};
    let org = org(&pool).await;
    sqlx::query(
        "insert into user_sessions (id, user_id, org_id, last_seen_at, ended_at) values
            (gen_random_uuid(), $1, $2, now(), null),
            (gen_random_uuid(), $1, $2, now() - interval '8 days', null),
            (gen_random_uuid(), $1, $2, now() - interval '40 days', now() - interval '31 days'),
            (gen_random_uuid(), $1, $2, now() - interval '2 days', now() - interval '1 day')",
    )
    .bind(org.owner)
    .bind(org.id)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(
        "insert into user_tokens (token_hash, user_id, purpose, email, expires_at) values
            ('\\x01', $1, 'reset_password', 'a@example.com', now() - interval '31 days'),
            ('\\x02', $1, 'reset_password', 'a@example.com', now() + interval '1 hour')",
    )
    .bind(org.owner)
    .execute(&pool)
    .await
    .unwrap();
    let config = RetentionConfig {
        batch: 1,
        ..RetentionConfig::default()
    };
    let report = run_once(&pool, "2026-12-02T10", &config)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((report.sessions, report.tokens), (2, 1));
    let (live, ended): (i64, i64) = sqlx::query_as(
        "select count(*) filter (where ended_at is null), count(*) filter (where ended_at is not null) \
         from user_sessions",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        (live, ended),
        (1, 2),
        "the idle one ended, the old ended one gone"
    );
    let tokens: i64 = scalar(&pool, "select count(*) from user_tokens").await;
    assert_eq!(tokens, 1);
}

/// Changing the password from settings ends every other session and keeps this one; the sessions
/// page ends one session or all the others.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_password_change_and_the_sessions_page_end_the_other_sessions(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org(&app.pool).await;
    let here = browser(&app, &org.owner_email).await;
    let there = browser(&app, &org.owner_email).await;
    let wrong = rpc(
        &here,
        &app,
        "change_password",
        &form(&[
            ("current", "not it".into()),
            ("password", "a new password".into()),
        ]),
    )
    .await;
    assert_eq!(wrong, 422, "the current password is checked");
    let changed = rpc(
        &here,
        &app,
        "change_password",
        &form(&[
            ("current", PASSWORD.into()),
            ("password", "a new password".into()),
        ]),
    )
    .await;
    assert!(changed < 400, "{changed}");
    assert_eq!(
        rpc(&here, &app, "list_invoices", &[]).await,
        200,
        "this session stays"
    );
    assert_eq!(
        rpc(&there, &app, "list_invoices", &[]).await,
        401,
        "the other ends"
    );

    // Two more logins with the new password; end one from the sessions page, then all others.
    let login_new = || async {
        let http = client();
        crate::common::login(&http, &app.base, &org.owner_email, "a new password").await;
        http
    };
    let (second, third) = (login_new().await, login_new().await);
    let live: Vec<(Uuid, bool)> = sqlx::query_as(
        "select id, false from user_sessions where user_id = $1 and ended_at is null order by created_at",
    )
    .bind(org.owner)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(live.len(), 3);
    // `second` is the second live row.
    let ended = rpc(
        &here,
        &app,
        "end_session",
        &form(&[("id", live[1].0.to_string())]),
    )
    .await;
    assert!(ended < 400, "{ended}");
    assert_eq!(rpc(&second, &app, "list_invoices", &[]).await, 401);
    assert_eq!(rpc(&third, &app, "list_invoices", &[]).await, 200);
    // Someone else's session id is not found.
    let other = self::org(&app.pool).await;
    let _ = browser(&app, &other.owner_email).await;
    let foreign: Uuid = scalar_for(
        &app.pool,
        "select id from user_sessions where user_id = $1",
        other.owner,
    )
    .await;
    assert_eq!(
        rpc(
            &here,
            &app,
            "end_session",
            &form(&[("id", foreign.to_string())])
        )
        .await,
        404
    );
    assert!(rpc(&here, &app, "end_other_sessions", &[]).await < 400);
    assert_eq!(rpc(&third, &app, "list_invoices", &[]).await, 401);
    assert_eq!(rpc(&here, &app, "list_invoices", &[]).await, 200);
    let audit = audit_count(&app.pool, org.id, "user.password_changed").await;
    assert_eq!(audit, 1);
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

/// The sessions of the store invoicer used before `cookie_sessions` (tower-sessions-sqlx-store's
/// `tower_sessions.session`, one MessagePack record a row) move over when their cookie is next seen:
/// nobody is signed out by the upgrade. An unreadable or expired row is no session.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn sessions_of_the_previous_store_move_over_when_next_seen(pool: PgPool) {
    use tower_sessions::cookie::time::OffsetDateTime;
    use tower_sessions::session::{Id, Record};
    use tower_sessions::SessionStore;
    let app = TestApp::spawn(pool).await;
    let org = org(&app.pool).await;
    let owner = browser(&app, &org.owner_email).await;
    assert_eq!(rpc(&owner, &app, "list_invoices", &[]).await, 200);
    // The browser's session, turned back into a row of the previous store.
    let (id, data, expiry): (String, serde_json::Value, chrono::DateTime<chrono::Utc>) =
        sqlx::query_as("delete from cookie_sessions returning id, data, expiry_date")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let record = Record {
        id: id.parse().unwrap(),
        data: serde_json::from_value(data).unwrap(),
        expiry_date: OffsetDateTime::from_unix_timestamp(expiry.timestamp()).unwrap(),
    };
    for sql in [
        "create schema tower_sessions",
        "create table tower_sessions.session (id text primary key not null, data bytea not null, \
         expiry_date timestamptz not null)",
    ] {
        execute(&app.pool, sql).await;
    }
    let (unreadable, expired) = (Id::default(), Id::default());
    let rows = [
        (id.clone(), rmp_serde::to_vec(&record).unwrap(), expiry),
        (unreadable.to_string(), b"not a record".to_vec(), expiry),
        (
            expired.to_string(),
            rmp_serde::to_vec(&Record {
                id: expired,
                ..record.clone()
            })
            .unwrap(),
            chrono::Utc::now() - chrono::Duration::hours(1),
        ),
    ];
    for (id, bytes, expiry) in rows {
        sqlx::query(
            "insert into tower_sessions.session (id, data, expiry_date) values ($1, $2, $3)",
        )
        .bind(id)
        .bind(bytes)
        .bind(expiry)
        .execute(&app.pool)
        .await
        .unwrap();
    }
    assert_eq!(
        rpc(&owner, &app, "list_invoices", &[]).await,
        200,
        "still signed in"
    );
    let moved: Vec<String> = sqlx::query_scalar("select id from cookie_sessions")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(moved, vec![id], "the session moved to cookie_sessions");
    let store = server::session_store::PgSessions::new(app.pool.clone());
    let loaded = store.load(&record.id).await.unwrap().unwrap();
    assert_eq!(loaded.data, record.data);
    assert_eq!(store.load(&unreadable).await.unwrap(), None);
    assert_eq!(store.load(&expired).await.unwrap(), None);
    let count: i64 = scalar(&app.pool, "select count(*) from cookie_sessions").await;
    assert_eq!(count, 1, "nothing else moved");
}

//! Sessions: one switches between its user's orgs; retention ends idle ones and forgets old ones
//! and old tokens; a password change and the sessions page end the others; sessions of the
//! previous store move over when next seen.

use invoicer_core::accounts::invitations;
use model::Role;
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::client;
use crate::common::rows::{audit_count, emailed_token, execute, scalar, scalar_for};
use crate::common::served::TestApp;
use crate::common::team::{browser, form, invite, org, rpc, PASSWORD};

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
    let sessions = invoicer_core::accounts::auth::sessions(&app.pool, first.owner, Uuid::nil())
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
    assert_eq!(second.id, acting);
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
    use invoicer_core::jobs::retention::{run_once, RetentionConfig};
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

/// The login guard follows the route table: a visitor opening any page of it that is not one of
/// the visitors' is sent to the login page with where they were going; the visitors' pages, the
/// server functions and the files are not guarded; the uploads and reports are.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn every_page_of_the_route_table_is_guarded_unless_it_is_a_visitors(pool: PgPool) {
    use crate::common::pages::{get, location, post};

    let app = TestApp::spawn(pool).await;
    let visitor = client();
    let login_for = |path: &str| {
        let next: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("next", path)
            .finish();
        format!("/login?{next}")
    };
    let routes = server::web::route_list();
    let (mut guarded, mut open) = (0, 0);
    for route in routes {
        let path: Vec<String> = (route.path().split('/'))
            .map(|segment| match segment.starts_with('{') {
                true => Uuid::new_v4().to_string(),
                false => segment.to_owned(),
            })
            .collect();
        let path = path.join("/");
        let res = get(&visitor, format!("{}{path}", app.base)).await;
        if server::web::visitor_page(route.path()) {
            open += 1;
            assert!(
                !location(&res).starts_with("/login?next="),
                "{path}: a visitor's page"
            );
        } else {
            guarded += 1;
            assert!(res.status().is_redirection(), "{path}: {}", res.status());
            assert_eq!(location(&res), login_for(&path), "{path}");
        }
    }
    assert_eq!(
        open,
        app::VISITOR_PAGES.len(),
        "every visitor page is in the table"
    );
    assert!(guarded > 30, "{guarded} guarded pages");
    for (post_it, path) in [
        (true, "/settings/logo"),
        (true, "/customers/import"),
        (false, "/reports/aging.csv"),
        (false, "/reports/tax.csv"),
    ] {
        let url = format!("{}{path}", app.base);
        let res = match post_it {
            true => post(&visitor, url).await,
            false => get(&visitor, url).await,
        };
        assert_eq!(location(&res), login_for(path), "{path}");
    }
    // Server functions and files answer for themselves.
    let res = post(&visitor, format!("{}/rpc/list_invoices", app.base)).await;
    assert!(!location(&res).starts_with("/login?next="));
    assert_eq!(res.status(), 401);
    let res = get(&visitor, format!("{}/healthz", app.base)).await;
    assert_eq!(res.status(), 200);
}

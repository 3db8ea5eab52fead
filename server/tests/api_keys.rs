//! API keys: a key never acts above its creator, and stops with an expiry, a demotion or a
//! departure; a double-submitted key form makes one key, shown once; the OpenAPI document names
//! every route served, and a viewer's key and a removed member's key are refused every write.

use invoicer_core::accounts::audit::Actor;
use invoicer_core::accounts::{api_keys, members};
use model::Role;
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::pages;
use crate::common::served::TestApp;
use crate::common::team::{add_user, browser, form, org, rpc, seed_org_rows, snapshot};

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_key_never_acts_above_its_creator(pool: PgPool) {
    use invoicer_core::accounts::api_keys::{authenticate, create, CreateError, KeyRequest};
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
    use invoicer_core::accounts::api_keys::{create, KeyRequest};
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
    let member_key =
        invoicer_core::accounts::api_keys::create_for_user(&app.pool, org.id, member, "theirs")
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

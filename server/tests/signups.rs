//! Who may take money: SIGNUPS=closed refuses sign-ups (orgs come from the operator), and with
//! SIGNUPS=open a new org takes no card payments until `server admin allow-payments`.

use sqlx::PgPool;
use uuid::Uuid;

use crate::common::pages::{post, post_form, text};
use crate::common::rows::{insert_invoice, one_line_input, public_token, scalar_for};
use crate::common::served::TestApp;
use crate::common::{cli, client, create_org, TestDb};

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn closed_sign_ups_are_refused_and_the_page_says_why(pool: PgPool) {
    let app = TestApp::spawn_with(pool, |s| s.signups_open = false).await;
    let signup = [
        ("org_name", "Squat"),
        ("email", "someone@example.com"),
        ("password", "correct horse"),
    ];
    let res = post_form(&client(), format!("{}/rpc/signup", app.base), &signup).await;
    assert_eq!(res.status(), 403);
    assert!(res.text().await.unwrap().contains("Sign-ups are closed"));
    assert_eq!(app.count("select count(*) from orgs").await, 0);
    assert_eq!(app.count("select count(*) from users").await, 0);
    let page = text(&client(), format!("{}/signup", app.base)).await;
    assert!(page.contains("Sign-ups are closed here"), "{page}");
}

/// An open deployment: the new org works, but its customers see no Pay button and Pay (page or
/// API) takes nothing until the operator allows payments.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_signed_up_org_takes_no_payments_until_the_operator_allows_them(pool: PgPool) {
    let app = TestApp::spawn_with(pool, |s| {
        s.signups_open = true;
        s.signup_payments = false;
    })
    .await;
    let owner = client();
    let email = format!("new-{}@example.com", Uuid::new_v4().simple());
    let signup = [
        ("org_name", "Fresh"),
        ("email", email.as_str()),
        ("password", "correct horse"),
    ];
    let res = post_form(&owner, format!("{}/rpc/signup", app.base), &signup).await;
    assert!(res.status().as_u16() < 400, "{}", res.status());
    crate::common::login(&owner, &app.base, &email, "correct horse").await;
    let org: model::OrgId = scalar_for(
        &app.pool,
        "select m.org_id from memberships m join users u on u.id = m.user_id where u.email = $1",
        &email,
    )
    .await;
    let input = one_line_input("usd", "2030-01-31", 5_000, false);
    let invoice = insert_invoice(&app.pool, org, &input).await;
    let token = public_token(&app.pool, invoice).await;
    let page = |http: reqwest::Client| {
        let url = format!("{}/i/{token}", app.base);
        async move { text(&http, url).await }
    };
    assert!(!page(client()).await.contains("class=\"pay\""));
    let pay = post(&client(), format!("{}/i/{token}/pay", app.base)).await;
    assert_eq!(pay.status(), 303);
    assert_eq!(pay.headers()["location"], format!("/i/{token}"));
    assert_eq!(
        app.count("select count(*) from claims where scope = 'outbound'")
            .await,
        0,
        "nothing was claimed for a call to Stripe"
    );
    // The owner is told.
    let asked = [("id", invoice.to_string())];
    let shown: serde_json::Value =
        post_form(&owner, format!("{}/rpc/get_invoice", app.base), &asked)
            .await
            .json()
            .await
            .unwrap();
    assert_eq!(shown["payments_enabled"], false);

    assert!(invoicer_core::accounts::allow_payments(&app.pool, org)
        .await
        .unwrap());
    assert!(page(client()).await.contains("class=\"pay\""));
}

/// `server admin allow-payments --org ID` sets the flag; an unknown org is an error.
#[tokio::test]
async fn the_operator_allows_payments_from_the_command_line() {
    let db = TestDb::new("allowpay").await;
    let org = create_org(&db, "Op", "op@example.com").await;
    let pool = db.pool().await;
    sqlx::query("update orgs set payments_enabled = false where id = $1")
        .bind(org)
        .execute(&pool)
        .await
        .unwrap();
    let said = cli(&db, &["admin", "allow-payments", "--org", &org.to_string()]).await;
    assert!(said.contains("may take card payments"), "{said}");
    let enabled: bool = scalar_for(
        &pool,
        "select payments_enabled from orgs where id = $1",
        org,
    )
    .await;
    assert!(enabled);
    let unknown = tokio::process::Command::new(crate::common::SERVER)
        .args([
            "admin",
            "allow-payments",
            "--org",
            &Uuid::new_v4().to_string(),
        ])
        .env("LEPTOS_ENV", "DEV")
        .env("DATABASE_URL", db.url())
        .output()
        .await
        .unwrap();
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no organisation"));
    pool.close().await;
    db.cleanup().await;
}

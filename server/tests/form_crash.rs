//! The form surface survives the process dying at its worst moment: after the claim, before commit.

use crate::common::pages;
use crate::common::rows::{count_rows, scalars};
use crate::common::{self, client, create_org, invoice_form, login, Server, TestDb};

/// Where the new-invoice form posts on `server`.
fn create_url(server: &Server) -> String {
    format!("{}/rpc/create_invoice", server.base)
}

#[tokio::test]
async fn a_crash_after_the_claim_loses_nothing_and_duplicates_nothing() {
    let db = TestDb::new("form_crash").await;
    // create_org checks that the CLI prints the new org's id.
    create_org(&db, "Acme", "crash@example.com").await;
    let pool = db.pool().await;
    let key = uuid::Uuid::new_v4().to_string();
    let browser = client();

    // 1. The process exits right after claiming, before the transaction commits.
    let server = Server::start(&db, "form.after_claim").await;
    login(&browser, &server.base, "crash@example.com", "correct horse").await;
    let res = browser
        .post(create_url(&server))
        .header("accept", "text/html")
        .form(&invoice_form(&key, "Ada"))
        .send()
        .await;
    assert!(
        res.is_err(),
        "the connection dies with the process: {res:?}"
    );
    assert_eq!(server.exit_code().await, Some(70));
    let (claims, invoices): (i64, i64) =
        sqlx::query_as("select (select count(*) from claims where scope = 'form'), (select count(*) from invoices)")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        (claims, invoices),
        (0, 0),
        "the claim died with its uncommitted work: the key is free"
    );

    // 2. Restarted without the failpoint, the browser's retry (same key, same session) creates it.
    let server = Server::start(&db, "").await;
    let mut locations = Vec::new();
    for _ in 0..2 {
        let res = pages::submit(&browser, create_url(&server), &invoice_form(&key, "Ada")).await;
        assert_eq!(res.status(), 302);
        locations.push(res.headers()["location"].to_str().unwrap().to_owned());
    }
    assert_eq!(
        locations[0], locations[1],
        "the replay lands on the same invoice"
    );
    assert!(locations[0].starts_with("/invoices/"));
    let numbers: Vec<i32> = scalars(&pool, "select number from invoices").await;
    assert_eq!(
        numbers,
        [1],
        "exactly one invoice, and the crash used no number"
    );

    server.stop().await;
    db.finish(pool).await;
}

#[tokio::test]
async fn the_form_needs_a_session_and_the_org_comes_from_it() {
    let db = TestDb::with_org("form_auth", "A", "a@example.com").await;
    // A second, real org: the one an attacker would like the invoice to land in.
    let other = create_org(&db, "B", "b@example.com").await;
    let server = Server::start(&db, "").await;
    let pool = db.pool().await;
    let key = uuid::Uuid::new_v4().to_string();

    // No session: refused, nothing written.
    let anonymous = client();
    let res = pages::post_form(&anonymous, create_url(&server), &invoice_form(&key, "Ada")).await;
    assert_eq!(res.status(), 401);
    let body = res.text().await.unwrap();
    assert!(body.contains("Unauthorized"), "{body}");
    let written: (i64, i64) =
        sqlx::query_as(
        "select (select count(*) from invoices), (select count(*) from claims where scope = 'form')",
    )
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        written,
        (0, 0),
        "nothing written for a request without a session"
    );

    // Another real org's id smuggled into the form is ignored: the session's org gets the invoice.
    let browser = client();
    login(&browser, &server.base, "a@example.com", "correct horse").await;
    let mut form = invoice_form(&key, "Ada");
    form.push(("org_id".into(), other.to_string()));
    let res = pages::submit(&browser, create_url(&server), &form).await;
    assert_eq!(res.status(), 302);
    let in_other: i64 = count_rows(&pool, "invoices where org_id = $1", other).await;
    assert_eq!(in_other, 0, "nothing in the smuggled org");
    let (owner_email,): (String,) = sqlx::query_as(
        "select u.email from invoices i join memberships m on m.org_id = i.org_id join users u on u.id = m.user_id",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(owner_email, "a@example.com");

    server.stop().await;
    db.finish(pool).await;
}

#[tokio::test]
async fn create_org_refuses_a_taken_email_with_a_clear_message() {
    let db = TestDb::with_org("cli", "A", "dup@example.com").await;
    let out = tokio::process::Command::new(common::SERVER)
        .args([
            "admin",
            "create-org",
            "--org",
            "B",
            "--email",
            "DUP@example.com",
            "--password",
            "correct horse",
        ])
        .env("DATABASE_URL", db.url())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("already exists"), "{stderr}");
    db.cleanup().await;
}

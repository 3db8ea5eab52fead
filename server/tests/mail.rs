//! Mail on the open internet: a configurable sender, STARTTLS with login, implicit TLS, permanent
//! rejections dead at once, and tenants shown a class of failure, never the mail server's words.
//! Every test talks to a real SMTP server (aiosmtpd) with a real certificate chain made by openssl.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::rows::{public_token, scalar};
use crate::common::{self, queue_email, SmtpSink};
use invoicer_core::mail::Mailer;
use invoicer_core::worker::{self, WorkerConfig};
use sqlx::PgPool;
use uuid::Uuid;

/// A throwaway CA and a certificate for `localhost` signed by it: (dir, ca.pem, leaf.pem, leaf.key).
fn certificates() -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let script = r#"
        set -e
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
          -out ca.pem -days 1 -subj /CN=invoicer-test-ca 2>/dev/null
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key \
          -out leaf.csr -subj /CN=localhost 2>/dev/null
        printf 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > leaf.ext
        openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem \
          -days 1 -extfile leaf.ext 2>/dev/null
    "#;
    let dir = crate::common::openssl("invoicer-tls", script);
    (
        dir.clone(),
        dir.join("ca.pem"),
        dir.join("leaf.pem"),
        dir.join("leaf.key"),
    )
}

fn mailer(url: &str, ca: Option<&Path>, from: &str) -> Mailer {
    Mailer::new(
        Some(url),
        ca,
        Path::new("unused"),
        Duration::from_secs(10),
        from,
    )
    .unwrap()
}

fn config() -> WorkerConfig {
    WorkerConfig {
        id: "mail-test".into(),
        backoff_base: Duration::ZERO,
        ..Default::default()
    }
}

async fn drain(pool: &PgPool, mailer: &Mailer) {
    while worker::drain_once(pool, mailer, &config()).await.unwrap() > 0 {}
}

/// One delivery pass to `url` from the development sender, trusting only the system's CAs.
async fn attempt_once(pool: &PgPool, url: &str) {
    let mailer = mailer(url, None, invoicer_core::mail::DEV_FROM);
    worker::drain_once(pool, &mailer, &config()).await.unwrap();
}

async fn one_email(pool: &PgPool) -> (model::OrgId, Uuid) {
    let email = format!("{}@example.com", Uuid::new_v4().simple());
    let (org, invoice) = common::seed_invoice(pool, &email, 100, "usd").await;
    queue_email(pool, org, Uuid::new_v4(), invoice)
        .await
        .unwrap();
    (org, invoice)
}

async fn outbox_state(pool: &PgPool) -> (i32, bool, bool, Option<String>) {
    sqlx::query_as(
        "select attempts, sent_at is not null, dead_at is not null, last_error from outbox",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_permanent_rejection_is_dead_at_once_and_tenants_see_only_its_class(pool: PgPool) {
    let sink = SmtpSink::start_with(&["--reject-always".into()]).await;
    let (org, invoice) = one_email(&pool).await;
    drain(
        &pool,
        &mailer(&sink.url(), None, invoicer_core::mail::DEV_FROM),
    )
    .await;
    let (attempts, sent, dead, error) = outbox_state(&pool).await;
    assert_eq!(
        (attempts, sent, dead),
        (1, false, true),
        "one try, then dead"
    );
    assert_eq!(error.as_deref(), Some("rejected by the mail server"));
    let shown = invoicer_core::outbox::for_invoice(&pool, org, model::InvoiceId::from(invoice))
        .await
        .unwrap();
    // What the page shows of each row (not its id: a UUID may well contain "550").
    let said: Vec<String> = shown
        .iter()
        .map(|r| format!("{} {:?}", r.kind, r.last_error))
        .collect();
    assert!(
        said.iter()
            .all(|s| !s.contains("relay-7") && !s.contains("550")),
        "{said:?}"
    );
    assert_eq!(sink.attempt_times().len(), 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_unreachable_server_is_a_plain_class_too(pool: PgPool) {
    one_email(&pool).await;
    let closed = common::free_port();
    let url = format!("smtp://127.0.0.1:{closed}");
    attempt_once(&pool, &url).await;
    let (attempts, sent, dead, error) = outbox_state(&pool).await;
    assert_eq!((attempts, sent, dead), (1, false, false), "retried later");
    assert_eq!(error.as_deref(), Some("mail server unreachable"));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn starttls_with_a_login_delivers_from_the_configured_sender(pool: PgPool) {
    let (dir, ca, cert, key) = certificates();
    let sink = SmtpSink::start_with(&[
        "--tls-cert".into(),
        cert.display().to_string(),
        "--tls-key".into(),
        key.display().to_string(),
        "--auth".into(),
        "billing:s3cret pass".into(),
    ])
    .await;
    one_email(&pool).await;
    let url = format!("smtp://billing:s3cret%20pass@localhost:{}", sink.port);
    let from = "Acme billing <billing@acme.example>";
    drain(&pool, &mailer(&url, Some(&ca), from)).await;
    let messages = sink.wait_for(1, Duration::from_secs(10)).await;
    assert!(
        messages[0].contains("From: \"Acme billing\" <billing@acme.example>")
            || messages[0].contains("From: Acme billing <billing@acme.example>"),
        "{}",
        messages[0]
    );
    assert!(
        sink.auth_log().contains("ok tls=True"),
        "{}",
        sink.auth_log()
    );
    assert!(outbox_state(&pool).await.1, "marked sent");
    let _ = std::fs::remove_dir_all(dir);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn credentials_never_travel_in_clear(pool: PgPool) {
    // A server without STARTTLS: the login is not attempted at all.
    let sink = SmtpSink::start(0, false).await;
    one_email(&pool).await;
    let url = format!("smtp://billing:secret@127.0.0.1:{}", sink.port);
    attempt_once(&pool, &url).await;
    let (attempts, sent, dead, error) = outbox_state(&pool).await;
    assert_eq!((attempts, sent, dead), (1, false, false));
    assert_eq!(
        error.as_deref(),
        Some("secure connection to the mail server failed")
    );
    assert!(sink.auth_log().is_empty() && sink.attempt_times().is_empty());
}

/// A sink speaking TLS from the first byte with `cert`/`key`.
async fn implicit_tls_sink(cert: &Path, key: &Path) -> SmtpSink {
    SmtpSink::start_with(&[
        "--tls-cert".into(),
        cert.display().to_string(),
        "--tls-key".into(),
        key.display().to_string(),
        "--implicit-tls".into(),
    ])
    .await
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn smtps_speaks_tls_from_the_first_byte(pool: PgPool) {
    let (dir, ca, cert, key) = certificates();
    let sink = implicit_tls_sink(&cert, &key).await;
    one_email(&pool).await;
    let url = format!("smtps://localhost:{}", sink.port);
    drain(
        &pool,
        &mailer(&url, Some(&ca), invoicer_core::mail::DEV_FROM),
    )
    .await;
    assert_eq!(sink.wait_for(1, Duration::from_secs(10)).await.len(), 1);
    // Without the CA the certificate is not trusted: nothing is sent.
    let untrusted = implicit_tls_sink(&cert, &key).await;
    one_email(&pool).await;
    let url = format!("smtps://localhost:{}", untrusted.port);
    attempt_once(&pool, &url).await;
    let error: Option<String> = scalar(
        &pool,
        "select last_error from outbox where sent_at is null order by created_at desc limit 1",
    )
    .await;
    assert_eq!(
        error.as_deref(),
        Some("secure connection to the mail server failed")
    );
    assert!(untrusted.messages().is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn invoice_emails_link_to_the_customers_page_not_the_owners(pool: PgPool) {
    let sink = SmtpSink::start(0, false).await;
    let (_, invoice) = one_email(&pool).await;
    drain(&pool, &mailer(&sink.url(), None, "billing@example.com")).await;
    let messages = sink.wait_for(1, Duration::from_secs(10)).await;
    let token: String = public_token(&pool, invoice).await;
    let base = config().public_url;
    // Quoted-printable may fold long lines: compare without soft line breaks.
    let text = messages[0].replace("=\r\n", "").replace("=\n", "");
    assert!(text.contains(&format!("{base}/i/{token}")), "{text}");
    assert!(!text.contains(&format!("/invoices/{invoice}")), "{text}");
}

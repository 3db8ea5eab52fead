//! The outbox's lanes: account emails, customer emails, webhooks out and other jobs each have their
//! own places, and inside a lane the orgs are served in turn. One org's twenty endpoints that never
//! answer hold up neither another org's password reset (a real SMTP sink receives it within two
//! seconds) nor another org's delivery in the same lane.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::TestApp;
use crate::common::SmtpSink;

/// A listener that accepts connections and never answers them: each delivery to it holds its
/// place until the client's timeout.
async fn black_hole() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            held.push(stream);
        }
    });
    (url, accepted)
}

/// A receiver that answers 204 at once, counting what it got.
async fn receiver() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let got = Arc::new(AtomicUsize::new(0));
    let count = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            count.fetch_add(1, Ordering::SeqCst);
            async { axum::http::StatusCode::NO_CONTENT }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, got)
}

/// `endpoints` endpoints of `org` at `url` wanting customer.created, and `customers` customers (one
/// event each: a delivery per endpoint).
async fn deliveries(
    app: &TestApp,
    org: model::OrgId,
    url: &str,
    endpoints: usize,
    customers: usize,
) {
    let mut tx = app.pool.begin().await.unwrap();
    for n in 0..endpoints {
        let input = model::webhooks::WebhookEndpointInput {
            url: url.to_owned(),
            events: vec!["customer.created".into()],
            description: String::new(),
        };
        let id = Uuid::now_v7();
        let nobody = invoicer_core::webhooks_out::RegisteredBy::Nobody;
        invoicer_core::webhooks_out::create(&mut tx, id, org, &format!("test:{n}"), &input, nobody)
            .await
            .unwrap();
    }
    for n in 0..customers {
        sqlx::query(
            "insert into customers (id, org_id, name, email, source_key) values ($1, $2, $3, $4, $5)",
        )
        .bind(Uuid::now_v7())
        .bind(org)
        .bind(format!("Customer {n}"))
        .bind(format!("c{n}@example.com"))
        .bind(format!("test:{n}"))
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
}

fn worker(pool: &PgPool, smtp: &SmtpSink) -> tokio::sync::watch::Sender<bool> {
    let mailer = invoicer_core::mail::Mailer::new(
        Some(&smtp.url()),
        None,
        std::path::Path::new("unused"),
        Duration::from_secs(10),
        invoicer_core::mail::DEV_FROM,
    )
    .unwrap();
    let config = invoicer_core::worker::WorkerConfig {
        id: "lanes".into(),
        poll: Duration::from_millis(50),
        ..Default::default()
    }
    .with_webhooks(invoicer_core::webhooks_out::guard::Policy::OPEN);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(invoicer_core::worker::run(
        pool.clone(),
        mailer,
        config,
        stopped,
    ));
    stop
}

async fn hanging(pool: &PgPool, org: model::OrgId) -> i64 {
    sqlx::query_scalar(
        "select count(*) from outbox where org_id = $1 and kind = 'webhook' and locked_by is not null \
         and sent_at is null",
    )
    .bind(org)
    .fetch_one(pool)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn one_orgs_hanging_endpoints_hold_up_neither_a_reset_nor_another_orgs_delivery(
    pool: PgPool,
) {
    let app = TestApp::spawn(pool).await;
    let (busy, _) = app.api_client().await;
    let (quiet, _) = app.api_client().await;
    let (hole, accepted) = black_hole().await;
    let (fast, received) = receiver().await;
    // Twenty endpoints that never answer, ten events each: 200 deliveries, all due before the one
    // delivery of the quiet org.
    deliveries(&app, busy, &hole, 20, 10).await;
    deliveries(&app, quiet, &fast, 1, 1).await;
    let smtp = SmtpSink::start(0, false).await;
    let _stop = worker(&app.pool, &smtp);

    // Inside the lane: the quiet org's delivery goes in the first round, while the busy org's
    // hang.
    let started = Instant::now();
    while received.load(Ordering::SeqCst) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the quiet org's delivery waited behind the busy org's"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    crate::common::poll(
        "the busy org's deliveries reached the endpoints that never answer",
        true,
        Duration::from_secs(5),
        Duration::from_millis(20),
        || async { accepted.load(Ordering::SeqCst) > 0 },
    )
    .await;

    // Another lane: a password reset of another org's owner, while every webhook place hangs.
    let places = invoicer_core::worker::WorkerConfig::DEFAULT_CONCURRENCY as i64;
    crate::common::poll(
        "webhook places held by the busy org",
        true,
        Duration::from_secs(5),
        Duration::from_millis(20),
        || async { hanging(&app.pool, busy).await >= places - 1 },
    )
    .await;
    let owner: String = sqlx::query_scalar(
        "select u.email from users u join memberships m on m.user_id = u.id where m.org_id = $1",
    )
    .bind(quiet)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let asked = Instant::now();
    invoicer_core::accounts::request_reset(&app.pool, &owner, &format!("form:{}", Uuid::now_v7()))
        .await
        .unwrap();
    let mail = smtp.wait_for(1, Duration::from_secs(2)).await;
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );
    assert!(
        mail[0].contains("Reset your invoicer password"),
        "{}",
        mail[0]
    );
    assert!(
        hanging(&app.pool, busy).await > 0,
        "the webhook deliveries were still hanging"
    );
}

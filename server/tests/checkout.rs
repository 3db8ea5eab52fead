//! Paying: one Checkout session per invoice and amount due, created at the local Stripe with an
//! Idempotency-Key derived from the claim; payments bind only to sessions the app created.

use std::time::Duration;

use lab::stripe_local::{Config, LocalStripe};
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::{invoice_body, TestApp, SECRET};
use crate::common::{cli, create_org, rows, wait_until, Server, TestDb};

pub(crate) async fn with_stripe(pool: PgPool, config: Config) -> (TestApp, LocalStripe) {
    with_stripe_and(pool, config, |_| {}).await
}

async fn with_stripe_and(
    pool: PgPool,
    config: Config,
    tweak: impl FnOnce(&mut invoicer_core::state::Settings),
) -> (TestApp, LocalStripe) {
    let stripe = LocalStripe::start(
        "127.0.0.1:0".parse().unwrap(),
        Config {
            webhook_secret: SECRET.to_owned(),
            ..config
        },
    )
    .await
    .unwrap();
    let base = stripe.base.clone();
    let app = TestApp::spawn_with(pool, |s| {
        s.stripe_api_base = base;
        s.stripe_secret_key = Some("sk_test_local".into());
        tweak(s);
    })
    .await;
    stripe.send_events_to(&format!("{}/webhooks/stripe", app.base));
    (app, stripe)
}

/// An open invoice of a fresh org through the API; returns (id, its public page's path).
pub(crate) async fn open_invoice(app: &TestApp, token: &str) -> (Uuid, String) {
    let res = app
        .post_invoice(
            Some(token),
            Some(&Uuid::new_v4().to_string()),
            &invoice_body("Ada"),
        )
        .await;
    assert_eq!(res.status, 201);
    let json = res.json();
    let path = json["public_url"]
        .as_str()
        .unwrap()
        .strip_prefix(&app.base)
        .unwrap()
        .to_owned();
    (json["id"].as_str().unwrap().parse().unwrap(), path)
}

pub(crate) fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Presses Pay; returns the status and where it sends the browser.
pub(crate) async fn press_pay(http: &reqwest::Client, base: &str, page: &str) -> (u16, String) {
    let res = http.post(format!("{base}{page}/pay")).send().await.unwrap();
    let location = res
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (res.status().as_u16(), location)
}

pub(crate) fn session_id(url: &str) -> String {
    url.rsplit('/').next().unwrap().to_owned()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn concurrent_pay_clicks_and_api_retries_end_on_one_stripe_session(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, Config::default()).await;
    let (_, token) = app.api_client().await;
    let (id, page) = open_invoice(&app, &token).await;
    let http = no_redirects();
    let presses: Vec<_> = (0..10)
        .map(|_| {
            let (http, base, page) = (http.clone(), app.base.clone(), page.clone());
            tokio::spawn(async move { press_pay(&http, &base, &page).await })
        })
        .collect();
    let mut locations = Vec::new();
    for press in presses {
        let (status, location) = press.await.unwrap();
        assert_eq!(status, 303);
        locations.push(location);
    }
    locations.dedup();
    assert_eq!(
        locations.len(),
        1,
        "every press lands on one session: {locations:?}"
    );
    assert!(locations[0].starts_with(&format!("{}/checkout/cs_test_", stripe.base)));
    assert_eq!(stripe.session_count(), 1);
    assert_eq!(stripe.create_calls(), 1, "one call to Stripe");

    // The API gets the same session, once per key, replayed byte for byte.
    let path = format!("/api/v1/invoices/{id}/checkout");
    let first = app.post_to(&path, Some(&token), Some("co-1"), "").await;
    assert_eq!(
        first.status,
        200,
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    assert_eq!(first.json()["id"], session_id(&locations[0]));
    assert_eq!(first.json()["url"], locations[0]);
    let replay = app.post_to(&path, Some(&token), Some("co-1"), "").await;
    assert_eq!((replay.status, &replay.body), (200, &first.body));
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    let other_key = app.post_to(&path, Some(&token), Some("co-2"), "").await;
    assert_eq!(other_key.json()["id"], first.json()["id"]);
    let reused = app
        .post_to(&path, Some(&token), Some("co-1"), r#"{"other": 1}"#)
        .await;
    assert_eq!(reused.status, 422);
    assert_eq!(stripe.session_count(), 1);
    let stored = app.count("select count(*) from checkout_sessions").await;
    assert_eq!(stored, 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn paying_by_card_with_chaotic_deliveries_pays_once_with_one_receipt(pool: PgPool) {
    let chaos = Config {
        chaos: true,
        ..Config::default()
    };
    let (app, stripe) = with_stripe(pool.clone(), chaos).await;
    let (_, token) = app.api_client().await;
    let (id, page) = open_invoice(&app, &token).await;
    let (_, location) = press_pay(&no_redirects(), &app.base, &page).await;
    stripe.pay(&session_id(&location), "card").await.unwrap();
    let paid = format!("select count(*) from invoices where id = '{id}' and status = 'paid'");
    wait_until(&pool, &paid, 1, Duration::from_secs(20)).await;
    // Every copy of the event has been answered (stored once, the rest replays).
    wait_until(
        &pool,
        "select count(*) from stripe_events where type = 'checkout.session.completed'",
        1,
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(app.count("select count(*) from payments").await, 1);
    assert_eq!(
        app.count("select count(*) from outbox where kind = 'payment_receipt'")
            .await,
        1
    );
    // Nothing is due now: Pay sends the customer back to the page.
    let (status, back) = press_pay(&no_redirects(), &app.base, &page).await;
    assert_eq!((status, back.as_str()), (303, page.as_str()));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_failed_bank_debit_leaves_it_open_and_pay_makes_a_new_session(pool: PgPool) {
    let (app, stripe) = with_stripe(pool.clone(), Config::default()).await;
    let (_, token) = app.api_client().await;
    let (id, page) = open_invoice(&app, &token).await;
    let http = no_redirects();
    let (_, first) = press_pay(&http, &app.base, &page).await;
    // A decline changes nothing: the same session is offered again.
    stripe.pay(&session_id(&first), "decline").await.unwrap();
    assert_eq!(press_pay(&http, &app.base, &page).await.1, first);
    stripe.pay(&session_id(&first), "bank_fail").await.unwrap();
    wait_until(
        &pool,
        "select count(*) from payments where status = 'failed'",
        1,
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(app.invoice_state(id).await, ("open".into(), 0));
    let (status, second) = press_pay(&http, &app.base, &page).await;
    assert_eq!(status, 303);
    assert_ne!(second, first, "a used session is not offered again");
    stripe.pay(&session_id(&second), "bank").await.unwrap();
    let paid = format!("select count(*) from invoices where id = '{id}' and status = 'paid'");
    wait_until(&pool, &paid, 1, Duration::from_secs(20)).await;
    assert_eq!(stripe.session_count(), 2);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn stripe_errors_are_retried_with_the_same_key_then_reported_without_detail(pool: PgPool) {
    // Four failures: the first press's four tries all fail; the second press succeeds.
    let flaky = Config {
        fail_first: 4,
        ..Config::default()
    };
    let (app, stripe) = with_stripe(pool, flaky).await;
    let (_, token) = app.api_client().await;
    let (_, page) = open_invoice(&app, &token).await;
    let res = reqwest::Client::new()
        .post(format!("{}{page}/pay", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert!(res.headers().contains_key("retry-after"));
    let body = res.text().await.unwrap();
    assert!(body.contains("temporarily unavailable"), "{body}");
    assert!(
        !body.contains("api_error") && !body.contains("fail_first"),
        "{body}"
    );
    assert_eq!(stripe.create_calls(), 4);
    assert_eq!(app.count("select count(*) from checkout_sessions").await, 0);
    // Nothing was left claimed: the next press goes to Stripe again, and gets a session.
    let (status, location) = press_pay(&no_redirects(), &app.base, &page).await;
    assert_eq!(status, 303, "{location}");
    assert_eq!(stripe.session_count(), 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn events_of_sessions_the_app_did_not_create_change_nothing(pool: PgPool) {
    let (app, _stripe) = with_stripe(pool, Config::default()).await;
    let (_, token) = app.api_client().await;
    let (id, _) = open_invoice(&app, &token).await;
    let (other, _) = open_invoice(&app, &token).await;
    let session = |session_id: &str, reference: Uuid| {
        json!({
            "id": format!("evt_{}", Uuid::new_v4().simple()),
            "object": "event",
            "type": "checkout.session.completed",
            "livemode": false,
            "data": { "object": {
                "id": session_id,
                "object": "checkout.session",
                "client_reference_id": reference.to_string(),
                "amount_total": 1_000,
                "currency": "eur",
                "payment_status": "paid",
                "payment_intent": format!("pi_{}", Uuid::new_v4().simple()),
            }},
        })
        .to_string()
    };
    // A session nobody here created (made in Stripe's dashboard, say).
    let (status, _) = app.deliver(&session("cs_test_foreign", id)).await;
    assert_eq!(status, 200);
    // A session the app created for another invoice, naming this one.
    let theirs = invoicer_core::payments::stripe::standin::open_simulated_session(
        &app.pool,
        model::InvoiceId::from(other),
    )
    .await
    .unwrap();
    app.deliver(&session(&theirs, id)).await;
    assert_eq!(app.invoice_state(id).await, ("open".into(), 0));
    assert_eq!(app.count("select count(*) from payments").await, 0);
    let anomalies = app
        .count(&format!(
            "select count(*) from stripe_events where outcome = 'anomaly' and invoice_id = '{id}'"
        ))
        .await;
    assert_eq!(anomalies, 2, "both kept for the owner to review");
}

/// The process dies after Stripe answered and before the session was stored; the next Pay (after
/// the lease runs out) gets the same session from Stripe, by the same Idempotency-Key.
#[tokio::test]
async fn a_crash_after_stripe_answered_gets_the_same_session_back() {
    let db = TestDb::new("checkout_crash").await;
    create_org(&db, "Acme", "pay@example.com").await;
    let token = cli(
        &db,
        &["admin", "create-api-key", "--email", "pay@example.com"],
    )
    .await;
    let token = token.trim().to_owned();
    let pool = db.pool().await;
    let stripe = LocalStripe::start(
        "127.0.0.1:0".parse().unwrap(),
        Config {
            webhook_secret: invoicer_core::state::DEV_WEBHOOK_SECRET.to_owned(),
            ..Config::default()
        },
    )
    .await
    .unwrap();
    // The public URL is the deployment's, the same across restarts (the session's return URLs are
    // part of what is sent to Stripe under the key).
    let env = [
        ("STRIPE_API_BASE", stripe.base.clone()),
        ("INVOICER_PUBLIC_URL", "http://invoicer.test".to_owned()),
    ];
    let server = Server::start_with(&db, "checkout.after_stripe", &env).await;
    let created = reqwest::Client::new()
        .post(format!("{}/api/v1/invoices", server.base))
        .bearer_auth(&token)
        .header("idempotency-key", "inv-1")
        .header("content-type", "application/json")
        .body(invoice_body("Ada"))
        .send()
        .await
        .unwrap();
    let json: serde_json::Value = created.json().await.unwrap();
    let page = json["public_url"]
        .as_str()
        .unwrap()
        .rsplit_once("/i/")
        .map(|(_, t)| format!("/i/{t}"))
        .unwrap();
    let id = json["id"].as_str().unwrap().to_owned();
    let http = no_redirects();
    assert!(
        http.post(format!("{}{page}/pay", server.base))
            .send()
            .await
            .is_err(),
        "the customer gets no answer"
    );
    assert_eq!(server.exit_code().await, Some(70));
    assert_eq!(stripe.session_count(), 1, "Stripe made the session");
    let stored: i64 = rows::scalar(&pool, "select count(*) from checkout_sessions").await;
    assert_eq!(stored, 0, "we never stored it");

    let server = Server::start_with(&db, "", &env).await;
    stripe.send_events_to(&format!("{}/webhooks/stripe", server.base));
    // Until the dead process's lease runs out, Pay answers "try again"; then it takes the lease over.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let location = loop {
        let (status, location) = press_pay(&http, &server.base, &page).await;
        if status == 303 {
            break location;
        }
        assert_eq!(status, 503);
        assert!(std::time::Instant::now() < deadline, "Pay never recovered");
    };
    assert_eq!(
        stripe.session_count(),
        1,
        "the same session, not a second one"
    );
    assert!(
        stripe.create_calls() >= 2,
        "asked again, answered by the key"
    );
    stripe.pay(&session_id(&location), "card").await.unwrap();
    let paid = format!("select count(*) from invoices where id = '{id}' and status = 'paid'");
    wait_until(&pool, &paid, 1, Duration::from_secs(20)).await;
    let payments: i64 = rows::scalar(&pool, "select count(*) from payments").await;
    assert_eq!(payments, 1);
    server.stop().await;
    db.cleanup().await;
}

/// Waits until the local Stripe has received `n` session creations.
async fn arrived(stripe: &LocalStripe, n: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while stripe.arrived() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "Stripe got {} calls",
            stripe.arrived()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// While Stripe takes its time, Pay holds no pooled connection: a slow Stripe cannot starve the
/// pool that every other request needs.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn no_pooled_connection_waits_on_stripe(pool: PgPool) {
    let hold = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let config = Config {
        hold: Some(hold.clone()),
        ..Config::default()
    };
    let (app, stripe) = with_stripe(pool, config).await;
    let (_, token) = app.api_client().await;
    let (_, page) = open_invoice(&app, &token).await;
    let (base, http) = (app.base.clone(), no_redirects());
    let pay = tokio::spawn(async move { press_pay(&http, &base, &page).await });
    arrived(&stripe, 1).await;
    let in_use = app.pool.size() - app.pool.num_idle() as u32;
    assert_eq!(in_use, 0, "a connection is held while Stripe answers");
    hold.add_permits(1);
    let (status, location) = pay.await.unwrap();
    assert_eq!(status, 303);
    assert!(location.starts_with(&stripe.base));
}

/// Beyond STRIPE_MAX_CALLS calls at once, Pay answers 503 with Retry-After and claims nothing: the
/// next press starts afresh.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn beyond_the_cap_on_stripe_calls_pay_is_refused_with_nothing_half_done(pool: PgPool) {
    let hold = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let config = Config {
        hold: Some(hold.clone()),
        ..Config::default()
    };
    let (app, stripe) = with_stripe_and(pool, config, |s| s.stripe_max_calls = 1).await;
    let (_, token) = app.api_client().await;
    let (_, first) = open_invoice(&app, &token).await;
    let (second_id, second) = open_invoice(&app, &token).await;
    let (base, http) = (app.base.clone(), no_redirects());
    let waiting = tokio::spawn(async move { press_pay(&http, &base, &first).await });
    arrived(&stripe, 1).await;

    let res = no_redirects()
        .post(format!("{}{second}/pay", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert!(res.headers().get("retry-after").is_some());
    let claims: i64 = sqlx::query_scalar("select count(*) from claims where key like $1")
        .bind(format!("{second_id}/%"))
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(claims, 0, "nothing claimed for the refused press");
    assert_eq!(
        stripe.arrived(),
        1,
        "the refused press never reached Stripe"
    );

    hold.add_permits(2);
    assert_eq!(waiting.await.unwrap().0, 303);
    let (status, _) = press_pay(&no_redirects(), &app.base, &second).await;
    assert_eq!(status, 303, "a place is free again");
}

/// Runs a worker that can call Stripe until nothing is due.
pub(crate) async fn drain_calls(app: &TestApp, stripe: &LocalStripe) {
    let config = invoicer_core::worker::WorkerConfig {
        id: "expire-test".into(),
        backoff_base: Duration::ZERO,
        stripe: Some(invoicer_core::payments::stripe::client::Stripe::new(
            &stripe.base,
            Some("sk_test_local".into()),
        )),
        ..Default::default()
    };
    let mailer = invoicer_core::mail::Mailer::new(
        None,
        None,
        &std::env::temp_dir().join(format!("invoicer-expire-{}", Uuid::new_v4().simple())),
        Duration::from_secs(5),
        invoicer_core::mail::DEV_FROM,
    )
    .unwrap();
    while invoicer_core::worker::drain_once(&app.pool, &mailer, &config)
        .await
        .unwrap()
        > 0
    {}
}

/// A newer session replaces an older one at Stripe (the older is expired), and voiding the invoice
/// expires the open one: no page left at Stripe takes money for it. Each expiry is one outbox row
/// and one call under its own Idempotency-Key.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn voiding_and_new_sessions_expire_the_open_sessions_at_stripe(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, Config::default()).await;
    let (_, token) = app.api_client().await;
    let (id, page) = open_invoice(&app, &token).await;
    let (status, location) = press_pay(&no_redirects(), &app.base, &page).await;
    assert_eq!(status, 303);
    let first = session_id(&location);
    // It nears its end: the next Pay makes a new session, and the first is expired at Stripe.
    sqlx::query(
        "update checkout_sessions set expires_at = now() + interval '1 minute' where id = $1",
    )
    .bind(&first)
    .execute(&app.pool)
    .await
    .unwrap();
    let (_, location) = press_pay(&no_redirects(), &app.base, &page).await;
    let second = session_id(&location);
    assert_ne!(first, second);
    drain_calls(&app, &stripe).await;
    assert_eq!(stripe.session_status(&first).as_deref(), Some("expired"));
    assert_eq!(stripe.session_status(&second).as_deref(), Some("open"));

    let voided = app
        .post_to(
            &format!("/api/v1/invoices/{id}/void"),
            Some(&token),
            Some(&Uuid::new_v4().to_string()),
            "{}",
        )
        .await;
    assert!(voided.status < 300, "{}", voided.status);
    drain_calls(&app, &stripe).await;
    assert_eq!(stripe.session_status(&second).as_deref(), Some("expired"));
    assert!(
        stripe.pay(&second, "card").await.is_ok(),
        "the page answers"
    );
    assert_eq!(
        app.count(&format!(
            "select count(*) from payments where invoice_id = '{id}'"
        ))
        .await,
        0,
        "an expired session takes no money"
    );
    assert_eq!(stripe.expire_calls(), 2, "one call per session");
    assert_eq!(
        app.count(
            "select count(*) from outbox where kind = 'expire_checkout' and sent_at is not null"
        )
        .await,
        2
    );
}

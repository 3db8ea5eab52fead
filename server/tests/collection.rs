//! Collecting without asking, against the local Stripe: a customer saves a method on the setup
//! page (the event saves it once), an invoice collected automatically is charged when it is
//! finalized (each attempt a leased claim with its own Idempotency-Key), a declined card is retried
//! on the org's days and then sent, a SEPA debit is processing until it settles, and a worker killed
//! after Stripe answered charges once.

use std::time::Duration;

use chrono::Utc;
use invoicer_core::jobs::charges;
use invoicer_core::mail::gate::Allowance;
use invoicer_core::payments::stripe::client::Stripe;
use lab::stripe_local::{Config, LocalStripe};
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::checkout::with_stripe;
use crate::common::served::TestApp;
use crate::common::{cli, create_org, rows, wait_until, Server, TestDb};

fn client(stripe: &LocalStripe) -> Stripe {
    Stripe::new(&stripe.base, Some("sk_test_local".into())).with_backoff(Duration::from_millis(5))
}

/// A customer of the key's org; returns its id.
async fn customer(app: &TestApp, token: &str, name: &str) -> String {
    let made = app
        .call_ok(
            "POST",
            "/api/v1/customers",
            token,
            &json!({"name": name, "email": format!("{}@example.com", name.to_lowercase())}),
        )
        .await;
    made["id"].as_str().unwrap().to_owned()
}

/// The setup page's session id, from its url.
fn session_of(url: &str) -> String {
    url.rsplit('/').next().unwrap().to_owned()
}

/// The customer saves `method` on a new setup page; waits until the event saved it.
async fn save(app: &TestApp, stripe: &LocalStripe, token: &str, customer: &str, method: &str) {
    let before: i64 = rows::scalar(&app.pool, "select count(*) from payment_methods").await;
    let link = app
        .call_ok(
            "POST",
            &format!("/api/v1/customers/{customer}/payment_method_link"),
            token,
            &Value::Null,
        )
        .await;
    stripe
        .save(&session_of(link["url"].as_str().unwrap()), method)
        .await
        .unwrap();
    wait_until(
        &app.pool,
        "select count(*) from payment_methods",
        before + 1,
        Duration::from_secs(20),
    )
    .await;
}

/// An invoice of `customer` for 125.00, collected automatically and finalized; returns its id.
async fn charged_invoice(app: &TestApp, token: &str, customer: &str) -> Uuid {
    let made = app
        .call_ok(
            "POST",
            "/api/v1/invoices",
            token,
            &json!({
                "customer_id": customer,
                "currency": "eur",
                "due_date": "2031-01-31",
                "lines": [{"description": "Plan", "quantity": 1, "unit_amount_cents": 12_500}],
                "collection_method": "charge_automatically",
            }),
        )
        .await;
    assert_eq!(made["collection_method"], "charge_automatically");
    made["id"].as_str().unwrap().parse().unwrap()
}

/// One round of the charge job at `now`; returns how many attempts it handled.
async fn charge_round(pool: &PgPool, stripe: &LocalStripe, now: chrono::DateTime<Utc>) -> usize {
    charges::run_due(
        pool,
        Some(&client(stripe)),
        now,
        10,
        Duration::from_secs(30),
        Allowance::DEFAULT,
    )
    .await
    .unwrap()
}

async fn attempts(app: &TestApp, token: &str, invoice: Uuid) -> Vec<Value> {
    let got = app.get(token, &format!("/api/v1/invoices/{invoice}")).await;
    assert_eq!(got.status, 200);
    got.json()["charge_attempts"].as_array().unwrap().clone()
}

fn local() -> Config {
    Config {
        debit_settles_after: None,
        ..Config::default()
    }
}

/// The link is made once per key (a replay is the same page); the page saves one method, which the
/// owner sees with its brand and last four digits as the default; another org sees no such customer.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_customer_saves_a_card_once_and_the_owner_sees_it(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, local()).await;
    let (_, token) = app.api_client().await;
    let ada = customer(&app, &token, "Ada").await;
    let path = format!("/api/v1/customers/{ada}/payment_method_link");
    let first = app.post_to(&path, Some(&token), Some("link-1"), "").await;
    assert_eq!(
        first.status,
        201,
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    let again = app.post_to(&path, Some(&token), Some("link-1"), "").await;
    assert_eq!(again.status, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(first.json()["url"], again.json()["url"]);
    let url = first.json()["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with(&stripe.base), "{url}");

    stripe.save(&session_of(&url), "card_4242").await.unwrap();
    wait_until(
        &app.pool,
        "select count(*) from payment_methods",
        1,
        Duration::from_secs(20),
    )
    .await;
    // Stripe delivers again: the same event and the same method save nothing more.
    for event in stripe.events() {
        let (status, _) = app.deliver(&event.to_string()).await;
        assert_eq!(status, 200);
    }
    let listed = app
        .get(&token, &format!("/api/v1/customers/{ada}/payment_methods"))
        .await;
    assert_eq!(listed.status, 200);
    let data = listed.json()["data"].as_array().unwrap().clone();
    assert_eq!(data.len(), 1, "{data:?}");
    assert_eq!(data[0]["type"], "card");
    assert_eq!(data[0]["brand"], "visa");
    assert_eq!(data[0]["last4"], "4242");
    assert_eq!(data[0]["default"], true);

    // A debit saved later is the default; both are listed.
    save(&app, &stripe, &token, &ada, "sepa_3000").await;
    let data = app
        .get(&token, &format!("/api/v1/customers/{ada}/payment_methods"))
        .await
        .json()["data"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(data.len(), 2);
    assert_eq!(data[1]["type"], "sepa_debit");
    assert!(data[1]["mandate_reference"]
        .as_str()
        .is_some_and(|r| !r.is_empty()));
    assert_eq!(
        data[1]["mandate_status"], "active",
        "as Stripe's mandate says"
    );
    assert_eq!(
        (data[0]["default"].clone(), data[1]["default"].clone()),
        (json!(false), json!(true))
    );

    let (_, other) = app.api_client().await;
    assert_eq!(
        app.get(&other, &format!("/api/v1/customers/{ada}/payment_methods"))
            .await
            .status,
        404
    );
    let theirs = app.post_to(&path, Some(&other), Some("link-2"), "").await;
    assert_eq!(theirs.status, 404);
}

/// Finalized with `charge_automatically`, the invoice is charged once to the saved card: one
/// PaymentIntent under the attempt's key, one payment, the invoice paid; another round charges
/// nothing more.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_invoice_collected_automatically_is_charged_once(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, local()).await;
    let (_, token) = app.api_client().await;
    let ada = customer(&app, &token, "Ada").await;
    save(&app, &stripe, &token, &ada, "card_4242").await;
    let invoice = charged_invoice(&app, &token, &ada).await;

    // Two workers at once: one holds the attempt, the other finds it busy.
    let (a, b) = tokio::join!(
        charge_round(&app.pool, &stripe, Utc::now()),
        charge_round(&app.pool, &stripe, Utc::now())
    );
    assert_eq!(a + b, 1, "one worker charged the attempt");
    let paid = format!("select count(*) from invoices where id = '{invoice}' and status = 'paid'");
    wait_until(&app.pool, &paid, 1, Duration::from_secs(20)).await;
    assert_eq!(charge_round(&app.pool, &stripe, Utc::now()).await, 0);

    let intents = stripe.payment_intents();
    assert_eq!(intents.len(), 1);
    assert_eq!(intents[0]["metadata"]["invoice_id"], invoice.to_string());
    assert_eq!(intents[0]["metadata"]["attempt"], "1");
    assert_eq!(intents[0]["amount"], 12_500);
    let tried = attempts(&app, &token, invoice).await;
    assert_eq!(tried.len(), 1);
    assert_eq!(tried[0]["n"], 1);
    assert_eq!(tried[0]["state"], "succeeded");
    let payments: i64 = rows::scalar(
        &app.pool,
        &format!(
            "select count(*) from payments where invoice_id = '{invoice}' and status = 'succeeded'"
        ),
    )
    .await;
    assert_eq!(payments, 1);
    // The key names the attempt.
    let key: i64 = rows::scalar(
        &app.pool,
        &format!("select count(*) from claims where scope = 'job' and owner = 'charge:{invoice}' and key = '1' and status = 'done'"),
    )
    .await;
    assert_eq!(key, 1);
    // The charge is on the activity page and the invoice's history: one row, the job's.
    let activity: Vec<(String, String, String, String)> = sqlx::query_as(
        "select surface, owner, key, outcome from attempts where invoice_id = $1 and surface = 'job'",
    )
    .bind(invoice)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        activity,
        [(
            "job".to_owned(),
            format!("charge:{invoice}"),
            "1".to_owned(),
            "won".to_owned()
        )]
    );
}

/// A declined card is retried once on each of the org's days, then the invoice falls back to being
/// sent (its email queued once) and is no longer charged; reminders wait until then.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_declined_card_is_retried_on_the_org_days_then_sent(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, local()).await;
    let (org, token) = app.api_client().await;
    sqlx::query("update users set email_verified_at = now() where id in (select user_id from memberships where org_id = $1)")
        .bind(org.uuid())
        .execute(&app.pool)
        .await
        .unwrap();
    let set = app
        .call_ok(
            "PATCH",
            "/api/v1/org",
            &token,
            &json!({"retry_days": [2, 4]}),
        )
        .await;
    assert_eq!(set["retry_days"], json!([2, 4]));
    let bad = app
        .call(
            "PATCH",
            "/api/v1/org",
            &token,
            &json!({"retry_days": [4, 2]}),
        )
        .await;
    assert_eq!(bad.status, 422);
    let ada = customer(&app, &token, "Ada").await;
    save(&app, &stripe, &token, &ada, "card_0341").await;
    let invoice = charged_invoice(&app, &token, &ada).await;
    let start = Utc::now();

    assert_eq!(charge_round(&app.pool, &stripe, start).await, 1);
    let failed = |n: i64| {
        format!("select count(*) from charge_attempts where invoice_id = '{invoice}' and state = 'failed' and n <= {n}")
    };
    wait_until(&app.pool, &failed(1), 1, Duration::from_secs(20)).await;
    // The retry waits for its day.
    assert_eq!(
        charge_round(&app.pool, &stripe, start + chrono::TimeDelta::days(1)).await,
        0
    );
    assert_eq!(
        charge_round(&app.pool, &stripe, start + chrono::TimeDelta::days(2)).await,
        1
    );
    wait_until(&app.pool, &failed(2), 2, Duration::from_secs(20)).await;
    assert_eq!(
        charge_round(&app.pool, &stripe, start + chrono::TimeDelta::days(4)).await,
        1
    );
    wait_until(&app.pool, &failed(3), 3, Duration::from_secs(20)).await;
    assert_eq!(
        charge_round(&app.pool, &stripe, start + chrono::TimeDelta::days(30)).await,
        0
    );

    let tried = attempts(&app, &token, invoice).await;
    let states: Vec<_> = tried
        .iter()
        .map(|a| (a["n"].clone(), a["state"].clone()))
        .collect();
    assert_eq!(
        states,
        [
            (json!(1), json!("failed")),
            (json!(2), json!("failed")),
            (json!(3), json!("failed"))
        ]
    );
    assert_eq!(tried[0]["reason"], "Your card was declined.");
    assert_eq!(stripe.payment_intents().len(), 3, "one intent per attempt");
    let got = app
        .get(&token, &format!("/api/v1/invoices/{invoice}"))
        .await
        .json();
    assert_eq!(got["collection_method"], "send_invoice");
    assert_eq!(got["status"], "open");
    let emails: i64 = rows::scalar(
        &app.pool,
        &format!(
            "select count(*) from outbox where invoice_id = '{invoice}' and kind = 'invoice_email'"
        ),
    )
    .await;
    assert_eq!(emails, 1, "the invoice is sent once, with its Pay link");
}

/// A SEPA debit is processing for the days it takes (no second attempt meanwhile), then paid.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_sepa_debit_is_processing_then_paid(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, local()).await;
    let (_, token) = app.api_client().await;
    let ada = customer(&app, &token, "Ada").await;
    save(&app, &stripe, &token, &ada, "sepa_3000").await;
    let invoice = charged_invoice(&app, &token, &ada).await;
    assert_eq!(charge_round(&app.pool, &stripe, Utc::now()).await, 1);
    let processing = format!(
        "select count(*) from invoices where id = '{invoice}' and payment_state = 'processing'"
    );
    wait_until(&app.pool, &processing, 1, Duration::from_secs(20)).await;
    assert_eq!(
        attempts(&app, &token, invoice).await[0]["state"],
        "processing"
    );
    let now = app
        .call(
            "POST",
            &format!("/api/v1/invoices/{invoice}/charge"),
            &token,
            &Value::Null,
        )
        .await;
    assert_eq!(now.status, 409, "no second attempt while one is processing");

    let intent = stripe.payment_intents()[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    stripe.release_settlement(&intent).await.unwrap();
    let paid = format!("select count(*) from invoices where id = '{invoice}' and status = 'paid'");
    wait_until(&app.pool, &paid, 1, Duration::from_secs(20)).await;
    assert_eq!(
        attempts(&app, &token, invoice).await[0]["state"],
        "succeeded"
    );
}

/// "Charge now": 202 with the attempt's number, a replay the same answer; refused (409) when the
/// customer saved nothing.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn charge_now_queues_one_attempt_per_key(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, local()).await;
    let (_, token) = app.api_client().await;
    let ada = customer(&app, &token, "Ada").await;
    let made = app
        .call_ok(
            "POST",
            "/api/v1/invoices",
            &token,
            &json!({
                "customer_id": ada, "currency": "eur", "due_date": "2031-01-31",
                "lines": [{"description": "Plan", "quantity": 1, "unit_amount_cents": 5_000}],
            }),
        )
        .await;
    assert_eq!(made["collection_method"], "send_invoice");
    let id = made["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/invoices/{id}/charge");
    let none = app.post_to(&path, Some(&token), Some("c-0"), "").await;
    assert_eq!(none.status, 409);
    assert_eq!(
        none.json()["type"]
            .as_str()
            .map(|t| t.ends_with("no-payment-method")),
        Some(true)
    );

    save(&app, &stripe, &token, &ada, "card_4242").await;
    let first = app.post_to(&path, Some(&token), Some("c-1"), "").await;
    assert_eq!(
        first.status,
        202,
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    assert_eq!(first.json()["attempt"], 1);
    let again = app.post_to(&path, Some(&token), Some("c-1"), "").await;
    assert_eq!(again.status, 202);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    let other = app.post_to(&path, Some(&token), Some("c-2"), "").await;
    assert_eq!(other.status, 409, "one attempt is scheduled already");
    assert_eq!(charge_round(&app.pool, &stripe, Utc::now()).await, 1);
    let paid = format!("select count(*) from invoices where id = '{id}' and status = 'paid'");
    wait_until(&app.pool, &paid, 1, Duration::from_secs(20)).await;
    assert_eq!(stripe.payment_intents().len(), 1);
}

/// The worker dies after Stripe made the PaymentIntent and before it was recorded. The next worker,
/// once the lease is stale, sends the same key: Stripe answers with the intent it made. One
/// PaymentIntent, one payment, the invoice paid once.
#[tokio::test]
async fn a_crash_after_stripe_charges_once() {
    let db = TestDb::new("charge_crash").await;
    create_org(&db, "Acme", "charge@example.com").await;
    let key = cli(
        &db,
        &["admin", "create-api-key", "--email", "charge@example.com"],
    )
    .await;
    let key = key.trim().to_owned();
    let pool = db.pool().await;
    let stripe = LocalStripe::start(
        "127.0.0.1:0".parse().unwrap(),
        Config {
            webhook_secret: invoicer_core::state::DEV_WEBHOOK_SECRET.to_owned(),
            ..local()
        },
    )
    .await
    .unwrap();
    let env = [
        ("STRIPE_API_BASE", stripe.base.clone()),
        ("INVOICER_PUBLIC_URL", "http://invoicer.test".to_owned()),
        ("WORKER_LEASE_SECS", "2".to_owned()),
        ("SMTP_TIMEOUT_MS", "500".to_owned()),
    ];
    let server = Server::start_with(&db, "charge.after_stripe", &env).await;
    stripe.send_events_to(&format!("{}/webhooks/stripe", server.base));
    let http = reqwest::Client::new();
    let call = |path: &str, idem: &str, body: Value| {
        http.post(format!("{}{path}", server.base))
            .bearer_auth(&key)
            .header("idempotency-key", idem.to_owned())
            .json(&body)
            .send()
    };
    let ada: Value = call(
        "/api/v1/customers",
        "cust",
        json!({"name": "Ada", "email": "ada@example.com"}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let ada = ada["id"].as_str().unwrap().to_owned();
    let link: Value = call(
        &format!("/api/v1/customers/{ada}/payment_method_link"),
        "link",
        json!({}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    stripe
        .save(&session_of(link["url"].as_str().unwrap()), "card_4242")
        .await
        .unwrap();
    wait_until(
        &pool,
        "select count(*) from payment_methods",
        1,
        Duration::from_secs(30),
    )
    .await;
    let created = call(
        "/api/v1/invoices",
        "inv",
        json!({
            "customer_id": ada, "currency": "eur", "due_date": "2031-01-31",
            "lines": [{"description": "Plan", "quantity": 1, "unit_amount_cents": 12_500}],
            "collection_method": "charge_automatically",
        }),
    )
    .await
    .unwrap();
    assert_eq!(created.status(), 201);
    let invoice: Value = created.json().await.unwrap();
    let invoice = invoice["id"].as_str().unwrap().to_owned();
    assert_eq!(
        server.exit_code().await,
        Some(70),
        "died at charge.after_stripe"
    );
    assert_eq!(stripe.payment_intents().len(), 1, "Stripe made the intent");
    let recorded: i64 = rows::scalar(
        &pool,
        &format!("select count(*) from charge_attempts where invoice_id = '{invoice}' and payment_intent is not null and sent_at is not null and state <> 'succeeded'"),
    )
    .await;
    assert_eq!(recorded, 0, "we never recorded it");

    let server = Server::start_with(&db, "", &env).await;
    stripe.send_events_to(&format!("{}/webhooks/stripe", server.base));
    let paid = format!("select count(*) from invoices where id = '{invoice}' and status = 'paid'");
    wait_until(&pool, &paid, 1, Duration::from_secs(60)).await;
    let done =
        format!("select count(*) from claims where owner = 'charge:{invoice}' and status = 'done'");
    wait_until(&pool, &done, 1, Duration::from_secs(60)).await;
    assert!(stripe.intent_calls() >= 2, "the same key asked again");
    assert_eq!(
        stripe.payment_intents().len(),
        1,
        "and charged nothing more"
    );
    let stored: String = rows::scalar(
        &pool,
        &format!("select payment_intent from charge_attempts where invoice_id = '{invoice}'"),
    )
    .await;
    assert_eq!(stored, stripe.payment_intents()[0]["id"].as_str().unwrap());
    let payments: (i64, i64) = sqlx::query_as(
        "select count(*), sum(amount_cents)::bigint from payments where invoice_id = $1::uuid",
    )
    .bind(&invoice)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(payments, (1, 12_500));
    server.stop().await;
    db.finish(pool).await;
}

/// The customer's own invoice page: "Pay automatically next time" under one rendered key is one
/// setup page however often it is pressed; what they saved is listed there, and removed from there.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_customer_saves_and_removes_a_method_from_their_invoice_page(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, local()).await;
    let (_, token) = app.api_client().await;
    let ada = customer(&app, &token, "Ada").await;
    let made = app
        .call_ok(
            "POST",
            "/api/v1/invoices",
            &token,
            &json!({
                "customer_id": ada, "currency": "eur", "due_date": "2031-01-31",
                "lines": [{"description": "Plan", "quantity": 1, "unit_amount_cents": 5_000}],
            }),
        )
        .await;
    let page = made["public_url"].as_str().unwrap().to_owned();
    let http = crate::checkout::no_redirects();
    let html = http.get(&page).send().await.unwrap().text().await.unwrap();
    let key = html
        .split("name=\"key\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the page offers to save a method")
        .to_owned();
    let press = || {
        http.post(format!("{page}/save_method"))
            .form(&[("key", key.as_str())])
            .send()
    };
    let (a, b) = tokio::join!(press(), press());
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!((a.status().as_u16(), b.status().as_u16()), (303, 303));
    let location = |r: &reqwest::Response| r.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(
        location(&a),
        location(&b),
        "both presses land on one setup page"
    );
    assert!(location(&a).starts_with(&stripe.base));
    let bad = http
        .post(format!("{page}/save_method"))
        .form(&[("key", "not-a-key")])
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);

    stripe
        .save(&session_of(&location(&a)), "card_4242")
        .await
        .unwrap();
    wait_until(
        &app.pool,
        "select count(*) from payment_methods",
        1,
        Duration::from_secs(20),
    )
    .await;
    let html = http.get(&page).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("visa card ending 4242"), "{html}");
    let remove = html
        .split("action=\"")
        .filter_map(|rest| rest.split('"').next())
        .find(|action| action.ends_with("/remove"))
        .expect("a remove button")
        .to_owned();
    // Another invoice's page cannot remove it.
    let other = http
        .post(format!(
            "{}/i/{}/methods/{}/remove",
            app.base,
            "0".repeat(64),
            Uuid::new_v4()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
    let removed = http
        .post(format!("{}{remove}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status(), 303);
    let left: i64 = rows::scalar(
        &app.pool,
        "select count(*) from payment_methods where removed_at is null",
    )
    .await;
    assert_eq!(left, 0);
    let html = http.get(&page).send().await.unwrap().text().await.unwrap();
    assert!(!html.contains("visa card ending 4242"));

    // Removed here, it is let go at Stripe too: one call by a worker, then it is no longer the
    // customer's there, and a second drain calls nothing.
    let (pm, queued): (String, i64) = sqlx::query_as(
        "select m.provider_method, (select count(*) from outbox where kind = 'detach_payment_method') \
         from payment_methods m",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(queued, 1);
    let stripe_client = client(&stripe);
    let before = stripe_client.retrieve_payment_method(&pm).await.unwrap();
    assert!(before.customer.is_some(), "attached until the worker runs");
    crate::checkout::drain_calls(&app, &stripe).await;
    let after = stripe_client.retrieve_payment_method(&pm).await.unwrap();
    assert_eq!(after.customer, None, "detached at Stripe");
    let detached: i64 = rows::scalar(
        &app.pool,
        "select count(*) from payment_methods where detached_at is not null",
    )
    .await;
    assert_eq!(detached, 1);
    let sent: i64 = rows::scalar(
        &app.pool,
        "select count(*) from outbox where kind = 'detach_payment_method' and sent_at is not null",
    )
    .await;
    assert_eq!(sent, 1);
}

/// The owner's "Email a link to save a payment method": two presses of one rendered button, sent at
/// once, are one claim and one email with one setup page; a new rendering's press is another.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_owners_link_button_emails_once_per_rendered_button(pool: PgPool) {
    use crate::common::team;

    let (app, stripe) = with_stripe(pool, local()).await;
    let org = team::org(&app.pool).await;
    let http = team::browser(&app, &org.owner_email).await;
    let ada = Uuid::now_v7();
    sqlx::query(
        "insert into customers (id, org_id, name, email) values ($1, $2, 'Ada', 'ada@example.com')",
    )
    .bind(ada)
    .bind(org.id)
    .execute(&app.pool)
    .await
    .unwrap();
    let press = |key: Uuid| {
        let form = team::form(&[
            ("customer_id", ada.to_string()),
            ("idempotency_key", key.to_string()),
        ]);
        let (http, app) = (&http, &app);
        async move { team::rpc(http, app, "send_payment_method_link", &form).await }
    };
    let key = model::form_key(org.id);
    let (a, b) = tokio::join!(press(key), press(key));
    assert!(a < 400 && b < 400, "{a} {b}");
    let emails = "select count(*) from outbox where kind = 'payment_method_link'";
    assert_eq!(rows::scalar::<i64>(&app.pool, emails).await, 1);
    let claims: i64 = rows::scalar(
        &app.pool,
        "select count(*) from claims where scope = 'form' and owner like '%send_payment_method_link%'",
    )
    .await;
    assert_eq!(claims, 1);
    assert_eq!(stripe.session_count(), 1, "one setup page for the button");
    assert!(press(model::form_key(org.id)).await < 400);
    assert_eq!(rows::scalar::<i64>(&app.pool, emails).await, 2);
    // A key rendered for another org is refused before anything is asked of Stripe.
    let other = team::org(&app.pool).await;
    assert_eq!(press(model::form_key(other.id)).await, 400);
    assert_eq!(stripe.session_count(), 2);
}

/// Late fees: once an invoice is overdue by each of the org's steps, one fee invoice per step (kind
/// `late_fee`, naming the overdue invoice), sent like any invoice; another round issues nothing
/// more; none for a paid invoice, nor for a step long past when it is first looked at.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn late_fees_are_issued_once_per_step(pool: PgPool) {
    use invoicer_core::jobs::late_fees;
    let app = TestApp::spawn(pool).await;
    let (org, token) = app.api_client().await;
    sqlx::query("update users set email_verified_at = now() where id in (select user_id from memberships where org_id = $1)")
        .bind(org.uuid())
        .execute(&app.pool)
        .await
        .unwrap();
    let bad = app
        .call(
            "PATCH",
            "/api/v1/org",
            &token,
            &json!({"late_fees": {"kind": "percent", "percent": 0, "after_days": [7]}}),
        )
        .await;
    assert_eq!(bad.status, 422);
    let set = app
        .call_ok(
            "PATCH",
            "/api/v1/org",
            &token,
            &json!({"late_fees": {"kind": "fixed", "amount_cents": 500, "after_days": [7, 14]}}),
        )
        .await;
    assert_eq!(set["late_fees"]["after_days"], json!([7, 14]));
    let invoice = |due: &str| {
        json!({
            "customer_name": "Late Co", "customer_email": "late@example.com", "currency": "eur",
            "due_date": due,
            "lines": [{"description": "Work", "quantity": 1, "unit_amount_cents": 10_000}],
        })
    };
    let late = app
        .call_ok("POST", "/api/v1/invoices", &token, &invoice("2030-01-10"))
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let paid = app
        .call_ok("POST", "/api/v1/invoices", &token, &invoice("2030-01-10"))
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.call_ok(
        "POST",
        &format!("/api/v1/invoices/{paid}/payments"),
        &token,
        &json!({"amount_cents": 10_000, "method": "bank_transfer", "paid_on": chrono::Utc::now().date_naive().to_string()}),
    )
    .await;
    let at = |day: &str| {
        format!("{day}T12:00:00Z")
            .parse::<chrono::DateTime<Utc>>()
            .unwrap()
    };
    let round = |day: &'static str| {
        let pool = app.pool.clone();
        async move {
            late_fees::run_due(
                &pool,
                at(day),
                10,
                "http://invoicer.test",
                Allowance::DEFAULT,
            )
            .await
            .unwrap()
        }
    };
    assert_eq!(round("2030-01-16").await, 0, "not yet a week overdue");
    assert_eq!(
        round("2030-01-17").await,
        1,
        "the first step, for the unpaid one only"
    );
    assert_eq!(round("2030-01-17").await, 0, "once");
    assert_eq!(round("2030-01-24").await, 1, "the second step");
    assert_eq!(round("2030-03-01").await, 0, "no third");
    let fees: Vec<(String, i16, i64, String)> = sqlx::query_as(
        "select fee_for::text, fee_step, total_cents, status from invoices where kind = 'late_fee' order by fee_step",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        fees,
        [
            (late.clone(), 1, 500, "open".to_owned()),
            (late.clone(), 2, 500, "open".to_owned())
        ]
    );
    let emails: i64 = rows::scalar(
        &app.pool,
        "select count(*) from outbox o join invoices i on i.id = o.invoice_id where i.kind = 'late_fee' and o.kind = 'invoice_email'",
    )
    .await;
    assert_eq!(emails, 2, "each fee is sent");
    let fee = app.get(&token, "/api/v1/invoices?limit=1").await.json()["data"][0].clone();
    assert_eq!(fee["kind"], "late_fee");
    assert_eq!(fee["fee_for"], late.as_str());

    // Set while an invoice is long overdue: its passed steps are not charged late.
    let old = app
        .call_ok("POST", "/api/v1/invoices", &token, &invoice("2030-01-01"))
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(round("2030-03-01").await, 0, "{old}: both steps long past");
}

/// Stripe's events about one charge (processing, requires_action, payment_failed, succeeded, any
/// subset), each delivered one to three times, shuffled, two at a time at once, end where the same
/// set delivered once each in rank order ends on a second invoice (a differential oracle): the
/// attempt in the highest state reported, one payment at most, the invoice the same.
/// `CHARGE_ORDER_CASES` sets the number of cases (default 40); `CHARGE_ORDER_SEED` replays a run.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn charge_events_in_any_order_and_repeated_end_the_same(pool: PgPool) {
    use invoicer_core::payments::stripe::standin;
    use model::collection::ChargeState;
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config as RunnerConfig, TestRng, TestRunner};

    const STATES: [ChargeState; 4] = [
        ChargeState::Processing,
        ChargeState::RequiresAction,
        ChargeState::Failed,
        ChargeState::Succeeded,
    ];
    let cases: u32 = std::env::var("CHARGE_ORDER_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(40);
    let seed: u64 = std::env::var("CHARGE_ORDER_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| u64::from(Uuid::new_v4().as_u128() as u32));
    eprintln!("charge events: {cases} cases, CHARGE_ORDER_SEED={seed} replays them");
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&seed.to_le_bytes());
    }
    let rng = TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(RunnerConfig::default(), rng);
    // Which states are reported, how many times each is delivered, and the delivery order.
    let strategy = (
        proptest::sample::subsequence(STATES.to_vec(), 1..=4),
        proptest::collection::vec(1..=3usize, 4),
        Just(()).prop_perturb(|_, mut rng| rng.next_u64()),
    );
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let invoice = || async {
        let made = app
            .call_ok(
                "POST",
                "/api/v1/invoices",
                &token,
                &json!({
                    "customer_name": "Order Co", "customer_email": "order@example.com",
                    "currency": "eur", "due_date": "2031-01-31",
                    "lines": [{"description": "Plan", "quantity": 1, "unit_amount_cents": 10_000}],
                }),
            )
            .await;
        let id: Uuid = made["id"].as_str().unwrap().parse().unwrap();
        sqlx::query(
            "insert into charge_attempts (invoice_id, n, org_id, due_at) \
             select id, 1, org_id, now() from invoices where id = $1",
        )
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
        id
    };
    let event = |invoice: Uuid, intent: &str, state: ChargeState, id: &str| {
        let kind = match state {
            ChargeState::Processing => "payment_intent.processing",
            ChargeState::RequiresAction => "payment_intent.requires_action",
            ChargeState::Failed => "payment_intent.payment_failed",
            ChargeState::Succeeded => "payment_intent.succeeded",
        };
        let object = json!({
            "id": intent, "object": "payment_intent", "amount": 10_000, "currency": "eur",
            "metadata": {"invoice_id": invoice.to_string(), "attempt": "1"},
            "last_payment_error": (state == ChargeState::Failed)
                .then(|| json!({"code": "card_declined", "message": "Your card was declined."})),
            "next_action": (state == ChargeState::RequiresAction)
                .then(|| json!({"type": "redirect_to_url", "redirect_to_url": {"url": "https://stripe.test/authenticate"}})),
        });
        standin::event(id, kind, false, object).to_string()
    };
    let state_of = |invoice: Uuid| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_as::<_, (String, String, String, i64, i64)>(
                "select a.state, i.status, i.payment_state, i.amount_paid_cents, \
                        (select count(*) from payments p where p.invoice_id = i.id) \
                 from invoices i join charge_attempts a on a.invoice_id = i.id and a.n = 1 \
                 where i.id = $1",
            )
            .bind(invoice)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    for case in 0..cases {
        let (reported, copies, shuffle) = strategy.new_tree(&mut runner).unwrap().current();
        let (chaos, oracle) = (invoice().await, invoice().await);
        let (chaos_intent, oracle_intent) =
            (standin::payment_intent_id(), standin::payment_intent_id());
        let mut deliveries = Vec::new();
        for (i, state) in reported.iter().enumerate() {
            let payload = event(chaos, &chaos_intent, *state, &standin::event_id());
            deliveries.extend(std::iter::repeat_n(payload, copies[i]));
        }
        // Fisher-Yates with a xorshift of the case's seed.
        let mut x = shuffle | 1;
        for i in (1..deliveries.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            deliveries.swap(i, (x % (i as u64 + 1)) as usize);
        }
        for pair in deliveries.chunks(2) {
            let answers = futures::future::join_all(pair.iter().map(|p| app.deliver(p))).await;
            for (status, body) in answers {
                assert_eq!(status, 200, "case {case} (seed {seed}): {body}");
            }
        }
        let mut ranked = reported.clone();
        ranked.sort();
        for state in ranked {
            let (status, body) = app
                .deliver(&event(oracle, &oracle_intent, state, &standin::event_id()))
                .await;
            assert_eq!(status, 200, "{body}");
        }
        let highest = reported.iter().max().unwrap().as_str().to_owned();
        let (got, want) = (state_of(chaos).await, state_of(oracle).await);
        assert_eq!(
            got, want,
            "case {case} (seed {seed}): {reported:?} × {copies:?}"
        );
        assert_eq!(
            got.0, highest,
            "case {case} (seed {seed}): the highest state wins"
        );
        assert!(got.4 <= 1, "case {case} (seed {seed}): one payment at most");
    }
}

/// A card that needs its customer: the attempt waits (`requires_action`), the customer is emailed
/// Stripe's page to confirm it, once; confirmed there, the invoice is paid.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_charge_that_needs_the_customer_emails_them_and_is_paid_once_confirmed(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, local()).await;
    let (org, token) = app.api_client().await;
    sqlx::query("update users set email_verified_at = now() where id in (select user_id from memberships where org_id = $1)")
        .bind(org.uuid())
        .execute(&app.pool)
        .await
        .unwrap();
    let ada = customer(&app, &token, "Ada").await;
    save(&app, &stripe, &token, &ada, "card_3155").await;
    let invoice = charged_invoice(&app, &token, &ada).await;
    assert_eq!(charge_round(&app.pool, &stripe, Utc::now()).await, 1);
    let waiting = format!(
        "select count(*) from charge_attempts where invoice_id = '{invoice}' and state = 'requires_action'"
    );
    wait_until(&app.pool, &waiting, 1, Duration::from_secs(20)).await;
    let asks: Vec<Value> = sqlx::query_scalar(
        "select payload from outbox where invoice_id = $1 and kind = 'charge_action'",
    )
    .bind(invoice)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(asks.len(), 1, "the customer is asked once: {asks:?}");
    let intent = stripe.payment_intents()[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        asks[0]["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/authenticate/{intent}")),
        "{asks:?}"
    );
    assert_eq!(asks[0]["to"], "ada@example.com");
    stripe.authenticate(&intent, "complete").await.unwrap();
    let paid = format!("select count(*) from invoices where id = '{invoice}' and status = 'paid'");
    wait_until(&app.pool, &paid, 1, Duration::from_secs(20)).await;
    assert_eq!(
        attempts(&app, &token, invoice).await[0]["state"],
        "succeeded"
    );
    assert_eq!(stripe.payment_intents().len(), 1);
}

/// A schedule whose template is collected automatically: each run's invoice is charged.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_schedule_collected_automatically_charges_each_run(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, local()).await;
    let (_, token) = app.api_client().await;
    let ada = customer(&app, &token, "Ada").await;
    save(&app, &stripe, &token, &ada, "card_4242").await;
    let schedule = app
        .call_ok(
            "POST",
            "/api/v1/schedules",
            &token,
            &json!({
                "customer_id": ada, "currency": "eur", "payment_terms_days": 14,
                "lines": [{"description": "Retainer", "quantity": 1, "unit_amount_cents": 20_000}],
                "collection_method": "charge_automatically",
                "interval": "month", "start_date": Utc::now().date_naive().to_string(),
                "action": "finalize",
            }),
        )
        .await;
    assert_eq!(
        schedule["template"]["collection_method"],
        "charge_automatically"
    );
    let ran = invoicer_core::jobs::schedules::run::run_due(
        &app.pool,
        Utc::now() + chrono::TimeDelta::hours(1),
        10,
        "http://invoicer.test",
        Allowance::DEFAULT,
    )
    .await
    .unwrap();
    assert_eq!(ran, 1);
    let invoice: Uuid = rows::scalar(
        &app.pool,
        "select id from invoices where source_key like 'schedule:%'",
    )
    .await;
    assert_eq!(charge_round(&app.pool, &stripe, Utc::now()).await, 1);
    let paid = format!("select count(*) from invoices where id = '{invoice}' and status = 'paid'");
    wait_until(&app.pool, &paid, 1, Duration::from_secs(20)).await;
}

/// The owner stops the charges of one invoice: its scheduled retry is canceled by the worker that
/// picks it, nothing more is charged, and the invoice is collected by sending it.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn stopping_the_charges_cancels_the_retries(pool: PgPool) {
    let (app, stripe) = with_stripe(pool, local()).await;
    let (_, token) = app.api_client().await;
    let ada = customer(&app, &token, "Ada").await;
    save(&app, &stripe, &token, &ada, "card_0341").await;
    let invoice = charged_invoice(&app, &token, &ada).await;
    let start = Utc::now();
    assert_eq!(charge_round(&app.pool, &stripe, start).await, 1);
    let retry = format!(
        "select count(*) from charge_attempts where invoice_id = '{invoice}' and n = 2 and state = 'scheduled'"
    );
    wait_until(&app.pool, &retry, 1, Duration::from_secs(20)).await;
    let stopped = app
        .call_ok(
            "POST",
            &format!("/api/v1/invoices/{invoice}/stop_charges"),
            &token,
            &Value::Null,
        )
        .await;
    assert_eq!(stopped["collection_method"], "send_invoice");
    let again = app
        .call(
            "POST",
            &format!("/api/v1/invoices/{invoice}/stop_charges"),
            &token,
            &Value::Null,
        )
        .await;
    assert_eq!(again.status, 409, "nothing left to stop");
    // The retry's day comes: the worker cancels it instead of charging.
    assert_eq!(
        charge_round(&app.pool, &stripe, start + chrono::TimeDelta::days(30)).await,
        1
    );
    let canceled = format!(
        "select count(*) from charge_attempts where invoice_id = '{invoice}' and n = 2 and state = 'canceled'"
    );
    wait_until(&app.pool, &canceled, 1, Duration::from_secs(5)).await;
    assert_eq!(stripe.payment_intents().len(), 1, "nothing more charged");
    assert_eq!(attempts(&app, &token, invoice).await.len(), 1);
}

/// The settings page's "Collecting automatically": retry days and late fees saved once per
/// rendered form (two presses at once: one claim), shown again as saved; a fee's tax rate must be
/// one of the org's that is not archived, and a refused save changes nothing.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_owner_sets_retry_days_and_late_fees_once_per_form(pool: PgPool) {
    use crate::common::{pages, team};

    let app = TestApp::spawn(pool).await;
    let org = team::org(&app.pool).await;
    let http = team::browser(&app, &org.owner_email).await;
    let rate = |name: &'static str, archived: bool| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, Uuid>(
                "insert into tax_rates (id, org_id, name, percent_milli, category, exemption_reason, archived_at)
                 values (gen_random_uuid(), $1, $2, 0, 'O', 'Outside the scope of VAT',
                         case when $3 then now() end) returning id",
            )
            .bind(org.id)
            .bind(name)
            .bind(archived)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let (outside, archived) = (rate("Interest", false).await, rate("Old", true).await);
    let settings = format!("{}/settings/org", app.base);
    let html = pages::text(&http, settings.clone()).await;
    let form_at = html
        .find("collection-settings")
        .expect("the collection form");
    let marker = "name=\"idempotency_key\" value=\"";
    let at = form_at + html[form_at..].find(marker).unwrap() + marker.len();
    let key = html[at..at + 36].to_owned();
    assert!(
        html[form_at..].contains("value=\"3, 5, 7\""),
        "the default days are shown"
    );
    assert!(
        !html[form_at..].contains(&archived.to_string()),
        "no archived rate offered"
    );
    let submit = |rate: Uuid, fee: &'static str| {
        let form = team::form(&[
            ("idempotency_key", key.clone()),
            ("collection[retry_days]", "2, 4".into()),
            ("collection[fee_kind]", "fixed".into()),
            ("collection[fee]", fee.into()),
            ("collection[fee_after_days]", "10, 20".into()),
            ("collection[fee_tax_rate_id]", rate.to_string()),
        ]);
        let (http, app) = (&http, &app);
        async move { team::rpc(http, app, "save_collection", &form).await }
    };
    let saved = || async {
        invoicer_core::accounts::orgs::collection(&mut app.pool.acquire().await.unwrap(), org.id)
            .await
            .unwrap()
    };
    let before = saved().await;

    // Refused, nothing saved: an archived rate, a fee that is not an amount.
    assert_eq!(submit(archived, "5.00").await, 422);
    assert_eq!(submit(outside, "five").await, 422);
    assert_eq!(saved().await, before);

    let (a, b) = tokio::join!(submit(outside, "5.00"), submit(outside, "5.00"));
    assert!(a < 400 && b < 400, "{a} {b}");
    let (days, fees) = saved().await;
    assert_eq!(days.0, vec![2, 4]);
    assert_eq!(
        fees.amount,
        model::collection::LateFeeAmount::Fixed { amount_cents: 500 }
    );
    assert_eq!(
        (fees.after_days, fees.tax_rate_id),
        (vec![10, 20], Some(outside))
    );
    let claims: i64 = rows::scalar(
        &app.pool,
        "select count(*) from claims where scope = 'form' and owner like '%/edit_collection'",
    )
    .await;
    assert_eq!(claims, 1);
    // The same rendered form again is the same attempt: its answer, not a second save; changed,
    // it is refused (a new rendering is a new attempt).
    assert!(submit(outside, "5.00").await < 400);
    assert_eq!(submit(outside, "9.00").await, 400);
    assert_eq!(saved().await.1.amount, fees.amount);

    let html = pages::text(&http, settings).await;
    let form = &html[html.find("collection-settings").unwrap()..];
    assert!(form.contains("value=\"2, 4\"") && form.contains("value=\"5.00\""));
    assert!(
        form.contains(&format!("value=\"{outside}\" selected")),
        "{form}"
    );
}

//! The server as an attacker on the internet meets it: every refusal is checked for its status and
//! for having written nothing, and the costly paths for what they cost (counted, not timed).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::pages;
use crate::common::rows::{execute, new_owner, scalar, scalars};
use crate::common::served::{chrono_now, invoice_body, TestApp, SECRET};
use crate::common::{self, TestDb};
use invoicer_core::stripe::signature;
use lab::harness::ServerProcess;
use sqlx::PgPool;
use uuid::Uuid;

/// A browser-like client of `base`: keeps cookies, does not follow redirects.
fn browser() -> reqwest::Client {
    common::client()
}

async fn signup_and_login(app: &TestApp, http: &reqwest::Client) -> String {
    let (email, _) = new_owner(&app.pool, "Sec Co").await;
    common::login(http, &app.base, &email, "correct horse").await;
    email
}

async fn post_login(
    http: &reqwest::Client,
    base: &str,
    email: &str,
    password: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    // As the login form posts without JavaScript: back to the page it came from on an error.
    let mut req = http
        .post(format!("{base}/rpc/login"))
        .header("accept", "text/html")
        .header("referer", format!("{base}/login"))
        .form(&[("email", email), ("password", password)]);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

fn location(res: &reqwest::Response) -> String {
    res.headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

// --- 1. Signatures: refusals cost at most one MAC per secret ------------------------------------

/// The sum over all labels of the Prometheus series `name` of a server process (0 before it exists).
async fn metric(base: &str, name: &str) -> u64 {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// MACs computed by the webhook's signature check.
async fn macs(base: &str) -> u64 {
    metric(base, "invoicer_webhook_signature_macs_total").await
}

async fn spam(http: &reqwest::Client, base: &str, header: &str, body: &[u8]) -> (u16, String) {
    let res = http
        .post(format!("{base}/webhooks/stripe"))
        .header("stripe-signature", header)
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

#[tokio::test]
async fn signature_spam_is_refused_for_at_most_one_mac_per_secret() {
    let db = TestDb::new("sigspam").await;
    let server = common::Server::start(&db, "").await;
    let http = reqwest::Client::new();
    let body = vec![b'x'; 1024 * 1024 - 1];
    let now = chrono_now();

    // Tens of thousands of empty candidates in a ~160 KB header: refused on its length, no MAC.
    let flood = format!("t={now}{}", ",v1=".repeat(40_000));
    let (status, text) = spam(&http, &server.base, &flood, &body).await;
    assert_eq!((status, text.contains("too long")), (400, true), "{text}");
    // Within the length: too many v1 entries.
    let zeros = "0".repeat(64);
    let five = format!("t={now}{}", format!(",v1={zeros}").repeat(5));
    assert_eq!(spam(&http, &server.base, &five, &body).await.0, 400);
    // Stale: refused before any MAC.
    let stale = format!("t={},v1={zeros}", now - 10_000);
    let (status, text) = spam(&http, &server.base, &stale, &body).await;
    assert_eq!(
        (status, text.as_str()),
        (400, "timestamp outside the tolerance")
    );
    // Not hex, or not 64 digits: never worth a MAC.
    let junk = format!("t={now},v1=,v1=zz,v1={}", "a".repeat(63));
    assert_eq!(spam(&http, &server.base, &junk, &body).await.0, 400);
    assert_eq!(macs(&server.base).await, 0, "no MAC for any of these");

    // Four well-formed wrong candidates under the one configured secret: one MAC.
    let four = format!("t={now}{}", format!(",v1={zeros}").repeat(4));
    let (status, text) = spam(&http, &server.base, &four, &body).await;
    assert_eq!(
        (status, text.as_str()),
        (400, "no signature matches the payload")
    );
    assert_eq!(macs(&server.base).await, 1);

    let pool = db.pool().await;
    let stored: i64 = scalar(&pool, "select count(*) from stripe_events").await;
    assert_eq!(stored, 0, "nothing written");
    pool.close().await;
    server.stop().await;
    db.cleanup().await;
}

/// Webhook deliveries refused on their signature, all reasons.
async fn refused_signatures(base: &str) -> u64 {
    metric(base, "invoicer_webhook_signature_failures_total").await
}

/// Two floods at once (signature spam with 1 MiB bodies, and password guessing that keeps every
/// hashing slot busy) while a user checks health and submits a form: both keep answering.
#[tokio::test]
async fn floods_leave_health_and_a_form_submission_answering() {
    let db = TestDb::new("floods").await;
    common::create_org(&db, "Busy", "busy@example.com").await;
    let server = common::Server::start(&db, "").await;
    let base = server.base.clone();
    let user = browser();
    common::login(&user, &base, "busy@example.com", "correct horse").await;

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut floods = Vec::new();
    for n in 0..12 {
        let (base, stop) = (base.clone(), stop.clone());
        floods.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let body = vec![b'x'; 1024 * 1024 - 1];
            let (mut sent, mut wrong) = (0u32, 0u32);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let header = format!("t={}{}", chrono_now(), ",v1=".repeat(40_000));
                if n % 2 == 0 {
                    let _ = http
                        .post(format!("{base}/webhooks/stripe"))
                        .header("stripe-signature", header)
                        .body(body.clone())
                        .send()
                        .await;
                } else {
                    let answer = http
                        .post(format!("{base}/rpc/login"))
                        .form(&[("email", "busy@example.com"), ("password", "wrong guess")])
                        .send()
                        .await;
                    // A hashed and refused guess (not a throttled or busy one).
                    if answer.is_ok_and(|a| a.status() == 400) {
                        wrong += 1;
                    }
                }
                sent += 1;
            }
            (sent, wrong)
        }));
    }
    // The floods are under way once the server has refused some of their requests (refusals of
    // unknown senders are counted, not stored).
    let pool = db.pool().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while refused_signatures(&base).await < 20 {
        assert!(Instant::now() < deadline, "the floods did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let probe = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    for _ in 0..5 {
        let started = Instant::now();
        let res = pages::get(&probe, format!("{base}/healthz")).await;
        assert_eq!(res.status(), 200);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
    let key = Uuid::new_v4().to_string();
    let res = tokio::time::timeout(
        Duration::from_secs(20),
        user.post(format!("{base}/rpc/create_invoice"))
            .form(&common::invoice_form(&key, "During the flood"))
            .send(),
    )
    .await
    .expect("the form answers during the floods")
    .unwrap();
    assert!(res.status().as_u16() < 400, "{}", res.status());
    let created: i64 = scalar(
        &pool,
        "select count(*) from invoices where customer_name = 'During the flood'",
    )
    .await;
    assert_eq!(created, 1);

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut total, mut wrong) = (0, 0);
    for f in floods {
        let (sent, refused) = f.await.unwrap();
        total += sent;
        wrong += refused;
    }
    assert!(total > 12, "the floods ran ({total} requests)");
    // The guesses reached the hashing (the harness lifts the login allowances): more of them were
    // hashed and refused than there are cores, so the hashing slots were really contended.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as u32;
    assert!(wrong > cores, "{wrong} guesses were hashed and refused");
    pool.close().await;
    server.stop().await;
    db.cleanup().await;
}

// --- 2. Redirects ----------------------------------------------------------------------------

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn next_leads_only_to_paths_on_this_site_and_no_input_breaks_a_redirect(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (email, _) = new_owner(&app.pool, "R").await;
    for (next, expected) in [
        ("/invoices/new", "/invoices/new"),
        ("/\t/evil.example", "/dashboard"),
        ("//evil.example", "/dashboard"),
        ("/\\evil.example", "/dashboard"),
        ("https://evil.example", "/dashboard"),
        ("/a\r\nSet-Cookie: x=1", "/dashboard"),
    ] {
        let http = browser();
        let res = pages::submit(
            &http,
            format!("{}/rpc/login", app.base),
            &[
                ("email", email.as_str()),
                ("password", "correct horse"),
                ("next", next),
            ],
        )
        .await;
        assert_eq!(res.status(), 302, "{next:?}");
        assert_eq!(location(&res), expected, "{next:?}");
    }
    // The Retry button's invoice id goes into a Location header only as a UUID.
    let http = browser();
    signup_and_login(&app, &http).await;
    let res = pages::post_form(
        &http,
        format!("{}/rpc/retry_email", app.base),
        &[
            ("id", Uuid::new_v4().to_string().as_str()),
            ("invoice_id", "x\r\nSet-Cookie: y=1"),
        ],
    )
    .await;
    assert_eq!(res.status(), 404);
}

// --- 3. CSRF and sessions ---------------------------------------------------------------------

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn cross_origin_posts_are_refused_and_same_origin_ones_work(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (email, _) = new_owner(&app.pool, "C").await;
    let base = app.base.clone();
    // Login CSRF: another site's auto-submitted form, or a sibling subdomain's.
    for headers in [
        vec![("origin", "https://evil.example")],
        vec![("sec-fetch-site", "cross-site")],
        vec![
            ("sec-fetch-site", "same-site"),
            ("origin", "https://sub.invoicer.example"),
        ],
        vec![("origin", "null")],
    ] {
        let http = browser();
        let res = post_login(&http, &base, &email, "correct horse", &headers).await;
        assert_eq!(res.status(), 403, "{headers:?}");
        assert!(
            res.headers().get("set-cookie").is_none(),
            "no session for {headers:?}"
        );
    }
    // The same form from our own pages, with or without JavaScript, and a non-browser client.
    for headers in [
        vec![("sec-fetch-site", "same-origin"), ("origin", base.as_str())],
        vec![("origin", base.as_str())],
        vec![],
    ] {
        let http = browser();
        let res = post_login(&http, &base, &email, "correct horse", &headers).await;
        assert_eq!(
            (res.status().as_u16(), location(&res)),
            (302, "/dashboard".into()),
            "{headers:?}"
        );
    }
    // Logout is a POST, and only from our own pages.
    let http = browser();
    common::login(&http, &base, &email, "correct horse").await;
    let get = pages::get(&http, format!("{base}/logout")).await;
    assert_eq!(get.status(), 405);
    let forged = http
        .post(format!("{base}/logout"))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    let still_in = pages::get(&http, format!("{base}/invoices")).await;
    assert_eq!(still_in.status(), 200, "still logged in");
    let out = http
        .post(format!("{base}/logout"))
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 303);
    let after = pages::get(&http, format!("{base}/invoices")).await;
    assert_eq!(after.status(), 303, "logged out");
}

fn session_cookie(res: &reqwest::Response) -> Option<String> {
    res.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("invoicer_session="))
        .map(|v| v.split(';').next().unwrap().to_owned())
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn every_login_gets_a_new_session_id(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (email, _) = new_owner(&app.pool, "S").await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let first = post_login(&http, &app.base, &email, "correct horse", &[]).await;
    let first = session_cookie(&first).expect("a session");
    // Logging in again over the logged-in session (as after a planted cookie) changes the id.
    let res = http
        .post(format!("{}/rpc/login", app.base))
        .header("accept", "text/html")
        .header("cookie", &first)
        .form(&[("email", email.as_str()), ("password", "correct horse")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302);
    let second = session_cookie(&res).expect("a new cookie");
    assert_ne!(first, second);
    let with_old = http
        .get(format!("{}/invoices", app.base))
        .header("cookie", &first)
        .send()
        .await
        .unwrap();
    assert_eq!(
        with_old.status(),
        303,
        "the old id no longer logs anyone in"
    );
    let with_new = http
        .get(format!("{}/invoices", app.base))
        .header("cookie", &second)
        .send()
        .await
        .unwrap();
    assert_eq!(with_new.status(), 200);
}

// --- 4. Throttles ------------------------------------------------------------------------------

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn failed_logins_are_throttled_per_account_and_address_not_for_the_owner_elsewhere(
    pool: PgPool,
) {
    let app = TestApp::spawn_with(pool, |s| {
        s.limits.logins_per_account_minute = 3;
        s.limits.logins_per_address_minute = 6;
        s.client_ip_header = Some("x-forwarded-for".into());
    })
    .await;
    let (email, _) = new_owner(&app.pool, "T").await;
    let guesser = [("x-forwarded-for", "203.0.113.7")];
    let http = browser();
    for _ in 0..3 {
        let res = post_login(&http, &app.base, &email, "wrong", &guesser).await;
        assert_eq!(res.status(), 302, "a wrong password goes back to the form");
        assert!(location(&res).contains("__err="));
    }
    // The fourth guess (even a right one) from that address waits.
    let res = post_login(&http, &app.base, &email, "correct horse", &guesser).await;
    let retry: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=20).contains(&retry), "{retry}");
    assert!(location(&res).contains("__err="), "the page says why");
    // The same request from JavaScript gets the status itself.
    let res = http
        .post(format!("{}/rpc/login", app.base))
        .header("x-forwarded-for", "203.0.113.7")
        .form(&[("email", email.as_str()), ("password", "correct horse")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 429);
    assert!(res.headers().get("retry-after").is_some());
    assert!(res.text().await.unwrap().contains("Throttled"));
    // The owner, elsewhere, is not slowed down by the guesser.
    let owner = browser();
    let res = post_login(
        &owner,
        &app.base,
        &email,
        "correct horse",
        &[("x-forwarded-for", "198.51.100.2")],
    )
    .await;
    assert_eq!(location(&res), "/dashboard");
    // Every try counts against the address, refused ones too (5 so far): the sixth, for another
    // account, is its last, and then the address waits whatever the account.
    let res = post_login(&http, &app.base, "other@example.com", "x", &guesser).await;
    assert!(
        res.headers().get("retry-after").is_none(),
        "sixth from the address"
    );
    let res = post_login(&http, &app.base, "third@example.com", "x", &guesser).await;
    assert!(
        res.headers().get("retry-after").is_some(),
        "seventh from the address"
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn signups_are_throttled_per_address(pool: PgPool) {
    let app = TestApp::spawn_with(pool, |s| s.limits.signups_per_address_hour = 2).await;
    let signup = |n: u32| {
        let base = app.base.clone();
        async move {
            browser()
                .post(format!("{base}/rpc/signup"))
                .form(&[
                    ("org_name", format!("Org {n}")),
                    ("email", format!("{}@example.com", Uuid::new_v4().simple())),
                    ("password", "correct horse".to_owned()),
                ])
                .send()
                .await
                .unwrap()
        }
    };
    assert!(signup(1).await.status().as_u16() < 400);
    assert!(signup(2).await.status().as_u16() < 400);
    let third = signup(3).await;
    assert_eq!(third.status(), 429);
    assert!(third.headers().get("retry-after").is_some());
    assert_eq!(
        app.count("select count(*) from orgs").await,
        2,
        "nothing written"
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn sends_per_org_are_limited(pool: PgPool) {
    let app = TestApp::spawn_with(pool, |s| s.limits.emails_per_org_hour = 2).await;
    let http = browser();
    signup_and_login(&app, &http).await;
    let org: Uuid = scalar(&app.pool, "select id from orgs").await;
    let mut tx = app.pool.begin().await.unwrap();
    let input: model::InvoiceInput = serde_json::from_str(&invoice_body("Mail")).unwrap();
    let invoice = invoicer_core::invoices::insert(&mut tx, Uuid::new_v4(), org, None, &input, "")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let send = || {
        http.post(format!("{}/rpc/send_invoice", app.base))
            .form(&[
                ("invoice_id", invoice.id.to_string()),
                ("idempotency_key", Uuid::new_v4().to_string()),
            ])
            .send()
    };
    assert!(send().await.unwrap().status().as_u16() < 400);
    assert!(send().await.unwrap().status().as_u16() < 400);
    let third = send().await.unwrap();
    assert_eq!(third.status(), 429);
    assert_eq!(app.count("select count(*) from outbox").await, 2);
}

// --- 5. Production is the default ----------------------------------------------------------------

fn production_env(db: &TestDb, public_url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("DATABASE_URL", db.url()),
        ("LEPTOS_ENV", "PROD".into()),
        ("STRIPE_WEBHOOK_SECRET", "whsec_live_only".into()),
        ("STRIPE_MODE", "live".into()),
        ("INVOICER_PUBLIC_URL", public_url.into()),
        ("MAIL_FROM", "Billing <billing@example.com>".into()),
        ("WORKERS", "0".into()),
        ("RUST_LOG", "warn".into()),
    ]
}

#[tokio::test]
async fn production_offers_no_dev_conveniences() {
    let db = TestDb::new("prod").await;
    common::create_org(&db, "Prod", "prod@example.com").await;
    let port = common::free_port();
    let mut env = production_env(&db, &format!("http://127.0.0.1:{port}"));
    env.push(("INVOICER_FAILPOINT", "form.after_claim".into()));
    let server = ServerProcess::start(Path::new(common::SERVER), port, &env, None)
        .await
        .unwrap();
    let base = server.base.clone();
    let http = browser();
    common::login(&http, &base, "prod@example.com", "correct horse").await;
    // Failpoints are not honoured: the form goes through and the process lives.
    let key = Uuid::new_v4().to_string();
    let res = pages::post_form(
        &http,
        format!("{base}/rpc/create_invoice"),
        &common::invoice_form(&key, "Prod customer"),
    )
    .await;
    assert!(res.status().as_u16() < 400, "{}", res.status());
    let invoice: Uuid = serde_json::from_str(&res.text().await.unwrap()).unwrap();
    // No Simulate payment.
    let res = pages::post_form(
        &http,
        format!("{base}/rpc/simulate_payment"),
        &[("invoice_id", invoice.to_string())],
    )
    .await;
    assert_eq!(res.status(), 404);
    // The public dev secret signs nothing here.
    let payload = r#"{"id":"evt_forged","type":"checkout.session.completed","data":{"object":{}}}"#;
    let header = signature::header("whsec_dev_invoicer", chrono_now(), payload.as_bytes());
    let res = reqwest::Client::new()
        .post(format!("{base}/webhooks/stripe"))
        .header("stripe-signature", header)
        .body(payload)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    // /metrics is off without a token or its own listener.
    let res = reqwest::get(format!("{base}/metrics")).await.unwrap();
    assert_eq!(res.status(), 404);
    server.kill().await.unwrap();
    db.cleanup().await;
}

#[tokio::test]
async fn under_https_the_cookie_is_host_prefixed_and_secure_and_hsts_is_sent() {
    let db = TestDb::new("https").await;
    common::create_org(&db, "Tls", "tls@example.com").await;
    let port = common::free_port();
    let env = production_env(&db, "https://billing.example.com");
    let server = ServerProcess::start(Path::new(common::SERVER), port, &env, None)
        .await
        .unwrap();
    let http = browser();
    let res = post_login(&http, &server.base, "tls@example.com", "correct horse", &[]).await;
    assert_eq!(res.status(), 302);
    let cookie = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.contains("invoicer_session="))
        .expect("a session cookie");
    assert!(cookie.starts_with("__Host-invoicer_session="), "{cookie}");
    for attribute in ["Secure", "HttpOnly", "Path=/", "SameSite=Lax"] {
        assert!(cookie.contains(attribute), "{attribute} in {cookie}");
    }
    assert!(!cookie.contains("Domain"), "{cookie}");
    let res = reqwest::get(format!("{}/login", server.base))
        .await
        .unwrap();
    assert!(res.headers()["strict-transport-security"]
        .to_str()
        .unwrap()
        .starts_with("max-age="));
    server.kill().await.unwrap();
    db.cleanup().await;
}

// --- 6. Metrics -------------------------------------------------------------------------------------

#[tokio::test]
async fn metrics_need_the_token_or_their_own_listener() {
    let db = TestDb::new("metrics").await;
    let port = common::free_port();
    let mut env = production_env(&db, &format!("http://127.0.0.1:{port}"));
    env.push(("METRICS_TOKEN", "a-long-enough-metrics-token".into()));
    let server = ServerProcess::start(Path::new(common::SERVER), port, &env, None)
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let url = format!("{}/metrics", server.base);
    assert_eq!(http.get(&url).send().await.unwrap().status(), 401);
    let wrong = http
        .get(&url)
        .bearer_auth("a-long-enough-metrics-tokeX")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let right = http
        .get(&url)
        .bearer_auth("a-long-enough-metrics-token")
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
    assert!(right
        .text()
        .await
        .unwrap()
        .contains("invoicer_outbox_pending"));
    server.kill().await.unwrap();

    let port = common::free_port();
    let metrics_port = common::free_port();
    let mut env = production_env(&db, &format!("http://127.0.0.1:{port}"));
    env.push(("METRICS_ADDR", format!("127.0.0.1:{metrics_port}")));
    let server = ServerProcess::start(Path::new(common::SERVER), port, &env, None)
        .await
        .unwrap();
    assert_eq!(
        pages::get(&http, format!("{}/metrics", server.base))
            .await
            .status(),
        404
    );
    let own = pages::get(&http, format!("http://127.0.0.1:{metrics_port}/metrics")).await;
    assert_eq!(own.status(), 200);
    server.kill().await.unwrap();
    db.cleanup().await;
}

/// Shared buffers a statement touches, from EXPLAIN (ANALYZE, BUFFERS): a count of work, not a time.
async fn buffers(pool: &PgPool, sql: &str) -> i64 {
    let plan: serde_json::Value = scalar(
        pool,
        &format!("explain (analyze, buffers, format json) {sql}"),
    )
    .await;
    let top = &plan[0]["Plan"];
    top["Shared Hit Blocks"].as_i64().unwrap() + top["Shared Read Blocks"].as_i64().unwrap()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_scrape_costs_the_same_with_many_sent_emails(pool: PgPool) {
    use invoicer_core::outbox::GAUGES_SQL;
    let seed = |sent: i64| {
        let pool = pool.clone();
        async move {
            sqlx::query(
                "insert into outbox (id, kind, payload, sent_at)
                 select gen_random_uuid(), 'invoice_email', '{}', now() from generate_series(1, $1)",
            )
            .bind(sent)
            .execute(&pool)
            .await
            .unwrap();
            execute(&pool, "insert into outbox (id, kind, payload) select gen_random_uuid(), 'invoice_email', '{}' from generate_series(1, 3)").await;
            execute(&pool, "analyze outbox").await;
        }
    };
    seed(50_000).await;
    let table: i64 = scalar(&pool, "select pg_relation_size('outbox') / 8192").await;
    assert!(table > 300, "the sent history fills {table} pages");
    // A scan would read every page; the partial indexes read a handful.
    let read = buffers(&pool, GAUGES_SQL).await;
    assert!(read < 20, "the gauges read {read} of {table} pages");
    let gauges = invoicer_core::outbox::gauges(&pool).await.unwrap();
    assert_eq!((gauges.pending, gauges.dead), (3, 0));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_gauges_read_a_bounded_number_of_rows(pool: PgPool) {
    use invoicer_core::outbox::{GAUGES_SQL, GAUGE_CAP};
    // A month of failures on record and a backlog from a long mail outage: more of each than the
    // gauges count. The oldest pending row is an hour late.
    execute(
        &pool,
        "insert into outbox (id, kind, payload, dead_at)
         select gen_random_uuid(), 'invoice_email', '{}', now() from generate_series(1, 20000)",
    )
    .await;
    execute(&pool, "insert into outbox (id, kind, payload, next_attempt_at)
         select gen_random_uuid(), 'invoice_email', '{}', now() - interval '1 hour' + i * interval '1 ms'
         from generate_series(0, 19999) i").await;
    execute(&pool, "vacuum analyze outbox").await;
    let gauges = invoicer_core::outbox::gauges(&pool).await.unwrap();
    assert_eq!(
        (gauges.pending, gauges.dead),
        (GAUGE_CAP + 1, GAUGE_CAP + 1),
        "counted up to the cap, plus one"
    );
    assert!(
        (3590.0..3700.0).contains(&gauges.oldest_due_seconds),
        "the oldest is exact at any size: {}",
        gauges.oldest_due_seconds
    );
    // Rows, not pages: the pages an index-only scan reads depend on the visibility map, which a
    // vacuum leaves unset while another session's snapshot is older than the rows (the parallel
    // suite), but the rows each scan returns do not.
    let rows = scanned_rows(&pool, GAUGES_SQL).await;
    assert!(
        rows <= 2 * (GAUGE_CAP + 1) + 1,
        "the gauges read {rows} rows for 20,000 dead and 20,000 pending"
    );
}

/// How many rows the scans of `sql`'s plan returned, all loops together.
async fn scanned_rows(pool: &PgPool, sql: &str) -> i64 {
    fn walk(node: &serde_json::Value) -> i64 {
        let own = if node["Node Type"].as_str().unwrap_or("").contains("Scan") {
            node["Actual Rows"].as_i64().unwrap_or(0) * node["Actual Loops"].as_i64().unwrap_or(1)
        } else {
            0
        };
        own + node["Plans"]
            .as_array()
            .map_or(0, |plans| plans.iter().map(walk).sum())
    }
    let plan: serde_json::Value =
        scalar(pool, &format!("explain (analyze, format json) {sql}")).await;
    walk(&plan[0]["Plan"])
}

// --- 7. Bounded queries ---------------------------------------------------------------------------

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn activity_pages_by_cursor_and_searches_by_index(pool: PgPool) {
    use invoicer_core::activity::{list, Cursor, Filter};
    let org = invoicer_core::accounts::create_org_with_owner(
        &pool,
        "A",
        "a@example.com",
        "correct horse",
    )
    .await
    .unwrap()
    .org_id;
    // 120 attempts, several in the same microsecond (the id breaks ties).
    sqlx::query(
        "insert into attempts (org_id, surface, owner, key, outcome, duration_ms, created_at)
         select $1, 'api', 'c', 'key-' || n, 'won', 1, timestamptz '2026-12-01' + (n / 3) * interval '1 second'
         from generate_series(1, 120) n",
    )
    .bind(org)
    .execute(&pool)
    .await
    .unwrap();
    let mut seen = Vec::new();
    let mut before: Option<Cursor> = None;
    loop {
        let page = list(&pool, org, &Filter::default(), before).await.unwrap();
        seen.extend(page.rows.iter().map(|r| r.key.clone()));
        match page.next_cursor {
            Some(c) => before = Some(Cursor::parse(&c).unwrap()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 120, "every attempt once");
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 120, "no attempt twice");
    assert_eq!(seen[0], "key-120", "newest first");

    let search = async |text: &str| {
        let filter = Filter {
            search: Some(text.into()),
            ..Filter::default()
        };
        let found = list(&pool, org, &filter, None).await.unwrap();
        let mut keys: Vec<_> = found.rows.into_iter().map(|r| r.key).collect();
        keys.sort();
        keys
    };
    assert_eq!(
        search("key-11").await,
        [
            "key-11", "key-110", "key-111", "key-112", "key-113", "key-114", "key-115", "key-116",
            "key-117", "key-118", "key-119"
        ]
    );
    // `%` and `_` are matched literally.
    assert!(search("key-1_").await.is_empty());

    // The searches use an index (planner asked to avoid scans if it can).
    let mut conn = pool.acquire().await.unwrap();
    sqlx::query("set enable_seqscan = off")
        .execute(&mut *conn)
        .await
        .unwrap();
    // The statement the page sends (the real builder), not a copy of it.
    let filter = Filter {
        search: Some("key-11".into()),
        ..Filter::default()
    };
    let (mut statement, _) = invoicer_core::activity::statement("explain ", org, &filter, None);
    let plan: String = statement
        .build_query_scalar::<String>()
        .fetch_all(&mut *conn)
        .await
        .unwrap()
        .join("\n");
    // The key prefix is found by its index, not by walking every attempt of the org.
    assert!(plan.contains("attempts_org_key_idx"), "{plan}");
    assert!(!plan.contains("Seq Scan"), "{plan}");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_activity_link_with_a_bad_cursor_is_a_clear_error(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let http = browser();
    signup_and_login(&app, &http).await;
    for before in ["4294967295", "x.y", "99999999999999999999.1"] {
        let res = pages::post_form(
            &http,
            format!("{}/rpc/activity", app.base),
            &[("before", before)],
        )
        .await;
        assert_eq!(res.status(), 400, "{before}");
        assert!(res.text().await.unwrap().contains("not valid"));
    }
    let res = pages::get(&http, format!("{}/activity?page=4294967295", app.base)).await;
    assert_eq!(res.status(), 200, "an old page link still answers");
}

#[tokio::test]
async fn a_slow_statement_is_cancelled_by_the_statement_timeout() {
    use clap::Parser;
    let url = std::env::var("DATABASE_URL").unwrap();
    let args = server::cli::Args::try_parse_from([
        "server",
        "--database-url",
        url.as_str(),
        "--statement-timeout-ms",
        "200",
    ])
    .unwrap();
    let pool = server::db::connect(&args.config.database).await.unwrap();
    let err = sqlx::query("select pg_sleep(2)")
        .execute(&pool)
        .await
        .unwrap_err();
    let code = err
        .as_database_error()
        .and_then(|e| e.code())
        .map(|c| c.into_owned());
    assert_eq!(code.as_deref(), Some("57014"), "query_canceled: {err}");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_refused_api_attempt_stores_a_bounded_key(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let long_key = "k".repeat(5000);
    let res = app
        .post_invoice(Some(&token), Some(&long_key), &invoice_body("Long"))
        .await;
    assert_eq!(res.status, 400);
    // The refused attempt is recorded (the row must exist), with its key cut to 255 characters.
    let keys: Vec<String> = scalars(&app.pool, "select key from attempts").await;
    assert_eq!(keys.len(), 1, "the refused attempt is recorded");
    assert_eq!(keys[0], "k".repeat(255));
}

// --- 9. Poison input and leaked text --------------------------------------------------------------

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_due_date_out_of_range_is_422_not_a_database_error(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let mut body: serde_json::Value = serde_json::from_str(&invoice_body("Far")).unwrap();
    body["due_date"] = "-5000-01-01".into();
    let res = app
        .post_invoice(Some(&token), Some("far-1"), &body.to_string())
        .await;
    assert_eq!(res.status, 422, "{}", String::from_utf8_lossy(&res.body));
    assert!(res.json()["errors"]["due_date"]
        .as_str()
        .unwrap()
        .contains("2000-01-01"));
    assert_eq!(app.count("select count(*) from invoices").await, 0);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn only_the_servers_own_form_errors_are_shown(pool: PgPool) {
    use base64::Engine;
    let app = TestApp::spawn(pool).await;
    let forged_error = r#"{"BadRequest":"Your account is locked. Call +1 555 0100 now."}"#;
    let encoded = base64::engine::general_purpose::URL_SAFE.encode(forged_error);
    let http = browser();
    let res = pages::get(
        &http,
        format!(
            "{}/login?next=%2Finvoices&__path=%2Frpc%2Flogin&__err={encoded}",
            app.base
        ),
    )
    .await;
    assert_eq!(res.status(), 303, "a forged error is dropped");
    assert_eq!(location(&res), "/login?next=%2Finvoices");
    // A real one: a wrong password without JavaScript comes back signed, and is shown.
    let res = post_login(
        &http,
        &app.base,
        "nobody@example.com",
        "wrong password",
        &[],
    )
    .await;
    let back = location(&res);
    assert!(back.contains("__sig="), "{back}");
    let page = http.get(&back).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page
        .text()
        .await
        .unwrap()
        .contains("Wrong email or password."));
}

// --- 10. Headers -------------------------------------------------------------------------------------

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn pages_carry_a_nonce_csp_and_the_protective_headers(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let res = reqwest::get(format!("{}/login", app.base)).await.unwrap();
    let header = |name: &str| {
        res.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let csp = header("content-security-policy");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("object-src 'none'"), "{csp}");
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("a nonce")
        .to_owned();
    assert_eq!(header("x-content-type-options"), "nosniff");
    assert_eq!(header("referrer-policy"), "strict-origin-when-cross-origin");
    assert_eq!(header("x-frame-options"), "DENY");
    assert_eq!(header("strict-transport-security"), "", "not under http");
    let html = res.text().await.unwrap();
    let scripts: Vec<&str> = html
        .split("<script")
        .skip(1)
        .map(|rest| rest.split('>').next().unwrap())
        .collect();
    assert!(!scripts.is_empty());
    for tag in scripts {
        assert!(
            tag.contains(&format!("nonce=\"{nonce}\"")),
            "a script without the render's nonce: <script{tag}>"
        );
    }
    let again = reqwest::get(format!("{}/login", app.base)).await.unwrap();
    let other = again.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(!other.contains(&nonce), "a nonce per render");
}

// --- 11. API answers stay API answers -----------------------------------------------------------

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn unknown_api_paths_and_methods_are_problems(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let http = reqwest::Client::new();
    for (method, path, status) in [
        (reqwest::Method::GET, "/api/v1/nothing", 404),
        (reqwest::Method::GET, "/api", 404),
        (reqwest::Method::POST, "/api/v2/invoices", 404),
        (reqwest::Method::DELETE, "/api/v1/invoices", 405),
        (
            reqwest::Method::PUT,
            "/api/v1/invoices/00000000-0000-0000-0000-000000000000",
            405,
        ),
    ] {
        let res = http
            .request(method.clone(), format!("{}{path}", app.base))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), status, "{method} {path}");
        assert_eq!(
            res.headers()["content-type"],
            "application/problem+json",
            "{method} {path}"
        );
        if status == 405 {
            assert!(res.headers()["allow"].to_str().unwrap().contains("GET"));
        }
        let problem: serde_json::Value = res.json().await.unwrap();
        assert_eq!(problem["status"], status);
    }
}

/// The webhook's happy path still works with the stricter parser (the signature is what Stripe
/// sends: one `t`, one `v1` per secret).
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_genuine_delivery_with_two_signatures_is_accepted(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let payload = r#"{"id":"evt_two","object":"event","type":"customer.created","data":{"object":{"id":"cus_2"}}}"#;
    let t = chrono_now();
    let header = format!(
        "t={t},v1={},v1={},v0=abc",
        signature::v1("whsec_other", t, payload.as_bytes()),
        signature::v1(SECRET, t, payload.as_bytes())
    );
    let (status, body) = app
        .post_raw(Some(&header), payload.as_bytes().to_vec())
        .await;
    assert_eq!(status, 200, "{body}");
}

//! The server as an attacker on the internet meets it at its edge: redirects only to this site,
//! cross-origin posts and planted sessions refused, production without dev conveniences, metrics
//! behind a token, poison input and forged errors kept out, protective headers, API answers that
//! stay problems. Every refusal is checked for its status and for having written nothing.

use std::path::Path;

use crate::common::pages::{self, location};
use crate::common::rows::new_owner;
use crate::common::served::{chrono_now, invoice_body, TestApp, SECRET};
use crate::common::{self, post_login, signup_and_login, TestDb};
use invoicer_core::payments::stripe::signature;
use lab::harness::ServerProcess;
use sqlx::PgPool;
use uuid::Uuid;

// --- 1. Redirects --------------------------------------------------------------------------------

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
        let http = common::client();
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
    let http = common::client();
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

// --- 2. CSRF and sessions ------------------------------------------------------------------------

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
        let http = common::client();
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
        let http = common::client();
        let res = post_login(&http, &base, &email, "correct horse", &headers).await;
        assert_eq!(
            (res.status().as_u16(), location(&res)),
            (302, "/dashboard".into()),
            "{headers:?}"
        );
    }
    // Logout is a POST, and only from our own pages.
    let http = common::client();
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

// --- 3. Production is the default ----------------------------------------------------------------

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
    let http = common::client();
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
    let http = common::client();
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

// --- 4. Metrics ----------------------------------------------------------------------------------

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

// --- 5. Poison input and leaked text -------------------------------------------------------------

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
    let http = common::client();
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

// --- 6. Headers ----------------------------------------------------------------------------------

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

// --- 7. API answers stay API answers -------------------------------------------------------------

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

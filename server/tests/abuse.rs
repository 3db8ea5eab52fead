//! No anonymous way to burn the server: floods of junk password resets and of PDF downloads whose
//! clients hang up early leave login answering within a second and the process's memory under its
//! ceiling (the real binary, its allowances lifted so that the floods reach the code behind them);
//! the customer's page, its PDF and Pay are limited per client address and per link.

use std::time::{Duration, Instant};

use sqlx::PgPool;
use uuid::Uuid;

use crate::common::pages;
use crate::common::rows::{new_owner, public_token};
use crate::common::served::TestApp;
use crate::common::{client, create_org, login, Server, TestDb};

/// An open invoice of the largest size the app accepts (100 lines of 500 characters, 2,000
/// characters of notes, long unbreakable words): the dearest PDF anyone can ask for. Its link.
async fn heaviest_invoice(pool: &PgPool, email: &str) -> String {
    let org = invoicer_core::accounts::create_org_with_owner(pool, "Heavy", email, "correct horse")
        .await
        .unwrap()
        .org_id;
    let word = "Ünbreakable".repeat(40);
    let description: String = format!("{word} {}", "words of an item ".repeat(40))
        .chars()
        .take(500)
        .collect();
    let input = model::InvoiceInput {
        customer_name: "Ada".into(),
        customer_email: "ada@example.com".into(),
        currency: "eur".into(),
        due_date: Some("2027-01-31".parse().unwrap()),
        lines: (0..100)
            .map(|_| model::LineInput {
                description: description.clone(),
                quantity: model::Thousandths::whole(1),
                unit_amount_cents: 100,
                tax_rate_id: None,
            })
            .collect(),
        notes: "x".repeat(2000),
        draft: false,
        ..Default::default()
    };
    let invoice = crate::common::rows::insert_invoice(pool, org, &input).await;
    public_token(pool, invoice).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn junk_resets_and_abandoned_pdfs_leave_login_fast_and_memory_bounded() {
    let db = TestDb::new("abuse").await;
    let pool = db.migrated_pool().await;
    let token = heaviest_invoice(&pool, "heavy@example.com").await;
    create_org(&db, "Login Co", "login@example.com").await;
    let lifted = "100000000".to_owned();
    let server = Server::start_with(
        &db,
        "",
        &[
            ("RESETS_PER_ADDRESS_HOUR", lifted.clone()),
            ("RESETS_PER_TOKEN_HOUR", lifted.clone()),
            ("RESETS_PER_HOUR", lifted.clone()),
            ("PDFS_PER_ADDRESS_MINUTE", lifted.clone()),
            ("PDFS_PER_TOKEN_MINUTE", lifted.clone()),
            ("PDFS_PER_HOUR", lifted.clone()),
        ],
    )
    .await;
    let base = server.base.clone();

    // The usual day: a few logins and PDFs, two at a time. Its peak is the ceiling's base.
    for _ in 0..2 {
        let (a, b) = (client(), client());
        tokio::join!(
            login(&a, &base, "login@example.com", "correct horse"),
            login(&b, &base, "login@example.com", "correct horse"),
        );
        let pdf = |c: reqwest::Client| {
            let url = format!("{base}/i/{token}/pdf");
            async move { c.get(url).send().await.unwrap().bytes().await.unwrap() }
        };
        let (x, y) = tokio::join!(pdf(a), pdf(b));
        assert!(x.starts_with(b"%PDF") && y.starts_with(b"%PDF"));
    }
    let usual_kib = server_peak_kib(&server);

    // The floods, from many tasks at once, until stopped.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut floods = Vec::new();
    for i in 0..8 {
        let (base, token, stop) = (base.clone(), token.clone(), stop.clone());
        floods.push(tokio::spawn(async move {
            // Hangs up 20 ms after sending: the server's work goes on without a listener.
            let impatient = reqwest::Client::builder()
                .timeout(Duration::from_millis(20))
                .build()
                .unwrap();
            let mut sent = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = if i % 2 == 0 {
                    let junk = format!("{:064x}", u128::from(sent) << 7 | i as u128);
                    impatient
                        .post(format!("{base}/rpc/reset_password"))
                        .form(&[("token", junk.as_str()), ("password", "a new password")])
                        .send()
                        .await
                } else {
                    impatient.get(format!("{base}/i/{token}/pdf")).send().await
                };
                sent += 1;
            }
            sent
        }));
    }
    // Logins in the middle of it, one after another. A flood that queued logins behind its work
    // would slow them all; the median is judged, so one login delayed by the other tests sharing
    // the cores does not decide.
    let mut took = Vec::new();
    for _ in 0..8 {
        let started = Instant::now();
        login(&client(), &base, "login@example.com", "correct horse").await;
        took.push(started.elapsed());
    }
    eprintln!("logins under the flood: {took:?}");
    took.sort_unstable();
    let median = took[took.len() / 2];
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut sent = 0;
    for f in floods {
        sent += f.await.unwrap();
    }
    let peak_kib = server_peak_kib(&server);
    server.stop().await;
    db.cleanup().await;

    eprintln!(
        "flood: {sent} requests; median login {median:?}; peak RSS {peak_kib} KiB (usual day {usual_kib} KiB)"
    );
    assert!(sent >= 200, "the flood sent {sent} requests");
    assert!(
        median < Duration::from_secs(1),
        "logins took {median:?} (median) under the flood"
    );
    // Two renders and two hashes at once at most, as on the usual day: headroom for the many
    // connections and their buffers, nothing like a render or a hash per request.
    let ceiling_kib = usual_kib * 3 / 2 + 32 * 1024;
    assert!(
        peak_kib < ceiling_kib,
        "peak {peak_kib} KiB under the flood, ceiling {ceiling_kib} KiB (usual {usual_kib} KiB)"
    );
}

fn server_peak_kib(server: &Server) -> u64 {
    server.peak_rss_kib().expect("the server's /proc status")
}

/// The customer's page (and Pay), its PDF: a client gets its allowance per minute, and one link gets
/// its own whoever asks; beyond them, 429 with Retry-After before anything is looked up.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn customer_pages_pdfs_and_pay_are_limited_per_address_and_per_link(pool: PgPool) {
    let app = TestApp::spawn_with(pool, |s| {
        s.limits.public_pages_per_address_minute = 3;
        s.limits.public_pages_per_token_minute = 100;
        s.limits.pdfs_per_address_minute = 2;
        s.limits.pdfs_per_token_minute = 100;
    })
    .await;
    let (_, invoice) = app.invoice(1000, "eur").await;
    let token: String = public_token(&app.pool, invoice).await;
    let get = |path: String| {
        let http = app.http.clone();
        let url = format!("{}{path}", app.base);
        async move { http.get(url).send().await.unwrap() }
    };
    for _ in 0..2 {
        assert_eq!(get(format!("/i/{token}")).await.status(), 200);
    }
    // Pay counts with the page.
    let pay = pages::post(&app.http, format!("{}/i/{token}/pay", app.base)).await;
    assert_ne!(pay.status(), 429);
    let refused = get(format!("/i/{token}")).await;
    assert_eq!(refused.status(), 429);
    assert!(
        refused.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    assert_eq!(refused.headers()["cache-control"], "private, no-store");
    // Junk links count too: guessing is limited the same way.
    assert_eq!(get("/i/not-a-token".into()).await.status(), 429);

    for _ in 0..2 {
        assert_eq!(get(format!("/i/{token}/pdf")).await.status(), 200);
    }
    assert_eq!(get(format!("/i/{token}/pdf")).await.status(), 429);
}

/// One link is limited whoever asks: many addresses (a proxy's header, trusted here) share it.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn one_customer_link_has_its_own_allowance_across_addresses(pool: PgPool) {
    let app = TestApp::spawn_with(pool, |s| {
        s.client_ip_header = Some("x-forwarded-for".into());
        s.limits.pdfs_per_token_minute = 2;
    })
    .await;
    let (_, invoice) = app.invoice(1000, "eur").await;
    let token: String = public_token(&app.pool, invoice).await;
    let from = |address: &str| {
        app.http
            .get(format!("{}/i/{token}/pdf", app.base))
            .header("x-forwarded-for", address)
            .send()
    };
    assert_eq!(from("198.51.100.1").await.unwrap().status(), 200);
    assert_eq!(from("198.51.100.2").await.unwrap().status(), 200);
    assert_eq!(from("198.51.100.3").await.unwrap().status(), 429);
}

/// A form post without a session (or without the right) is refused before a rejection carrying its
/// values is built: nothing it sent comes back. A body the parser refuses gets a plain message, not
/// the parser's words.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn unauthorized_posts_get_nothing_back_and_parser_words_stay_in_the_log(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let marker = "marker-7f3a<script>";
    let mut form = crate::common::invoice_form("not-a-key", marker);
    form.push(("input[notes]".into(), marker.into()));
    for endpoint in ["create_invoice", "update_draft"] {
        let mut body = form.clone();
        if endpoint == "update_draft" {
            body.push(("invoice_id".into(), Uuid::new_v4().to_string()));
            body.push(("version".into(), "not a number".into()));
        }
        let res = pages::post_form(&app.http, format!("{}/rpc/{endpoint}", app.base), &body).await;
        assert_eq!(res.status(), 401, "{endpoint}");
        let text = res.text().await.unwrap();
        assert!(!text.contains("marker-7f3a"), "{endpoint} echoed: {text}");
    }
    // A viewer is refused the same way.
    let (org, _) = app.api_client().await;
    let viewer = format!("viewer-{}@example.com", Uuid::new_v4().simple());
    let account =
        invoicer_core::accounts::create_org_with_owner(&app.pool, "V", &viewer, "correct horse")
            .await
            .unwrap();
    sqlx::query("update memberships set org_id = $2, role = 'viewer' where user_id = $1")
        .bind(account.user_id)
        .bind(org)
        .execute(&app.pool)
        .await
        .unwrap();
    let http = client();
    login(&http, &app.base, &viewer, "correct horse").await;
    let res = pages::post_form(&http, format!("{}/rpc/create_invoice", app.base), &form).await;
    assert_eq!(res.status(), 403);
    assert!(!res.text().await.unwrap().contains("marker-7f3a"));

    // Malformed: a quantity that is not a number.
    let mut bad = crate::common::invoice_form(&Uuid::now_v7().to_string(), "Ada");
    bad.retain(|(k, _)| k != "input[lines][0][quantity]");
    bad.push(("input[lines][0][quantity][deep]".into(), "x".into()));
    bad.push(("input[discount_percent]".into(), "{not json".into()));
    let res = pages::post_form(&http, format!("{}/rpc/create_invoice", app.base), &bad).await;
    assert_eq!(res.status(), 400);
    let text = res.text().await.unwrap();
    assert!(text.contains("could not be read"), "{text}");
    for parser_word in ["invalid type", "expected", "missing field", "quantity"] {
        assert!(
            !text.contains(parser_word),
            "the parser's words reached the page: {text}"
        );
    }
}

/// Every registered server function answers bad input with a client error, for a visitor and for a
/// logged-in owner: a mistyped password, a missing field, an unknown id are 4xx, never a 500 in the
/// logs and the alerts.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn every_server_function_answers_bad_input_with_a_client_error(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (email, _) = new_owner(&app.pool, "Bad Input").await;
    let owner = client();
    login(&owner, &app.base, &email, "correct horse").await;
    let mut endpoints: Vec<String> = leptos::server_fn::axum::server_fn_paths()
        .filter_map(|(path, _)| path.strip_prefix("/rpc/").map(str::to_owned))
        .collect();
    endpoints.sort();
    endpoints.dedup();
    assert!(endpoints.len() > 40, "{endpoints:?}");
    let junk = Uuid::new_v4().to_string();
    let bodies: [Vec<(&str, &str)>; 3] = [
        vec![],
        vec![
            ("email", "nobody@example.com"),
            ("password", "wrong password"),
        ],
        vec![
            ("idempotency_key", "not-a-key"),
            ("id", "not-an-id"),
            ("invoice_id", &junk),
            ("user_id", &junk),
            ("org_id", &junk),
            ("token", "zz"),
            ("action", "explode"),
            ("role", "emperor"),
        ],
    ];
    let mut server_errors = Vec::new();
    let mut accepted_junk = Vec::new();
    for endpoint in &endpoints {
        for (who, http) in [("visitor", client()), ("owner", owner.clone())] {
            if who == "owner"
                && ["logout", "leave_org", "end_other_sessions"].contains(&endpoint.as_str())
            {
                continue;
            }
            let mut statuses = Vec::new();
            for body in &bodies {
                let status = pages::post_form(&http, format!("{}/rpc/{endpoint}", app.base), body)
                    .await
                    .status();
                if status.is_server_error() {
                    server_errors.push(format!("{who} {endpoint} {body:?}: {status}"));
                }
                statuses.push(status);
            }
            // A function that refuses an empty call needs input: junk is refused too (4xx).
            if statuses[0].is_client_error() {
                for (body, status) in bodies.iter().zip(&statuses).skip(1) {
                    if !status.is_client_error() {
                        accepted_junk.push(format!("{who} {endpoint} {body:?}: {status}"));
                    }
                }
            }
        }
    }
    assert!(server_errors.is_empty(), "{server_errors:#?}");
    assert!(
        accepted_junk.is_empty(),
        "junk not refused: {accepted_junk:#?}"
    );
    // And nothing of it ended the owner's session.
    let still = pages::get(&owner, format!("{}/invoices", app.base)).await;
    assert_eq!(still.status(), 200, "the owner is still signed in");
}

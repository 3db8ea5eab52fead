//! Quotes: created once per key, sent through the outbox, and decided once on the customer's page:
//! accepting twice at once (the same button twice, two tabs) makes one invoice; an expired,
//! declined or draft quote accepts nothing; a process killed between claim and commit loses
//! nothing.

use std::time::Duration;

use chrono::NaiveDate;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::served::{ApiResponse, TestApp};
use crate::common::{self, rows, wait_until, Server, SmtpSink, TestDb};

fn text(res: &ApiResponse) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

/// A quote body: 2 × 150.00 at the org's 20 % rate when `rate` is given, with `extra` fields.
fn body(expires_on: NaiveDate, rate: Option<Uuid>, extra: Value) -> Value {
    let mut b = json!({
        "customer_name": "Builder Co",
        "customer_email": "ap@builder.example",
        "currency": "eur",
        "payment_terms_days": 30,
        "lines": [{"description": "Kitchen fitting", "quantity": 2, "unit_amount_cents": 15_000, "tax_rate_id": rate}],
        "expires_on": expires_on,
    });
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

async fn org_today(app: &TestApp, org: model::OrgId) -> NaiveDate {
    let mut conn = app.pool.acquire().await.unwrap();
    invoicer_core::jobs::schedules::org_today(&mut conn, org, chrono::Utc::now())
        .await
        .unwrap()
}

async fn create(app: &TestApp, key: &str, idem: &str, body: &Value) -> ApiResponse {
    app.post_to("/api/v1/quotes", Some(key), Some(idem), &body.to_string())
        .await
}

/// The org's 20 % VAT rate.
async fn rate(app: &TestApp, key: &str) -> Uuid {
    let res = app
        .post_to(
            "/api/v1/tax_rates",
            Some(key),
            Some("vat"),
            r#"{"name": "VAT", "percent": 20}"#,
        )
        .await;
    assert_eq!(res.status, 201, "{}", text(&res));
    res.json()["id"].as_str().unwrap().parse().unwrap()
}

/// The path of the quote's customer page.
fn page_path(quote: &Value) -> String {
    let url = quote["public_url"].as_str().unwrap();
    url[url.find("/q/").unwrap()..].to_owned()
}

/// The page's Accept and Decline keys, as a browser would find them in the HTML.
async fn keys(http: &reqwest::Client, base: &str, path: &str) -> (String, String) {
    let html = crate::common::pages::text(http, format!("{base}{path}")).await;
    let key_after = |marker: &str| {
        let at = html
            .find(marker)
            .unwrap_or_else(|| panic!("{marker} in {html}"));
        let rest = &html[at..];
        let v = rest.find("name=\"key\" value=\"").unwrap() + 18;
        rest[v..v + 36].to_owned()
    };
    (key_after("/accept\""), key_after("/decline\""))
}

async fn post_key(http: &reqwest::Client, url: String, key: &str) -> (u16, String, String) {
    let res = http.post(url).form(&[("key", key)]).send().await.unwrap();
    let status = res.status().as_u16();
    let location = res
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, location, res.text().await.unwrap())
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn accepting_twice_at_once_makes_one_invoice(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let rate = rate(&app, &key).await;
    let today = org_today(&app, org).await;
    let quote = create(&app, &key, "q1", &body(today, Some(rate), json!({}))).await;
    assert_eq!(quote.status, 201, "{}", text(&quote));
    let quote = quote.json();
    assert_eq!(quote["status"], "open");
    assert_eq!(quote["number"], "Q-0001");
    assert_eq!(quote["total_cents"], 36_000, "300.00 + 20 % VAT");
    let id: Uuid = quote["id"].as_str().unwrap().parse().unwrap();
    let path = page_path(&quote);

    // Two tabs: two renderings, two keys; each button pressed four times, all at once.
    let browser = common::client();
    let (tab_a, _) = keys(&browser, &app.base, &path).await;
    let (tab_b, _) = keys(&browser, &app.base, &path).await;
    assert_ne!(tab_a, tab_b, "each rendering mints its own key");
    let url = format!("{}{path}/accept", app.base);
    let presses = (0..8).map(|i| {
        let (browser, url) = (browser.clone(), url.clone());
        let key = if i % 2 == 0 {
            tab_a.clone()
        } else {
            tab_b.clone()
        };
        tokio::spawn(async move { post_key(&browser, url, &key).await })
    });
    for answer in futures::future::join_all(presses).await {
        let (status, location, body) = answer.unwrap();
        assert_eq!((status, location.as_str()), (303, path.as_str()), "{body}");
    }
    let invoices: Vec<(Uuid, String, i64)> = sqlx::query_as(
        "select id, status, total_cents from invoices where org_id = $1 and source_key = $2",
    )
    .bind(org)
    .bind(format!("quote:{id}"))
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(invoices.len(), 1, "one invoice: {invoices:?}");
    let (invoice, status, total) = invoices[0].clone();
    assert_eq!(
        (status.as_str(), total),
        ("open", 36_000),
        "issued at the quoted total"
    );
    let all: i64 = rows::count_rows(&app.pool, "invoices where org_id = $1", org).await;
    assert_eq!(all, 1);
    let won: i64 = app
        .count("select count(*) from attempts where surface = 'form' and outcome = 'won'")
        .await;
    assert_eq!(
        won, 1,
        "one press won; the others were repeats or found it accepted"
    );

    // The quote links to its invoice; its page says so and offers no buttons.
    let read = app.get(&key, &format!("/api/v1/quotes/{id}")).await.json();
    assert_eq!(read["status"], "accepted");
    assert_eq!(read["invoice_id"], invoice.to_string());
    let html = crate::common::pages::text(&browser, format!("{}{path}", app.base)).await;
    assert!(html.contains("Accepted"), "{html}");
    assert!(
        !html.contains("/accept\""),
        "no Accept button once accepted"
    );
    assert!(html.contains("/i/"), "the invoice's page is linked: {html}");
    assert!(
        !html.contains("<script"),
        "the customer's page loads no script"
    );

    // A second accept afterwards, with a fresh key: the page, nothing new.
    let (fresh, _) = (Uuid::new_v4().to_string(), ());
    let (status, _, _) = post_key(&browser, url, &fresh).await;
    assert_eq!(status, 400, "a key this org never rendered is refused");
    assert_eq!(
        rows::count_rows(&app.pool, "invoices where org_id = $1", org).await,
        1
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_expired_or_declined_quote_accepts_nothing(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let today = org_today(&app, org).await;
    let yesterday = today - chrono::Days::new(1);
    let res = create(&app, &key, "past", &body(yesterday, None, json!({}))).await;
    assert_eq!(res.status, 422, "{}", text(&res));
    assert!(text(&res).contains("expires_on"), "{}", text(&res));

    // Open today; rendered while still valid, submitted after its last day.
    let quote = create(&app, &key, "q", &body(today, None, json!({})))
        .await
        .json();
    let id: Uuid = quote["id"].as_str().unwrap().parse().unwrap();
    let path = page_path(&quote);
    let browser = common::client();
    let (accept, _) = keys(&browser, &app.base, &path).await;
    sqlx::query("update quotes set expires_on = $2 where id = $1")
        .bind(id)
        .bind(yesterday)
        .execute(&app.pool)
        .await
        .unwrap();
    let (status, _, page) = post_key(&browser, format!("{}{path}/accept", app.base), &accept).await;
    assert_eq!(status, 409, "{page}");
    assert!(page.contains("expired"), "{page}");
    let read = app.get(&key, &format!("/api/v1/quotes/{id}")).await.json();
    assert_eq!(read["status"], "expired");
    assert_eq!(read["invoice_id"], Value::Null);
    let claims: i64 = app
        .count("select count(*) from claims where owner like '%/accept_quote'")
        .await;
    assert_eq!(claims, 0, "a refusal claims nothing");
    let send = app
        .post_to(
            &format!("/api/v1/quotes/{id}/send"),
            Some(&key),
            Some("s"),
            "{}",
        )
        .await;
    assert_eq!(
        send.status,
        409,
        "an expired quote is not sent: {}",
        text(&send)
    );

    // Declined: an accept from another tab afterwards lands on the page, and issues nothing.
    let quote = create(&app, &key, "q2", &body(today, None, json!({})))
        .await
        .json();
    let path = page_path(&quote);
    let (accept, decline) = keys(&browser, &app.base, &path).await;
    let (status, _, _) = post_key(&browser, format!("{}{path}/decline", app.base), &decline).await;
    assert_eq!(status, 303);
    let (status, location, _) =
        post_key(&browser, format!("{}{path}/accept", app.base), &accept).await;
    assert_eq!((status, location.as_str()), (303, path.as_str()));
    let html = crate::common::pages::text(&browser, format!("{}{path}", app.base)).await;
    assert!(html.contains("Declined"), "{html}");
    assert_eq!(
        rows::count_rows(&app.pool, "invoices where org_id = $1", org).await,
        0,
        "no invoice from an expired or declined quote"
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_api_creates_once_drafts_and_sends(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let today = org_today(&app, org).await;
    let b = body(
        today + chrono::Days::new(30),
        None,
        json!({"draft": true, "on_accept": "draft"}),
    );
    let first = create(&app, &key, "d1", &b).await;
    assert_eq!(first.status, 201, "{}", text(&first));
    let again = create(&app, &key, "d1", &b).await;
    assert_eq!(again.status, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(first.json()["id"], again.json()["id"]);
    let draft = first.json();
    assert_eq!(draft["status"], "draft");
    assert_eq!(draft["number"], Value::Null);
    assert_eq!(draft["public_url"], Value::Null);
    let id = draft["id"].as_str().unwrap().to_owned();
    for (k, bad) in [
        ("unknown", body(today, None, json!({"valid_for": 30}))),
        ("save", body(today, None, json!({"save_customer": true}))),
        ("far", body(today + chrono::Days::new(400), None, json!({}))),
        ("accept", body(today, None, json!({"on_accept": "pay"}))),
    ] {
        let res = create(&app, &key, k, &bad).await;
        assert_eq!(res.status, 422, "{k}: {}", text(&res));
        if k == "accept" {
            // A value that does not read is named by its field.
            assert!(
                res.json()["errors"]["on_accept"].is_string(),
                "{}",
                text(&res)
            );
        }
    }

    // Send opens it (its number, its page) and queues one email, however often the key repeats.
    let path = format!("/api/v1/quotes/{id}/send");
    let sent = app.post_to(&path, Some(&key), Some("send-1"), "{}").await;
    assert_eq!(sent.status, 200, "{}", text(&sent));
    let again = app.post_to(&path, Some(&key), Some("send-1"), "{}").await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    let sent = sent.json();
    assert_eq!(sent["status"], "open");
    assert_eq!(sent["number"], "Q-0001");
    assert!(sent["public_url"].as_str().unwrap().contains("/q/"));
    let emails: i64 = app
        .count("select count(*) from outbox where kind = 'quote_email'")
        .await;
    assert_eq!(emails, 1);

    // Accepting issues a draft invoice, as the quote says; then the quote cannot be sent again.
    let browser = common::client();
    let page = page_path(&sent);
    let (accept, _) = keys(&browser, &app.base, &page).await;
    let (status, _, _) = post_key(&browser, format!("{}{page}/accept", app.base), &accept).await;
    assert_eq!(status, 303);
    let (status, number): (String, Option<String>) =
        sqlx::query_as("select status, number_text from invoices where org_id = $1")
            .bind(org)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((status.as_str(), number), ("draft", None));
    let late = app.post_to(&path, Some(&key), Some("send-2"), "{}").await;
    assert_eq!(late.status, 409, "{}", text(&late));

    // Another org's key sees no such quote.
    let (_, other) = app.api_client().await;
    let res = app.get(&other, &format!("/api/v1/quotes/{id}")).await;
    assert_eq!(res.status, 404);
    let list = app.get(&other, "/api/v1/quotes").await.json();
    assert_eq!(list["data"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn a_crash_between_claim_and_commit_of_an_accept_loses_nothing() {
    let db = TestDb::with_org("quote_crash", "Acme", "q@example.com").await;
    let pool = db.pool().await;
    let key = common::api_key(&db, "q@example.com").await;
    let sink = SmtpSink::start(0, false).await;

    // 1. Quote sent with on_accept "send"; the server's worker delivers its email with the page's link.
    let smtp = [("SMTP_URL", sink.url())];
    let server = Server::start_with(&db, "", &smtp).await;
    let http = common::client();
    let today: NaiveDate = rows::scalar(
        &pool,
        "select (now() at time zone time_zone)::date from orgs",
    )
    .await;
    let quote: Value = http
        .post(format!("{}/api/v1/quotes", server.base))
        .bearer_auth(&key)
        .header("idempotency-key", "q")
        .json(&body(
            today,
            None,
            json!({"draft": true, "on_accept": "send"}),
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = quote["id"].as_str().unwrap();
    let sent: Value = http
        .post(format!("{}/api/v1/quotes/{id}/send", server.base))
        .bearer_auth(&key)
        .header("idempotency-key", "send")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let path = page_path(&sent);
    let mail = sink.wait_for(1, Duration::from_secs(30)).await;
    assert!(mail[0].contains("Quote Q-0001"), "{}", mail[0]);
    // Quoted-printable may fold long lines: compare without soft line breaks.
    let unfolded = mail[0].replace("=\r\n", "").replace("=\n", "");
    assert!(
        unfolded.contains(&path),
        "the email links to the page: {unfolded}"
    );
    let (accept, _) = keys(&http, &server.base, &path).await;
    server.stop().await;

    // 2. The process dies right after claiming the press, before its commit.
    let server = Server::start(&db, "form.after_claim").await;
    let res = http
        .post(format!("{}{path}/accept", server.base))
        .form(&[("key", accept.as_str())])
        .send()
        .await;
    assert!(res.is_err(), "the connection dies with the process");
    assert_eq!(server.exit_code().await, Some(70));
    let (status, invoices, claims): (String, i64, i64) = sqlx::query_as(
        "select (select status from quotes), (select count(*) from invoices), \
         (select count(*) from claims where scope = 'form')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        (status.as_str(), invoices, claims),
        ("open", 0, 0),
        "nothing of the press survived: the quote is open and the key free"
    );

    // 3. The browser's retry of the same press accepts it, once, and the invoice is emailed.
    let server = Server::start_with(&db, "", &smtp).await;
    for _ in 0..2 {
        let (status, location, _) =
            post_key(&http, format!("{}{path}/accept", server.base), &accept).await;
        assert_eq!((status, location.as_str()), (303, path.as_str()));
    }
    let issued: i64 = rows::scalar(
        &pool,
        "select count(*) from invoices where source_key like 'quote:%' and status = 'open'",
    )
    .await;
    assert_eq!(issued, 1);
    wait_until(
        &pool,
        "select count(*) from outbox where kind = 'invoice_email' and sent_at is not null",
        1,
        Duration::from_secs(30),
    )
    .await;
    let mail = sink.wait_for(2, Duration::from_secs(30)).await;
    assert!(mail[1].contains("Invoice"), "{}", mail[1]);
    server.stop().await;
    db.finish(pool).await;
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_draft_is_edited_once_per_form_and_an_open_quote_not_at_all(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (email, account) = crate::common::rows::new_owner(&app.pool, "Quoting Co").await;
    let org = account.org_id;
    let key = crate::common::rows::owners_key(&app.pool, &account).await;
    let today = org_today(&app, org).await;
    let draft = create(&app, &key, "d", &body(today, None, json!({"draft": true})))
        .await
        .json();
    let id = draft["id"].as_str().unwrap().to_owned();
    let browser = common::client();
    common::login(&browser, &app.base, &email, "correct horse").await;
    let form_key = model::form_key(org).to_string();
    let edit = |price: &str, key: &str| {
        vec![
            ("quote_id".to_owned(), id.clone()),
            ("idempotency_key".to_owned(), key.to_owned()),
            ("input[customer_name]".to_owned(), "Builder Co".to_owned()),
            (
                "input[customer_email]".to_owned(),
                "ap@builder.example".to_owned(),
            ),
            ("input[currency]".to_owned(), "eur".to_owned()),
            ("input[payment_terms_days]".to_owned(), "30".to_owned()),
            (
                "input[lines][0][description]".to_owned(),
                "Kitchen fitting".to_owned(),
            ),
            ("input[lines][0][quantity]".to_owned(), "2".to_owned()),
            ("input[lines][0][unit_amount]".to_owned(), price.to_owned()),
            ("quote[expires_on]".to_owned(), today.to_string()),
            ("quote[on_accept]".to_owned(), "send".to_owned()),
        ]
    };
    let url = format!("{}/rpc/update_quote", app.base);
    for _ in 0..2 {
        let res =
            crate::common::pages::post_form(&browser, url.clone(), &edit("175.00", &form_key))
                .await;
        assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    }
    let read = app.get(&key, &format!("/api/v1/quotes/{id}")).await.json();
    assert_eq!(read["total_cents"], 35_000);
    assert_eq!(read["on_accept"], "send");
    assert_eq!(read["status"], "draft");
    // The same rendered form with other content is not a repeat: refused, nothing changed.
    let res =
        crate::common::pages::post_form(&browser, url.clone(), &edit("1.00", &form_key)).await;
    assert_eq!(res.status(), 400);

    // Once open, the customer has seen it: no edit.
    let sent = app
        .post_to(
            &format!("/api/v1/quotes/{id}/send"),
            Some(&key),
            Some("s"),
            "{}",
        )
        .await;
    assert_eq!(sent.status, 200);
    let fresh = model::form_key(org).to_string();
    let res = crate::common::pages::post_form(&browser, url, &edit("9.00", &fresh)).await;
    assert_eq!(res.status(), 400);
    assert!(res.text().await.unwrap().contains("only a draft"));
    let read = app.get(&key, &format!("/api/v1/quotes/{id}")).await.json();
    assert_eq!(read["total_cents"], 35_000);
}

/// Without JavaScript, a refused new-quote form comes back through the redirect with its key and
/// what was typed (the form surface's `FormError`, beside the error), so the page refills it and the
/// corrected submit is the same attempt; nothing was created.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_refused_quote_form_comes_back_with_its_key_and_what_was_typed(pool: sqlx::PgPool) {
    use base64::Engine as _;

    let app = TestApp::spawn(pool).await;
    let (email, _) = rows::new_owner(&app.pool, "Quoting Co").await;
    let org: model::OrgId = sqlx::query_scalar(
        "select m.org_id from memberships m join users u on u.id = m.user_id where u.email = $1",
    )
    .bind(&email)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let browser = common::client();
    common::login(&browser, &app.base, &email, "correct horse").await;
    let key = model::form_key(org).to_string();
    let yesterday = org_today(&app, org).await - chrono::Days::new(1);
    let form = [
        ("idempotency_key", key.as_str()),
        ("input[customer_name]", "Typed Builder Co"),
        ("input[customer_email]", "ap@builder.example"),
        ("input[currency]", "eur"),
        ("input[payment_terms_days]", "30"),
        ("input[lines][0][description]", "Kitchen fitting"),
        ("input[lines][0][quantity]", "2"),
        ("input[lines][0][unit_amount]", "175.00"),
        ("quote[expires_on]", &yesterday.to_string()),
        ("quote[on_accept]", "send"),
    ];
    let res = browser
        .post(format!("{}/rpc/create_quote", app.base))
        .header("accept", "text/html")
        .header("referer", format!("{}/quotes/new", app.base))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_redirection(), "{}", res.status());
    let location = common::pages::location(&res);
    let err = location
        .split(['?', '&'])
        .find_map(|pair| pair.strip_prefix("__err="))
        .unwrap_or_else(|| panic!("{location}"));
    let err: String = form_urlencoded::parse(format!("e={err}").as_bytes())
        .next()
        .unwrap()
        .1
        .into_owned();
    let json = base64::engine::general_purpose::URL_SAFE
        .decode(err)
        .unwrap();
    let back: model::error::FormError<model::InvoiceForm> = serde_json::from_slice(&json).unwrap();
    assert_eq!(
        back.error.attempt().and_then(|r| r.idempotency_key.clone()),
        Some(key.clone())
    );
    assert!(back
        .error
        .field_errors()
        .unwrap()
        .contains_key("expires_on"));
    assert_eq!(back.values.unwrap().customer_name, "Typed Builder Co");
    assert_eq!(app.count("select count(*) from quotes").await, 0);
}

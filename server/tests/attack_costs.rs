//! What an attacker's requests cost the server, counted rather than timed: a refused signature
//! costs at most one MAC per secret, floods leave health and forms answering, logins, sign-ups and
//! sends are throttled, a metrics scrape reads a bounded number of rows, and pages, searches and
//! statements stay bounded.

use std::time::{Duration, Instant};

use crate::common::pages::{self, location};
use crate::common::rows::{execute, new_owner, scalar, scalars};
use crate::common::served::{chrono_now, invoice_body, TestApp};
use crate::common::{self, post_login, signup_and_login, TestDb};
use sqlx::PgPool;
use uuid::Uuid;

// --- 1. Signatures: refusals cost at most one MAC per secret -------------------------------------

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
    let user = common::client();
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

// --- 2. Throttles --------------------------------------------------------------------------------

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
    let http = common::client();
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
    let owner = common::client();
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
            common::client()
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
    let http = common::client();
    signup_and_login(&app, &http).await;
    let org: model::OrgId = scalar(&app.pool, "select id from orgs").await;
    let input: model::InvoiceInput = serde_json::from_str(&invoice_body("Mail")).unwrap();
    let invoice = crate::common::rows::insert_invoice(&app.pool, org, &input).await;
    let send = || {
        http.post(format!("{}/rpc/send_invoice", app.base))
            .form(&[
                ("invoice_id", invoice.to_string()),
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

// --- 3. What a metrics scrape reads --------------------------------------------------------------

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

// --- 4. Bounded queries --------------------------------------------------------------------------

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
    let http = common::client();
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

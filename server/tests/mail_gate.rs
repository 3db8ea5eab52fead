//! Every email in an org's name passes one gate: the sender's address verified, the org's hourly
//! allowance, and the recipient's across all orgs. Quotes, invoices, invitations and their
//! resends and retries are refused beyond it (the API's key staying free); schedules and reminders
//! wait for their slot; and no code path queues such an email without the gate's permit.

use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::{ApiResponse, TestApp};
use crate::common::{client, login, pages};

fn quote(to: &str) -> Value {
    json!({
        "customer_name": "Target Co",
        "customer_email": to,
        "currency": "eur",
        "payment_terms_days": 30,
        "lines": [{"description": "Work", "quantity": 1, "unit_amount_cents": 1_000}],
        "expires_on": chrono::Utc::now().date_naive() + chrono::Days::new(30),
        "draft": true,
    })
}

/// A draft quote of the key's org to `to`; its id.
async fn draft(app: &TestApp, key: &str, to: &str) -> String {
    let res = app
        .post_to(
            "/api/v1/quotes",
            Some(key),
            Some(&Uuid::new_v4().to_string()),
            &quote(to).to_string(),
        )
        .await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    res.json()["id"].as_str().unwrap().to_owned()
}

async fn send(app: &TestApp, key: &str, quote: &str, idem: &str) -> ApiResponse {
    app.post_to(
        &format!("/api/v1/quotes/{quote}/send"),
        Some(key),
        Some(idem),
        "{}",
    )
    .await
}

async fn queued(app: &TestApp, kind: &str) -> i64 {
    sqlx::query_scalar("select count(*) from outbox where kind = $1")
        .bind(kind)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// The reproduction: a burst of quote emails to one outside address stops at the allowance, the
/// refused ones answered 429 with when to come back, their keys still free.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_burst_of_quote_emails_stops_at_the_orgs_allowance(pool: PgPool) {
    let app = TestApp::spawn_with(pool, |s| {
        s.limits.emails_per_org_hour = 5;
        s.limits.emails_per_recipient_hour = 1_000;
    })
    .await;
    let (_, key) = app.api_client().await;
    let mut quotes = Vec::new();
    for _ in 0..7 {
        quotes.push(draft(&app, &key, "victim@outside.example").await);
    }
    let mut statuses = Vec::new();
    for (n, quote) in quotes.iter().enumerate() {
        let res = send(&app, &key, quote, &format!("send-{n}")).await;
        if res.status == 429 {
            let retry: u64 = res.headers["retry-after"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!((3000..=3600).contains(&retry), "{retry}");
        }
        statuses.push(res.status);
    }
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429, 429]);
    assert_eq!(queued(&app, "quote_email").await, 5);
    // A refused key was not stored: it answers anew (still 429 within the hour), never replays.
    let again = send(&app, &key, &quotes[6], "send-6").await;
    assert_eq!(again.status, 429);
    assert!(again.headers.get("idempotent-replayed").is_none());
}

/// One address, many orgs: the recipient's hourly bound holds whoever sends.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn one_address_receives_at_most_its_hourly_bound_from_all_orgs(pool: PgPool) {
    let app = TestApp::spawn_with(pool, |s| {
        s.limits.emails_per_org_hour = 100;
        s.limits.emails_per_recipient_hour = 3;
    })
    .await;
    let mut statuses = Vec::new();
    for n in 0..5 {
        let (_, key) = app.api_client().await;
        let quote = draft(&app, &key, "Inbox@Outside.example").await;
        statuses.push(send(&app, &key, &quote, &format!("s-{n}")).await.status);
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
}

/// A member whose address is not verified sends nothing in the org's name, from the page or with
/// an API key they made: quotes, invoices, invitations.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_unverified_sender_sends_nothing_in_the_orgs_name(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (email, account) = crate::common::rows::new_owner(&app.pool, "Fresh Co").await;
    sqlx::query("update users set email_verified_at = null where id = $1")
        .bind(account.user_id)
        .execute(&app.pool)
        .await
        .unwrap();
    let key = crate::common::rows::owners_key(&app.pool, &account).await;
    let quote = draft(&app, &key, "someone@outside.example").await;
    let res = send(&app, &key, &quote, "unverified").await;
    assert_eq!(res.status, 403, "{}", String::from_utf8_lossy(&res.body));
    // From the pages: the quote's Send and the invitation.
    let http = client();
    login(&http, &app.base, &email, "correct horse").await;
    let form = [
        ("id", quote.as_str()),
        ("idempotency_key", &Uuid::now_v7().to_string()),
    ];
    let res = pages::post_form(&http, format!("{}/rpc/send_quote", app.base), &form).await;
    assert_eq!(res.status(), 403);
    let form_key = model::form_key(account.org_id).to_string();
    let form = [
        ("idempotency_key", form_key.as_str()),
        ("email", "friend@outside.example"),
        ("role", "member"),
    ];
    let res = pages::post_form(&http, format!("{}/rpc/invite_member", app.base), &form).await;
    assert_eq!(res.status(), 403);
    let queued: i64 = sqlx::query_scalar("select count(*) from outbox where org_id = $1")
        .bind(account.org_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(queued, 0);
}

/// Invitations and their resends pass the same allowance as every other email.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn invitation_resends_count_against_the_allowance(pool: PgPool) {
    let app = TestApp::spawn_with(pool, |s| s.limits.emails_per_org_hour = 2).await;
    let (email, account) = crate::common::rows::new_owner(&app.pool, "Inv Co").await;
    let http = client();
    login(&http, &app.base, &email, "correct horse").await;
    let form_key = || model::form_key(account.org_id).to_string();
    let key = form_key();
    let form = [
        ("idempotency_key", key.as_str()),
        ("email", "friend@outside.example"),
        ("role", "member"),
    ];
    let res = pages::post_form(&http, format!("{}/rpc/invite_member", app.base), &form).await;
    assert!(res.status().as_u16() < 400, "{}", res.status());
    let invitation: Uuid = sqlx::query_scalar("select id from invitations")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let resend = async |key: String| {
        let form = [("idempotency_key", key), ("id", invitation.to_string())];
        pages::post_form(&http, format!("{}/rpc/resend_invitation", app.base), &form).await
    };
    let first = resend(form_key()).await;
    assert!(first.status().as_u16() < 400, "{}", first.status());
    let second = resend(form_key()).await;
    assert_eq!(second.status(), 429, "the hour's two emails are spent");
    assert_eq!(queued(&app, "invitation").await, 2);
}

/// A schedule that sends, beyond the allowance: its invoices are issued on their dates, and each
/// email waits for its slot (an hour after the allowance-th latest), never refused, never lost.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn scheduled_sends_beyond_the_allowance_wait_for_their_slot(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, key) = app.api_client().await;
    let today = chrono::Utc::now().date_naive();
    let body = json!({
        "customer_name": "Target Co",
        "customer_email": "customer@outside.example",
        "currency": "eur",
        "payment_terms_days": 14,
        "lines": [{"description": "Work", "quantity": 1, "unit_amount_cents": 1_000}],
        "interval": "week",
        "start_date": today,
        "action": "send",
        "missed": "each",
    });
    let res = app
        .post_to(
            "/api/v1/schedules",
            Some(&key),
            Some("sched"),
            &body.to_string(),
        )
        .await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    // Made four weeks ago: five periods are due.
    sqlx::query(
        "update schedules set start_date = start_date - 28, next_run_on = next_run_on - 28",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let two = invoicer_core::mail::gate::Allowance {
        per_org_hour: 2,
        per_recipient_hour: 100,
    };
    let ran =
        invoicer_core::jobs::schedules::run::run_due(&app.pool, chrono::Utc::now(), 100, "", two)
            .await
            .unwrap();
    assert_eq!(ran, 5, "every period issued");
    // Two now, two an hour on, one two hours on.
    let waits: Vec<i64> = sqlx::query_scalar(
        "select round(extract(epoch from next_attempt_at - now()) / 3600)::int8 from outbox \
         where kind = 'invoice_email' order by next_attempt_at",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(waits, [0, 0, 1, 1, 2]);
}

/// No code queues an email in an org's name but through the gate: the outbox's generic insert is
/// private, and no raw statement elsewhere writes a mail kind.
#[test]
fn only_the_gate_queues_email_in_an_orgs_name() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../app/src");
    let mut offenders = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("ssr/outbox.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for statement in text.split("insert into outbox").skip(1) {
                let head: String = statement.chars().take(400).collect();
                for kind in [
                    "'invoice_email'",
                    "'quote_email'",
                    "'reminder'",
                    "'invitation'",
                ] {
                    if head.contains(kind) {
                        offenders.push(format!("{}: {kind}", path.display()));
                    }
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "raw inserts of mail kinds: {offenders:?}"
    );
}

//! Recurring invoices: a schedule's periods, each issued once whoever runs it, in the org's time
//! zone, across DST; missed periods after downtime by the schedule's policy; pause, resume and
//! edits; a worker killed between claim and commit.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::{ApiResponse, TestApp};
use crate::common::{rows, spawn_worker, wait_until, SmtpSink, TestDb};

const BASE: &str = "http://invoicer.test";

fn text(res: &ApiResponse) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

/// A schedule body: 100.00 a month from `start`, due in 14 days, with `extra` fields.
fn body(start: NaiveDate, extra: Value) -> Value {
    let mut b = json!({
        "customer_name": "Retainer Co",
        "customer_email": "ap@retainer.example",
        "currency": "eur",
        "payment_terms_days": 14,
        "lines": [{"description": "Retainer", "quantity": 1, "unit_amount_cents": 10_000}],
        "interval": "month",
        "start_date": start,
    });
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

async fn org_today(pool: &PgPool, org: model::OrgId) -> NaiveDate {
    let mut conn = pool.acquire().await.unwrap();
    invoicer_core::jobs::schedules::org_today(&mut conn, org, Utc::now())
        .await
        .unwrap()
}

/// The instant `minutes` after local midnight of `date` in `org`'s time zone.
async fn local(pool: &PgPool, org: model::OrgId, date: NaiveDate, minutes: i32) -> DateTime<Utc> {
    sqlx::query_scalar(
        "select ($2::date::timestamp at time zone (select time_zone from orgs where id = $1)) \
         + make_interval(mins => $3)",
    )
    .bind(org)
    .bind(date)
    .bind(minutes)
    .fetch_one(pool)
    .await
    .unwrap()
}

async fn run(pool: &PgPool, now: DateTime<Utc>) -> usize {
    invoicer_core::jobs::schedules::run::run_due(
        pool,
        now,
        1000,
        BASE,
        invoicer_core::mail::gate::Allowance::DEFAULT,
    )
    .await
    .unwrap()
}

/// The periods of `schedule`'s invoices, oldest first, with their totals.
async fn issued(pool: &PgPool, schedule: Uuid) -> Vec<(String, i64)> {
    sqlx::query_as(
        "select substr(source_key, length('schedule:') + 38), total_cents from invoices \
         where source_key like 'schedule:' || $1::text || ':%' order by source_key",
    )
    .bind(schedule)
    .fetch_all(pool)
    .await
    .unwrap()
}

async fn create(app: &TestApp, key: &str, idem: &str, b: Value) -> ApiResponse {
    app.post_to("/api/v1/schedules", Some(key), Some(idem), &b.to_string())
        .await
}

async fn set_time_zone(pool: &PgPool, org: model::OrgId, zone: &str) {
    sqlx::query("update orgs set time_zone = $2 where id = $1")
        .bind(org)
        .bind(zone)
        .execute(pool)
        .await
        .unwrap();
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_schedule_is_created_once_and_checked(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let today = org_today(&app.pool, org).await;
    let yesterday = today - chrono::Days::new(1);
    for (k, bad) in [
        ("past", body(yesterday, json!({}))),
        ("no-terms", body(today, json!({"payment_terms_days": null}))),
        ("due-date", body(today, json!({"due_date": "2027-01-01"}))),
        ("count", body(today, json!({"interval_count": 0}))),
        (
            "weekly-day",
            body(today, json!({"interval": "week", "day_of_month": 3})),
        ),
        ("day", body(today, json!({"day_of_month": 32}))),
        ("unknown", body(today, json!({"every": "tuesday"}))),
        ("interval", body(today, json!({"interval": "fortnight"}))),
        ("draft", body(today, json!({"draft": true}))),
    ] {
        let res = create(&app, &key, k, bad).await;
        assert_eq!(res.status, 422, "{k}: {}", text(&res));
        // A value that does not read is named by its field; an unknown field is the body's.
        match k {
            "interval" => assert!(
                res.json()["errors"]["interval"]
                    .as_str()
                    .is_some_and(|why| why.contains("fortnight")),
                "{}",
                text(&res)
            ),
            "unknown" => {
                assert!(res.json().get("errors").is_none(), "{}", text(&res));
                assert!(text(&res).contains("`every`"), "{}", text(&res));
            }
            _ => {}
        }
    }
    let b = body(
        today,
        json!({"day_of_month": "last", "end_after_count": 3, "action": "send"}),
    );
    let first = create(&app, &key, "s1", b.clone()).await;
    assert_eq!(first.status, 201, "{}", text(&first));
    let again = create(&app, &key, "s1", b).await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.body, first.body);
    let s = first.json();
    assert_eq!(s["status"], "active");
    assert_eq!(s["day_of_month"], "last");
    assert_eq!(
        s["next_runs"].as_array().unwrap().len(),
        3,
        "ends after three"
    );
    let id = s["id"].as_str().unwrap();
    let got = app.get(&key, &format!("/api/v1/schedules/{id}")).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.json()["next_run_on"], s["next_run_on"]);
    let listed = app.get(&key, "/api/v1/schedules").await.json();
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    let (_, theirs) = app.api_client().await;
    assert_eq!(
        app.get(&theirs, &format!("/api/v1/schedules/{id}"))
            .await
            .status,
        404
    );
}

/// Each period issues one invoice, named by the period; after downtime, `each` issues every missed
/// period in order and `latest` only the last (the others skipped); a sent schedule queues each
/// invoice's email with it.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn periods_run_once_in_order_and_missed_ones_by_the_policy(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let today = org_today(&app.pool, org).await;
    let each = create(&app, &key, "each", body(today, json!({"action": "send"})))
        .await
        .json();
    let latest = create(
        &app,
        &key,
        "latest",
        body(today, json!({"missed": "latest"})),
    )
    .await
    .json();
    let (each, latest): (Uuid, Uuid) = (
        each["id"].as_str().unwrap().parse().unwrap(),
        latest["id"].as_str().unwrap().parse().unwrap(),
    );
    // Both start on a 31st (moved there, a date the calendar checks by hand): months without one
    // run on their last day.
    let start: NaiveDate = "2031-01-31".parse().unwrap();
    sqlx::query("update schedules set start_date = $2, next_run_on = $2 where org_id = $1")
        .bind(org)
        .bind(start)
        .execute(&app.pool)
        .await
        .unwrap();
    let noon = local(&app.pool, org, start, 12 * 60).await;
    assert_eq!(run(&app.pool, noon).await, 2);
    assert_eq!(run(&app.pool, noon).await, 0, "nothing twice");
    assert_eq!(
        issued(&app.pool, each).await,
        [("2031-01-31".to_owned(), 10_000)]
    );
    // Four months of downtime.
    let later: NaiveDate = "2031-05-31".parse().unwrap();
    let then = local(&app.pool, org, later, 12 * 60).await;
    run(&app.pool, then).await;
    let periods: Vec<String> = issued(&app.pool, each)
        .await
        .into_iter()
        .map(|p| p.0)
        .collect();
    let want: Vec<String> = [
        "2031-01-31",
        "2031-02-28",
        "2031-03-31",
        "2031-04-30",
        "2031-05-31",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(periods, want, "every missed period, in order");
    let latest_periods: Vec<String> = issued(&app.pool, latest)
        .await
        .into_iter()
        .map(|p| p.0)
        .collect();
    assert_eq!(
        latest_periods,
        [want[0].clone(), want[4].clone()],
        "only the latest"
    );
    let skipped = app
        .count(&format!(
            "select count(*) from schedule_runs where schedule_id = '{latest}' and outcome = 'skipped'"
        ))
        .await;
    assert_eq!(skipped, 3);
    let emails = app
        .count(&format!(
            "select count(*) from outbox where kind = 'invoice_email' and invoice_id in \
             (select id from invoices where source_key like 'schedule:{each}:%')"
        ))
        .await;
    assert_eq!(emails, 5, "one email per sent invoice");
    let shown = app
        .get(&key, &format!("/api/v1/schedules/{each}"))
        .await
        .json();
    assert_eq!(shown["runs"].as_array().unwrap().len(), 5);
    assert_eq!(shown["runs"][0]["period"], want[4].as_str(), "newest first");
}

/// Sixteen runners at once on twenty due schedules: each period has exactly one invoice.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn runners_racing_for_due_periods_issue_each_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let today = org_today(&app.pool, org).await;
    for i in 0..20 {
        let res = create(
            &app,
            &key,
            &format!("s{i}"),
            body(today, json!({"interval": "week"})),
        )
        .await;
        assert_eq!(res.status, 201);
    }
    // Three weeks have passed: three periods each.
    let now = local(&app.pool, org, today + chrono::Days::new(14), 600).await;
    // Sixteen runners on four threads of their own runtime (the test's runs on one), each with
    // its own connection.
    let options = (*app.pool.connect_options()).clone();
    let handled_by: Vec<usize> = tokio::task::spawn_blocking(move || {
        let threads = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        threads.block_on(async move {
            let wide = sqlx::postgres::PgPoolOptions::new()
                .max_connections(16)
                .connect_with(options)
                .await
                .unwrap();
            let barrier = Arc::new(tokio::sync::Barrier::new(16));
            let runners: Vec<_> = (0..16)
                .map(|_| {
                    let (wide, barrier) = (wide.clone(), barrier.clone());
                    tokio::spawn(async move {
                        barrier.wait().await;
                        let allowance = invoicer_core::mail::gate::Allowance::DEFAULT;
                        invoicer_core::jobs::schedules::run::run_due(
                            &wide, now, 1000, BASE, allowance,
                        )
                        .await
                        .unwrap()
                    })
                })
                .collect();
            let mut handled = Vec::new();
            for r in runners {
                handled.push(r.await.unwrap());
            }
            wide.close().await;
            handled
        })
    })
    .await
    .unwrap();
    assert_eq!(handled_by.iter().sum::<usize>(), 60);
    assert!(
        handled_by.iter().filter(|n| **n > 0).count() > 1,
        "more than one runner worked: {handled_by:?}"
    );
    let per_period: Vec<(i64,)> = sqlx::query_as(
        "select count(*) from invoices where source_key like 'schedule:%' group by source_key",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(per_period.len(), 60);
    assert!(per_period.iter().all(|(n,)| *n == 1));
    let claims = app
        .count("select count(*) from claims where scope = 'job' and owner like 'schedule:%'")
        .await;
    assert_eq!(claims, 60, "one claim per period");
}

/// Paused between the due moment and the run: nothing is issued; resumed, it goes on from today.
/// An edit of the template changes the later periods only.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn pause_resume_and_edit_affect_only_what_comes_after(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let today = org_today(&app.pool, org).await;
    let made = create(&app, &key, "s", body(today, json!({}))).await.json();
    let id: Uuid = made["id"].as_str().unwrap().parse().unwrap();
    let noon = local(&app.pool, org, today, 12 * 60).await;
    // Due now, paused before any worker ran it.
    let paused = app
        .post_to(
            &format!("/api/v1/schedules/{id}/pause"),
            Some(&key),
            Some("p"),
            "",
        )
        .await;
    assert_eq!(paused.status, 200, "{}", text(&paused));
    assert_eq!(paused.json()["status"], "paused");
    assert_eq!(run(&app.pool, noon).await, 0);
    assert!(issued(&app.pool, id).await.is_empty());
    let resumed = app
        .post_to(
            &format!("/api/v1/schedules/{id}/resume"),
            Some(&key),
            Some("r"),
            "",
        )
        .await
        .json();
    assert_eq!(resumed["status"], "active");
    assert_eq!(
        run(&app.pool, noon).await,
        1,
        "today's period, once resumed today"
    );

    let mut tx = app.pool.begin().await.unwrap();
    let mut template = resumed["template"].clone();
    template["lines"][0]["unit_amount_cents"] = json!(12_500);
    let template: model::InvoiceInput = serde_json::from_value(template).unwrap();
    invoicer_core::jobs::schedules::edit_template(&mut tx, org, id, &template)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let next = today + chrono::Months::new(1);
    run(&app.pool, local(&app.pool, org, next, 60).await).await;
    let totals: Vec<i64> = issued(&app.pool, id)
        .await
        .into_iter()
        .map(|p| p.1)
        .collect();
    assert_eq!(
        totals,
        [10_000, 12_500],
        "the issued invoice keeps its amount"
    );
}

/// Local midnight decides, in the org's zone, across both DST changes of Berlin and New York and a
/// change of the org's zone: one minute before a period's local midnight nothing runs, one minute
/// after exactly one invoice is issued; never a date skipped or run twice.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn local_midnight_decides_across_dst_and_zone_changes(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, _) = app.api_client().await;
    for (zone, start) in [
        ("Europe/Berlin", "2027-03-21"),
        ("America/New_York", "2027-03-07"),
        ("Europe/Berlin", "2027-10-24"),
        ("America/New_York", "2027-10-31"),
    ] {
        set_time_zone(&app.pool, org, zone).await;
        let start: NaiveDate = start.parse().unwrap();
        // A weekly schedule across the change, created as if on its start date.
        let input = model::ScheduleInput::from_json(&body(
            start,
            json!({"interval": "week", "end_after_count": 3}),
        ))
        .unwrap();
        let id = Uuid::now_v7();
        let mut tx = app.pool.begin().await.unwrap();
        invoicer_core::jobs::schedules::create(
            &mut tx,
            org,
            id,
            &format!("test:{id}"),
            &input,
            start,
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        for week in 0..3u64 {
            let date = start + chrono::Days::new(7 * week);
            assert_eq!(
                run(&app.pool, local(&app.pool, org, date, -1).await).await,
                0,
                "{zone} {date}: before midnight"
            );
            assert_eq!(
                run(&app.pool, local(&app.pool, org, date, 1).await).await,
                1,
                "{zone} {date}: after midnight"
            );
            assert_eq!(
                run(&app.pool, local(&app.pool, org, date, 23 * 60).await).await,
                0,
                "{zone} {date}: once"
            );
        }
        assert_eq!(issued(&app.pool, id).await.len(), 3, "{zone}");
    }
    // The org moves from Berlin to New York between two runs: the next period runs at New York's
    // midnight, once.
    set_time_zone(&app.pool, org, "Europe/Berlin").await;
    let start: NaiveDate = "2027-06-01".parse().unwrap();
    let input = model::ScheduleInput::from_json(&body(start, json!({}))).unwrap();
    let id = Uuid::now_v7();
    let mut tx = app.pool.begin().await.unwrap();
    invoicer_core::jobs::schedules::create(&mut tx, org, id, "test:move", &input, start)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        run(&app.pool, local(&app.pool, org, start, 1).await).await,
        1
    );
    set_time_zone(&app.pool, org, "America/New_York").await;
    let july: NaiveDate = "2027-07-01".parse().unwrap();
    assert_eq!(
        run(&app.pool, local(&app.pool, org, july, -1).await).await,
        0
    );
    assert_eq!(
        run(&app.pool, local(&app.pool, org, july, 1).await).await,
        1
    );
    assert_eq!(issued(&app.pool, id).await.len(), 2);
}

/// A worker killed after claiming a period and before its commit: the period stays due, and the
/// next worker issues it, once.
#[tokio::test]
async fn a_worker_killed_between_claim_and_commit_loses_nothing() {
    let db = TestDb::new("schedule_crash").await;
    let pool = db.migrated_pool().await;
    let (_, account) = crate::common::rows::new_owner(&pool, "Acme").await;
    let today = org_today(&pool, account.org_id).await;
    let input = model::ScheduleInput::from_json(&body(today, json!({}))).unwrap();
    let id = Uuid::now_v7();
    let mut tx = pool.begin().await.unwrap();
    invoicer_core::jobs::schedules::create(
        &mut tx,
        account.org_id,
        id,
        "test:crash",
        &input,
        today,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let sink = SmtpSink::start(0, false).await;
    let mut crashing = spawn_worker(&db, &sink, "schedule.after_claim", 1, 2).await;
    let status = tokio::time::timeout(Duration::from_secs(30), crashing.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(70), "died at schedule.after_claim");
    let none: i64 = rows::scalar(&pool, "select count(*) from invoices").await;
    assert_eq!(none, 0, "the claim rolled back with the work");
    let _worker = spawn_worker(&db, &sink, "", 1, 2).await;
    wait_until(
        &pool,
        "select count(*) from invoices",
        1,
        Duration::from_secs(30),
    )
    .await;
    wait_until(
        &pool,
        "select count(*) from schedule_runs where outcome = 'issued'",
        1,
        Duration::from_secs(30),
    )
    .await;
    let claims: i64 = rows::scalar(
        &pool,
        "select count(*) from claims where scope = 'job' and owner like 'schedule:%'",
    )
    .await;
    assert_eq!(claims, 1);
    db.finish(pool).await;
}

/// `PATCH /api/v1/schedules/{id}` edits the template (a merge patch, once per key): the next period
/// issues the new invoice, the one already issued keeps its amount; the cadence cannot change.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_patched_template_changes_only_later_runs(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let today = org_today(&app.pool, org).await;
    let made = create(&app, &key, "s", body(today, json!({}))).await.json();
    let id: Uuid = made["id"].as_str().unwrap().parse().unwrap();
    run(&app.pool, local(&app.pool, org, today, 12 * 60).await).await;
    let path = format!("/api/v1/schedules/{id}");
    let patch = |idem: &'static str, b: Value| {
        let (app, key, path) = (&app, key.clone(), path.clone());
        async move {
            let req = app
                .http
                .patch(format!("{}{path}", app.base))
                .bearer_auth(&key)
                .header("idempotency-key", idem)
                .header("content-type", "application/json")
                .body(b.to_string());
            crate::common::served::ApiResponse::read(req.send().await.unwrap()).await
        }
    };
    let new_price =
        json!({"lines": [{"description": "Retainer", "quantity": 1, "unit_amount_cents": 12_500}]});
    let edited = patch("e1", new_price.clone()).await;
    assert_eq!(edited.status, 200, "{}", text(&edited));
    assert_eq!(
        edited.json()["template"]["lines"][0]["unit_amount_cents"],
        12_500
    );
    let again = patch("e1", new_price).await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    for (k, bad) in [
        ("e2", json!({"interval": "week"})),
        ("e3", json!({"due_date": "2027-01-01"})),
        ("e4", json!({"lines": []})),
    ] {
        let res = patch(k, bad).await;
        assert_eq!(res.status, 422, "{k}: {}", text(&res));
    }
    let next = today + chrono::Months::new(1);
    run(&app.pool, local(&app.pool, org, next, 60).await).await;
    let totals: Vec<i64> = issued(&app.pool, id)
        .await
        .into_iter()
        .map(|p| p.1)
        .collect();
    assert_eq!(totals, [10_000, 12_500]);
    let (_, theirs) = app.api_client().await;
    let res = app
        .http
        .patch(format!("{}{path}", app.base))
        .bearer_auth(&theirs)
        .header("idempotency-key", "x")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
}

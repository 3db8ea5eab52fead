//! The invoice lifecycle: drafts, finalization (gapless numbers in the org's format), void, mark
//! uncollectible, delete, duplicate; every move conditional, so repeats and races move nothing twice.

use std::sync::Arc;

use invoicer_core::invoicing::lifecycle::{self, Action, Moved};
use invoicer_core::payments::stripe::standin;
use model::InvoiceStatus;
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::rows::{count_rows, scalar, scalars_for};
use crate::common::served::{invoice_body, TestApp};

fn draft_body(customer: &str) -> String {
    let mut body: serde_json::Value = serde_json::from_str(&invoice_body(customer)).unwrap();
    body["draft"] = true.into();
    body.to_string()
}

/// A draft of a fresh org (through the API, as a client would make it); returns (org, draft id).
async fn draft(app: &TestApp, token: &str) -> Uuid {
    let res = app
        .post_invoice(
            Some(token),
            Some(&Uuid::new_v4().to_string()),
            &draft_body("Ada"),
        )
        .await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    let json = res.json();
    assert_eq!(json["status"], "draft");
    assert_eq!(json["number"], serde_json::Value::Null);
    assert_eq!(json["public_url"], serde_json::Value::Null);
    json["id"].as_str().unwrap().parse().unwrap()
}

async fn apply(pool: &PgPool, org: model::OrgId, id: Uuid, action: Action) -> Moved {
    let mut tx = pool.begin().await.unwrap();
    let moved = lifecycle::apply(&mut tx, org, model::InvoiceId::from(id), action)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    moved
}

async fn status(pool: &PgPool, id: Uuid) -> (String, Option<String>, Option<String>) {
    sqlx::query_as("select status, number_text, public_token from invoices where id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_draft_takes_no_number_until_it_is_finalized(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (org, token) = app.api_client().await;
    let first = draft(&app, &token).await;
    // An invoice finalized at once takes number 1; the draft created before it has none.
    let open = app
        .post_invoice(Some(&token), Some("open-1"), &invoice_body("Bob"))
        .await
        .json();
    assert_eq!(open["number"], "INV-000001");
    assert!(open["public_url"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{}/i/", app.base)));

    assert_eq!(apply(&pool, org, first, Action::Finalize).await, Moved::Now);
    let (s, number, token_now) = status(&pool, first).await;
    assert_eq!(
        (s.as_str(), number.as_deref()),
        ("open", Some("INV-000002"))
    );
    assert_eq!(token_now.as_ref().map(String::len), Some(64));
    // A repeat moves nothing and keeps the number and the page.
    assert_eq!(
        apply(&pool, org, first, Action::Finalize).await,
        Moved::Already
    );
    assert_eq!(status(&pool, first).await.2, token_now);
    assert_eq!(
        app.count("select last_number::int8 from invoice_counters")
            .await,
        2
    );
}

/// Fifty finalizations in one org really at once: 25 drafts, each finalized from two tabs, every
/// transaction begun before any of them applies (a barrier), on a pool of fifty connections.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn fifty_concurrent_finalizations_in_one_org_number_without_gaps(pool: PgPool) {
    const AT_ONCE: usize = 50;
    let app = Arc::new(TestApp::spawn(pool.clone()).await);
    let (org, token) = app.api_client().await;
    let mut drafts = Vec::new();
    for _ in 0..AT_ONCE / 2 {
        drafts.push(draft(&app, &token).await);
    }
    let wide = sqlx::postgres::PgPoolOptions::new()
        .max_connections(AT_ONCE as u32)
        .connect_with((*pool.connect_options()).clone())
        .await
        .unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(AT_ONCE));
    let runs = drafts
        .iter()
        .flat_map(|&id| [id, id])
        .map(|id| {
            let (wide, barrier) = (wide.clone(), barrier.clone());
            tokio::spawn(async move {
                let mut tx = wide.begin().await.unwrap();
                barrier.wait().await;
                let moved =
                    lifecycle::apply(&mut tx, org, model::InvoiceId::from(id), Action::Finalize)
                        .await
                        .unwrap();
                tx.commit().await.unwrap();
                moved
            })
        })
        .collect::<Vec<_>>();
    let mut now = 0;
    for run in runs {
        match run.await.unwrap() {
            Moved::Now => now += 1,
            Moved::Already => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(now, AT_ONCE / 2, "each draft finalized exactly once");
    let numbers: Vec<i32> = scalars_for(
        &pool,
        "select number from invoices where org_id = $1 order by number",
        org,
    )
    .await;
    assert_eq!(numbers, (1..=(AT_ONCE / 2) as i32).collect::<Vec<_>>());
    wide.close().await;
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn finalize_and_delete_race_and_exactly_one_wins(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (org, token) = app.api_client().await;
    for _ in 0..20 {
        let id = draft(&app, &token).await;
        let (a, b) = tokio::join!(
            {
                let pool = pool.clone();
                tokio::spawn(async move { apply(&pool, org, id, Action::Finalize).await })
            },
            {
                let pool = pool.clone();
                tokio::spawn(async move { apply(&pool, org, id, Action::DeleteDraft).await })
            }
        );
        let (finalized, deleted) = (a.unwrap(), b.unwrap());
        let row: Option<(String,)> = sqlx::query_as("select status from invoices where id = $1")
            .bind(id)
            .fetch_optional(&pool)
            .await
            .unwrap();
        match (finalized, deleted, row) {
            (Moved::Now, Moved::Refused(InvoiceStatus::Open, _), Some((s,))) => {
                assert_eq!(s, "open")
            }
            (Moved::NotFound, Moved::Now, None) => {}
            other => panic!("both or neither won: {other:?}"),
        }
    }
    // Numbers went only to finalized invoices, without gaps.
    let (count, max): (i64, Option<i32>) =
        sqlx::query_as("select count(number), max(number) from invoices where org_id = $1")
            .bind(org)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(i64::from(max.unwrap_or(0)), count);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn void_and_payment_race_and_the_invoice_ends_consistent(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    for _ in 0..10 {
        let (org, invoice) = app.invoice(5_000, "usd").await;
        let (_, payload) =
            standin::checkout_completed(model::InvoiceId::from(invoice), 5_000, "usd");
        let (voided, delivered) = tokio::join!(
            {
                let pool = pool.clone();
                tokio::spawn(async move { apply(&pool, org, invoice, Action::Void).await })
            },
            app.deliver(&payload)
        );
        assert_eq!(delivered.0, 200, "{}", delivered.1);
        let (s, payment_state, token): (String, String, Option<String>) = sqlx::query_as(
            "select status, payment_state, public_token from invoices where id = $1",
        )
        .bind(invoice)
        .fetch_one(&pool)
        .await
        .unwrap();
        match voided.unwrap() {
            // Void first: the money is recorded against a void invoice and flagged, never "paid".
            Moved::Now => {
                assert_eq!((s.as_str(), payment_state.as_str()), ("void", "paid"));
                assert_eq!(token, None, "voiding revokes the customer's page");
                let anomalies = app
                    .count(&format!(
                        "select count(*) from stripe_events where invoice_id = '{invoice}' \
                         and outcome = 'anomaly'"
                    ))
                    .await;
                assert_eq!(anomalies, 1);
            }
            // Payment first: the void is refused, the invoice is paid.
            Moved::Refused(InvoiceStatus::Paid, _) => assert_eq!(s, "paid"),
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn each_move_starts_only_where_it_may(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (org, token) = app.api_client().await;
    let d = draft(&app, &token).await;
    // A draft cannot be voided or marked uncollectible.
    for action in [Action::Void, Action::MarkUncollectible] {
        assert!(matches!(
            apply(&pool, org, d, action).await,
            Moved::Refused(InvoiceStatus::Draft, _)
        ));
    }
    apply(&pool, org, d, Action::Finalize).await;
    // An open invoice cannot be deleted; it can be marked uncollectible, then voided.
    assert!(matches!(
        apply(&pool, org, d, Action::DeleteDraft).await,
        Moved::Refused(InvoiceStatus::Open, _)
    ));
    assert_eq!(
        apply(&pool, org, d, Action::MarkUncollectible).await,
        Moved::Now
    );
    assert_eq!(
        apply(&pool, org, d, Action::MarkUncollectible).await,
        Moved::Already
    );
    assert_eq!(apply(&pool, org, d, Action::Void).await, Moved::Now);
    assert_eq!(apply(&pool, org, d, Action::Void).await, Moved::Already);
    assert_eq!(status(&pool, d).await.0, "void");

    // An uncollectible invoice paid in full becomes paid (as at Stripe).
    let (org2, inv) = app.invoice(2_000, "usd").await;
    assert_eq!(
        apply(&pool, org2, inv, Action::MarkUncollectible).await,
        Moved::Now
    );
    let (_, payload) = standin::checkout_completed(model::InvoiceId::from(inv), 2_000, "usd");
    assert_eq!(app.deliver(&payload).await.0, 200);
    assert_eq!(status(&pool, inv).await.0, "paid");
    // A paid invoice cannot be voided.
    assert!(matches!(
        apply(&pool, org2, inv, Action::Void).await,
        Moved::Refused(InvoiceStatus::Paid, _)
    ));
    // Another org's id is not found.
    assert_eq!(
        apply(&pool, org, inv, Action::MarkUncollectible).await,
        Moved::NotFound
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn numbers_follow_the_orgs_format_and_restart_yearly(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (org, token) = app.api_client().await;
    sqlx::query(
        "update orgs set number_format = 'F{YYYY}-{seq:3}', number_reset = 'yearly', \
         time_zone = 'Pacific/Kiritimati' where id = $1",
    )
    .bind(org)
    .execute(&pool)
    .await
    .unwrap();
    let year: i32 = scalar(
        &pool,
        "select extract(year from now() at time zone 'Pacific/Kiritimati')::int",
    )
    .await;
    let a = app
        .post_invoice(Some(&token), Some("y-1"), &invoice_body("A"))
        .await
        .json();
    assert_eq!(a["number"], format!("F{year}-001"));
    // Last year's counter is its own: this year's numbering is unaffected by it.
    sqlx::query("insert into invoice_counters (org_id, period, last_number) values ($1, $2, 99)")
        .bind(org)
        .bind(year - 1)
        .execute(&pool)
        .await
        .unwrap();
    let b = app
        .post_invoice(Some(&token), Some("y-2"), &invoice_body("B"))
        .await
        .json();
    assert_eq!(b["number"], format!("F{year}-002"));
    // A yearly restart without the year in the format would repeat numbers: refused.
    let refused = sqlx::query("update orgs set number_format = 'N-{seq}' where id = $1")
        .bind(org)
        .execute(&pool)
        .await;
    assert!(refused.is_err());
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn duplicate_makes_a_new_draft_with_the_same_lines(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (org, token) = app.api_client().await;
    let original = app
        .post_invoice(Some(&token), Some("orig"), &invoice_body("Carol"))
        .await
        .json();
    let id: Uuid = original["id"].as_str().unwrap().parse().unwrap();
    let copy = Uuid::now_v7();
    let mut tx = pool.begin().await.unwrap();
    let due = lifecycle::duplicate(
        &mut tx,
        org,
        model::InvoiceId::from(id),
        copy,
        "duplicate:test",
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(due.is_some());
    let got = app
        .get(&token, &format!("/api/v1/invoices/{copy}"))
        .await
        .json();
    assert_eq!(got["status"], "draft");
    assert_eq!(got["number"], serde_json::Value::Null);
    assert_eq!(got["lines"], original["lines"]);
    assert_eq!(got["total_cents"], original["total_cents"]);
    // Another org's invoice cannot be duplicated.
    let (other_org, _) = app.api_client().await;
    let mut tx = pool.begin().await.unwrap();
    let none = lifecycle::duplicate(
        &mut tx,
        other_org,
        model::InvoiceId::from(id),
        Uuid::now_v7(),
        "duplicate:x",
    )
    .await
    .unwrap();
    assert_eq!(none, None);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn api_finalize_and_void_are_once_per_key_and_answer_the_current_state(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (_, token) = app.api_client().await;
    let id = draft(&app, &token).await;
    let path = format!("/api/v1/invoices/{id}/finalize");
    let first = app.post_to(&path, Some(&token), Some("fin-1"), "").await;
    assert_eq!(
        first.status,
        200,
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    assert_eq!(first.json()["number"], "INV-000001");
    assert_eq!(first.json()["status"], "open");
    let replay = app.post_to(&path, Some(&token), Some("fin-1"), "").await;
    assert_eq!((replay.status, &replay.body), (200, &first.body));
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    // Another key on an invoice already finalized: the current state, not an error.
    let again = app.post_to(&path, Some(&token), Some("fin-2"), "{}").await;
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["number"], "INV-000001");
    // The same key for another path is another request.
    let void_path = format!("/api/v1/invoices/{id}/void");
    let mismatch = app
        .post_to(&void_path, Some(&token), Some("fin-1"), "")
        .await;
    assert_eq!(mismatch.status, 422);

    let voided = app
        .post_to(&void_path, Some(&token), Some("void-1"), "")
        .await;
    assert_eq!(voided.status, 200);
    assert_eq!(voided.json()["status"], "void");
    assert_eq!(voided.json()["public_url"], serde_json::Value::Null);
    // Finalizing a void invoice: it is past that, so its state comes back.
    let late = app.post_to(&path, Some(&token), Some("fin-3"), "").await;
    assert_eq!(late.json()["status"], "void");

    // A refused move is a 409 problem, replayed as such.
    let open = app
        .post_invoice(Some(&token), Some("open"), &invoice_body("Dan"))
        .await
        .json();
    let open_id = open["id"].as_str().unwrap();
    let uncollectible = format!("/api/v1/invoices/{open_id}/mark_uncollectible");
    assert_eq!(
        app.post_to(&uncollectible, Some(&token), Some("u-1"), "")
            .await
            .status,
        200
    );
    let fin_open = format!("/api/v1/invoices/{open_id}/finalize");
    assert_eq!(
        app.post_to(&fin_open, Some(&token), Some("f-open"), "")
            .await
            .json()["status"],
        "uncollectible"
    );
    // Unknown and foreign ids are 404 and claim nothing: the key stays usable.
    let missing = format!("/api/v1/invoices/{}/finalize", Uuid::new_v4());
    assert_eq!(
        app.post_to(&missing, Some(&token), Some("k-404"), "")
            .await
            .status,
        404
    );
    let (_, other_token) = app.api_client().await;
    assert_eq!(
        app.post_to(&path, Some(&other_token), Some("k-x"), "")
            .await
            .status,
        404
    );
    // A body that is not an object is refused before anything is claimed.
    assert_eq!(
        app.post_to(&path, Some(&token), Some("k-bad"), "[1]")
            .await
            .status,
        400
    );
    assert_eq!(
        app.post_to(&path, Some(&token), None, "").await.status,
        400,
        "the Idempotency-Key is required"
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn api_void_of_a_paid_invoice_is_a_stored_409(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (_, token) = app.api_client().await;
    let open = app
        .post_invoice(Some(&token), Some("o"), &invoice_body("Eve"))
        .await
        .json();
    let id: Uuid = open["id"].as_str().unwrap().parse().unwrap();
    let total = open["total_cents"].as_i64().unwrap();
    standin::open_simulated_session(&pool, model::InvoiceId::from(id))
        .await
        .unwrap();
    let (_, payload) = standin::checkout_completed(model::InvoiceId::from(id), total, "eur");
    assert_eq!(app.deliver(&payload).await.0, 200);
    let path = format!("/api/v1/invoices/{id}/void");
    let refused = app.post_to(&path, Some(&token), Some("v"), "").await;
    assert_eq!(refused.status, 409);
    assert_eq!(
        refused.header("content-type"),
        Some("application/problem+json")
    );
    assert_eq!(refused.json()["type"], "/problems/invalid-transition");
    let replay = app.post_to(&path, Some(&token), Some("v"), "").await;
    assert_eq!((replay.status, &replay.body), (409, &refused.body));
    assert_eq!(app.invoice_state(id).await.0, "paid");
}

async fn patch(
    app: &TestApp,
    token: &str,
    id: Uuid,
    key: &str,
    if_match: Option<&str>,
    body: &str,
) -> crate::common::served::ApiResponse {
    let mut req = app
        .http
        .patch(format!("{}/api/v1/invoices/{id}", app.base))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .header("content-type", "application/merge-patch+json")
        .body(body.to_owned());
    if let Some(version) = if_match {
        req = req.header("if-match", version);
    }
    crate::common::served::ApiResponse::read(req.send().await.unwrap()).await
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn two_edits_from_the_same_version_save_exactly_one(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (org, token) = app.api_client().await;
    for round in 0..10 {
        let id = draft(&app, &token).await;
        let edit = |name: &str| {
            let mut input: model::InvoiceInput = serde_json::from_str(&draft_body(name)).unwrap();
            input.lines[0].quantity = model::Thousandths::whole(7);
            input
        };
        let (a, b) = (edit("First"), edit("Second"));
        let runs = [a, b].map(|input| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut tx = pool.begin().await.unwrap();
                let edited =
                    lifecycle::edit_draft(&mut tx, org, model::InvoiceId::from(id), 1, &input)
                        .await
                        .unwrap();
                tx.commit().await.unwrap();
                edited
            })
        });
        let mut saved = 0;
        for run in runs {
            match run.await.unwrap() {
                lifecycle::Edited::Now(2) => saved += 1,
                lifecycle::Edited::Stale { current: 2 } => {}
                other => panic!("round {round}: {other:?}"),
            }
        }
        assert_eq!(saved, 1, "round {round}");
        let lines = app
            .count(&format!(
                "select count(*) from invoice_lines where invoice_id = '{id}'"
            ))
            .await;
        assert_eq!(lines, 2, "the saved edit's lines, once");
    }
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn api_patch_edits_a_draft_with_if_match_once_per_key(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let id = draft(&app, &token).await;
    let got = app.get(&token, &format!("/api/v1/invoices/{id}")).await;
    assert_eq!(got.header("etag"), Some("\"1\""));

    let body = r#"{"customer_name": "Ada Byron", "lines": [{"description": "Audit", "quantity": 2, "unit_amount_cents": 5000}]}"#;
    assert_eq!(patch(&app, &token, id, "p-0", None, body).await.status, 428);
    assert_eq!(
        patch(&app, &token, id, "p-0", Some("soon"), body)
            .await
            .status,
        400
    );
    let first = patch(&app, &token, id, "p-1", Some("\"1\""), body).await;
    assert_eq!(
        first.status,
        200,
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    let json = first.json();
    assert_eq!(json["customer_name"], "Ada Byron");
    assert_eq!(
        json["customer_email"], "ap@example.com",
        "untouched fields stay"
    );
    assert_eq!(json["total_cents"], 10_000);
    assert_eq!(json["version"], 2);
    assert_eq!(first.header("etag"), Some("\"2\""));
    // A retry of the same request: the stored answer, nothing saved twice.
    let replay = patch(&app, &token, id, "p-1", Some("\"1\""), body).await;
    assert_eq!((replay.status, &replay.body), (200, &first.body));
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    // Another client editing from version 1 now: refused, nothing overwritten.
    let stale = patch(
        &app,
        &token,
        id,
        "p-2",
        Some("\"1\""),
        r#"{"customer_name": "Eve"}"#,
    )
    .await;
    assert_eq!(stale.status, 412);
    assert_eq!(stale.json()["type"], "/problems/stale-version");
    // An invalid result is a 422 that claims nothing: the same key then works.
    let invalid = patch(&app, &token, id, "p-3", Some("\"2\""), r#"{"lines": []}"#).await;
    assert_eq!(invalid.status, 422);
    let fixed = patch(
        &app,
        &token,
        id,
        "p-3",
        Some("\"2\""),
        r#"{"due_date": "2027-03-31"}"#,
    )
    .await;
    assert_eq!(fixed.status, 200);
    assert_eq!(fixed.json()["due_date"], "2027-03-31");
    assert_eq!(
        app.get(&token, &format!("/api/v1/invoices/{id}"))
            .await
            .json()["customer_name"],
        "Ada Byron"
    );
    // A finalized invoice is not a draft any more.
    let fin = app
        .post_to(
            &format!("/api/v1/invoices/{id}/finalize"),
            Some(&token),
            Some("f"),
            "",
        )
        .await;
    assert_eq!(fin.status, 200);
    let late = patch(
        &app,
        &token,
        id,
        "p-4",
        Some("\"4\""),
        r#"{"customer_name": "X"}"#,
    )
    .await;
    assert_eq!(late.status, 409);
    // Another org's draft is not found.
    let (_, other) = app.api_client().await;
    assert_eq!(
        patch(&app, &other, id, "p-5", Some("\"1\""), body)
            .await
            .status,
        404
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_demo_org_has_every_state_and_seeds_once(pool: PgPool) {
    let org = invoicer_core::demo::seed(&pool)
        .await
        .unwrap()
        .expect("seeded");
    assert_eq!(
        invoicer_core::demo::seed(&pool).await.unwrap(),
        None,
        "seeded once"
    );
    let states: Vec<(String, String)> = sqlx::query_as(
        "select distinct status, payment_state from invoices where org_id = $1 order by 1, 2",
    )
    .bind(org)
    .fetch_all(&pool)
    .await
    .unwrap();
    for want in [
        ("draft", "unpaid"),
        ("open", "unpaid"),
        ("open", "partially_paid"),
        ("open", "processing"),
        ("paid", "paid"),
        ("refunded", "refunded"),
        ("uncollectible", "unpaid"),
        ("void", "unpaid"),
    ] {
        assert!(
            states.contains(&(want.0.to_owned(), want.1.to_owned())),
            "{want:?} missing from {states:?}"
        );
    }
    let overdue: i64 = count_rows(
        &pool,
        "invoices where org_id = $1 and status = 'open' and due_date < current_date",
        org,
    )
    .await;
    assert!(overdue >= 1);
    assert_eq!(
        sqlx::query_scalar::<_, i64>("select count(*) from customers where org_id = $1")
            .bind(org)
            .fetch_one(&pool)
            .await
            .unwrap(),
        5
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn api_delete_and_duplicate_are_once_per_key(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let open = app
        .post_invoice(Some(&token), Some("o"), &invoice_body("Fay"))
        .await
        .json();
    let id = open["id"].as_str().unwrap();
    let dup_path = format!("/api/v1/invoices/{id}/duplicate");
    let copy = app.post_to(&dup_path, Some(&token), Some("d-1"), "").await;
    assert_eq!(copy.status, 201, "{}", String::from_utf8_lossy(&copy.body));
    assert_eq!(copy.json()["status"], "draft");
    assert_eq!(copy.json()["lines"], open["lines"]);
    let again = app.post_to(&dup_path, Some(&token), Some("d-1"), "").await;
    assert_eq!(
        (again.status, &again.body),
        (201, &copy.body),
        "one draft per key"
    );
    assert_eq!(
        app.count("select count(*) from invoices where status = 'draft'")
            .await,
        1
    );

    let delete = |key: &'static str, target: String| {
        let (app, token) = (&app, token.clone());
        async move {
            let res = app
                .http
                .delete(format!("{}/api/v1/invoices/{target}", app.base))
                .bearer_auth(token)
                .header("idempotency-key", key)
                .send()
                .await
                .unwrap();
            crate::common::served::ApiResponse::read(res).await
        }
    };
    let draft = copy.json()["id"].as_str().unwrap().to_owned();
    let gone = delete("x-1", draft.clone()).await;
    assert_eq!(gone.status, 204);
    let replay = delete("x-1", draft.clone()).await;
    assert_eq!(
        replay.status, 204,
        "a retry after success gets the stored answer"
    );
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(delete("x-2", draft).await.status, 404);
    let refused = delete("x-3", id.to_owned()).await;
    assert_eq!(
        refused.status, 409,
        "an open invoice is voided, not deleted"
    );
}

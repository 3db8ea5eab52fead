//! Credit notes: a document of their own, numbered gapless per org, issued once per attempt, that
//! lowers what the invoice asks for; never more than is left to credit, whoever races for it.

use std::sync::Arc;

use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::rows::{insert_invoice, one_line_input, scalars_for};
use crate::common::served::{ApiResponse, TestApp};
use crate::common::{client, login, pages};

const PASSWORD: &str = "correct horse";

/// An org with an open invoice of `total` eur and an owner's API key: (org, invoice, key).
async fn open_invoice(app: &TestApp, total: i64) -> (model::OrgId, Uuid, String) {
    let email = format!("{}@example.com", Uuid::new_v4().simple());
    let account =
        invoicer_core::accounts::create_org_with_owner(&app.pool, "Acme", &email, PASSWORD)
            .await
            .unwrap();
    let invoice = insert_invoice(
        &app.pool,
        account.org_id,
        &one_line_input("eur", "2027-01-31", total, false),
    )
    .await;
    let key = crate::common::rows::owners_key(&app.pool, &account).await;
    (account.org_id, invoice, key)
}

fn text(res: &ApiResponse) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

async fn credit(
    app: &TestApp,
    key: &str,
    invoice: Uuid,
    idem: &str,
    body: serde_json::Value,
) -> ApiResponse {
    let path = format!("/api/v1/invoices/{invoice}/credit_notes");
    app.post_to(&path, Some(key), Some(idem), &body.to_string())
        .await
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_credit_note_lowers_what_is_due_once_per_key_and_has_its_own_page(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice, key) = open_invoice(&app, 10_000).await;

    let first = credit(
        &app,
        &key,
        invoice,
        "c1",
        json!({"amount_cents": 4000, "reason": "Two hours less"}),
    )
    .await;
    assert_eq!(first.status, 201, "{}", text(&first));
    let note = first.json();
    assert_eq!(note["number"], "CN-000001");
    assert_eq!(note["total_cents"], 4000);
    assert_eq!(note["invoice_id"], invoice.to_string());
    assert_eq!(note["refund"], "none");
    let again = credit(
        &app,
        &key,
        invoice,
        "c1",
        json!({"amount_cents": 4000, "reason": "Two hours less"}),
    )
    .await;
    assert_eq!(again.status, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.body, first.body, "byte for byte");

    let got = app
        .get(&key, &format!("/api/v1/invoices/{invoice}"))
        .await
        .json();
    assert_eq!(got["amount_credited_cents"], 4000);
    assert_eq!(got["amount_due_cents"], 6000);
    assert_eq!(got["credit_notes"], json!([note["id"]]));
    let read = app
        .get(
            &key,
            &format!("/api/v1/credit_notes/{}", note["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(read.status, 200);
    assert_eq!(read.json()["number"], "CN-000001");

    // Paying what is left pays the invoice.
    let paid = app
        .post_to(
            &format!("/api/v1/invoices/{invoice}/payments"),
            Some(&key),
            Some("p1"),
            &json!({"amount_cents": 6000, "method": "bank_transfer", "paid_on": "2026-12-01"})
                .to_string(),
        )
        .await;
    assert_eq!(paid.status, 201, "{}", text(&paid));
    assert_eq!(
        app.money(invoice).await,
        ("paid".into(), "paid".into(), 6000)
    );

    // The customer's page of the credit note.
    let url = note["public_url"].as_str().unwrap();
    let path = &url[url.find("/c/").unwrap()..];
    let page = pages::text(&app.http, format!("{}{path}", app.base)).await;
    assert!(
        page.contains("CN-000001") && page.contains("Two hours less"),
        "{page}"
    );
    assert!(page.contains("€40.00") || page.contains("40.00"), "{page}");
    let bad = pages::get(&app.http, format!("{}/c/{}", app.base, "0".repeat(64))).await;
    assert_eq!(bad.status(), 404);
    // Its PDF carries the same facts as extractable text.
    let pdf = pages::bytes(&app.http, format!("{}{path}/pdf", app.base)).await;
    let (text, pages, _) = crate::public_page::pdf_text(&pdf);
    assert_eq!(pages, 1);
    let invoice_number: String = crate::common::rows::scalar_for(
        &app.pool,
        "select number_text from invoices where id = $1",
        invoice,
    )
    .await;
    for fact in [
        "CREDIT NOTE",
        "CN-000001",
        "Two hours less",
        "40.00",
        &invoice_number,
    ] {
        assert!(text.contains(fact), "{fact} in {text}");
    }
    // Drawn once and kept: the next download is the stored PDF, byte for byte.
    let id: Uuid = note["id"].as_str().unwrap().parse().unwrap();
    let stored: Vec<u8> = crate::common::rows::scalar_for(
        &app.pool,
        "select pdf from document_pdfs where document_id = $1 and paper = 'a4'",
        id,
    )
    .await;
    assert_eq!(stored, pdf);
    let planted = b"%PDF-1.7 planted".to_vec();
    sqlx::query("update document_pdfs set pdf = $2 where document_id = $1")
        .bind(id)
        .bind(&planted)
        .execute(&app.pool)
        .await
        .unwrap();
    let again = pages::bytes(&app.http, format!("{}{path}/pdf", app.base)).await;
    assert_eq!(again, planted);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn more_than_is_left_drafts_other_orgs_and_bad_input_credit_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, invoice, key) = open_invoice(&app, 10_000).await;
    let (_, theirs, _) = open_invoice(&app, 10_000).await;
    let draft = insert_invoice(
        &app.pool,
        org,
        &one_line_input("eur", "2027-01-31", 500, true),
    )
    .await;
    let reason = "Returned goods";

    let res = credit(
        &app,
        &key,
        invoice,
        "a",
        json!({"amount_cents": 10_001, "reason": reason}),
    )
    .await;
    assert_eq!(res.status, 409, "{}", text(&res));
    let res = credit(&app, &key, draft, "b", json!({"reason": reason})).await;
    assert_eq!(res.status, 409, "{}", text(&res));
    let res = credit(&app, &key, theirs, "c", json!({"reason": reason})).await;
    assert_eq!(res.status, 404, "{}", text(&res));
    for (k, body) in [
        ("d", json!({"amount_cents": 0, "reason": reason})),
        ("e", json!({"amount_cents": 100, "reason": " "})),
        (
            "g",
            json!({"amount_cents": 100, "reason": reason, "extra": true}),
        ),
    ] {
        let res = credit(&app, &key, invoice, k, body).await;
        assert_eq!(res.status, 422, "{k}: {}", text(&res));
    }
    assert_eq!(
        app.count("select count(*) from credit_notes").await,
        0,
        "nothing issued"
    );
    // The whole invoice, in one: then nothing is left to credit.
    let all = credit(&app, &key, invoice, "d", json!({"reason": reason})).await;
    assert_eq!(
        all.status,
        201,
        "a refused key stays usable: {}",
        text(&all)
    );
    assert_eq!(all.json()["total_cents"], 10_000);
    assert_eq!(app.money(invoice).await, ("paid".into(), "paid".into(), 0));
    let none_left = credit(
        &app,
        &key,
        invoice,
        "h",
        json!({"amount_cents": 1, "reason": reason}),
    )
    .await;
    assert_eq!(none_left.status, 409);
}

/// `n` credit notes of one cent each on `invoice`, all at once on a pool that really holds them
/// all; every `rollback_every`th transaction rolls back after issuing. Returns how many committed.
async fn at_once(
    pool: &PgPool,
    org: model::OrgId,
    invoice: Uuid,
    n: usize,
    rollback_every: usize,
) -> usize {
    let wide = sqlx::postgres::PgPoolOptions::new()
        .max_connections(n as u32)
        .connect_with((*pool.connect_options()).clone())
        .await
        .unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let runs: Vec<_> = (0..n)
        .map(|i| {
            let (wide, barrier) = (wide.clone(), barrier.clone());
            tokio::spawn(async move {
                let mut tx = wide.begin().await.unwrap();
                barrier.wait().await;
                let input = model::CreditNoteInput {
                    amount_cents: Some(1),
                    lines: None,
                    reason: "a cent".into(),
                    refund: Default::default(),
                };
                let name = format!("test:{i}");
                let credit = invoicer_core::invoicing::credit_notes::Credit {
                    org,
                    invoice: model::InvoiceId::from(invoice),
                    id: Uuid::now_v7(),
                    source_key: &name,
                    by: None,
                };
                let issued = invoicer_core::invoicing::credit_notes::issue(
                    &mut tx, &credit, &input, "http://x",
                )
                .await;
                if issued.is_ok() && (rollback_every == 0 || i % rollback_every != 0) {
                    tx.commit().await.unwrap();
                    true
                } else {
                    tx.rollback().await.unwrap();
                    false
                }
            })
        })
        .collect();
    let mut committed = 0;
    for run in runs {
        committed += usize::from(run.await.unwrap());
    }
    committed
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn fifty_concurrent_credit_notes_number_without_gaps_even_when_some_roll_back(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (org, invoice, _) = open_invoice(&app, 10_000).await;
    let committed = at_once(&pool, org, invoice, 50, 5).await;
    assert_eq!(committed, 40, "every fifth rolled back");
    let numbers: Vec<i32> = scalars_for(
        &pool,
        "select number from credit_notes where org_id = $1 order by number",
        org,
    )
    .await;
    assert_eq!(numbers, (1..=40).collect::<Vec<_>>(), "no gaps, no repeats");
    let credited: i64 = crate::common::rows::scalar_for(
        &pool,
        "select amount_credited_cents from invoices where id = $1",
        invoice,
    )
    .await;
    assert_eq!(credited, 40);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn two_credit_notes_racing_for_the_last_amount_one_wins(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice, key) = open_invoice(&app, 10_000).await;
    let (a, b) = tokio::join!(
        credit(&app, &key, invoice, "x", json!({"reason": "all of it"})),
        credit(
            &app,
            &key,
            invoice,
            "y",
            json!({"amount_cents": 10_000, "reason": "all of it"})
        )
    );
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert_eq!(statuses, [201, 409], "{} / {}", text(&a), text(&b));
    assert_eq!(app.count("select count(*) from credit_notes").await, 1);
    assert_eq!(
        app.count("select amount_credited_cents from invoices")
            .await,
        10_000
    );
}

/// The invoice page's "Credit" form, submitted twice at once as a double click sends it: one
/// credit note, listed on the page.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_double_submitted_credit_form_issues_one_credit_note(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let email = format!("{}@example.com", Uuid::new_v4().simple());
    let account =
        invoicer_core::accounts::create_org_with_owner(&app.pool, "Acme", &email, PASSWORD)
            .await
            .unwrap();
    let invoice = insert_invoice(
        &app.pool,
        account.org_id,
        &one_line_input("eur", "2027-01-31", 10_000, false),
    )
    .await;
    let http = client();
    login(&http, &app.base, &email, PASSWORD).await;
    let html = pages::text(&http, format!("{}/invoices/{invoice}", app.base)).await;
    let form = &html[html.find("credit-invoice\"").expect("the credit form")..];
    let marker = "name=\"idempotency_key\" value=\"";
    let at = form.find(marker).expect("its key") + marker.len();
    let key = form[at..at + 36].to_owned();
    let body = [
        ("invoice_id", invoice.to_string()),
        ("idempotency_key", key),
        ("amount", "25.00".to_owned()),
        ("reason", "Late delivery".to_owned()),
    ];
    let url = format!("{}/rpc/credit_invoice", app.base);
    let (a, b) = tokio::join!(
        pages::submit(&http, url.clone(), &body),
        pages::submit(&http, url.clone(), &body)
    );
    assert!(
        a.status().as_u16() < 400 && b.status().as_u16() < 400,
        "{} {}",
        a.status(),
        b.status()
    );
    assert_eq!(app.count("select count(*) from credit_notes").await, 1);
    assert_eq!(
        app.count("select amount_credited_cents from invoices")
            .await,
        2_500
    );
    let page = pages::text(&http, format!("{}/invoices/{invoice}", app.base)).await;
    assert!(
        page.contains("CN-000001") && page.contains("Late delivery"),
        "listed"
    );
    // Listed on the invoice's customer too.
    let customer = invoicer_core::customers::create(
        &mut app.pool.acquire().await.unwrap(),
        model::CustomerId::from(Uuid::now_v7()),
        account.org_id,
        None,
        &model::CustomerInput {
            name: "Ada".into(),
            email: "ada@example.com".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    sqlx::query("update invoices set customer_id = $1 where id = $2")
        .bind(customer.id)
        .bind(invoice)
        .execute(&app.pool)
        .await
        .unwrap();
    let page = pages::text(&http, format!("{}/customers/{}", app.base, customer.id)).await;
    assert!(
        page.contains("CN-000001") && page.contains("Late delivery"),
        "on the customer: {page}"
    );
}

/// Crediting a paid invoice: with `refund: "manual"` the part already paid beyond what is then due
/// went back (no longer kept); with `none` it stays as the customer's credit (paid above what is due).
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn crediting_a_paid_invoice_pays_back_or_keeps_the_difference(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice, key) = open_invoice(&app, 10_000).await;
    let paid = app
        .post_to(
            &format!("/api/v1/invoices/{invoice}/payments"),
            Some(&key),
            Some("p"),
            &json!({"amount_cents": 10_000, "method": "bank_transfer", "paid_on": "2026-12-01"})
                .to_string(),
        )
        .await;
    assert_eq!(paid.status, 201);

    let back = credit(
        &app,
        &key,
        invoice,
        "m",
        json!({"amount_cents": 3000, "reason": "Discount agreed", "refund": "manual"}),
    )
    .await;
    assert_eq!(back.status, 201, "{}", text(&back));
    assert_eq!(back.json()["refund_state"], "refunded");
    assert_eq!(back.json()["refunded_cents"], 3000);
    assert_eq!(
        app.money(invoice).await,
        ("paid".into(), "paid".into(), 7000)
    );
    let got = app
        .get(&key, &format!("/api/v1/invoices/{invoice}"))
        .await
        .json();
    assert_eq!(
        (
            got["amount_credited_cents"].as_i64(),
            got["amount_due_cents"].as_i64()
        ),
        (Some(3000), Some(0))
    );

    let kept = credit(
        &app,
        &key,
        invoice,
        "n",
        json!({"amount_cents": 2000, "reason": "Goodwill"}),
    )
    .await;
    assert_eq!(kept.status, 201, "{}", text(&kept));
    assert_eq!(kept.json()["refund_state"], "none");
    // 7,000 kept against 5,000 asked: the customer's 2,000 credit.
    assert_eq!(
        app.money(invoice).await,
        ("paid".into(), "paid".into(), 7000)
    );
    let got = app
        .get(&key, &format!("/api/v1/invoices/{invoice}"))
        .await
        .json();
    assert_eq!(got["amount_due_cents"], 0);
}

/// The org's credit-note format (a settings field beside the invoice's) numbers its own series,
/// restarting each year when it names the year; an empty field keeps the default.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_credit_note_format_is_a_setting_of_its_own(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, invoice, key) = open_invoice(&app, 10_000).await;
    let mut settings = invoicer_core::accounts::orgs::settings(&app.pool, org)
        .await
        .unwrap();
    settings.credit_note_format = "CN-{YYYY}-{seq:3}".into();
    let mut tx = app.pool.begin().await.unwrap();
    invoicer_core::accounts::orgs::save_settings(&mut tx, org, &settings)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let year: i32 = crate::common::rows::scalar_for(
        &app.pool,
        "select extract(year from now() at time zone time_zone)::int from orgs where id = $1",
        org,
    )
    .await;
    let first = credit(
        &app,
        &key,
        invoice,
        "y1",
        json!({"amount_cents": 100, "reason": "a"}),
    )
    .await;
    assert_eq!(first.json()["number"], format!("CN-{year}-001"));
    let counters: i64 = app
        .count(&format!(
            "select count(*) from credit_note_counters where org_id = '{org}' and period = {year}"
        ))
        .await;
    assert_eq!(counters, 1, "a yearly series");
    // An empty field: the default series again.
    settings.credit_note_format = String::new();
    let mut tx = app.pool.begin().await.unwrap();
    invoicer_core::accounts::orgs::save_settings(&mut tx, org, &settings)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        invoicer_core::accounts::orgs::settings(&app.pool, org)
            .await
            .unwrap()
            .credit_note_format,
        "CN-{seq:6}"
    );
    let second = credit(
        &app,
        &key,
        invoice,
        "y2",
        json!({"amount_cents": 100, "reason": "b"}),
    )
    .await;
    assert_eq!(second.json()["number"], "CN-000001");
}

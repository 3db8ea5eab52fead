//! The customer's page `/i/{token}`: no login, not indexable, a wrong token says nothing, views are
//! recorded, void revokes it.

use sqlx::PgPool;
use uuid::Uuid;

use crate::common::pages;
use crate::common::rows::scalar_for;
use crate::common::served::{invoice_body, TestApp};

async fn get(app: &TestApp, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let res = pages::get(&app.http, format!("{}{path}", app.base)).await;
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    (status, headers, res.text().await.unwrap())
}

async fn set_address(pool: &PgPool, org: model::OrgId, address: &str) {
    sqlx::query("update orgs set address_line1 = $2 where id = $1")
        .bind(org)
        .bind(address)
        .execute(pool)
        .await
        .unwrap();
}

/// A served app whose org has `address`, with an open invoice to `customer`; (app, API token,
/// invoice id, public path).
async fn addressed(pool: PgPool, address: &str, customer: &str) -> (TestApp, String, Uuid, String) {
    let app = TestApp::spawn(pool).await;
    let (org, token) = app.api_client().await;
    set_address(&app.pool, org, address).await;
    let (id, path) = open_invoice(&app, &token, customer).await;
    (app, token, id, path)
}

/// An open invoice through the API; returns (invoice id, public path).
async fn open_invoice(app: &TestApp, token: &str, customer: &str) -> (Uuid, String) {
    let json = app
        .post_invoice(
            Some(token),
            Some(&Uuid::new_v4().to_string()),
            &invoice_body(customer),
        )
        .await
        .json();
    let path = public_path(app, &json);
    (json["id"].as_str().unwrap().parse().unwrap(), path)
}

/// The customer's page of the invoice `json` (an API answer), as a path on `app`.
fn public_path(app: &TestApp, json: &serde_json::Value) -> String {
    let url = json["public_url"].as_str().unwrap();
    url.strip_prefix(&app.base).unwrap().to_owned()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_customer_opens_the_invoice_without_logging_in(pool: PgPool) {
    let (app, token, id, path) = addressed(pool, "9 Rue <b>Haute</b>, Paris", "Zoë <script>").await;
    assert!(path.starts_with("/i/") && !path.contains(&id.to_string()));

    let (status, headers, html) = get(&app, &path).await;
    assert_eq!(status, 200);
    assert_eq!(headers["x-robots-tag"], "noindex, nofollow");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert!(html.contains(r#"<meta name="robots" content="noindex, nofollow">"#));
    assert!(html.contains("INV-000001"));
    assert!(html.contains("Api Co"), "the org's name");
    assert!(html.contains("Hosting") && html.contains("Support"));
    // 12 × 25.00 + 99.00 = 399.00, due in full.
    assert!(html.contains("€399.00"), "{html}");
    assert!(html.contains(&format!("{path}/pdf")));
    // Everything typed by people is escaped.
    assert!(html.contains("Zoë &lt;script&gt;") && !html.contains("<script>"));
    assert!(html.contains("&lt;b&gt;Haute"));

    let viewed: Option<chrono::DateTime<chrono::Utc>> = scalar_for(
        &app.pool,
        "select first_viewed_at from invoices where id = $1",
        id,
    )
    .await;
    assert!(viewed.is_some(), "the view is recorded");
    let owner_view = app
        .get(&token, &format!("/api/v1/invoices/{id}"))
        .await
        .json();
    assert!(owner_view["viewed_at"].is_string());
    // Reloads within a minute count once: a token cannot be used to write at will.
    for _ in 0..3 {
        assert_eq!(get(&app, &path).await.0, 200);
    }
    assert_eq!(
        app.count(&format!(
            "select view_count::int8 from invoices where id = '{id}'"
        ))
        .await,
        1
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_wrong_token_is_a_404_that_tells_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let (_, path) = open_invoice(&app, &token, "Ada").await;
    let mut real = path.clone();
    // The same length and alphabet, one character off.
    let last = real.pop().unwrap();
    let near = format!("{real}{}", if last == '0' { '1' } else { '0' });
    let answers: Vec<_> = [
        near.as_str(),
        "/i/short",
        "/i/ZZZZ",
        &format!("/i/{}", "a".repeat(5000)),
    ]
    .into_iter()
    .map(|p| p.to_owned())
    .collect();
    let mut bodies = Vec::new();
    for p in &answers {
        let (status, headers, body) = get(&app, p).await;
        assert_eq!(status, 404, "{p}");
        assert_eq!(headers["x-robots-tag"], "noindex, nofollow");
        bodies.push(body);
    }
    assert!(
        bodies.windows(2).all(|w| w[0] == w[1]),
        "one answer for all"
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn voiding_revokes_the_page(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let (id, path) = open_invoice(&app, &token, "Ada").await;
    assert_eq!(get(&app, &path).await.0, 200);
    let voided = app
        .post_to(
            &format!("/api/v1/invoices/{id}/void"),
            Some(&token),
            Some("v"),
            "",
        )
        .await;
    assert_eq!(voided.status, 200);
    assert_eq!(get(&app, &path).await.0, 404);
}

/// `pdftotext -layout` of `bytes`, and the page count `pdfinfo` reads.
pub(crate) fn pdf_text(bytes: &[u8]) -> (String, usize, String) {
    let dir = std::env::temp_dir().join(format!("invoicer-pdf-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("invoice.pdf");
    std::fs::write(&file, bytes).unwrap();
    let run = |cmd: &str, args: &[&str]| {
        let out = std::process::Command::new(cmd)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{cmd} (Debian's poppler-utils): {e}"));
        assert!(
            out.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let path = file.to_str().unwrap();
    let text = run("pdftotext", &["-layout", path, "-"]);
    let info = run("pdfinfo", &[path]);
    let pages = info
        .lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .map(|n| n.trim().parse().unwrap())
        .unwrap();
    let size = info
        .lines()
        .find_map(|l| l.strip_prefix("Page size:"))
        .unwrap()
        .trim()
        .to_owned();
    let _ = std::fs::remove_dir_all(dir);
    (text, pages, size)
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_pdf_has_the_pages_numbers_as_extractable_text(pool: PgPool) {
    let (app, _, _, path) = addressed(pool, "1 Quai Est, Lyon", "Zoë Привет").await;
    let res = pages::get(&app.http, format!("{}{path}/pdf", app.base)).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/pdf");
    assert_eq!(res.headers()["x-robots-tag"], "noindex, nofollow");
    assert_eq!(
        res.headers()["content-disposition"],
        "attachment; filename=\"invoice-INV-000001.pdf\""
    );
    let (text, pages, size) = pdf_text(&res.bytes().await.unwrap());
    assert_eq!(pages, 1);
    assert!(
        size.starts_with("595.") && size.contains("841."),
        "A4: {size}"
    );
    for expected in [
        "INV-000001",
        "Api Co",
        "1 Quai Est, Lyon",
        "Zoë Привет",
        "Hosting",
        "€25.00",
        "€300.00",
        "€99.00",
        "€399.00",
        "Amount due",
        "Due 2027-02-28",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from:\n{text}"
        );
    }

    let letter = pages::bytes(&app.http, format!("{}{path}/pdf?paper=letter", app.base)).await;
    assert!(pdf_text(&letter).2.starts_with("612 x 792"), "US Letter");
    // A wrong token gets the page's 404, not a PDF.
    let mut wrong = path.clone();
    wrong.replace_range(3..4, if &path[3..4] == "0" { "1" } else { "0" });
    let missing = pages::get(&app.http, format!("{}{wrong}/pdf", app.base)).await;
    assert_eq!(missing.status(), 404);
}

/// The stored PDF of `document` on `paper`, if one was kept.
async fn stored_pdf(pool: &PgPool, document: Uuid, paper: &str) -> Option<Vec<u8>> {
    sqlx::query_scalar("select pdf from document_pdfs where document_id = $1 and paper = $2")
        .bind(document)
        .bind(paper)
        .fetch_optional(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_pdf_is_drawn_once_per_version_and_served_from_storage(pool: PgPool) {
    let (app, token, id, path) = addressed(pool, "1 Quai Est, Lyon", "Stored Customer").await;
    let url = format!("{}{path}/pdf", app.base);
    let first = pages::bytes(&app.http, url.clone()).await;
    assert!(pdf_text(&first).0.contains("Amount due"));
    assert_eq!(
        stored_pdf(&app.pool, id, "a4").await.as_deref(),
        Some(&first[..])
    );
    // What storage holds is what is served while the version stands: planted bytes come back.
    let planted = b"%PDF-1.7 planted".to_vec();
    sqlx::query("update document_pdfs set pdf = $2 where document_id = $1")
        .bind(id)
        .bind(&planted)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(pages::bytes(&app.http, url.clone()).await, planted);
    // Each paper is its own drawing.
    let letter = pages::bytes(&app.http, format!("{url}?paper=letter")).await;
    assert!(pdf_text(&letter).2.starts_with("612 x 792"), "US Letter");
    assert_eq!(stored_pdf(&app.pool, id, "letter").await, Some(letter));

    // A payment is a new version: drawn again, showing it, and kept in place of the old one.
    let payment = serde_json::json!({"amount_cents": 10_000, "method": "bank_transfer",
        "paid_on": "2026-12-01", "reference": "SEPA"});
    let paid = app
        .post_to(
            &format!("/api/v1/invoices/{id}/payments"),
            Some(&token),
            Some("stored-pdf"),
            &payment.to_string(),
        )
        .await;
    assert_eq!(paid.status, 201);
    let after = pages::bytes(&app.http, url.clone()).await;
    assert_ne!(after, planted);
    let (text, _, _) = pdf_text(&after);
    assert!(text.contains("€100.00"), "the payment is drawn:\n{text}");
    assert_eq!(stored_pdf(&app.pool, id, "a4").await, Some(after));
    // So is a change of the org's look (its name here).
    sqlx::query("update orgs set name = 'Renamed Co' where id = (select org_id from invoices where id = $1)")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    let renamed = pdf_text(&pages::bytes(&app.http, url.clone()).await).0;
    assert!(renamed.contains("Renamed Co"), "{renamed}");
    // Falling overdue is a new version: what was stored gives way to a fresh drawing.
    let plant = async || {
        sqlx::query("update document_pdfs set pdf = $2 where document_id = $1 and paper = 'a4'")
            .bind(id)
            .bind(&planted)
            .execute(&app.pool)
            .await
            .unwrap();
    };
    plant().await;
    assert_eq!(
        pages::bytes(&app.http, url.clone()).await,
        planted,
        "still the same version"
    );
    sqlx::query("update invoices set due_date = current_date - 10 where id = $1")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    let overdue = pages::bytes(&app.http, url.clone()).await;
    assert_ne!(overdue, planted, "an overdue invoice is drawn again");
    assert_eq!(
        stored_pdf(&app.pool, id, "a4").await.as_ref(),
        Some(&overdue)
    );
    // A PDF another build of the renderer stored (its version is another digest) is drawn again.
    plant().await;
    sqlx::query(
        "update document_pdfs set version = decode(repeat('00', 32), 'hex') where document_id = $1",
    )
    .bind(id)
    .execute(&app.pool)
    .await
    .unwrap();
    let redrawn = pages::bytes(&app.http, url).await;
    assert_ne!(redrawn, planted, "a new build draws it again");
    assert!(pdf_text(&redrawn).0.contains("Renamed Co"));
    let rows: i64 = scalar_for(
        &app.pool,
        "select count(*) from document_pdfs where document_id = $1",
        id,
    )
    .await;
    assert_eq!(rows, 2, "one row per paper");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_hundred_long_lines_flow_onto_more_pages(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let lines: Vec<_> = (1..=100)
        .map(|i| {
            serde_json::json!({
                "description": format!("Line {i}: {}", "consulting work on the ledger ".repeat(6)),
                "quantity": 1,
                "unit_amount_cents": 100,
            })
        })
        .collect();
    let body = serde_json::json!({
        "customer_name": "Many Lines Ltd",
        "customer_email": "ap@example.com",
        "currency": "usd",
        "due_date": "2027-02-28",
        "lines": lines,
    })
    .to_string();
    let json = app
        .post_invoice(Some(&token), Some("long"), &body)
        .await
        .json();
    let path = public_path(&app, &json);
    let bytes = pages::bytes(&app.http, format!("{}{path}/pdf", app.base)).await;
    let (text, pages, _) = pdf_text(&bytes);
    assert!(pages > 3, "{pages} pages");
    assert!(text.contains("Line 100:") && text.contains("$100.00"));
    assert!(text.contains(&format!("page {pages} of {pages}")));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_page_and_the_pdf_show_subtotal_discount_each_tax_and_notes(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let rate = app
        .post_to(
            "/api/v1/tax_rates",
            Some(&token),
            Some("vat"),
            r#"{"name": "VAT", "percent": 21}"#,
        )
        .await
        .json();
    // 2.5 × 40.00 = 100.00; 10.00 off; VAT 21 % of 90.00 = 18.90; total 108.90.
    let body = serde_json::json!({
        "customer_name": "Taxed Ltd",
        "customer_email": "ap@example.com",
        "currency": "usd",
        "payment_terms_days": 30,
        "discount": { "amount_cents": 1_000 },
        "notes": "Bank transfer within 30 days, please.",
        "lines": [{ "description": "Hours", "quantity": 2.5, "unit_amount_cents": 4_000,
                    "tax_rate_id": rate["id"] }],
    })
    .to_string();
    let json = app
        .post_invoice(Some(&token), Some("taxed"), &body)
        .await
        .json();
    assert_eq!(json["total_cents"], 10_890);
    let path = public_path(&app, &json);
    let (status, _, html) = get(&app, &path).await;
    assert_eq!(status, 200);
    for shown in [
        "$100.00",
        "−$10.00",
        "VAT 21%",
        "$18.90",
        "$108.90",
        "(net 30)",
        "within 30 days",
    ] {
        assert!(html.contains(shown), "{shown} missing from the page");
    }
    let bytes = pages::bytes(&app.http, format!("{}{path}/pdf", app.base)).await;
    let (text, _, _) = pdf_text(&bytes);
    for shown in [
        "Subtotal",
        "$100.00",
        "-$10.00",
        "VAT 21%",
        "$18.90",
        "$108.90",
        "net 30",
        "Tax: VAT 21%",
        "within 30 days",
    ] {
        assert!(
            text.contains(shown),
            "{shown} missing from the PDF:\n{text}"
        );
    }
}

/// The owner replaces the customer's link of any finalized invoice, a paid one too: the old link
/// stops at once, the new one opens the page; a double click replaces it once.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_owner_replaces_the_customer_link_once_per_click_even_when_paid(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let email = format!("owner-{}@example.com", Uuid::new_v4().simple());
    let (_, invoice) = crate::common::seed_invoice(&app.pool, &email, 1_000, "usd").await;
    let (_, paid) = invoicer_core::payments::stripe::standin::checkout_completed(
        model::InvoiceId::from(invoice),
        1_000,
        "usd",
    );
    assert_eq!(app.deliver(&paid).await.0, 200);
    let token = || async {
        sqlx::query_scalar::<_, String>("select public_token from invoices where id = $1")
            .bind(invoice)
            .fetch_one(&app.pool)
            .await
            .unwrap()
    };
    let status: String = scalar_for(
        &app.pool,
        "select status from invoices where id = $1",
        invoice,
    )
    .await;
    assert_eq!(status, "paid");
    let old = token().await;

    let http = crate::common::client();
    crate::common::login(&http, &app.base, &email, "correct horse").await;
    let key = Uuid::now_v7().to_string();
    let click = || {
        http.post(format!("{}/rpc/invoice_action", app.base))
            .form(&[
                ("invoice_id", invoice.to_string()),
                ("action", "new_link".to_owned()),
                ("idempotency_key", key.clone()),
            ])
            .send()
    };
    let (a, b) = tokio::join!(click(), click());
    assert!(a.unwrap().status().as_u16() < 400);
    assert!(b.unwrap().status().as_u16() < 400);
    let new = token().await;
    assert_ne!(new, old);
    assert_eq!(get(&app, &format!("/i/{old}")).await.0, 404);
    assert_eq!(get(&app, &format!("/i/{old}/pdf")).await.0, 404);
    assert_eq!(get(&app, &format!("/i/{new}")).await.0, 200);
    // The same rendered button again: nothing replaced a second time.
    assert!(click().await.unwrap().status().as_u16() < 400);
    assert_eq!(token().await, new);
    // A fresh click replaces it again.
    let res = pages::post_form(
        &http,
        format!("{}/rpc/invoice_action", app.base),
        &[
            ("invoice_id", invoice.to_string()),
            ("action", "new_link".to_owned()),
            ("idempotency_key", Uuid::now_v7().to_string()),
        ],
    )
    .await;
    assert!(res.status().as_u16() < 400);
    assert_ne!(token().await, new);
}

//! The customer's language: the customer's own (or else the org's) on the customer's pages, PDFs
//! and emails, with money, numbers and dates written as that language writes them.

use std::time::Duration;

use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::{ApiResponse, TestApp};
use crate::common::{self, SmtpSink};

fn text(res: &ApiResponse) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

async fn send(app: &TestApp, method: &str, path: &str, key: &str, body: Value) -> ApiResponse {
    app.call(method, path, key, &body).await
}

/// An invoice of 1 234,56 € (two lines: 1.5 × 823.04) to `customer` (a saved one, or typed).
async fn invoice(app: &TestApp, key: &str, customer: Option<&str>) -> Value {
    let mut body = json!({
        "currency": "eur",
        "payment_terms_days": 14,
        "lines": [{"description": "Beratung", "quantity": 1.5, "unit_amount_cents": 82_304}],
    });
    match customer {
        Some(id) => body["customer_id"] = json!(id),
        None => {
            body["customer_name"] = json!("Ada");
            body["customer_email"] = json!("ada@example.com");
        }
    }
    let res = send(app, "POST", "/api/v1/invoices", key, body).await;
    assert_eq!(res.status, 201, "{}", text(&res));
    res.json()
}

async fn page(app: &TestApp, url: &str) -> String {
    app.http
        .get(url.to_owned())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The text pdftotext reads from the PDF at `url`.
async fn pdf_text(app: &TestApp, url: &str) -> String {
    let bytes = app
        .http
        .get(format!("{url}/pdf"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let dir = std::env::temp_dir().join(format!("invoicer-lang-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("doc.pdf");
    std::fs::write(&file, &bytes).unwrap();
    let out = std::process::Command::new("pdftotext")
        .arg(&file)
        .arg("-")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(dir);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_german_customers_page_and_pdf_speak_german(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, key) = app.api_client().await;
    let bad = send(
        &app,
        "POST",
        "/api/v1/customers",
        &key,
        json!({"name": "X", "email": "x@example.com", "locale": "xx"}),
    )
    .await;
    assert_eq!(bad.status, 422, "{}", text(&bad));
    let customer = send(
        &app,
        "POST",
        "/api/v1/customers",
        &key,
        json!({"name": "Müller GmbH", "email": "ap@mueller.example", "locale": "de"}),
    )
    .await;
    assert_eq!(customer.status, 201, "{}", text(&customer));
    assert_eq!(customer.json()["locale"], "de");
    let id = customer.json()["id"].as_str().unwrap().to_owned();
    let made = invoice(&app, &key, Some(&id)).await;
    let url = made["public_url"].as_str().unwrap();

    let html = page(&app, url).await;
    assert!(html.contains(r#"<html lang="de">"#), "{html}");
    for word in [
        "Rechnung",
        "Rechnungsempfänger",
        "Zwischensumme",
        "Gesamtbetrag",
        "Offener Betrag",
        "PDF herunterladen",
        "1.234,56 €",
        "1,5",
        "823,04 €",
        "netto 14 Tage",
    ] {
        assert!(html.contains(word), "{word}: {html}");
    }
    assert!(!html.contains("Amount due"), "no English left: {html}");

    let pdf = pdf_text(&app, url).await;
    for word in [
        "RECHNUNG",
        "Rechnungsempfänger",
        "1.234,56 €",
        "Seite 1 von 1",
        "Fällig am",
    ] {
        assert!(pdf.contains(word), "{word}: {pdf}");
    }
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_orgs_language_serves_customers_without_one_and_emails_follow(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, key) = app.api_client().await;
    let res = send(&app, "PATCH", "/api/v1/org", &key, json!({"locale": "fr"})).await;
    assert_eq!(res.status, 200, "{}", text(&res));
    assert_eq!(res.json()["locale"], "fr");
    let made = invoice(&app, &key, None).await;
    let html = page(&app, made["public_url"].as_str().unwrap()).await;
    assert!(html.contains(r#"<html lang="fr">"#), "{html}");
    assert!(html.contains("Sous-total"), "{html}");
    assert!(
        html.contains("1\u{202f}234,56 €"),
        "French groups with a narrow space: {html}"
    );

    // A Dutch customer of the same org: its own language, in its email too.
    let customer = send(
        &app,
        "POST",
        "/api/v1/customers",
        &key,
        json!({"name": "Jansen BV", "email": "ap@jansen.example", "locale": "nl"}),
    )
    .await;
    let id = customer.json()["id"].as_str().unwrap().to_owned();
    let made = invoice(&app, &key, Some(&id)).await;
    let invoice_id: Uuid = made["id"].as_str().unwrap().parse().unwrap();
    let html = page(&app, made["public_url"].as_str().unwrap()).await;
    assert!(html.contains("Subtotaal"), "{html}");
    assert!(html.contains("€ 1.234,56"), "{html}");

    let sink = SmtpSink::start(0, false).await;
    common::queue_email(&app.pool, org, Uuid::new_v4(), invoice_id)
        .await
        .unwrap();
    let mailer = invoicer_core::mail::Mailer::new(
        Some(&sink.url()),
        None,
        std::path::Path::new("unused"),
        Duration::from_secs(10),
        invoicer_core::mail::DEV_FROM,
    )
    .unwrap();
    let config = invoicer_core::worker::WorkerConfig::default();
    while invoicer_core::worker::drain_once(&app.pool, &mailer, &config)
        .await
        .unwrap()
        > 0
    {}
    let mail = sink.wait_for(1, Duration::from_secs(10)).await;
    let unfolded = mail[0].replace("=\r\n", "").replace("=\n", "");
    assert!(unfolded.contains("Subject: Factuur "), "{unfolded}");
    assert!(unfolded.contains("Beste Jansen BV"), "{unfolded}");
}

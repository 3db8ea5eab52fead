//! How to pay by transfer: the org's bank details, checked (the IBAN's mod-97 checksum), saved once
//! per rendered form, and shown with the invoice's payment reference on the customer's page, the PDF
//! and the invoice email while something is due.

use std::time::Duration;

use sqlx::PgPool;
use uuid::Uuid;

use crate::common::rows::{insert_invoice, one_line_input, public_token, scalar_for};
use crate::common::served::TestApp;
use crate::common::{client, login, pages, queue_email, SmtpSink};

const PASSWORD: &str = "correct horse";

/// The bank form's key on the settings page.
fn bank_form_key(html: &str) -> String {
    let form = &html[html.find("bank-details").expect("the bank form")..];
    let marker = "name=\"idempotency_key\" value=\"";
    let at = form.find(marker).expect("its key") + marker.len();
    form[at..at + 36].to_owned()
}

fn bank_form(key: &str, iban: &str, bic: &str) -> Vec<(&'static str, String)> {
    vec![
        ("idempotency_key", key.to_owned()),
        ("bank[holder]", "Acme B.V.".to_owned()),
        ("bank[iban]", iban.to_owned()),
        ("bank[bic]", bic.to_owned()),
        ("bank[other]", String::new()),
        ("bank[reference]", "Invoice {number}".to_owned()),
    ]
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn bank_details_are_checked_saved_and_shown_on_the_page_the_pdf_and_the_email(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let email = format!("{}@example.com", Uuid::new_v4().simple());
    let account =
        invoicer_core::accounts::create_org_with_owner(&app.pool, "Acme", &email, PASSWORD)
            .await
            .unwrap();
    let org = account.org_id;
    let http = client();
    login(&http, &app.base, &email, PASSWORD).await;
    let html = pages::text(&http, format!("{}/settings/org", app.base)).await;
    let key = bank_form_key(&html);
    let url = format!("{}/rpc/save_bank_details", app.base);

    // One digit off: the checksum refuses it, and nothing is saved.
    let refused = pages::post_form(
        &http,
        url.clone(),
        &bank_form(&key, "NL91 ABNA 0417 1643 01", ""),
    )
    .await;
    assert_eq!(refused.status(), 422);
    assert!(refused.text().await.unwrap().contains("not a valid IBAN"));
    let iban: String = scalar_for(&app.pool, "select bank_iban from orgs where id = $1", org).await;
    assert_eq!(iban, "");

    // Typed with spaces, in lower case: stored compact. Twice at once: saved once.
    let good = bank_form(&key, "nl91 abna 0417 1643 00", "abnanl2a");
    let (a, b) = tokio::join!(
        pages::post_form(&http, url.clone(), &good),
        pages::post_form(&http, url.clone(), &good)
    );
    assert!(
        a.status().as_u16() < 400 && b.status().as_u16() < 400,
        "{} {}",
        a.status(),
        b.status()
    );
    let (iban, bic): (String, String) =
        sqlx::query_as("select bank_iban, bank_bic from orgs where id = $1")
            .bind(org)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        (iban.as_str(), bic.as_str()),
        ("NL91ABNA0417164300", "ABNANL2A")
    );
    assert_eq!(
        crate::common::rows::count_rows(
            &app.pool,
            "claims where scope = 'form' and owner = $1::text || '/edit_bank_details'",
            org
        )
        .await,
        1
    );

    // An open invoice shows them, with its number in the reference.
    let invoice = insert_invoice(
        &app.pool,
        org,
        &one_line_input("eur", "2027-01-31", 12_000, false),
    )
    .await;
    let number: String = scalar_for(
        &app.pool,
        "select number_text from invoices where id = $1",
        invoice,
    )
    .await;
    let reference = format!("Invoice {number}");
    let token = public_token(&app.pool, invoice).await;
    let page = pages::text(&http, format!("{}/i/{token}", app.base)).await;
    assert!(page.contains("Pay by bank transfer"), "{page}");
    assert!(page.contains("NL91 ABNA 0417 1643 00") && page.contains("ABNANL2A"));
    assert!(page.contains(&reference));
    let pdf = pages::bytes(&http, format!("{}/i/{token}/pdf", app.base)).await;
    let (text, _, _) = crate::public_page::pdf_text(&pdf);
    assert!(text.contains("NL91 ABNA 0417 1643 00"), "{text}");
    assert!(text.contains(&reference), "{text}");

    let sink = SmtpSink::start(0, false).await;
    queue_email(&app.pool, org, model::form_key(org), invoice)
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
    let config = invoicer_core::worker::WorkerConfig {
        id: "bank".into(),
        poll: Duration::from_millis(50),
        ..Default::default()
    };
    while invoicer_core::worker::drain_once(&app.pool, &mailer, &config)
        .await
        .unwrap()
        > 0
    {}
    // The owner's notice of the change, and the invoice's email.
    let mail = sink
        .wait_for(2, Duration::from_secs(10))
        .await
        .into_iter()
        .map(|m| m.replace("=\r\n", ""))
        .find(|m| m.contains("IBAN:"))
        .expect("the invoice's email");
    assert!(mail.contains("IBAN: NL91 ABNA 0417 1643 00"), "{mail}");
    assert!(mail.contains(&format!("Reference: {reference}")), "{mail}");

    // Paid in full: nothing more to transfer, and the page says nothing about it.
    sqlx::query("update invoices set amount_paid_cents = total_cents, status = 'paid', payment_state = 'paid' where id = $1")
        .bind(invoice)
        .execute(&app.pool)
        .await
        .unwrap();
    let page = pages::text(&http, format!("{}/i/{token}", app.base)).await;
    assert!(!page.contains("Pay by bank transfer"));
}

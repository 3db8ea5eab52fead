//! The bank-transfer loop's first half: every finalized invoice's ISO 11649 reference (the same in
//! SQL and in Rust), printed on its page and PDF, in its e-invoice (BT-83) and its API output; and
//! the EPC QR code on the page and the PDF of a euro invoice with money due, read back by zbarimg
//! (a decoder nobody here wrote) from the PDF rendered to an image.

use std::process::Command;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::rows::{insert_invoice, one_line_input, public_token, scalar_for};
use crate::common::served::TestApp;
use crate::common::{client, pages};

/// An org with bank details, and an invoice of `cents` in `currency` to Ada, finalized.
async fn invoice(
    app: &TestApp,
    currency: &str,
    cents: i64,
) -> (invoicer_core::accounts::NewAccount, Uuid) {
    let owner = format!("{}@example.com", Uuid::new_v4().simple());
    let account =
        invoicer_core::accounts::create_org_with_owner(&app.pool, "Acme", &owner, "correct horse")
            .await
            .unwrap();
    let org = account.org_id;
    sqlx::query(
        "update orgs set bank_account_holder = 'Acme B.V.', bank_iban = 'NL91ABNA0417164300',
                         bank_bic = 'ABNANL2A' where id = $1",
    )
    .bind(org)
    .execute(&app.pool)
    .await
    .unwrap();
    let id = insert_invoice(
        &app.pool,
        org,
        &one_line_input(currency, "2031-01-31", cents, false),
    )
    .await;
    (account, id)
}

/// What zbarimg reads from the first page of `pdf` rendered at 200 dpi.
fn decoded_from_pdf(pdf: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("invoicer-qr-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("invoice.pdf");
    std::fs::write(&file, pdf).unwrap();
    let out = dir.join("page");
    let status = Command::new("pdftoppm")
        .args(["-r", "200", "-png", "-f", "1", "-l", "1", "-singlefile"])
        .arg(&file)
        .arg(&out)
        .status()
        .expect("pdftoppm (poppler-utils) renders the PDF");
    assert!(status.success());
    let read = Command::new("zbarimg")
        .args(["--raw", "-q", "-Sdisable", "-Sqrcode.enable"])
        .arg(dir.join("page.png"))
        .output()
        .expect("zbarimg (zbar-tools) reads the QR code: scripts/lib.sh installs it");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(read.status.success(), "zbarimg found no QR code: {read:?}");
    String::from_utf8(read.stdout)
        .unwrap()
        .trim_end()
        .to_owned()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_euro_invoice_with_money_due_carries_its_reference_and_a_qr_code_that_reads_back(
    pool: PgPool,
) {
    let app = TestApp::spawn(pool).await;
    let (account, id) = invoice(&app, "eur", 12_345).await;
    let number: String = scalar_for(
        &app.pool,
        "select number_text from invoices where id = $1",
        id,
    )
    .await;
    let rf = model::payment_reference::for_invoice_number(&number).unwrap();
    let stored: String = scalar_for(
        &app.pool,
        "select payment_reference from invoices where id = $1",
        id,
    )
    .await;
    assert_eq!(stored, rf);

    let http = client();
    let token = public_token(&app.pool, id).await;
    let page = pages::text(&http, format!("{}/i/{token}", app.base)).await;
    assert!(
        page.contains(&model::payment_reference::printed(&rf)),
        "{page}"
    );
    let figure = &page[page.find("payment-qr").expect("the QR code on the page")..];
    assert!(figure.contains("<svg") && figure.contains("Scan with your banking app"));

    let pdf = pages::bytes(&http, format!("{}/i/{token}/pdf", app.base)).await;
    let (text, _, _) = crate::public_page::pdf_text(&pdf);
    assert!(
        text.contains(&model::payment_reference::printed(&rf)),
        "{text}"
    );
    let read = decoded_from_pdf(&pdf);
    assert_eq!(
        read.split('\n').collect::<Vec<_>>(),
        [
            "BCD",
            "002",
            "1",
            "SCT",
            "ABNANL2A",
            "Acme B.V.",
            "NL91ABNA0417164300",
            "EUR123.45",
            "",
            rf.as_str()
        ],
        "{read:?}"
    );

    // Part paid: the code asks for what is still due.
    sqlx::query("update invoices set amount_paid_cents = 10000 where id = $1")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    let pdf = pages::bytes(&http, format!("{}/i/{token}/pdf", app.base)).await;
    assert!(decoded_from_pdf(&pdf).contains("\nEUR23.45\n"));

    // The API and the e-invoice name the same reference.
    let key = crate::common::rows::owners_key(&app.pool, &account).await;
    let body: Value = reqwest::Client::new()
        .get(format!("{}/api/v1/invoices/{id}", app.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["payment_reference"], rf.as_str());
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn no_qr_code_in_another_currency_or_with_nothing_due(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let http = client();
    let page_of = |id: Uuid| {
        let (app, http) = (&app, &http);
        async move {
            let token = public_token(&app.pool, id).await;
            pages::text(http, format!("{}/i/{token}", app.base)).await
        }
    };
    let (_, usd) = invoice(&app, "usd", 5_000).await;
    let page = page_of(usd).await;
    assert!(
        page.contains("Pay by bank transfer") && !page.contains("payment-qr"),
        "{page}"
    );
    let (_, paid) = invoice(&app, "eur", 5_000).await;
    sqlx::query("update invoices set amount_paid_cents = total_cents, status = 'paid', payment_state = 'paid' where id = $1")
        .bind(paid)
        .execute(&app.pool)
        .await
        .unwrap();
    assert!(!page_of(paid).await.contains("payment-qr"));
    let (account, no_iban) = invoice(&app, "eur", 5_000).await;
    sqlx::query("update orgs set bank_iban = '', bank_bic = '', bank_other = 'Sort code 12-34-56' where id = $1")
        .bind(account.org_id)
        .execute(&app.pool)
        .await
        .unwrap();
    assert!(!page_of(no_iban).await.contains("payment-qr"));
}

/// The reference Postgres stores (`rf_reference()`, a generated column) is the one Rust makes,
/// for numbers of any shape: punctuation, lower case, non-ASCII, longer than a reference.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn postgres_and_rust_make_the_same_reference(pool: PgPool) {
    let mut runner = TestRunner::deterministic();
    let numbers = "[A-Za-z0-9/._ éß-]{0,40}";
    for _ in 0..2_000 {
        let number = numbers.new_tree(&mut runner).unwrap().current();
        let stored: Option<String> = sqlx::query_scalar("select rf_reference($1)")
            .bind(&number)
            .fetch_one(&pool)
            .await
            .unwrap();
        let made = model::payment_reference::for_invoice_number(&number);
        assert_eq!(stored, made, "{number:?}");
        if let Some(rf) = made {
            assert!(model::payment_reference::is_valid(&rf), "{rf}");
        }
    }
}

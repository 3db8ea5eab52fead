//! EN 16931 e-invoices: every document the tests make (each tax category, discounts, several rates,
//! zero- and three-decimal currencies, a partially paid invoice), in CII and UBL, passes the
//! official CEN rules (`../shared/einvoicing/validate.py`, run with saxonche); finalizing what would
//! be invalid is refused with the field to fix, takes no number and keeps the key usable.

use std::path::PathBuf;

use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::{ApiResponse, TestApp};

/// Where the CEN validation artefacts are (CI has `../shared` beside the project).
fn validator() -> Option<PathBuf> {
    let dir = std::env::var_os("EINVOICING_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/einvoicing"),
        PathBuf::from,
    );
    let script = dir.join("validate.py");
    script.exists().then_some(script)
}

/// Runs the official rules over `files`; panics with their report when a fatal rule fails. Without
/// the rules on this machine it says so plainly, and fails where every suite must run (CI, and
/// `scripts/test`, which sets `INVOICER_REQUIRE_ALL`).
pub fn assert_valid_en16931(files: &[PathBuf]) {
    assert_valid("cen", files)
}

/// Runs the official rules of `rules` (`cen`, `peppol` or `xrechnung`) over `files`, as
/// [`assert_valid_en16931`] does.
pub fn assert_valid(rules: &str, files: &[PathBuf]) {
    let Some(script) = validator() else {
        let required = ["CI", "INVOICER_REQUIRE_ALL"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()));
        assert!(
            !required,
            "EN 16931 rules missing: ../shared/einvoicing/validate.py (or EINVOICING_DIR) is absent, \
             and every suite must run here ({} documents unchecked)",
            files.len()
        );
        eprintln!(
            "EN 16931 RULES NOT RUN: ../shared/einvoicing/validate.py is absent on this machine ({} documents unchecked)",
            files.len()
        );
        return;
    };
    let python = std::env::var("TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = std::process::Command::new(python)
        .arg(&script)
        .args(["--rules", rules])
        .args(files)
        .output()
        .expect("running validate.py (needs saxonche: scripts/test installs it)");
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("{report}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{rules} rules failed:\n{report}");
    assert_eq!(
        report
            .lines()
            .filter(|l| l.contains(" OK (0 fatal"))
            .count(),
        files.len(),
        "every document checked"
    );
}

pub async fn send(
    app: &TestApp,
    method: &str,
    path: &str,
    token: &str,
    body: Value,
) -> ApiResponse {
    let req = app
        .http
        .request(method.parse().unwrap(), format!("{}{path}", app.base))
        .bearer_auth(token)
        .header("idempotency-key", Uuid::new_v4().to_string())
        .header("content-type", "application/json")
        .body(body.to_string());
    ApiResponse::read(req.send().await.unwrap()).await
}

pub async fn created(app: &TestApp, path: &str, token: &str, body: Value) -> Value {
    let res = send(app, "POST", path, token, body).await;
    assert_eq!(
        res.status,
        201,
        "{path}: {}",
        String::from_utf8_lossy(&res.body)
    );
    res.json()
}

pub struct Seller {
    pub token: String,
    pub rates: std::collections::HashMap<&'static str, String>,
    pub domestic: String,
    pub european: String,
    pub abroad: String,
}

/// An e-invoicing org in Germany with a rate of each category and three customers: one in Germany
/// (with a Leitweg-ID), a French business with a VAT id, one in the US without.
pub async fn seller(app: &TestApp) -> Seller {
    let (org, token) = app.api_client().await;
    // The org's look too: its PDFs stay PDF/A-3b with a logo (with transparency) and a footer.
    let mut logo = Vec::new();
    image::RgbaImage::from_pixel(120, 40, image::Rgba([20, 80, 160, 128]))
        .write_to(
            &mut std::io::Cursor::new(&mut logo),
            image::ImageFormat::Png,
        )
        .unwrap();
    let mut tx = app.pool.begin().await.unwrap();
    invoicer_core::documents::branding::set_logo(&mut tx, org, &logo, 120, 40)
        .await
        .unwrap();
    invoicer_core::documents::branding::save(
        &mut tx,
        org,
        Some("#0b7a75"),
        "Amtsgericht Berlin HRB 12345",
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let org = send(
        app,
        "PATCH",
        "/api/v1/org",
        &token,
        json!({
            "legal_name": "Müller & Söhne GmbH",
            "address": {"line1": "Hauptstraße 5", "postal_code": "10115", "city": "Berlin", "country": "DE"},
            "vat_id": "DE 123 456 789",
            "tax_registration_id": "12/345/67890",
            "email": "billing@mueller.example",
            "phone": "+49 30 1234567",
            "bank": {"holder": "Müller & Söhne GmbH", "iban": "DE89 3704 0044 0532 0130 00", "bic": "COBADEFFXXX", "reference": "{number}"},
            "einvoicing": true
        }),
    )
    .await;
    assert_eq!(org.status, 200, "{}", String::from_utf8_lossy(&org.body));
    assert_eq!(org.json()["vat_id"], "DE123456789");
    let mut rates = std::collections::HashMap::new();
    for (name, body) in [
        ("S19", json!({"name": "MwSt 19%", "percent": 19})),
        ("S7", json!({"name": "MwSt 7%", "percent": 7})),
        ("Z", json!({"name": "Zero", "percent": 0, "category": "Z"})),
        (
            "E",
            json!({"name": "Exempt", "percent": 0, "category": "E", "exemption_reason": "Heilbehandlung, § 4 Nr. 14 UStG"}),
        ),
        (
            "AE",
            json!({"name": "Reverse charge", "percent": 0, "category": "AE"}),
        ),
        (
            "K",
            json!({"name": "EU supply", "percent": 0, "category": "K"}),
        ),
        (
            "G",
            json!({"name": "Export", "percent": 0, "category": "G"}),
        ),
        (
            "O",
            json!({"name": "Outside VAT", "percent": 0, "category": "O"}),
        ),
    ] {
        let rate = created(app, "/api/v1/tax_rates", &token, body).await;
        rates.insert(name, rate["id"].as_str().unwrap().to_owned());
    }
    let customer = |body: Value| async {
        created(app, "/api/v1/customers", &token, body).await["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let domestic = customer(json!({
        "name": "Stadtwerke Beispiel", "email": "rechnung@stadtwerke.example",
        "address": {"line1": "Am Markt 1", "postal_code": "04109", "city": "Leipzig", "country": "DE"},
        "buyer_reference": "04011000-12345-67"
    }))
    .await;
    let european = customer(json!({
        "name": "Société Exemple SA", "email": "factures@exemple.example",
        "address": {"line1": "12 rue de la Paix", "postal_code": "75002", "city": "Paris", "country": "FR"},
        "vat_id": "FR40303265045"
    }))
    .await;
    let abroad = customer(json!({
        "name": "Example Inc.", "email": "ap@example.com",
        "address": {"line1": "1 Market St", "postal_code": "94105", "city": "San Francisco", "region": "CA", "country": "US"}
    }))
    .await;
    Seller {
        token,
        rates,
        domestic,
        european,
        abroad,
    }
}

pub fn invoice(
    customer: &str,
    currency: &str,
    lines: &[(&str, &str, i64, &str)],
    s: &Seller,
) -> Value {
    json!({
        "customer_id": customer,
        "currency": currency,
        "payment_terms_days": 30,
        "lines": lines.iter().map(|(d, q, price, rate)| json!({
            "description": d, "quantity": q.parse::<f64>().unwrap(), "unit_amount_cents": price,
            "tax_rate_id": s.rates[rate],
        })).collect::<Vec<_>>(),
    })
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn every_e_invoice_passes_the_official_rules_in_both_syntaxes(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let s = seller(&app).await;
    let mut discounted = invoice(
        &s.domestic,
        "eur",
        &[
            ("Beratung", "2", 15_000, "S19"),
            ("Fachbuch", "3", 1_999, "S7"),
            ("Porto", "1.5", 333, "S19"),
        ],
        &s,
    );
    discounted["discount"] = json!({"percent": 10});
    discounted["notes"] = json!("Vielen Dank für Ihren Auftrag.");
    let mut amount_off = invoice(
        &s.domestic,
        "eur",
        &[
            ("Wartung", "1", 10_000, "S19"),
            ("Schulung", "1", 5_000, "S7"),
        ],
        &s,
    );
    amount_off["discount"] = json!({"amount_cents": 1_001});
    let cases = [
        ("standard rates and a discount", discounted),
        ("an amount off across two rates", amount_off),
        (
            "zero rated",
            invoice(&s.domestic, "eur", &[("Export goods", "1", 5_000, "Z")], &s),
        ),
        (
            "exempt",
            invoice(&s.domestic, "eur", &[("Therapie", "4", 8_000, "E")], &s),
        ),
        (
            "reverse charge",
            invoice(
                &s.european,
                "eur",
                &[("Installation", "1", 120_000, "AE")],
                &s,
            ),
        ),
        (
            "intra-community supply",
            invoice(&s.european, "eur", &[("Maschine", "2", 450_000, "K")], &s),
        ),
        (
            "export",
            invoice(
                &s.abroad,
                "usd",
                &[("Software licence", "10", 9_900, "G")],
                &s,
            ),
        ),
        (
            "not subject to VAT",
            invoice(&s.abroad, "eur", &[("Donation", "1", 2_500, "O")], &s),
        ),
        (
            "zero-decimal currency",
            invoice(
                &s.domestic,
                "jpy",
                &[("Consulting", "3", 12_345, "S19")],
                &s,
            ),
        ),
        (
            "three-decimal currency",
            invoice(
                &s.domestic,
                "kwd",
                &[
                    ("Service", "2.5", 12_340, "S19"),
                    ("Parts", "1", 7_770, "S7"),
                ],
                &s,
            ),
        ),
        (
            "partially paid",
            invoice(&s.domestic, "eur", &[("Projekt", "1", 100_000, "S19")], &s),
        ),
    ];
    let dir = std::env::temp_dir().join(format!("einvoices-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    let mut pdfs = Vec::new();
    for (i, (name, body)) in cases.into_iter().enumerate() {
        let made = created(&app, "/api/v1/invoices", &s.token, body).await;
        let id = made["id"].as_str().unwrap();
        // The customer's PDF is Factur-X: PDF/A-3b with the CII document attached.
        let url = made["public_url"].as_str().unwrap();
        let pdf = app.http.get(format!("{url}/pdf")).send().await.unwrap();
        assert_eq!(pdf.status(), 200, "{name}: pdf");
        let file = dir.join(format!("{i:02}.pdf"));
        std::fs::write(&file, pdf.bytes().await.unwrap()).unwrap();
        pdfs.push(file);
        if name == "partially paid" {
            let paid =
                json!({"amount_cents": 25_000, "method": "bank_transfer", "paid_on": "2026-12-01"});
            created(
                &app,
                &format!("/api/v1/invoices/{id}/payments"),
                &s.token,
                paid,
            )
            .await;
        }
        for syntax in ["cii", "ubl"] {
            let res = app
                .get(
                    &s.token,
                    &format!("/api/v1/invoices/{id}/einvoice?syntax={syntax}"),
                )
                .await;
            assert_eq!(
                res.status,
                200,
                "{name} {syntax}: {}",
                String::from_utf8_lossy(&res.body)
            );
            assert_eq!(
                res.header("content-type"),
                Some("application/xml; charset=utf-8")
            );
            let xml = String::from_utf8(res.body.clone()).unwrap();
            assert!(
                xml.contains(made["number"].as_str().unwrap()),
                "{name}: its number"
            );
            let file = dir.join(format!("{i:02}-{syntax}.xml"));
            std::fs::write(&file, &xml).unwrap();
            files.push(file);
        }
        // The customer's link serves the same documents, and the page says what the law asks.
        let public_xml = app
            .http
            .get(format!("{url}/einvoice.xml?syntax=ubl"))
            .send()
            .await
            .unwrap();
        assert_eq!(public_xml.status(), 200, "{name}: public xml");
        let ubl = std::fs::read(dir.join(format!("{i:02}-ubl.xml"))).unwrap();
        assert_eq!(
            public_xml.bytes().await.unwrap().as_ref(),
            ubl.as_slice(),
            "{name}: the same UBL"
        );
        if name == "reverse charge" {
            assert_eq!(made["lines"][0]["tax_category"], "AE");
            let page = app
                .http
                .get(url)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert!(
                page.contains("Reverse charge: VAT to be accounted for by the customer"),
                "{page}"
            );
            let text = std::process::Command::new("pdftotext")
                .args([dir.join(format!("{i:02}.pdf")).as_os_str(), "-".as_ref()])
                .output()
                .unwrap();
            assert!(
                String::from_utf8_lossy(&text.stdout).contains("Reverse charge"),
                "the PDF says it too"
            );
        }
        // Credit notes (381): a line, an amount spread over two rates, the whole invoice.
        let credit = match i {
            0 => Some(
                json!({"lines": [{"line_id": 1, "quantity": 1}], "reason": "Eine Stunde zu viel berechnet"}),
            ),
            1 => Some(json!({"amount_cents": 5_000, "reason": "Kulanz"})),
            5 => Some(json!({"reason": "Rücksendung"})),
            _ => None,
        };
        if let Some(body) = credit {
            let note = created(
                &app,
                &format!("/api/v1/invoices/{id}/credit_notes"),
                &s.token,
                body,
            )
            .await;
            let note_id = note["id"].as_str().unwrap();
            for syntax in ["cii", "ubl"] {
                let res = app
                    .get(
                        &s.token,
                        &format!("/api/v1/credit_notes/{note_id}/einvoice?syntax={syntax}"),
                    )
                    .await;
                assert_eq!(
                    res.status,
                    200,
                    "{name} credit note {syntax}: {}",
                    String::from_utf8_lossy(&res.body)
                );
                let xml = String::from_utf8(res.body.clone()).unwrap();
                assert!(
                    xml.contains("381") && xml.contains(made["number"].as_str().unwrap()),
                    "{name}: a credit note of its invoice"
                );
                let file = dir.join(format!("{i:02}-credit-{syntax}.xml"));
                std::fs::write(&file, &xml).unwrap();
                files.push(file);
            }
            let url = note["public_url"].as_str().unwrap();
            let pdf = app.http.get(format!("{url}/pdf")).send().await.unwrap();
            assert_eq!(pdf.status(), 200, "{name}: credit note pdf");
            let file = dir.join(format!("{i:02}-credit.pdf"));
            std::fs::write(&file, pdf.bytes().await.unwrap()).unwrap();
            pdfs.push(file);
        }
    }
    // The partially paid one says what is left.
    let cii = std::fs::read_to_string(dir.join("10-cii.xml")).unwrap();
    assert!(
        cii.contains("<ram:TotalPrepaidAmount>250.00</ram:TotalPrepaidAmount>"),
        "{cii}"
    );
    assert!(
        cii.contains("<ram:DuePayableAmount>940.00</ram:DuePayableAmount>"),
        "{cii}"
    );
    assert_valid_en16931(&files);
    assert_factur_x(&pdfs);
}

/// Each PDF is a Factur-X EN 16931 PDF/A-3: poppler sees the attachment and the XMP's Factur-X and
/// PDF/A identification; the `factur-x` package extracts the XML and checks it against the
/// Factur-X EN 16931 schema; the official rules pass on the XML inside.
fn assert_factur_x(pdfs: &[PathBuf]) {
    let run = |program: &str, args: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(
            out.status.success(),
            "{program}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for pdf in pdfs {
        let list = run("pdfdetach", &["-list".as_ref(), pdf.as_os_str()]);
        assert!(list.contains("factur-x.xml"), "{}: {list}", pdf.display());
        let meta = run("pdfinfo", &["-meta".as_ref(), pdf.as_os_str()]);
        for needle in [
            "<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>",
            "<fx:DocumentFileName>factur-x.xml</fx:DocumentFileName>",
            "urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#",
            "<pdfaid:part>3</pdfaid:part>",
            "<pdfaid:conformance>B</pdfaid:conformance>",
        ] {
            assert!(
                meta.contains(needle),
                "{}: no {needle} in\n{meta}",
                pdf.display()
            );
        }
    }
    let python = std::env::var("TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let check = r#"
import sys
from facturx import get_xml_from_pdf, get_level, get_flavor
from lxml import etree
for f in sys.argv[1:]:
    name, xml = get_xml_from_pdf(open(f, "rb").read(), check_xsd=True)
    tree = etree.fromstring(xml)
    assert name == "factur-x.xml", (f, name)
    assert get_flavor(tree) == "factur-x" and get_level(tree) == "en16931", f
print("factur-x", len(sys.argv) - 1)
"#;
    let mut args: Vec<&std::ffi::OsStr> = vec!["-c".as_ref(), check.as_ref()];
    args.extend(pdfs.iter().map(|p| p.as_os_str()));
    let out = run(&python, &args);
    assert_eq!(out.trim(), format!("factur-x {}", pdfs.len()));
    if let Some(script) = validator() {
        let mut args: Vec<&std::ffi::OsStr> = vec![script.as_os_str(), "--pdf".as_ref()];
        args.extend(pdfs.iter().map(|p| p.as_os_str()));
        let report = run(&python, &args);
        assert_eq!(
            report.matches(" OK (0 fatal").count(),
            pdfs.len(),
            "{report}"
        );
    }
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn what_would_be_invalid_is_refused_with_its_field_and_takes_no_number(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let s = seller(&app).await;
    let typed = json!({
        "customer_name": "Walk-in", "customer_email": "walk@example.com", "currency": "eur",
        "payment_terms_days": 14,
        "lines": [{"description": "x", "quantity": 1, "unit_amount_cents": 100, "tax_rate_id": s.rates["S19"]}]
    });
    let mut untaxed = invoice(&s.domestic, "eur", &[("x", "1", 100, "S19")], &s);
    untaxed["lines"][0]
        .as_object_mut()
        .unwrap()
        .remove("tax_rate_id");
    let refusals = [
        ("a buyer without a country", typed, "customer_id"),
        ("a line without a tax rate", untaxed, "lines"),
        (
            "reverse charge to a buyer without a VAT id",
            invoice(&s.abroad, "eur", &[("x", "1", 100, "AE")], &s),
            "customer_id",
        ),
        (
            "an intra-community supply to a buyer without a VAT id",
            invoice(&s.abroad, "eur", &[("x", "1", 100, "K")], &s),
            "customer_id",
        ),
        (
            "outside VAT beside taxed lines",
            invoice(
                &s.domestic,
                "eur",
                &[("x", "1", 100, "O"), ("y", "1", 100, "S19")],
                &s,
            ),
            "lines",
        ),
    ];
    for (name, body, field) in refusals {
        let key = Uuid::new_v4().to_string();
        let res = app
            .post_invoice(Some(&s.token), Some(&key), &body.to_string())
            .await;
        assert_eq!(
            res.status,
            422,
            "{name}: {}",
            String::from_utf8_lossy(&res.body)
        );
        let problem = res.json();
        assert!(problem["errors"][field].is_string(), "{name}: {problem}");
        // A draft of it is fine; finalizing it is refused the same way, and it stays a draft.
        let mut draft = body.clone();
        draft["draft"] = json!(true);
        let draft = created(&app, "/api/v1/invoices", &s.token, draft).await;
        let id = draft["id"].as_str().unwrap();
        let res = send(
            &app,
            "POST",
            &format!("/api/v1/invoices/{id}/finalize"),
            &s.token,
            json!({}),
        )
        .await;
        assert_eq!(
            res.status,
            422,
            "{name}: finalize {}",
            String::from_utf8_lossy(&res.body)
        );
        assert!(res.json()["errors"][field].is_string(), "{name}: finalize");
        let res = app
            .get(&s.token, &format!("/api/v1/invoices/{id}/einvoice"))
            .await;
        assert_eq!(res.status, 409, "{name}: a draft is no e-invoice");
    }
    // Nothing refused took a number: the next one is the first.
    let ok = created(
        &app,
        "/api/v1/invoices",
        &s.token,
        invoice(&s.domestic, "eur", &[("x", "1", 100, "S19")], &s),
    )
    .await;
    assert_eq!(ok["number"], "INV-000001");
    let res = app
        .get(
            &s.token,
            &format!(
                "/api/v1/invoices/{}/einvoice?syntax=pdf",
                ok["id"].as_str().unwrap()
            ),
        )
        .await;
    assert_eq!(res.status, 400);
    let url = ok["public_url"].as_str().unwrap();
    let res = app
        .http
        .get(format!("{url}/einvoice.xml?syntax=pdf"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    // E-invoicing cannot be switched on without what every e-invoice needs of the seller.
    let (_, other) = app.api_client().await;
    let res = send(
        &app,
        "PATCH",
        "/api/v1/org",
        &other,
        json!({"einvoicing": true}),
    )
    .await;
    assert_eq!(res.status, 422);
    let errors = &res.json()["errors"];
    assert!(
        errors["address.country"].is_string() && errors["vat_id"].is_string(),
        "{errors}"
    );
    let res = send(
        &app,
        "PATCH",
        "/api/v1/org",
        &other,
        json!({"vat_id": "DE12345"}),
    )
    .await;
    assert_eq!(res.status, 422);
    assert!(res.json()["errors"]["vat_id"].is_string());
}

/// A schedule's template was valid when saved; if its customer later loses what an e-invoice needs,
/// the run leaves the period's invoice as a draft (and sends nothing) instead of issuing it.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_scheduled_run_that_would_not_be_valid_leaves_a_draft(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let s = seller(&app).await;
    let mut body = invoice(&s.domestic, "eur", &[("Wartung", "1", 10_000, "S19")], &s);
    body["interval"] = json!("month");
    body["start_date"] = json!(chrono::Utc::now().date_naive());
    body["action"] = json!("send");
    let schedule = created(&app, "/api/v1/schedules", &s.token, body).await;
    let moved = send(
        &app,
        "PATCH",
        &format!("/api/v1/customers/{}", s.domestic),
        &s.token,
        json!({"address": {"country": null}}),
    )
    .await;
    assert_eq!(
        moved.status,
        200,
        "{}",
        String::from_utf8_lossy(&moved.body)
    );
    let ran = invoicer_core::jobs::schedules::run::run_due(
        &app.pool,
        chrono::Utc::now(),
        10,
        "",
        invoicer_core::mail::gate::Allowance::DEFAULT,
    )
    .await
    .unwrap();
    assert_eq!(ran, 1);
    let id = schedule["id"].as_str().unwrap();
    let runs = app
        .get(&s.token, &format!("/api/v1/schedules/{id}"))
        .await
        .json();
    let invoice = runs["runs"][0]["invoice_id"].as_str().unwrap().to_owned();
    let issued = app
        .get(&s.token, &format!("/api/v1/invoices/{invoice}"))
        .await
        .json();
    assert_eq!(issued["status"], "draft");
    let emails = app
        .count(&format!(
            "select count(*) from outbox where invoice_id = '{invoice}'"
        ))
        .await;
    assert_eq!(emails, 0);
}

/// Every character a field takes (tab, line breaks, XML's own specials, any script) still makes
/// e-invoices that parse as XML and pass the rules, the text as it was typed (line ends as XML
/// reads them).
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn tabs_line_breaks_and_any_script_still_make_well_formed_e_invoices(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let s = seller(&app).await;
    let description = "Beratung\tPhase 1\r\nund 2: <Entwurf> & \"Review\" — 東京 ½ € 🧾\u{a0}ok";
    let notes = "Vielen Dank!\n\n\tZahlbar ohne Abzug <sofort>.";
    let mut body = invoice(&s.domestic, "eur", &[(description, "1", 10_000, "S19")], &s);
    body["notes"] = json!(notes);
    let made = created(&app, "/api/v1/invoices", &s.token, body).await;
    assert_eq!(made["lines"][0]["description"], description);
    let id = made["id"].as_str().unwrap();
    let files = both_syntaxes(&app, &s.token, id, "einvoice-text").await;
    // A parser reads each document (it refuses ill-formed XML) and finds both texts whole.
    let expected = files[0].with_file_name("expected.json");
    let wanted = [description.replace("\r\n", "\n"), notes.to_owned()];
    std::fs::write(&expected, serde_json::to_vec(&wanted).unwrap()).unwrap();
    let check = r#"
import json, sys
from lxml import etree
wanted = json.load(open(sys.argv[1], encoding="utf-8"))
for f in sys.argv[2:]:
    tree = etree.parse(f)
    texts = {e.text for e in tree.iter() if isinstance(e.tag, str) and e.text}
    for w in wanted:
        assert w in texts, (f, w, sorted(texts))
print("well-formed", len(sys.argv) - 2)
"#;
    let python = std::env::var("TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(check)
        .arg(&expected)
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "well-formed 2");
    assert_valid_en16931(&files);
}

/// The Factur-X properties go into the catalog's metadata object, found by reading the PDF's
/// structure: a title (the org's name) and lines holding the very bytes a search would look for
/// (`/Metadata N 0 R`, `<?xpacket begin`, `</rdf:RDF>`, `trailer`) mislead nothing, and the title
/// stays whole. Tabs and line breaks in the lines and notes are drawn as spaces and lines.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn factur_x_metadata_is_found_whatever_bytes_the_text_holds(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let s = seller(&app).await;
    let markers = "/Metadata 1 0 R <?xpacket begin=\"\" id=\"x\"?> </rdf:RDF> (trailer) startxref";
    // The org's name is in the PDF's title, which krilla writes before the catalog and the XMP.
    let renamed = sqlx::query("update orgs set name = $1 where legal_name = $2")
        .bind(format!("Acme {markers}"))
        .bind("Müller & Söhne GmbH")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(renamed.rows_affected(), 1);
    let description = format!("{markers}\tand\r\nmore");
    let mut body = invoice(
        &s.domestic,
        "eur",
        &[(description.as_str(), "1", 10_000, "S19")],
        &s,
    );
    body["notes"] = json!(format!("Thanks!\n\n{markers}"));
    let made = created(&app, "/api/v1/invoices", &s.token, body).await;
    let url = made["public_url"].as_str().unwrap();
    let pdf = app.http.get(format!("{url}/pdf")).send().await.unwrap();
    assert_eq!(pdf.status(), 200);
    let dir = std::env::temp_dir().join(format!("facturx-markers-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("invoice.pdf");
    std::fs::write(&file, pdf.bytes().await.unwrap()).unwrap();
    assert_factur_x(std::slice::from_ref(&file));
    let info = std::process::Command::new("pdfinfo")
        .arg(&file)
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(
        info.lines()
            .any(|l| l.starts_with("Title:") && l.ends_with(&format!("Acme {markers}"))),
        "{info}"
    );
}

/// A late fee of an e-invoicing org: without a tax rate for fees its line would be untaxed, so the
/// fee is left a draft; with the org's exempt rate named in `late_fees.tax_rate_id` it is issued,
/// and its e-invoice, naming the overdue invoice as the preceding one (BG-3), passes the official
/// rules in both syntaxes. A rate that is not the org's is refused.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_late_fee_is_a_valid_e_invoice_naming_the_overdue_invoice(pool: PgPool) {
    use invoicer_core::jobs::late_fees;

    let app = TestApp::spawn(pool).await;
    let s = seller(&app).await;
    let (_, other) = app.api_client().await;
    let theirs = created(
        &app,
        "/api/v1/tax_rates",
        &other,
        json!({"name": "Theirs", "percent": 5}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let fees = |rate: Option<&str>| json!({"late_fees": {"kind": "fixed", "amount_cents": 4_000, "after_days": [7], "tax_rate_id": rate}});
    let refused = send(&app, "PATCH", "/api/v1/org", &s.token, fees(Some(&theirs))).await;
    assert_eq!(refused.status, 422);
    assert!(refused.json()["errors"]["late_fees.tax_rate_id"].is_string());
    let overdue = |lines| created(&app, "/api/v1/invoices", &s.token, lines);
    let lines = invoice(&s.domestic, "eur", &[("Beratung", "1", 50_000, "S19")], &s);
    let untaxed = overdue(lines.clone()).await;
    let set = send(&app, "PATCH", "/api/v1/org", &s.token, fees(None)).await;
    assert_eq!(set.status, 200);
    let later = chrono::Utc::now() + chrono::TimeDelta::days(38);
    let round = || {
        late_fees::run_due(
            &app.pool,
            later,
            10,
            "http://invoicer.test",
            Default::default(),
        )
    };
    assert_eq!(round().await.unwrap(), 1);
    let (status,): (String,) = sqlx::query_as("select status from invoices where fee_for = $1")
        .bind(untaxed["id"].as_str().unwrap().parse::<Uuid>().unwrap())
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(status, "draft", "an untaxed line cannot be an e-invoice");

    let interest = created(
        &app,
        "/api/v1/tax_rates",
        &s.token,
        json!({"name": "Verzugszinsen", "percent": 0, "category": "E",
               "exemption_reason": "Verzugszinsen sind kein Entgelt für eine Leistung"}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let set = send(
        &app,
        "PATCH",
        "/api/v1/org",
        &s.token,
        fees(Some(&interest)),
    )
    .await;
    assert_eq!(set.status, 200, "{}", String::from_utf8_lossy(&set.body));
    assert_eq!(set.json()["late_fees"]["tax_rate_id"], interest.as_str());
    let late = overdue(lines).await;
    assert_eq!(round().await.unwrap(), 1);
    let (fee, status, total): (Uuid, String, i64) =
        sqlx::query_as("select id, status, total_cents from invoices where fee_for = $1")
            .bind(late["id"].as_str().unwrap().parse::<Uuid>().unwrap())
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((status.as_str(), total), ("open", 4_000));
    let files = both_syntaxes(&app, &s.token, &fee.to_string(), "late-fee").await;
    for file in &files {
        let xml = std::fs::read_to_string(file).unwrap();
        let overdue = late["number"].as_str().unwrap();
        assert!(
            xml.contains(overdue),
            "{}: the overdue invoice is named",
            file.display()
        );
    }
    assert_valid_en16931(&files);
}

/// Invoice `id`'s e-invoice in CII and in UBL, each written to a file of a fresh folder named for
/// `what`; the files.
async fn both_syntaxes(app: &TestApp, token: &str, id: &str, what: &str) -> Vec<PathBuf> {
    let dir = std::env::temp_dir().join(format!("{what}-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for syntax in ["cii", "ubl"] {
        let res = app
            .get(
                token,
                &format!("/api/v1/invoices/{id}/einvoice?syntax={syntax}"),
            )
            .await;
        assert_eq!(
            res.status,
            200,
            "{syntax}: {}",
            String::from_utf8_lossy(&res.body)
        );
        let file = dir.join(format!("{syntax}.xml"));
        std::fs::write(&file, &res.body).unwrap();
        files.push(file);
    }
    files
}

//! The inbox: OpenPEPPOL's own example documents received by upload and by the access point's
//! signed webhook, each read as its XML says (BT-27, BT-1, BT-112, BT-115), kept once whatever
//! brings it; a conflicting duplicate flagged; hostile files refused with nothing stored.

use std::path::PathBuf;

use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::rows;
use crate::common::served::{ApiResponse, TestApp};

/// OpenPEPPOL's examples (CI has `../shared/einvoicing/examples`); a machine without them fails
/// plainly where every suite must run.
pub fn examples() -> Vec<PathBuf> {
    let dir = std::env::var_os("EINVOICING_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/einvoicing"),
        PathBuf::from,
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("examples"))
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "xml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    assert!(
        !files.is_empty(),
        "OpenPEPPOL's examples are missing: ../shared/einvoicing/examples (or EINVOICING_DIR)"
    );
    files
}

/// The text of the first `<{tag}...>...</{tag}>` after `after` in `xml`.
fn first(xml: &str, after: &str, tag: &str) -> String {
    let from = xml.find(after).unwrap_or(0);
    let rest = &xml[from..];
    let open = rest
        .find(&format!("<{tag}"))
        .unwrap_or_else(|| panic!("{tag}"));
    let body = &rest[open..];
    let start = body.find('>').unwrap() + 1;
    let end = body.find(&format!("</{tag}>")).unwrap();
    body[start..end].trim().to_owned()
}

/// A decimal as cents (the examples are in two-decimal currencies).
fn cents(text: &str) -> i64 {
    let negative = text.starts_with('-');
    let digits = text.trim_start_matches('-');
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let fraction = format!("{:0<2}", fraction);
    let value = whole.parse::<i64>().unwrap() * 100 + fraction[..2].parse::<i64>().unwrap();
    if negative {
        -value
    } else {
        value
    }
}

/// What the XML says: (BT-27 seller name, BT-1 number, BT-112 total, BT-115 due).
pub fn expected(xml: &str) -> (String, String, i64, i64) {
    let supplier = "<cac:AccountingSupplierParty>";
    (
        first(xml, supplier, "cbc:RegistrationName"),
        first(xml, "<cbc:CustomizationID>", "cbc:ID"),
        cents(&first(
            xml,
            "<cac:LegalMonetaryTotal>",
            "cbc:TaxInclusiveAmount",
        )),
        cents(&first(xml, "<cac:LegalMonetaryTotal>", "cbc:PayableAmount")),
    )
}

async fn upload(app: &TestApp, token: &str, key: &str, body: Vec<u8>, kind: &str) -> ApiResponse {
    let req = app
        .http
        .post(format!("{}/api/v1/received_documents", app.base))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .header("content-type", kind)
        .body(body);
    ApiResponse::read(req.send().await.unwrap()).await
}

async fn stored(pool: &PgPool) -> i64 {
    rows::scalar(pool, "select count(*) from received_documents").await
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn openpeppol_examples_are_read_as_they_say_and_kept_once(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (_, token) = app.api_client().await;
    let mut ids = Vec::new();
    // OpenPEPPOL's examples share numbers: a later one of the same seller and number is a
    // conflicting duplicate of the first.
    let mut firsts: std::collections::HashMap<(String, String), Value> = Default::default();
    for file in examples() {
        let xml = std::fs::read_to_string(&file).unwrap();
        let (seller, number, total, due) = expected(&xml);
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let res = upload(
            &app,
            &token,
            &Uuid::new_v4().to_string(),
            xml.clone().into_bytes(),
            "application/xml",
        )
        .await;
        assert_eq!(
            res.status,
            201,
            "{name}: {}",
            String::from_utf8_lossy(&res.body)
        );
        let doc = res.json();
        assert_eq!(doc["seller_name"], seller, "{name}");
        assert_eq!(doc["number"], number, "{name}");
        assert_eq!(doc["total_cents"], total, "{name}");
        assert_eq!(doc["due_cents"], due, "{name}");
        assert_eq!(doc["valid"], true, "{name}: {doc}");
        assert_eq!(doc["rule_set"], "peppol", "{name}");
        let first = firsts
            .entry((seller.clone(), number.clone()))
            .or_insert_with(|| doc["id"].clone());
        let duplicate_of = if *first == doc["id"] {
            Value::Null
        } else {
            first.clone()
        };
        assert_eq!(doc["duplicate_of"], duplicate_of, "{name}");
        // The same file again, under another key: the same document, nothing new.
        let again = upload(
            &app,
            &token,
            &Uuid::new_v4().to_string(),
            xml.into_bytes(),
            "application/xml",
        )
        .await;
        assert_eq!(again.status, 200, "{name}");
        assert_eq!(again.json()["id"], doc["id"], "{name}");
        ids.push(doc["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(stored(&pool).await, ids.len() as i64, "one row per file");
    // Its page's data: the lines and taxes as read, the file as it came.
    let one = app
        .get(&token, &format!("/api/v1/received_documents/{}", ids[0]))
        .await;
    assert_eq!(one.status, 200);
    let one = one.json();
    assert!(!one["content"]["lines"].as_array().unwrap().is_empty());
    assert!(!one["content"]["taxes"].as_array().unwrap().is_empty());
    let file = app
        .get(
            &token,
            &format!("/api/v1/received_documents/{}/file", ids[0]),
        )
        .await;
    assert_eq!(file.body, std::fs::read(&examples()[0]).unwrap());
    // A total that does not add up is kept, with the rule it fails.
    let xml = std::fs::read_to_string(
        examples()
            .iter()
            .find(|p| p.ends_with("base-example.xml"))
            .unwrap(),
    )
    .unwrap();
    let broken = xml.replacen(
        r#"<cbc:TaxInclusiveAmount currencyID="EUR">1656.25</cbc:TaxInclusiveAmount>"#,
        r#"<cbc:TaxInclusiveAmount currencyID="EUR">1756.25</cbc:TaxInclusiveAmount>"#,
        1,
    );
    assert_ne!(broken, xml);
    let res = upload(
        &app,
        &token,
        "broken",
        broken.into_bytes(),
        "application/xml",
    )
    .await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    let doc = res.json();
    assert_eq!(doc["valid"], false);
    let rules: Vec<&str> = doc["failed_rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"BR-CO-15"), "{rules:?}");
    // The same seller and number with other bytes: kept, and flagged as a conflicting duplicate
    // of the first.
    let (seller, number, _, _) = expected(&xml);
    let first_id = firsts[&(seller, number)].clone();
    assert_eq!(doc["duplicate_of"], first_id);
    assert!(
        firsts.len() < ids.len(),
        "some examples share a seller and number"
    );
    // Marked paid once; the CSV lists every document.
    let paid = app
        .http
        .post(format!(
            "{}/api/v1/received_documents/{}/paid",
            app.base,
            first_id.as_str().unwrap()
        ))
        .bearer_auth(&token)
        .header("idempotency-key", "paid")
        .send()
        .await
        .unwrap();
    assert_eq!(paid.status(), 200);
    let paid: Value = paid.json().await.unwrap();
    assert!(paid["paid_at"].is_string());
    let csv = app
        .get(&token, "/api/v1/received_documents?format=csv")
        .await;
    let csv = String::from_utf8(csv.body).unwrap();
    assert_eq!(
        csv.lines().count(),
        ids.len() + 2,
        "a header and one row each: {csv}"
    );
    assert!(csv.contains("BR-CO-15"), "{csv}");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn hostile_files_are_refused_and_nothing_is_stored(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (_, token) = app.api_client().await;
    let laughs = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">]>
<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2">&lol2;</Invoice>"#;
    let external = r#"<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><Invoice>&e;</Invoice>"#;
    let neither = r#"<?xml version="1.0"?><Order xmlns="urn:oasis:names:specification:ubl:schema:xsd:Order-2"><ID>1</ID></Order>"#;
    let pdf = b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
        .to_vec();
    for (name, body, kind, status, says) in [
        (
            "billion laughs",
            laughs.as_bytes().to_vec(),
            "application/xml",
            422,
            "DTD",
        ),
        (
            "external entity",
            external.as_bytes().to_vec(),
            "application/xml",
            422,
            "DTD",
        ),
        (
            "neither UBL nor CII",
            neither.as_bytes().to_vec(),
            "application/xml",
            422,
            "neither UBL",
        ),
        (
            "a PDF without XML",
            pdf,
            "application/pdf",
            422,
            "carries no e-invoice",
        ),
        (
            "not XML",
            b"hello".to_vec(),
            "application/xml",
            422,
            "Not an e-invoice",
        ),
    ] {
        let res = upload(&app, &token, &Uuid::new_v4().to_string(), body, kind).await;
        assert_eq!(
            res.status,
            status,
            "{name}: {}",
            String::from_utf8_lossy(&res.body)
        );
        let text = String::from_utf8_lossy(&res.body).into_owned();
        assert!(text.contains(says), "{name}: {text}");
    }
    // 30 MB: refused before it is read (413).
    let big = vec![b'<'; 30 * 1024 * 1024];
    let res = upload(&app, &token, "big", big, "application/xml").await;
    assert_eq!(res.status, 413);
    assert_eq!(stored(&pool).await, 0, "nothing stored");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_access_point_delivers_each_document_once_and_signed(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let (_, token) = app.api_client().await;
    let org = app
        .http
        .patch(format!("{}/api/v1/org", app.base))
        .bearer_auth(&token)
        .header("idempotency-key", "org")
        .json(&json!({"peppol_id": "0184:12345678"}))
        .send()
        .await
        .unwrap();
    assert_eq!(org.status(), 200, "{}", org.text().await.unwrap());
    // A participant id names one org.
    let (_, other) = app.api_client().await;
    let taken = app
        .http
        .patch(format!("{}/api/v1/org", app.base))
        .bearer_auth(&other)
        .header("idempotency-key", "org")
        .json(&json!({"peppol_id": "0184:12345678"}))
        .send()
        .await
        .unwrap();
    assert_eq!(taken.status(), 422);
    let url = format!("{}/webhooks/peppol", app.base);
    let secret = invoicer_core::peppol::DEV_INBOUND_SECRET;
    let file = examples()
        .into_iter()
        .find(|p| p.ends_with("vat-category-E.xml"))
        .unwrap();
    let xml = std::fs::read_to_string(&file).unwrap();
    let (seller, number, total, due) = expected(&xml);
    let sbd = lab::peppol_local::sbd("0088:7300010000001", "0184:12345678", "inst-1", &xml);
    // A wrong signature: refused before the body is read, nothing stored.
    let (status, _) = lab::peppol_local::deliver_signed(
        &app.http,
        &url,
        "whsec_d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldA==",
        "inst-1",
        &sbd,
    )
    .await
    .unwrap();
    assert_eq!(status, 400);
    assert_eq!(stored(&pool).await, 0);
    // The access point retries until it gets a 2xx: twice at once, then again.
    let http = app.http.clone();
    let (a, b) = tokio::join!(
        lab::peppol_local::deliver_signed(&http, &url, secret, "inst-1", &sbd),
        lab::peppol_local::deliver_signed(&http, &url, secret, "inst-1", &sbd),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    for (status, body) in [&a, &b] {
        assert!(*status == 200 || *status == 409, "{status}: {body}");
    }
    assert!(a.0 == 200 || b.0 == 200);
    let (status, body) = lab::peppol_local::deliver_signed(&http, &url, secret, "inst-1", &sbd)
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"countryCodeC4": ""})
    );
    assert_eq!(stored(&pool).await, 1, "one document");
    let listed = app.get(&token, "/api/v1/received_documents").await.json();
    let doc = &listed["data"][0];
    assert_eq!(doc["source"], "peppol");
    assert_eq!(doc["seller_name"], seller);
    assert_eq!(doc["number"], number);
    assert_eq!(doc["total_cents"], total);
    assert_eq!(doc["due_cents"], due);
    // The same document uploaded by hand is the one delivered.
    let res = upload(&app, &token, "by-hand", xml.into_bytes(), "application/xml").await;
    assert_eq!(res.status, 200);
    assert_eq!(res.json()["id"], doc["id"]);
    // A document for a participant no org here is: refused for good (no retry), nothing stored.
    let other = examples()
        .into_iter()
        .find(|p| p.ends_with("base-example.xml"))
        .unwrap();
    let other = std::fs::read_to_string(other).unwrap();
    let (status, body) = lab::peppol_local::deliver_signed(&http, &url, secret, "inst-2", &other)
        .await
        .unwrap();
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("\"retry\":\"none\""), "{body}");
    assert_eq!(stored(&pool).await, 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_factur_x_pdf_is_read_from_its_embedded_xml(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    // Our own Factur-X PDF, from an e-invoicing seller, received by another org.
    let s = crate::einvoice::seller(&app).await;
    let made = crate::einvoice::created(
        &app,
        "/api/v1/invoices",
        &s.token,
        crate::einvoice::invoice(
            &s.domestic,
            "eur",
            &[
                ("Beratung", "2", 15_000, "S19"),
                ("Fachbuch", "1", 1_999, "S7"),
            ],
            &s,
        ),
    )
    .await;
    let url = made["public_url"].as_str().unwrap();
    let pdf = app.http.get(format!("{url}/pdf")).send().await.unwrap();
    assert_eq!(pdf.status(), 200);
    let pdf = pdf.bytes().await.unwrap().to_vec();
    let (_, token) = app.api_client().await;
    let res = upload(&app, &token, "pdf", pdf.clone(), "application/pdf").await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    let doc = res.json();
    assert_eq!(doc["original_type"], "pdf");
    assert_eq!(doc["syntax"], "cii");
    assert_eq!(doc["number"], made["number"]);
    assert_eq!(doc["seller_name"], "Müller & Söhne GmbH");
    assert_eq!(doc["total_cents"], made["total_cents"]);
    assert_eq!(doc["due_cents"], made["amount_due_cents"]);
    assert_eq!(doc["valid"], true, "{doc}");
    assert_eq!(doc["rule_set"], "cen");
    // Its file is the PDF as it came.
    let file = app
        .get(
            &token,
            &format!(
                "/api/v1/received_documents/{}/file",
                doc["id"].as_str().unwrap()
            ),
        )
        .await;
    assert_eq!(file.body, pdf);
}

/// The process dies after the delivered document was stored and claimed but before the commit: both
/// roll back, the access point's retry stores it once, and a later retry stores nothing more.
#[tokio::test]
async fn a_crash_before_the_delivery_commits_loses_nothing_and_stores_once() {
    use crate::common::{cli, create_org, Server, TestDb};
    let db = TestDb::new("peppol_receive_crash").await;
    create_org(&db, "Acme", "inbox@example.com").await;
    let key = cli(
        &db,
        &["admin", "create-api-key", "--email", "inbox@example.com"],
    )
    .await;
    let key = key.trim().to_owned();
    let pool = db.pool().await;
    let server = Server::start_with(&db, "peppol.after_receive", &[]).await;
    let http = reqwest::Client::new();
    let org = http
        .patch(format!("{}/api/v1/org", server.base))
        .bearer_auth(&key)
        .header("idempotency-key", "org")
        .json(&json!({"peppol_id": "0184:12345678"}))
        .send()
        .await
        .unwrap();
    assert_eq!(org.status(), 200);
    let file = examples()
        .into_iter()
        .find(|p| p.ends_with("vat-category-Z.xml"))
        .unwrap();
    let xml = std::fs::read_to_string(file).unwrap();
    let sbd = lab::peppol_local::sbd("0088:7300010000001", "0184:12345678", "crash-1", &xml);
    let secret = invoicer_core::peppol::DEV_INBOUND_SECRET;
    let url = format!("{}/webhooks/peppol", server.base);
    // The connection dies with the process: no answer, so the access point will retry.
    let died = lab::peppol_local::deliver_signed(&http, &url, secret, "crash-1", &sbd).await;
    assert!(
        died.is_err() || died.as_ref().is_ok_and(|(s, _)| *s >= 500),
        "{died:?}"
    );
    assert_eq!(
        server.exit_code().await,
        Some(70),
        "died at peppol.after_receive"
    );
    assert_eq!(stored(&pool).await, 0, "nothing committed");
    let server = Server::start_with(&db, "", &[]).await;
    let url = format!("{}/webhooks/peppol", server.base);
    for _ in 0..2 {
        let (status, body) =
            lab::peppol_local::deliver_signed(&http, &url, secret, "crash-1", &sbd)
                .await
                .unwrap();
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(stored(&pool).await, 1, "stored once");
}

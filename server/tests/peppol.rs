//! Peppol: participant ids checked by scheme, documents for each network passing the official rule
//! sets (`validate.py --rules peppol|xrechnung`), finalizing refused for a buyer by Peppol that the
//! rules cannot address, documents sent through a flaky access point exactly once (each version
//! one transmission in the local access point's ledger), and the process killed right after the
//! submission.

use std::path::PathBuf;
use std::time::Duration;

use lab::peppol_local::{Config, LocalAccessPoint};
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::TestApp;
use crate::common::{cli, create_org, rows, wait_until, Server, TestDb};
use crate::einvoice::{assert_valid, created, invoice, seller, send, Seller};

/// The seller's Peppol id (a GLN) and two buyers by Peppol: a Belgian business (its enterprise
/// number) and a German public buyer (its Leitweg-ID).
struct Network {
    belgian: String,
    public: String,
    /// A buyer outside the EU (its D-U-N-S number): exports and supplies outside VAT.
    abroad: String,
}

async fn on_peppol(app: &TestApp, s: &Seller) -> Network {
    let org = send(
        app,
        "PATCH",
        "/api/v1/org",
        &s.token,
        json!({"peppol_id": "0088:4000001000005"}),
    )
    .await;
    assert_eq!(org.status, 200, "{}", String::from_utf8_lossy(&org.body));
    assert_eq!(org.json()["peppol_id"], "0088:4000001000005");
    let belgian = created(
        app,
        "/api/v1/customers",
        &s.token,
        json!({
            "name": "Entreprise Exemple SRL", "email": "factures@exemple.be",
            "address": {"line1": "Rue Royale 1", "postal_code": "1000", "city": "Bruxelles", "country": "BE"},
            "vat_id": "BE0123456749",
            "peppol_id": "0208:0123456749", "einvoice_channel": "peppol"
        }),
    )
    .await;
    assert_eq!(belgian["peppol_id"], "0208:0123456749");
    assert_eq!(belgian["einvoice_channel"], "peppol");
    let public = created(
        app,
        "/api/v1/customers",
        &s.token,
        json!({
            "name": "Stadt Leipzig", "email": "erechnung@leipzig.example",
            "address": {"line1": "Martin-Luther-Ring 4", "postal_code": "04109", "city": "Leipzig", "country": "DE"},
            "peppol_id": "0204:04011000-1234512345-06", "einvoice_channel": "peppol"
        }),
    )
    .await;
    let abroad = created(
        app,
        "/api/v1/customers",
        &s.token,
        json!({
            "name": "Example Inc.", "email": "ap@example.com",
            "address": {"line1": "1 Market St", "postal_code": "94105", "city": "San Francisco", "region": "CA", "country": "US"},
            "peppol_id": "0060:123456789", "einvoice_channel": "peppol"
        }),
    )
    .await;
    Network {
        belgian: belgian["id"].as_str().unwrap().to_owned(),
        public: public["id"].as_str().unwrap().to_owned(),
        abroad: abroad["id"].as_str().unwrap().to_owned(),
    }
}

/// The document of `path` (`invoices/<id>` or `credit_notes/<id>`) in `syntax` and `profile`,
/// written to a file of `dir`.
async fn document(
    app: &TestApp,
    token: &str,
    path: &str,
    syntax: &str,
    profile: &str,
    dir: &std::path::Path,
) -> PathBuf {
    let res = app
        .get(
            token,
            &format!("/api/v1/{path}/einvoice?syntax={syntax}&profile={profile}"),
        )
        .await;
    assert_eq!(
        res.status,
        200,
        "{path} {syntax} {profile}: {}",
        String::from_utf8_lossy(&res.body)
    );
    let file = dir.join(format!("{}-{syntax}-{profile}.xml", path.replace('/', "-")));
    std::fs::write(&file, &res.body).unwrap();
    file
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn every_peppol_and_xrechnung_document_passes_its_rules(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let s = seller(&app).await;
    let n = on_peppol(&app, &s).await;
    let mut discounted = invoice(
        &n.belgian,
        "eur",
        &[
            ("Consultance", "2", 15_000, "S19"),
            ("Livre", "3", 1_999, "S7"),
        ],
        &s,
    );
    discounted["discount"] = json!({"percent": 10});
    discounted["notes"] = json!("Merci pour votre commande.");
    let cases = [
        ("standard rates and a discount", discounted),
        (
            "reverse charge",
            invoice(
                &n.belgian,
                "eur",
                &[("Installation", "1", 120_000, "AE")],
                &s,
            ),
        ),
        (
            "intra-community supply",
            invoice(&n.belgian, "eur", &[("Machine", "2", 450_000, "K")], &s),
        ),
        (
            "zero rated",
            invoice(&n.belgian, "eur", &[("Export goods", "1", 5_000, "Z")], &s),
        ),
        (
            "exempt",
            invoice(&n.belgian, "eur", &[("Therapie", "4", 8_000, "E")], &s),
        ),
        (
            "export",
            invoice(
                &n.abroad,
                "usd",
                &[("Software licence", "10", 9_900, "G")],
                &s,
            ),
        ),
        (
            "not subject to VAT",
            invoice(&n.abroad, "eur", &[("Donation", "1", 2_500, "O")], &s),
        ),
        (
            "zero-decimal currency",
            invoice(&n.belgian, "jpy", &[("Consulting", "3", 12_345, "S19")], &s),
        ),
        (
            "three-decimal currency",
            invoice(
                &n.belgian,
                "kwd",
                &[
                    ("Service", "2.5", 12_340, "S19"),
                    ("Parts", "1", 7_770, "S7"),
                ],
                &s,
            ),
        ),
        (
            "partly paid",
            invoice(&n.belgian, "eur", &[("Projet", "1", 100_000, "S19")], &s),
        ),
        (
            "a German public buyer",
            invoice(
                &n.public,
                "eur",
                &[
                    ("Wartung", "1", 10_000, "S19"),
                    ("Schulung", "1", 5_000, "S7"),
                ],
                &s,
            ),
        ),
        (
            "a German public buyer, exempt",
            invoice(&n.public, "eur", &[("Therapie", "2", 8_000, "E")], &s),
        ),
    ];
    let dir = std::env::temp_dir().join(format!("peppol-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut peppol, mut xrechnung) = (Vec::new(), Vec::new());
    for (name, body) in cases {
        let made = created(&app, "/api/v1/invoices", &s.token, body).await;
        let id = made["id"].as_str().unwrap().to_owned();
        // Finalized for a buyer by Peppol: one transmission queued, as the buyer's network asks.
        let profile = if name.starts_with("a German") {
            "xrechnung"
        } else {
            "peppol"
        };
        assert_eq!(made["transmissions"].as_array().unwrap().len(), 1, "{name}");
        assert_eq!(made["transmissions"][0]["state"], "queued", "{name}");
        assert_eq!(made["transmissions"][0]["profile"], profile, "{name}");
        if name == "partly paid" {
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
        let path = format!("invoices/{id}");
        if profile == "peppol" {
            peppol.push(document(&app, &s.token, &path, "ubl", "peppol", &dir).await);
        } else {
            xrechnung.push(document(&app, &s.token, &path, "ubl", "xrechnung", &dir).await);
            xrechnung.push(document(&app, &s.token, &path, "cii", "xrechnung", &dir).await);
        }
        // Credit notes are BIS credit notes (and XRechnung's 381), sent the same way.
        if matches!(
            name,
            "standard rates and a discount" | "a German public buyer"
        ) {
            let note = created(
                &app,
                &format!("/api/v1/invoices/{id}/credit_notes"),
                &s.token,
                json!({"amount_cents": 5_000, "reason": "Geste commercial"}),
            )
            .await;
            let path = format!("credit_notes/{}", note["id"].as_str().unwrap());
            if profile == "peppol" {
                peppol.push(document(&app, &s.token, &path, "ubl", "peppol", &dir).await);
            } else {
                xrechnung.push(document(&app, &s.token, &path, "ubl", "xrechnung", &dir).await);
                xrechnung.push(document(&app, &s.token, &path, "cii", "xrechnung", &dir).await);
            }
            let again = app.get(&s.token, &format!("/api/v1/invoices/{id}")).await;
            let transmissions = again.json()["transmissions"].clone();
            assert_eq!(transmissions.as_array().unwrap().len(), 2, "{name}");
            assert_eq!(transmissions[1]["document"], "credit_note", "{name}");
        }
    }
    // The Peppol documents address both parties by their Peppol ids.
    let first = std::fs::read_to_string(&peppol[0]).unwrap();
    assert!(
        first.contains(r#"<cbc:EndpointID schemeID="0088">4000001000005</cbc:EndpointID>"#),
        "{first}"
    );
    assert!(
        first.contains(r#"<cbc:EndpointID schemeID="0208">0123456749</cbc:EndpointID>"#),
        "{first}"
    );
    let german = std::fs::read_to_string(&xrechnung[0]).unwrap();
    assert!(
        german.contains("<cbc:BuyerReference>04011000-1234512345-06</cbc:BuyerReference>"),
        "the Leitweg-ID is the buyer reference: {german}"
    );
    assert_valid("peppol", &peppol);
    assert_valid("xrechnung", &xrechnung);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_buyer_by_peppol_needs_what_the_network_needs(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    // A channel of Peppol without an id, and ids that fail their scheme's check, are refused.
    for (body, field) in [
        (
            json!({"name": "A", "email": "a@example.com", "einvoice_channel": "peppol"}),
            "peppol_id",
        ),
        (
            json!({"name": "B", "email": "b@example.com", "peppol_id": "0208:0123456789"}),
            "peppol_id",
        ),
        (
            json!({"name": "C", "email": "c@example.com", "peppol_id": "1234:abc"}),
            "peppol_id",
        ),
    ] {
        let res = send(&app, "POST", "/api/v1/customers", &token, body).await;
        assert_eq!(res.status, 422, "{}", String::from_utf8_lossy(&res.body));
        assert!(
            res.json()["errors"][field].is_string(),
            "{}",
            String::from_utf8_lossy(&res.body)
        );
    }
    let org = send(
        &app,
        "PATCH",
        "/api/v1/org",
        &token,
        json!({"peppol_id": "0088:4000001000006"}),
    )
    .await;
    assert_eq!(org.status, 422, "a GLN with a wrong check digit");
    // A buyer by Peppol, an org without a Peppol id: the draft stays a draft, with the reason.
    let buyer = created(
        &app,
        "/api/v1/customers",
        &token,
        json!({"name": "Entreprise", "email": "f@exemple.be", "peppol_id": "0208:0123456749",
               "einvoice_channel": "peppol",
               "address": {"line1": "Rue 1", "postal_code": "1000", "city": "Bruxelles", "country": "BE"}}),
    )
    .await;
    let draft = created(
        &app,
        "/api/v1/invoices",
        &token,
        json!({"customer_id": buyer["id"], "currency": "eur", "draft": true, "payment_terms_days": 30,
               "lines": [{"description": "Work", "quantity": 1, "unit_amount_cents": 10_000}]}),
    )
    .await;
    let id = draft["id"].as_str().unwrap();
    let res = send(
        &app,
        "POST",
        &format!("/api/v1/invoices/{id}/finalize"),
        &token,
        json!({}),
    )
    .await;
    assert_eq!(res.status, 422, "{}", String::from_utf8_lossy(&res.body));
    let body = String::from_utf8_lossy(&res.body).into_owned();
    assert!(body.contains("Peppol id"), "{body}");
    let still = app
        .get(&token, &format!("/api/v1/invoices/{id}"))
        .await
        .json();
    assert_eq!(still["status"], "draft");
    assert_eq!(still["transmissions"], json!([]));
    // The profile asked of the API is checked too.
    let res = app
        .get(
            &token,
            &format!("/api/v1/invoices/{id}/einvoice?syntax=cii&profile=peppol"),
        )
        .await;
    assert_eq!(res.status, 400);
}

/// Workers draining the outbox against `ap` until every transmission of `pool` is sent, then
/// polling the status until each is delivered.
async fn drain_until_delivered(pool: &PgPool, ap: &LocalAccessPoint, expected: i64) {
    let config = invoicer_core::worker::WorkerConfig {
        peppol: Some(invoicer_core::peppol::PhossAp::new(
            &ap.base,
            Some(invoicer_core::peppol::LOCAL_ACCESS_POINT_TOKEN.into()),
        )),
        backoff_base: Duration::from_millis(10),
        backoff_cap: Duration::from_millis(50),
        lease: Duration::from_secs(30),
        ..Default::default()
    };
    // No email goes out here: the rows drained are Peppol's.
    let mailer = invoicer_core::mail::Mailer::new(
        None,
        None,
        &std::env::temp_dir().join("peppol-mail"),
        Duration::from_secs(10),
        invoicer_core::mail::DEV_FROM,
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        // Three workers at once, each leasing due rows.
        let (a, b, c) = tokio::join!(
            invoicer_core::worker::drain_once(pool, &mailer, &config),
            invoicer_core::worker::drain_once(pool, &mailer, &config),
            invoicer_core::worker::drain_once(pool, &mailer, &config),
        );
        a.unwrap();
        b.unwrap();
        c.unwrap();
        let sent: i64 = rows::scalar(
            pool,
            "select count(*) from peppol_transmissions where state in ('sent', 'delivered')",
        )
        .await;
        if sent == expected {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{sent} of {expected} sent"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        sqlx::query("update peppol_transmissions set poll_at = now() where state = 'sent'")
            .execute(pool)
            .await
            .unwrap();
        let ap_client = invoicer_core::peppol::PhossAp::new(
            &ap.base,
            Some(invoicer_core::peppol::LOCAL_ACCESS_POINT_TOKEN.into()),
        );
        invoicer_core::peppol::send::poll_due(pool, Some(&ap_client), 100)
            .await
            .unwrap();
        let delivered: i64 = rows::scalar(
            pool,
            "select count(*) from peppol_transmissions where state = 'delivered'",
        )
        .await;
        if delivered == expected {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{delivered} of {expected} delivered"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_flaky_access_point_still_transmits_each_document_once(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let s = seller(&app).await;
    let n = on_peppol(&app, &s).await;
    let ap = LocalAccessPoint::start(
        "127.0.0.1:0".parse().unwrap(),
        Config {
            fail_rate: 0.3,
            ..Config::default()
        },
    )
    .await
    .unwrap();
    let mut instances = Vec::new();
    for i in 0..20 {
        let customer = if i % 4 == 0 { &n.public } else { &n.belgian };
        let made = created(
            &app,
            "/api/v1/invoices",
            &s.token,
            invoice(customer, "eur", &[("Work", "1", 10_000 + i, "S19")], &s),
        )
        .await;
        instances.push(
            made["transmissions"][0]["instance_id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    // One to a participant the network does not know: it fails with the network's reason.
    let unknown = created(
        &app,
        "/api/v1/customers",
        &s.token,
        json!({"name": "Nobody", "email": "n@example.com", "peppol_id": lab::peppol_local::UNKNOWN_RECEIVER,
               "einvoice_channel": "peppol",
               "address": {"line1": "Rue 2", "postal_code": "1000", "city": "Bruxelles", "country": "BE"}}),
    )
    .await;
    let lost = created(
        &app,
        "/api/v1/invoices",
        &s.token,
        invoice(
            unknown["id"].as_str().unwrap(),
            "eur",
            &[("Work", "1", 500, "S19")],
            &s,
        ),
    )
    .await;
    // Submissions fail at random until all 20 are in (the unknown receiver is refused for good).
    let config_done = async {
        loop {
            let failed: i64 = rows::scalar(
                &pool,
                "select count(*) from peppol_transmissions where state = 'failed'",
            )
            .await;
            if failed == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    drain_until_delivered_except(&pool, &ap, 20, config_done).await;
    let ledger = ap.transmissions();
    assert_eq!(
        ledger.len(),
        20,
        "each document transmitted once: {ledger:?}"
    );
    let mut seen: Vec<String> = ledger.iter().map(|t| t.instance_id.clone()).collect();
    seen.sort();
    instances.sort();
    assert_eq!(seen, instances, "by the instance ids the invoices name");
    let (calls, failed) = ap.calls();
    assert!(
        failed > 0,
        "the access point failed some calls ({calls} calls)"
    );
    assert!(
        ledger.iter().any(|t| t.submissions > 1),
        "some answer was lost after the transmission, and the repeat was the same transmission"
    );
    // Each try is on the activity page: 20 transmissions won, and the failed calls as failures.
    let won: i64 = rows::scalar(
        &pool,
        "select count(*) from attempts where surface = 'job' and owner = 'peppol' and outcome = 'won'",
    )
    .await;
    assert_eq!(won, 20);
    let failures: i64 = rows::scalar(
        &pool,
        "select count(*) from attempts where surface = 'job' and owner = 'peppol' and outcome = 'failed'",
    )
    .await;
    assert!(
        failures >= 2,
        "the failed calls and the refusal: {failures}"
    );
    let lost_id = lost["id"].as_str().unwrap();
    let lost = app
        .get(&s.token, &format!("/api/v1/invoices/{lost_id}"))
        .await
        .json();
    assert_eq!(lost["transmissions"][0]["state"], "failed");
    assert!(
        lost["transmissions"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("No such participant"),
        "{lost}"
    );
}

/// [`drain_until_delivered`], and `also` (another condition) awaited after.
async fn drain_until_delivered_except(
    pool: &PgPool,
    ap: &LocalAccessPoint,
    expected: i64,
    also: impl std::future::Future<Output = ()>,
) {
    drain_until_delivered(pool, ap, expected).await;
    tokio::time::timeout(Duration::from_secs(30), also)
        .await
        .expect("the other condition");
}

/// The process dies right after the access point took the document: the transmission is not
/// recorded, the claim's lease runs out, a new process submits again under the same instance id,
/// and the access point's ledger holds one transmission.
#[tokio::test]
async fn a_crash_after_the_submission_transmits_once() {
    let db = TestDb::new("peppol_crash").await;
    create_org(&db, "Acme", "peppol@example.com").await;
    let key = cli(
        &db,
        &["admin", "create-api-key", "--email", "peppol@example.com"],
    )
    .await;
    let key = key.trim().to_owned();
    let pool = db.pool().await;
    let ap = LocalAccessPoint::start("127.0.0.1:0".parse().unwrap(), Config::default())
        .await
        .unwrap();
    let env = [
        ("PEPPOL_AP_URL", ap.base.clone()),
        ("WORKER_LEASE_SECS", "2".to_owned()),
        ("SMTP_TIMEOUT_MS", "500".to_owned()),
    ];
    let server = Server::start_with(&db, "peppol.after_submit", &env).await;
    let http = reqwest::Client::new();
    let call = |method: reqwest::Method, path: &str, idem: &str, body: Value| {
        http.request(method, format!("{}{path}", server.base))
            .bearer_auth(&key)
            .header("idempotency-key", idem.to_owned())
            .json(&body)
            .send()
    };
    let org = call(
        reqwest::Method::PATCH,
        "/api/v1/org",
        "org",
        json!({"peppol_id": "0088:4000001000005", "vat_id": "DE136695976",
               "address": {"line1": "Hauptstraße 5", "postal_code": "10115", "city": "Berlin", "country": "DE"}}),
    )
    .await
    .unwrap();
    assert_eq!(org.status(), 200, "{}", org.text().await.unwrap());
    let buyer: Value = call(
        reqwest::Method::POST,
        "/api/v1/customers",
        "cust",
        json!({"name": "Entreprise", "email": "f@exemple.be", "peppol_id": "0208:0123456749",
               "einvoice_channel": "peppol",
               "address": {"line1": "Rue 1", "postal_code": "1000", "city": "Bruxelles", "country": "BE"}}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let rate: Value = call(
        reqwest::Method::POST,
        "/api/v1/tax_rates",
        "rate",
        json!({"name": "VAT 21%", "percent": 21}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let made = call(
        reqwest::Method::POST,
        "/api/v1/invoices",
        "inv",
        json!({"customer_id": buyer["id"], "currency": "eur", "payment_terms_days": 30,
               "lines": [{"description": "Work", "quantity": 1, "unit_amount_cents": 10_000,
                          "tax_rate_id": rate["id"]}]}),
    )
    .await
    .unwrap();
    assert_eq!(made.status(), 201, "{}", made.text().await.unwrap());
    assert_eq!(
        server.exit_code().await,
        Some(70),
        "died at peppol.after_submit"
    );
    assert_eq!(ap.transmissions().len(), 1, "the access point took it");
    let recorded: i64 = rows::scalar(
        &pool,
        "select count(*) from peppol_transmissions where state = 'queued'",
    )
    .await;
    assert_eq!(recorded, 1, "we never recorded it");

    let _server = Server::start_with(&db, "", &env).await;
    wait_until(
        &pool,
        "select count(*) from peppol_transmissions where state in ('sent', 'delivered')",
        1,
        Duration::from_secs(60),
    )
    .await;
    let ledger = ap.transmissions();
    assert_eq!(ledger.len(), 1, "one transmission: {ledger:?}");
    assert_eq!(
        ledger[0].submissions, 2,
        "submitted again under the same instance id"
    );
}

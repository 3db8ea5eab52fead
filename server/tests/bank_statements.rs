//! Bank statements in, through `POST /api/v1/bank_statements`: each entry recorded once however
//! often and however overlapping the files, credits that name an invoice (its RF reference or its
//! number) recorded as its payment once, the rest listed to match or ignore; hostile files refused
//! with nothing recorded.

use std::fmt::Write as _;

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::rows::{insert_invoice, one_line_input, owners_key, scalar_for};
use crate::common::served::TestApp;

const IBAN: &str = "NL91ABNA0417164300";

/// One booked entry: date, signed cents, remittance, the bank's reference.
struct E<'a>(&'a str, i64, &'a str, Option<&'a str>);

/// A CAMT.053 (version 001.08) statement of `account` with `entries`.
fn camt(account: &str, entries: &[E]) -> String {
    let mut xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"><BkToCstmrStmt>
<GrpHdr><MsgId>M1</MsgId><CreDtTm>2026-12-03T18:00:00+01:00</CreDtTm></GrpHdr>
<Stmt><Id>S1</Id><Acct><Id><IBAN>{account}</IBAN></Id><Ccy>EUR</Ccy></Acct>"#
    );
    for E(date, cents, remittance, reference) in entries {
        let side = if *cents > 0 { "CRDT" } else { "DBIT" };
        let amount = format!("{}.{:02}", cents.abs() / 100, cents.abs() % 100);
        let reference = reference
            .map(|r| format!("<AcctSvcrRef>{r}</AcctSvcrRef>"))
            .unwrap_or_default();
        let _ = write!(
            xml,
            "<Ntry><Amt Ccy=\"EUR\">{amount}</Amt><CdtDbtInd>{side}</CdtDbtInd><Sts><Cd>BOOK</Cd></Sts>\
             <BookgDt><Dt>{date}</Dt></BookgDt>{reference}<NtryDtls><TxDtls><RltdPties><Dbtr><Pty><Nm>Ada Lovelace</Nm></Pty></Dbtr></RltdPties>\
             <RmtInf><Ustrd>{remittance}</Ustrd></RmtInf></TxDtls></NtryDtls></Ntry>"
        );
    }
    xml.push_str("</Stmt></BkToCstmrStmt></Document>");
    xml
}

struct Bank {
    app: TestApp,
    key: String,
    org: model::OrgId,
    owner: String,
}

impl Bank {
    async fn new(pool: PgPool) -> Bank {
        let app = TestApp::spawn(pool).await;
        let owner = format!("{}@example.com", Uuid::new_v4().simple());
        let account = invoicer_core::accounts::create_org_with_owner(
            &app.pool,
            "Acme",
            &owner,
            "correct horse",
        )
        .await
        .unwrap();
        sqlx::query("update orgs set bank_iban = $2 where id = $1")
            .bind(account.org_id)
            .bind(IBAN)
            .execute(&app.pool)
            .await
            .unwrap();
        let key = owners_key(&app.pool, &account).await;
        Bank {
            app,
            key,
            org: account.org_id,
            owner,
        }
    }

    async fn import(&self, key: &str, file: &str) -> (StatusCode, Value) {
        let res = reqwest::Client::new()
            .post(format!("{}/api/v1/bank_statements", self.app.base))
            .bearer_auth(&self.key)
            .header("idempotency-key", key)
            .header("content-type", "application/xml")
            .body(file.to_owned())
            .send()
            .await
            .unwrap();
        let status = res.status();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, key: Option<&str>, body: Value) -> (StatusCode, Value) {
        let mut req = reqwest::Client::new()
            .post(format!("{}{path}", self.app.base))
            .bearer_auth(&self.key)
            .json(&body);
        if let Some(key) = key {
            req = req.header("idempotency-key", key);
        }
        let res = req.send().await.unwrap();
        let status = res.status();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> Value {
        reqwest::Client::new()
            .get(format!("{}{path}", self.app.base))
            .bearer_auth(&self.key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn invoice(&self, cents: i64) -> (Uuid, String, String) {
        let id = insert_invoice(
            &self.app.pool,
            self.org,
            &one_line_input("eur", "2031-01-31", cents, false),
        )
        .await;
        let (number, rf): (String, String) =
            sqlx::query_as("select number_text, payment_reference from invoices where id = $1")
                .bind(id)
                .fetch_one(&self.app.pool)
                .await
                .unwrap();
        (id, number, rf)
    }

    async fn paid(&self, invoice: Uuid) -> (i64, String) {
        sqlx::query_as("select amount_paid_cents, status::text from invoices where id = $1")
            .bind(invoice)
            .fetch_one(&self.app.pool)
            .await
            .unwrap()
    }

    async fn count(&self, table: &str) -> i64 {
        scalar_for(
            &self.app.pool,
            &format!("select count(*) from {table} where org_id = $1"),
            self.org,
        )
        .await
    }
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_statement_is_recorded_once_and_its_credits_pay_the_invoices_they_name(pool: PgPool) {
    let bank = Bank::new(pool).await;
    let (a, _, a_rf) = bank.invoice(10_000).await;
    let (b, b_number, _) = bank.invoice(5_000).await;
    let (c, _, _) = bank.invoice(3_000).await;
    let printed = model::payment_reference::printed(&a_rf);
    let file = camt(
        IBAN,
        &[
            E("2026-12-01", 10_000, &format!("Payment {printed}"), None),
            E(
                "2026-12-01",
                2_000,
                &format!("Invoice {b_number} part 1"),
                Some("BANK-7"),
            ),
            E("2026-12-02", 4_500, "a gift", None),
            E("2026-12-02", 4_500, "a gift", None),
            E("2026-12-02", -1_200, "Bank fees", None),
        ],
    );
    let (status, first) = bank.import("k1", &file).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert_eq!(
        (
            &first["format"],
            &first["account_iban"],
            &first["entries"],
            &first["new_entries"],
            &first["matched"]
        ),
        (
            &json!("camt.053"),
            &json!(IBAN),
            &json!(5),
            &json!(5),
            &json!(2)
        )
    );
    assert_eq!(bank.paid(a).await, (10_000, "paid".to_owned()));
    assert_eq!(bank.paid(b).await.0, 2_000);
    // Two identical gifts on one day are two entries; the same file again adds nothing, under
    // another key or the same one (a replay).
    assert_eq!(bank.count("bank_entries").await, 5);
    let (status, again) = bank.import("k2", &file).await;
    assert_eq!(
        (status, &again["new_entries"], &again["matched"]),
        (StatusCode::CREATED, &json!(0), &json!(0))
    );
    let (_, replay) = bank.import("k1", &file).await;
    assert_eq!(replay, first);
    assert_eq!(bank.count("bank_entries").await, 5);
    assert_eq!(bank.count("payments").await, 2);
    // An overlapping statement (day 2 again, and day 3) adds day 3 only.
    let next = camt(
        IBAN,
        &[
            E("2026-12-02", 4_500, "a gift", None),
            E("2026-12-02", 4_500, "a gift", None),
            E("2026-12-02", -1_200, "Bank fees", None),
            E(
                "2026-12-03",
                3_000,
                &format!("Invoice {b_number} rest"),
                Some("BANK-9"),
            ),
        ],
    );
    let (_, overlap) = bank.import("k3", &next).await;
    assert_eq!(
        (&overlap["new_entries"], &overlap["matched"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(bank.paid(b).await, (5_000, "paid".to_owned()));

    // The invoice's payments show the bank's: its source, booking date and reference.
    let payments = bank.get(&format!("/api/v1/invoices/{b}/payments")).await;
    let sources: Vec<(&Value, &Value, &Value)> = payments["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (&p["source"], &p["paid_on"], &p["reference"]))
        .collect();
    assert_eq!(
        sources,
        [
            (&json!("bank"), &json!("2026-12-01"), &json!("BANK-7")),
            (&json!("bank"), &json!("2026-12-03"), &json!("BANK-9"))
        ]
    );

    // What is left: two gifts and the fees, matched or ignored by hand.
    let open = bank.get("/api/v1/bank_entries?state=unmatched").await;
    let open = open["data"].as_array().unwrap().clone();
    assert_eq!(open.len(), 3);
    let gift = open.iter().find(|e| e["amount_cents"] == 4_500).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let fees = open.iter().find(|e| e["amount_cents"] == -1_200).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let matching = format!("/api/v1/bank_entries/{gift}/match");
    let (status, matched) = bank
        .post(&matching, Some("m1"), json!({"invoice_id": c}))
        .await;
    assert_eq!(
        (status, &matched["state"], &matched["invoice_id"]),
        (StatusCode::OK, &json!("matched"), &json!(c))
    );
    // Overpaid: 45.00 on a 30.00 invoice, recorded as it is (the money rules make it credit).
    assert_eq!(bank.paid(c).await.0, 4_500);
    let (status, replay) = bank
        .post(&matching, Some("m1"), json!({"invoice_id": c}))
        .await;
    assert_eq!((status, replay), (StatusCode::OK, matched.clone()));
    let (status, _) = bank
        .post(&matching, Some("m2"), json!({"invoice_id": c}))
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "matched again to the same invoice: a no-op"
    );
    let (status, _) = bank
        .post(&matching, Some("m3"), json!({"invoice_id": a}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = bank
        .post(
            &format!("/api/v1/bank_entries/{fees}/match"),
            Some("m4"),
            json!({"invoice_id": a}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "a debit pays nothing");
    assert_eq!(bank.count("payments").await, 4);
    let ignoring = format!("/api/v1/bank_entries/{fees}/ignore");
    for _ in 0..2 {
        let (status, ignored) = bank.post(&ignoring, None, Value::Null).await;
        assert_eq!(
            (status, &ignored["state"]),
            (StatusCode::OK, &json!("ignored"))
        );
    }
    let (status, _) = bank
        .post(
            &format!("/api/v1/bank_entries/{gift}/ignore"),
            None,
            Value::Null,
        )
        .await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "a matched entry stays matched"
    );
    assert_eq!(
        bank.get("/api/v1/bank_entries?state=ignored").await["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Another org sees none of it.
    let other = Bank::new(bank.app.pool.clone()).await;
    let other = Bank {
        app: bank.app,
        ..other
    };
    let (status, _) = other
        .post(&matching, Some("x1"), json!({"invoice_id": c}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        other.get("/api/v1/bank_entries?state=matched").await["data"],
        json!([])
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_same_file_imported_twice_at_once_is_recorded_once(pool: PgPool) {
    let bank = Bank::new(pool).await;
    let (a, _, a_rf) = bank.invoice(10_000).await;
    let entries: Vec<String> = (0..200).map(|i| format!("transfer {i}")).collect();
    let mut rows: Vec<E> = entries
        .iter()
        .map(|t| E("2026-12-01", 100, t, None))
        .collect();
    rows.push(E("2026-12-01", 10_000, &a_rf, None));
    let file = camt(IBAN, &rows);
    let (one, two) = tokio::join!(bank.import("p1", &file), bank.import("p2", &file));
    assert_eq!((one.0, two.0), (StatusCode::CREATED, StatusCode::CREATED));
    let new = one.1["new_entries"].as_i64().unwrap() + two.1["new_entries"].as_i64().unwrap();
    let matched = one.1["matched"].as_i64().unwrap() + two.1["matched"].as_i64().unwrap();
    assert_eq!((new, matched), (201, 1));
    assert_eq!(bank.count("bank_entries").await, 201);
    assert_eq!(bank.paid(a).await, (10_000, "paid".to_owned()));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn hostile_or_foreign_files_are_refused_and_record_nothing(pool: PgPool) {
    let bank = Bank::new(pool).await;
    let good = camt(IBAN, &[E("2026-12-01", 100, "x", None)]);
    let laughs = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02">&lol3;</Document>"#;
    let truncated = &good[..good.len() / 2];
    let broken_mt940 = ":20:STARTUMSE\n:25:NL91ABNA0417164300\n:28C:00001/001\n:60F:C261201EUR1000,00\n:61:26AB011201C125,50NTRFNONREF\n:62F:C261202EUR1085,50\n";
    let foreign = camt("DE89370400440532013000", &[E("2026-12-01", 100, "x", None)]);
    for (name, file, words) in [
        ("billion laughs", laughs.to_owned(), "DTD"),
        ("truncated", truncated.to_owned(), "line"),
        ("broken MT940", broken_mt940.to_owned(), "MT940"),
        ("another account", foreign, "DE89370400440532013000"),
    ] {
        let (status, problem) = bank
            .import(&format!("bad-{}", name.replace(' ', "-")), &file)
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{name}: {problem}"
        );
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(words), "{name}: {detail}");
        assert!(
            !detail.contains("sqlx") && !detail.contains("panicked"),
            "{detail}"
        );
    }
    // 11 MB and 50 MB: refused by their size before they are read.
    for mb in [11, 50] {
        let big = format!("{good}{}", " ".repeat(mb * 1024 * 1024));
        let (status, _) = bank.import(&format!("big-{mb}"), &big).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{mb} MB");
    }
    assert_eq!(bank.count("bank_entries").await, 0);
    assert_eq!(bank.count("bank_statements").await, 0);
    // The key of a refused file stays usable.
    let (status, _) = bank.import("bad-truncated", &good).await;
    assert_eq!(status, StatusCode::CREATED);
    // Another of the org's accounts, added through PATCH /api/v1/org, is taken.
    let other = camt("DE89370400440532013000", &[E("2026-12-01", 100, "y", None)]);
    let res = reqwest::Client::new()
        .patch(format!("{}/api/v1/org", bank.app.base))
        .bearer_auth(&bank.key)
        .header("idempotency-key", "accounts")
        .header("content-type", "application/merge-patch+json")
        .body(json!({"bank_accounts": ["de89 3704 0044 0532 0130 00"]}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.json::<Value>().await.unwrap()["bank_accounts"],
        json!(["DE89370400440532013000"])
    );
    let (status, done) = bank.import("other-account", &other).await;
    assert_eq!(
        (status, &done["account_iban"]),
        (StatusCode::CREATED, &json!("DE89370400440532013000"))
    );
}

/// A small deterministic generator (xorshift), seeded from `BANK_SEED` to replay a case.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Random payments over ten days (some identical on one day, half with the bank's reference),
/// split into statements of whole days that overlap, imported in any order, some twice and two at
/// once: the entries recorded are exactly the payments, each once (checked by identity against a
/// model written out by hand: the multiset of what the payments say).
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn overlapping_statements_in_any_order_record_each_payment_once(pool: PgPool) {
    let bank = Bank::new(pool).await;
    let seed = std::env::var("BANK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| u64::from(std::process::id()) | 1);
    let mut rng = Rng(seed);
    let texts = ["rent", "thank you", "INV order 7", "gift"];
    // (day, cents, remittance, bank reference); the bank lists a day's entries in this order.
    let mut payments: Vec<(u32, i64, String, Option<String>)> = Vec::new();
    for n in 0..80 {
        let day = 1 + rng.below(10) as u32;
        let cents = [1_000, 2_500, -700][rng.below(3) as usize];
        let text = texts[rng.below(texts.len() as u64) as usize].to_owned();
        let reference = (rng.below(2) == 0).then(|| format!("BNK-{seed}-{n}"));
        payments.push((day, cents, text, reference));
    }
    payments.sort_by_key(|p| p.0);
    let statement = |from: u32, to: u32| {
        let days: Vec<String> = (1..=10).map(|d| format!("2026-11-{d:02}")).collect();
        let rows: Vec<E> = payments
            .iter()
            .filter(|p| (from..=to).contains(&p.0))
            .map(|p| E(&days[p.0 as usize - 1], p.1, &p.2, p.3.as_deref()))
            .collect();
        camt(IBAN, &rows)
    };
    let mut files: Vec<(u32, u32)> = (0..8)
        .map(|_| {
            let from = 1 + rng.below(10) as u32;
            (from, (from + rng.below(4) as u32).min(10))
        })
        .collect();
    let repeated: Vec<(u32, u32)> = files
        .iter()
        .filter(|_| rng.below(2) == 0)
        .copied()
        .collect();
    files.extend(repeated);
    for i in (1..files.len()).rev() {
        files.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let bodies: Vec<String> = files.iter().map(|(a, b)| statement(*a, *b)).collect();
    for (n, pair) in bodies.chunks(2).enumerate() {
        let keys: Vec<String> = (0..pair.len()).map(|i| format!("p-{n}-{i}")).collect();
        let imports = pair
            .iter()
            .zip(&keys)
            .map(|(body, key)| bank.import(key, body));
        for (status, body) in futures::future::join_all(imports).await {
            assert_eq!(status, StatusCode::CREATED, "seed {seed}: {body}");
        }
    }
    let covered: std::collections::BTreeSet<u32> =
        files.iter().flat_map(|(a, b)| *a..=*b).collect();
    let mut expected: Vec<(String, i64, String, Option<String>)> = payments
        .iter()
        .filter(|p| covered.contains(&p.0))
        .map(|p| (format!("2026-11-{:02}", p.0), p.1, p.2.clone(), p.3.clone()))
        .collect();
    expected.sort();
    let mut recorded: Vec<(String, i64, String, Option<String>)> = sqlx::query_as(
        "select booked_on::text, amount_cents, remittance, bank_reference from bank_entries where org_id = $1",
    )
    .bind(bank.org)
    .fetch_all(&bank.app.pool)
    .await
    .unwrap();
    recorded.sort();
    assert_eq!(recorded, expected, "seed {seed} (BANK_SEED replays it)");
}

/// Uploads `file` on the bank page with the form's `key`: the status and where it sends the browser.
async fn upload(bank: &Bank, http: &reqwest::Client, key: Uuid, file: &str) -> (u16, String) {
    let form = reqwest::multipart::Form::new()
        .text("idempotency_key", key.to_string())
        .part(
            "file",
            reqwest::multipart::Part::bytes(file.as_bytes().to_vec()).file_name("statement.xml"),
        );
    let res = http
        .post(format!("{}/payments/bank", bank.app.base))
        .header("origin", &bank.app.base)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, crate::common::pages::location(&res))
}

/// The owner's page: a statement uploaded twice at once with one rendered form is imported once;
/// the page says what it did and lists the unmatched entries, a credit with the invoice of its
/// amount and payer suggested; "Confirm" pressed twice records one payment, "Dismiss" sets a debit
/// aside, each once per rendered row and never with a key rendered for another org; the invoice's
/// page and the customer's statement show the payment's booking date and the bank's reference.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_bank_page_imports_once_and_confirms_each_suggestion_once(pool: PgPool) {
    use crate::common::{pages, team};

    let bank = Bank::new(pool).await;
    let http = team::browser(&bank.app, &bank.owner).await;
    let ada = Uuid::now_v7();
    let token = hex::encode(Uuid::now_v7().as_bytes()).repeat(2);
    sqlx::query(
        "insert into customers (id, org_id, name, email, statement_token) values ($1, $2, 'Ada', 'ada@example.com', $3)",
    )
    .bind(ada)
    .bind(bank.org)
    .bind(&token)
    .execute(&bank.app.pool)
    .await
    .unwrap();
    let invoice = |cents| {
        let input = model::InvoiceInput {
            customer_id: Some(ada),
            ..one_line_input("eur", "2031-01-31", cents, false)
        };
        let pool = bank.app.pool.clone();
        async move {
            let id = insert_invoice(&pool, bank.org, &input).await;
            let number: String =
                scalar_for(&pool, "select number_text from invoices where id = $1", id).await;
            (id, number)
        }
    };
    let (a, a_number) = invoice(1_000).await;
    let (b, b_number) = invoice(2_500).await;
    let (_c, c_number) = invoice(4_000).await;
    let file = camt(
        IBAN,
        &[
            E(
                "2026-12-01",
                1_000,
                &format!("Invoice {a_number}"),
                Some("BR-1"),
            ),
            E("2026-12-02", 2_500, "thanks", Some("BR-2")),
            E("2026-12-02", -500, "fees", Some("BR-3")),
        ],
    );

    let key = model::form_key(bank.org);
    let (one, two) = tokio::join!(
        upload(&bank, &http, key, &file),
        upload(&bank, &http, key, &file)
    );
    assert_eq!((one.0, two.0), (303, 303));
    assert_eq!(one.1, two.1, "the same import for the same rendered form");
    assert!(one.1.starts_with("/payments/bank?imported="), "{}", one.1);
    assert_eq!(bank.count("bank_statements").await, 1);
    assert_eq!(bank.paid(a).await.0, 1_000, "the credit naming A paid it");

    let html = pages::text(&http, format!("{}{}", bank.app.base, one.1)).await;
    assert!(html.contains("3 entries, 3 new, 1 matched"), "{html}");
    assert!(
        html.contains(&format!(
            "Confirm {b_number} (Ada, €25.00 due; same amount and payer)"
        )),
        "{html}"
    );
    assert!(
        html.contains(&format!("Confirm {c_number} (Ada, €40.00 due; same payer)")),
        "{html}"
    );
    assert!(
        !html.contains(&format!("Confirm {a_number}")),
        "A asks for nothing more"
    );

    let entry = |reference: &'static str| {
        let pool = bank.app.pool.clone();
        async move {
            scalar_for::<Uuid>(
                &pool,
                "select id from bank_entries where bank_reference = $1",
                reference,
            )
            .await
        }
    };
    let (credit, debit) = (entry("BR-2").await, entry("BR-3").await);
    let confirm = |key: Uuid, invoice: Uuid| {
        let form = team::form(&[
            ("idempotency_key", key.to_string()),
            ("entry_id", credit.to_string()),
            ("invoice_id", invoice.to_string()),
        ]);
        let (http, app) = (&http, &bank.app);
        async move { team::rpc(http, app, "match_bank_entry", &form).await }
    };
    // A key rendered for another org is refused before anything is claimed.
    let other = team::org(&bank.app.pool).await;
    assert_eq!(confirm(model::form_key(other.id), b).await, 400);
    let row = model::form_key(bank.org);
    let (x, y) = tokio::join!(confirm(row, b), confirm(row, b));
    assert!(x < 300 && y < 300, "{x} {y}");
    // The row's other suggestion, pressed with the same rendered key, is refused.
    let (c, _) = invoice(7_000).await;
    assert_eq!(confirm(row, c).await, 400);
    assert_eq!(bank.paid(b).await, (2_500, "paid".to_owned()));
    assert_eq!(
        scalar_for::<i64>(
            &bank.app.pool,
            "select count(*) from payments where invoice_id = $1",
            b
        )
        .await,
        1
    );
    // A matched credit is not dismissed: it stays matched.
    let dismiss = |key: Uuid, entry: Uuid| {
        let form = team::form(&[
            ("idempotency_key", key.to_string()),
            ("entry_id", entry.to_string()),
        ]);
        let (http, app) = (&http, &bank.app);
        async move { team::rpc(http, app, "ignore_bank_entry", &form).await }
    };
    assert_eq!(dismiss(row, credit).await, 400);
    assert!(dismiss(model::form_key(bank.org), debit).await < 300);
    let states: Vec<String> = sqlx::query_scalar(
        "select state from bank_entries where org_id = $1 order by bank_reference",
    )
    .bind(bank.org)
    .fetch_all(&bank.app.pool)
    .await
    .unwrap();
    assert_eq!(states, ["matched", "matched", "ignored"]);
    let html = pages::text(&http, format!("{}/payments/bank", bank.app.base)).await;
    assert!(html.contains("Nothing to match"), "{html}");

    // The invoice's page and the customer's statement: booked on the 2nd, the bank's reference.
    let page = pages::text(&http, format!("{}/invoices/{b}", bank.app.base)).await;
    assert!(
        page.contains("Bank statement")
            && page.contains("booked 2026-12-02")
            && page.contains("BR-2"),
        "{page}"
    );
    assert!(
        !page.contains("delete-payment"),
        "a bank payment is not deleted by hand"
    );
    let statement = pages::text(
        &http,
        format!("{}/s/{token}?from=2026-11-01&to=2031-12-31", bank.app.base),
    )
    .await;
    assert!(
        statement.contains("2026-12-02") && statement.contains("Payment, bank transfer (BR-2)"),
        "{statement}"
    );

    // The same file through a new rendering of the form: a new import that adds nothing.
    let again = upload(&bank, &http, model::form_key(bank.org), &file).await;
    assert_eq!(again.0, 303);
    assert_ne!(again.1, one.1);
    let html = pages::text(&http, format!("{}{}", bank.app.base, again.1)).await;
    assert!(html.contains("3 entries, 0 new, 0 matched"), "{html}");
    assert_eq!(bank.count("bank_entries").await, 3);
}

/// Files refused on the page: another org's IBAN, a broken file, a form rendered for another org;
/// each a page that says why, nothing recorded.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_bank_page_refuses_what_it_cannot_import(pool: PgPool) {
    use crate::common::team;

    let bank = Bank::new(pool).await;
    let http = team::browser(&bank.app, &bank.owner).await;
    let foreign = camt("DE89370400440532013000", &[E("2026-12-01", 100, "x", None)]);
    let key = model::form_key(bank.org);
    assert_eq!(upload(&bank, &http, key, &foreign).await.0, 422);
    let broken = "<Document><BkToCstmrStmt><Stmt>";
    assert_eq!(
        upload(&bank, &http, model::form_key(bank.org), broken)
            .await
            .0,
        422
    );
    let ours = camt(IBAN, &[E("2026-12-01", 100, "x", None)]);
    let other = team::org(&bank.app.pool).await;
    assert_eq!(
        upload(&bank, &http, model::form_key(other.id), &ours)
            .await
            .0,
        400
    );
    assert_eq!(bank.count("bank_statements").await, 0);
    assert_eq!(bank.count("bank_entries").await, 0);
    // The key of the refused foreign file is still free: it imports ours.
    assert_eq!(upload(&bank, &http, key, &ours).await.0, 303);
    assert_eq!(bank.count("bank_entries").await, 1);
}

/// The other two formats through the API: an MT940 statement and a CAMT.054 notification each
/// record their entries once and pay the invoice their credit names (by RF reference in one, by
/// number in the other); a second import of each adds nothing.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn mt940_and_camt054_files_import_through_the_api(pool: PgPool) {
    let bank = Bank::new(pool).await;
    let (a, _, a_rf) = bank.invoice(12_550).await;
    let (b, b_number, _) = bank.invoice(3_000).await;
    let mt940 = format!(
        ":20:STARTUMSE\n:25:ABNANL2A/{IBAN}\n:28C:00001/001\n:60F:C261201EUR1000,00\n\
         :61:2612011201C125,50NTRFNONREF//BANKREF-1\n:86:Payment {a_rf} from Ada\n\
         :61:2612021202D40,00NTRFNONREF\n:86:Office rent\n:62F:C261202EUR1085,50\n"
    );
    let camt054 = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.054.001.02"><BkToCstmrDbtCdtNtfctn>
<GrpHdr><MsgId>N1</MsgId><CreDtTm>2026-12-03T09:00:00+01:00</CreDtTm></GrpHdr>
<Ntfctn><Id>N1</Id><Acct><Id><IBAN>{IBAN}</IBAN></Id></Acct>
<Ntry><Amt Ccy="EUR">30.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2026-12-03</Dt></BookgDt>
<AcctSvcrRef>NTF-1</AcctSvcrRef><NtryDtls><TxDtls><RmtInf><Ustrd>Invoice {b_number}, thanks</Ustrd></RmtInf></TxDtls></NtryDtls></Ntry>
</Ntfctn></BkToCstmrDbtCdtNtfctn></Document>"#
    );
    for (file, format, entries, key) in [
        (&mt940, "mt940", 2, "mt940"),
        (&camt054, "camt.054", 1, "camt054"),
    ] {
        let (status, done) = bank.import(key, file).await;
        assert_eq!(status, StatusCode::CREATED, "{format}: {done}");
        assert_eq!(
            (
                done["format"].as_str(),
                done["account_iban"].as_str(),
                done["entries"].as_i64(),
                done["new_entries"].as_i64(),
                done["matched"].as_i64()
            ),
            (
                Some(format),
                Some(IBAN),
                Some(entries),
                Some(entries),
                Some(1)
            ),
            "{format}: {done}"
        );
        let (status, again) = bank.import(&format!("{key}-again"), file).await;
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(
            (again["new_entries"].as_i64(), again["matched"].as_i64()),
            (Some(0), Some(0))
        );
    }
    assert_eq!(bank.paid(a).await, (12_550, "paid".to_owned()));
    assert_eq!(bank.paid(b).await, (3_000, "paid".to_owned()));
    let payments = bank.get(&format!("/api/v1/invoices/{a}/payments")).await;
    assert_eq!(payments["data"][0]["source"], "bank", "{payments}");
    assert_eq!(payments["data"][0]["reference"], "BANKREF-1", "{payments}");
    assert_eq!(bank.count("bank_entries").await, 3);
}

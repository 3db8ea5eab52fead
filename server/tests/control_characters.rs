//! Control characters other than tab, CR and LF (and U+FFFE, U+FFFF) are refused in every text
//! field through the JSON API: a 422 naming each field, nothing stored, nothing claimed, the key
//! still usable. What users type is printed into XML e-invoices, which cannot carry them.

use serde_json::{json, Value};
use sqlx::PgPool;

use crate::common::served::{invoice_body, ApiResponse, TestApp};

async fn send(
    app: &TestApp,
    method: &str,
    path: &str,
    token: &str,
    key: &str,
    body: &Value,
) -> ApiResponse {
    let req = app
        .http
        .request(method.parse().unwrap(), format!("{}{path}", app.base))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .header("content-type", "application/json")
        .body(body.to_string());
    ApiResponse::read(req.send().await.unwrap()).await
}

/// The field errors of a 422 answer.
fn errors(res: &ApiResponse) -> Value {
    assert_eq!(res.status, 422, "{}", String::from_utf8_lossy(&res.body));
    res.json()["errors"].clone()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn control_characters_are_refused_per_field_and_nothing_is_stored(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let refused = model::CONTROL_CHARACTER;

    // An invoice: U+0001 in a line's description, DEL in its notes.
    let mut invoice: Value = serde_json::from_str(&invoice_body("Ada")).unwrap();
    invoice["lines"][1]["description"] = "Support\u{1}".into();
    invoice["notes"] = "Thanks\u{7f}".into();
    let res = send(&app, "POST", "/api/v1/invoices", &token, "inv", &invoice).await;
    let found = errors(&res);
    assert_eq!(found["lines[1].description"], refused, "{found}");
    assert_eq!(found["notes"], refused, "{found}");
    assert!(found["lines[0].description"].is_null(), "{found}");

    // A customer: a vertical tab (U+000B) in the name, NEL (U+0085) inside an address line.
    let customer = json!({
        "name": "Ada\u{b}Lovelace", "email": "ada@example.com",
        "address": {"line1": "1 Analytical\u{85}Row", "city": "London"}
    });
    let res = send(&app, "POST", "/api/v1/customers", &token, "cus", &customer).await;
    let found = errors(&res);
    assert_eq!(found["name"], refused, "{found}");
    assert_eq!(found["address.line1"], refused, "{found}");
    assert!(found["address.city"].is_null(), "{found}");

    // A tax rate: NUL and the noncharacter U+FFFF.
    let rate =
        json!({"name": "VAT\u{0}", "percent": 0, "category": "E", "exemption_reason": "x\u{ffff}"});
    let res = send(&app, "POST", "/api/v1/tax_rates", &token, "tax", &rate).await;
    let found = errors(&res);
    assert_eq!(found["name"], refused, "{found}");
    assert_eq!(found["exemption_reason"], refused, "{found}");

    // The org's legal details: an escape sequence (ESC) and a C1 control.
    let org = json!({"legal_name": "Acme\u{1b}[31m", "bank": {"holder": "Acme\u{9b}"}});
    let res = send(&app, "PATCH", "/api/v1/org", &token, "org", &org).await;
    let found = errors(&res);
    assert_eq!(found["legal_name"], refused, "{found}");
    assert_eq!(found["bank.holder"], refused, "{found}");

    for table in ["invoices", "customers", "tax_rates", "claims"] {
        let rows = app.count(&format!("select count(*) from {table}")).await;
        assert_eq!(rows, 0, "nothing in {table}");
    }
    assert_eq!(
        app.get(&token, "/api/v1/org").await.json()["legal_name"],
        ""
    );

    // Tabs and line breaks are text: the same keys now store what was sent.
    invoice["lines"][1]["description"] = "Support\tdesk\r\nand on-call".into();
    invoice["notes"] = "Thanks!\n\nSee you".into();
    let res = send(&app, "POST", "/api/v1/invoices", &token, "inv", &invoice).await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    let made = res.json();
    assert_eq!(
        made["lines"][1]["description"],
        "Support\tdesk\r\nand on-call"
    );
    assert_eq!(made["notes"], "Thanks!\n\nSee you");
    let customer = json!({
        "name": "Ada Lovelace", "email": "ada@example.com",
        "address": {"line1": "1 Analytical Row", "city": "London"},
        "notes": "Pays by\ttransfer\nnet 30"
    });
    let res = send(&app, "POST", "/api/v1/customers", &token, "cus", &customer).await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    let org = json!({"legal_name": "Acme Ltd"});
    let res = send(&app, "PATCH", "/api/v1/org", &token, "org", &org).await;
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    assert_eq!(
        app.count("select count(*) from invoices").await
            + app.count("select count(*) from customers").await,
        2
    );
    let rate = json!({"name": "Exempt", "percent": 0, "category": "E", "exemption_reason": "Art. 132\n(1)(c)"});
    let res = send(&app, "POST", "/api/v1/tax_rates", &token, "tax", &rate).await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
}

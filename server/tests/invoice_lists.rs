//! The invoice list's filters and keyset pages, through the API (the page shares the query).

use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::TestApp;

fn body(customer: &str, due: &str, draft: bool) -> String {
    serde_json::json!({
        "customer_name": customer,
        "customer_email": "ap@example.com",
        "currency": "usd",
        "due_date": due,
        "draft": draft,
        "lines": [{ "description": "Work", "quantity": 1, "unit_amount_cents": 1000 }],
    })
    .to_string()
}

async fn list(app: &TestApp, token: &str, query: &str) -> (Vec<String>, Option<String>) {
    let res = app.get(token, &format!("/api/v1/invoices?{query}")).await;
    assert_eq!(
        res.status,
        200,
        "{query}: {}",
        String::from_utf8_lossy(&res.body)
    );
    let json = res.json();
    let names = json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["customer_name"].as_str().unwrap().to_owned())
        .collect();
    (names, json["next_cursor"].as_str().map(str::to_owned))
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn pages_by_cursor_cover_every_invoice_once_newest_first(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    for i in 0..45 {
        let res = app
            .post_invoice(
                Some(&token),
                Some(&format!("k{i}")),
                &body(&format!("C{i:02}"), "2027-01-01", false),
            )
            .await;
        assert_eq!(res.status, 201);
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let query = match &cursor {
            Some(c) => format!("limit=20&cursor={c}"),
            None => "limit=20".to_owned(),
        };
        let (names, next) = list(&app, &token, &query).await;
        seen.extend(names);
        pages += 1;
        match next {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let expected: Vec<String> = (0..45).rev().map(|i| format!("C{i:02}")).collect();
    assert_eq!(seen, expected, "newest first, none twice, none missing");
    let bad = app.get(&token, "/api/v1/invoices?cursor=garbage").await;
    assert_eq!(bad.status, 400);
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn the_overdue_filter_pages_most_overdue_first_by_its_index(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    // 25 overdue invoices created in an order unlike their due dates, and open ones not yet due.
    for i in 0..25 {
        let due = format!("2001-{:02}-{:02}", 1 + (i * 7) % 12, 1 + i);
        let res = app
            .post_invoice(
                Some(&token),
                Some(&format!("late{i}")),
                &body(&format!("Late {due}"), &due, false),
            )
            .await;
        assert_eq!(res.status, 201);
    }
    for i in 0..5 {
        let res = app
            .post_invoice(
                Some(&token),
                Some(&format!("later{i}")),
                &body("Not yet", "2199-01-01", false),
            )
            .await;
        assert_eq!(res.status, 201);
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(c) => format!("status=overdue&limit=10&cursor={c}"),
            None => "status=overdue&limit=10".to_owned(),
        };
        let (names, next) = list(&app, &token, &query).await;
        seen.extend(names);
        match next {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let mut expected = seen.clone();
    expected.sort();
    assert_eq!(seen.len(), 25, "every overdue invoice once: {seen:?}");
    assert_eq!(seen, expected, "oldest due date first");
    // A cursor of one order is refused by the other.
    let (_, newest) = list(&app, &token, "limit=10").await;
    let newest = newest.unwrap();
    let mixed = app
        .get(
            &token,
            &format!("/api/v1/invoices?status=overdue&cursor={newest}"),
        )
        .await;
    assert_eq!(mixed.status, 400);
    let mixed = app
        .get(
            &token,
            &format!("/api/v1/invoices?cursor={}", cursor.unwrap_or_default()),
        )
        .await;
    assert_eq!(mixed.status, 400);

    // The page comes from the index by due date, bounded by today (planner asked to avoid scans).
    let org: Uuid = sqlx::query_scalar("select org_id from invoices limit 1")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let mut conn = app.pool.acquire().await.unwrap();
    for off in ["enable_seqscan", "enable_bitmapscan"] {
        sqlx::query(&format!("set {off} = off"))
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    let filter = app::ssr::invoices::ListFilter {
        status: Some("overdue".into()),
        payment_state: None,
        q: None,
    };
    let plan: String = app::ssr::invoices::page_query("explain ", org, &filter, None, 50)
        .build_query_scalar::<String>()
        .fetch_all(&mut *conn)
        .await
        .unwrap()
        .join("\n");
    assert!(
        plan.contains("Index Scan using invoices_org_unpaid_due_idx"),
        "{plan}"
    );
    assert!(!plan.contains("Sort"), "{plan}");
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn filters_by_status_payment_overdue_and_search(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let post = |customer: &'static str, due: &'static str, draft: bool| {
        let (app, token) = (&app, token.clone());
        async move {
            let res = app
                .post_invoice(
                    Some(&token),
                    Some(&Uuid::new_v4().to_string()),
                    &body(customer, due, draft),
                )
                .await;
            assert_eq!(res.status, 201);
            res.json()
        }
    };
    post("Ada Draft", "2027-01-01", true).await;
    post("Bob Late", "2001-01-01", false).await;
    let paid = post("Cy Paid", "2001-01-01", false).await;
    post("Ada Open", "2199-01-01", false).await;
    post("100% Percent", "2199-01-01", false).await;
    let id: Uuid = paid["id"].as_str().unwrap().parse().unwrap();
    app::ssr::stripe::standin::open_simulated_session(&app.pool, id)
        .await
        .unwrap();
    let (_, payload) = app::ssr::stripe::standin::checkout_completed(id, 1000, "usd");
    assert_eq!(app.deliver(&payload).await.0, 200);

    assert_eq!(list(&app, &token, "status=draft").await.0, ["Ada Draft"]);
    assert_eq!(list(&app, &token, "status=overdue").await.0, ["Bob Late"]);
    assert_eq!(
        list(&app, &token, "payment_state=paid").await.0,
        ["Cy Paid"]
    );
    assert_eq!(
        list(&app, &token, "status=open&q=ada").await.0,
        ["Ada Open"],
        "customer prefix, case-insensitive, with a status"
    );
    assert_eq!(
        list(&app, &token, "q=inv-000002").await.0,
        ["Cy Paid"],
        "number prefix"
    );
    // `%` is a character to search for, not a wildcard.
    assert_eq!(list(&app, &token, "q=100%25").await.0, ["100% Percent"]);
    assert!(list(&app, &token, "q=%25").await.0.is_empty());
    let overdue: Vec<bool> = app
        .get(&token, "/api/v1/invoices?status=overdue")
        .await
        .json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["overdue"].as_bool().unwrap())
        .collect();
    assert_eq!(overdue, [true]);
    for bad in [
        "status=late",
        "payment_state=rich",
        &format!("q={}", "x".repeat(201)),
    ] {
        assert_eq!(
            app.get(&token, &format!("/api/v1/invoices?{bad}"))
                .await
                .status,
            400,
            "{bad}"
        );
    }
}

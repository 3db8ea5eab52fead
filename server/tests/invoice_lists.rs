//! The invoice list's filters and keyset pages, through the API (the page shares the query), and how the
//! list and the activity page send their statements.

use sqlx::PgPool;
use uuid::Uuid;

use crate::common::rows::{new_owner, scalar, scalar_for};
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

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
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

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
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
    let org: model::OrgId = scalar(&app.pool, "select org_id from invoices limit 1").await;
    let mut conn = app.pool.acquire().await.unwrap();
    for off in ["enable_seqscan", "enable_bitmapscan"] {
        sqlx::query(&format!("set {off} = off"))
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    let filter = invoicer_core::invoicing::invoices::ListFilter {
        status: Some("overdue".into()),
        payment_state: None,
        q: None,
    };
    let plan: String =
        invoicer_core::invoicing::invoices::page_query("explain ", org, &filter, None, 50)
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

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
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
    invoicer_core::payments::stripe::standin::open_simulated_session(
        &app.pool,
        model::InvoiceId::from(id),
    )
    .await
    .unwrap();
    let (_, payload) = invoicer_core::payments::stripe::standin::checkout_completed(
        model::InvoiceId::from(id),
        1000,
        "usd",
    );
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

/// Every list shape is sent prepared (one round trip, planned once per connection), and its generic
/// plan (planned without its values) still reads the shape's index in its order; a search's reads
/// the prefix indexes or walks the list's index, one of the two by a one-time test.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn list_shapes_and_searches_run_prepared_on_their_index(pool: PgPool) {
    use invoicer_core::invoicing::invoices::{page, page_query, ListCursor, ListFilter};

    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    for (customer, due) in [("Ada", "2001-01-01"), ("Bob", "2199-01-01")] {
        let res = app
            .post_invoice(
                Some(&token),
                Some(&Uuid::new_v4().to_string()),
                &body(customer, due, false),
            )
            .await;
        assert_eq!(res.status, 201);
    }
    let org: model::OrgId = scalar(&app.pool, "select org_id from invoices limit 1").await;
    let filter = |status: Option<&str>, payment: Option<&str>, q: Option<&str>| ListFilter {
        status: status.map(str::to_owned),
        payment_state: payment.map(str::to_owned),
        q: q.map(str::to_owned),
    };
    let created = ListCursor::Created {
        created_at: chrono::Utc::now(),
        id: Uuid::max(),
    };
    let due = ListCursor::Due {
        due_date: chrono::NaiveDate::from_ymd_opt(2000, 1, 1).unwrap(),
        id: Uuid::nil(),
    };
    let (o, now) = (format!("'{org}'"), format!("'{}'", chrono::Utc::now()));
    // Each shape, the arguments its statement binds (as literals), and the index it must read.
    let shapes = [
        (
            filter(None, None, None),
            None,
            vec![o.clone()],
            "invoices_org_created_idx",
        ),
        (
            filter(None, None, None),
            Some(created),
            vec![o.clone(), now.clone(), format!("'{}'", Uuid::max())],
            "invoices_org_created_idx",
        ),
        (
            filter(Some("open"), None, None),
            None,
            vec![o.clone(), "'open'".into()],
            "invoices_org_status_created_idx",
        ),
        (
            filter(None, Some("paid"), None),
            None,
            vec![o.clone(), "'paid'".into()],
            "invoices_org_payment_created_idx",
        ),
        (
            filter(Some("overdue"), None, None),
            Some(due),
            vec![
                o.clone(),
                o.clone(),
                "'2000-01-01'".into(),
                format!("'{}'", Uuid::nil()),
            ],
            "invoices_org_unpaid_due_idx",
        ),
    ];
    let mut conn = app.pool.acquire().await.unwrap();
    for off in ["enable_seqscan", "enable_bitmapscan"] {
        sqlx::query(&format!("set {off} = off"))
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    sqlx::query("set plan_cache_mode = force_generic_plan")
        .execute(&mut *conn)
        .await
        .unwrap();
    let prepared = "select count(*) from pg_prepared_statements \
                    where statement like '%from invoices i join orgs o%'";
    for (i, (filter, cursor, args, index)) in shapes.into_iter().enumerate() {
        let before: i64 = sqlx::query_scalar(prepared)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        page(&mut *conn, org, &filter, cursor, 50).await.unwrap();
        let after: i64 = sqlx::query_scalar(prepared)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        assert_eq!(after, before + 1, "{filter:?} is sent prepared");
        let sql = page_query("", org, &filter, cursor, 50).sql().to_owned();
        sqlx::raw_sql(&format!("prepare shape_{i} as {sql}"))
            .execute(&mut *conn)
            .await
            .unwrap();
        let plan: Vec<String> = sqlx::query_scalar(&format!(
            "explain execute shape_{i}({}, 51)",
            args.join(", ")
        ))
        .fetch_all(&mut *conn)
        .await
        .unwrap();
        let plan = plan.join("\n");
        assert!(
            plan.contains(&format!("using {index} on invoices")),
            "{filter:?}: {plan}"
        );
        assert!(!plan.contains("Sort"), "{filter:?}: {plan}");
        assert!(plan.contains("$1"), "a generic plan: {plan}");
    }
    // A search: prepared too, and both of its branches bounded by an index on a generic plan.
    let before: i64 = sqlx::query_scalar(prepared)
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    let search = filter(None, None, Some("ad"));
    let (rows, _) = page(&mut *conn, org, &search, None, 50).await.unwrap();
    assert_eq!(rows.len(), 1);
    let after: i64 = sqlx::query_scalar(prepared)
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(after, before + 1, "a search is sent prepared");
    let sql = page_query("", org, &search, None, 50).sql().to_owned();
    sqlx::raw_sql(&format!("prepare search as {sql}"))
        .execute(&mut *conn)
        .await
        .unwrap();
    // The probe (org, from, to, cap, twice), the sorted branch (org, cap, from, to, from, to,
    // limit), the walked one (org, cap, text, text, limit), the page's limit.
    let (from, to, text) = ("'ad'".to_owned(), "'ae'".to_owned(), "'ad'".to_owned());
    let cap = invoicer_core::invoicing::invoices::SEARCH_SORTS_AT_MOST.to_string();
    let limit = "51".to_owned();
    let args = [
        &o, &from, &to, &cap, &o, &from, &to, &cap, &o, &cap, &from, &to, &from, &to, &limit, &o,
        &cap, &text, &text, &limit, &limit,
    ];
    let plan: Vec<String> = sqlx::query_scalar(&format!(
        "explain execute search({})",
        args.into_iter().cloned().collect::<Vec<_>>().join(", ")
    ))
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    let plan = plan.join("\n");
    for index in [
        "invoices_org_number_prefix_idx",
        "invoices_org_customer_prefix_idx",
        "invoices_org_created_idx",
    ] {
        assert!(plan.contains(index), "{index}: {plan}");
    }
    assert_eq!(plan.matches("One-Time Filter").count(), 2, "{plan}");
    assert!(plan.contains("$1"), "a generic plan: {plan}");
}

/// A search pages through exactly the invoices whose number or customer name starts with the text,
/// in the list's order, whichever branch runs: the matches sorted when there are few, the list's
/// index walked when there are more than `SEARCH_SORTS_AT_MOST`.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn searches_find_every_match_once_in_order_few_or_many(pool: PgPool) {
    use invoicer_core::invoicing::invoices::{page, ListFilter, SEARCH_SORTS_AT_MOST};

    let (_, account) = new_owner(&pool, "Big").await;
    let org = account.org_id;
    // 3,000 invoices of 150 customers, numbered INV-0000001 on in the order they were created.
    lab::datagen::skewed(&pool, org, 3000, 20, 10)
        .await
        .unwrap();
    // As the server reads: prepared, on generic plans.
    let reads = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect_with(invoicer_core::state::generic_plans(
            (*pool.connect_options()).clone(),
        ))
        .await
        .unwrap();
    let (mut few, mut many) = (0, 0);
    for (status, q) in [
        (None, "INV-00001"),
        (None, "inv-0000"),
        (None, "inv-000"),
        (None, "INV-"),
        (None, "Customer 15"),
        (None, "customer 1"),
        (None, "nobody"),
        (Some("open"), "inv-"),
        (Some("overdue"), "customer 1"),
        (Some("overdue"), "customer 15"),
    ] {
        let filter = ListFilter {
            status: status.map(str::to_owned),
            payment_state: None,
            q: Some(q.to_owned()),
        };
        let (status_sql, order) = match status {
            None => ("true", "created_at desc, id desc"),
            Some("overdue") => (
                "invoice_overdue(status, due_date, (select time_zone from orgs where id = $1))",
                "due_date, id",
            ),
            Some(_) => ("status = 'open'", "created_at desc, id desc"),
        };
        let matching = format!(
            "from invoices where org_id = $1 and {status_sql} and \
             (lower(number_text) like $2 or lower(customer_name) like $2)"
        );
        let pattern = format!("{}%", q.to_lowercase());
        let expected: Vec<Uuid> =
            sqlx::query_scalar(&format!("select id {matching} order by {order}"))
                .bind(org)
                .bind(&pattern)
                .fetch_all(&pool)
                .await
                .unwrap();
        // What the probe counts: prefix matches whatever the status.
        let probed: i64 = sqlx::query_scalar(
            "select count(*) from invoices where org_id = $1 and \
             (lower(number_text) like $2 or lower(customer_name) like $2)",
        )
        .bind(org)
        .bind(&pattern)
        .fetch_one(&pool)
        .await
        .unwrap();
        match probed > SEARCH_SORTS_AT_MOST {
            true => many += 1,
            false => few += 1,
        }
        let mut found = Vec::new();
        let mut before = None;
        loop {
            let (rows, next) = page(&reads, org, &filter, before, 50).await.unwrap();
            assert!(rows.len() <= 50);
            found.extend(rows.iter().map(|r| r.id));
            match next {
                Some(cursor) => before = Some(cursor),
                None => break,
            }
        }
        assert_eq!(found.len(), expected.len(), "{status:?} {q:?}");
        assert!(
            found == expected,
            "{status:?} {q:?}: not the same invoices in order"
        );
    }
    assert!(few >= 3 && many >= 3, "few {few}, many {many}");
}

/// The activity page's statement is sent prepared unless it carries a key prefix (a `like`).
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn activity_pages_run_prepared_unless_they_search_a_key(pool: PgPool) {
    use invoicer_core::activity::{rows, Filter};

    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let res = app
        .post_invoice(
            Some(&token),
            Some("activity-key-1"),
            &body("Ada", "2001-01-01", false),
        )
        .await;
    assert_eq!(res.status, 201);
    let invoice: Uuid = res.json()["id"].as_str().unwrap().parse().unwrap();
    let org: model::OrgId = scalar(&app.pool, "select org_id from invoices limit 1").await;
    let mut conn = app.pool.acquire().await.unwrap();
    let prepared = "select count(*) from pg_prepared_statements \
                    where statement like '%from attempts a%'";
    let search = |text: &str| Filter {
        search: Some(text.to_owned()),
        ..Default::default()
    };
    let shapes = [
        (Filter::default(), true),
        (
            Filter {
                invoice: Some(invoice),
                ..Default::default()
            },
            true,
        ),
        (
            Filter {
                surface: Some("api".into()),
                ..Default::default()
            },
            true,
        ),
        (search("INV-1"), true),
        (search("activity-k"), false),
    ];
    for (filter, expect_prepared) in shapes {
        let before: i64 = sqlx::query_scalar(prepared)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        let (found, _) = rows(&mut *conn, org, &filter, None).await.unwrap();
        assert_eq!(found.len(), 1, "{filter:?}");
        let after: i64 = sqlx::query_scalar(prepared)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        assert_eq!(after - before, i64::from(expect_prepared), "{filter:?}");
    }
}

/// Sent prepared, a statement runs its generic plan (planned without its values) once Postgres has
/// switched to it. On one big org among many small ones the generic plan of the invoice lookup
/// (the invoice page, the public page, the API) must read the invoices asked for, not the org's.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_invoice_lookups_generic_plan_reads_the_invoices_not_the_org(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    // Skewed like production: the big org holds most invoices, the average org few.
    let org = model::OrgId::from(Uuid::now_v7());
    sqlx::query("insert into orgs (id, name) values ($1, 'Big')")
        .bind(org)
        .execute(&app.pool)
        .await
        .unwrap();
    lab::datagen::skewed(&app.pool, org, 20_000, 200, 10)
        .await
        .unwrap();
    let id: Uuid = scalar_for(
        &app.pool,
        "select id from invoices where org_id = $1 limit 1",
        org,
    )
    .await;

    let mut conn = app.pool.acquire().await.unwrap();
    let found = invoicer_core::invoicing::invoices::get(
        &mut conn,
        org,
        model::InvoiceId::from(id),
        "http://x",
    )
    .await
    .unwrap();
    assert_eq!(found.map(|i| i.id), Some(id));
    let statement: String = sqlx::query_scalar(
        "select statement from pg_prepared_statements \
         where statement like '%wanted%' and statement not like '%pg_prepared_statements%'",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    sqlx::raw_sql(&format!(
        "set plan_cache_mode = force_generic_plan; prepare lookup as {statement}"
    ))
    .execute(&mut *conn)
    .await
    .unwrap();
    let plan: Vec<String> = sqlx::query_scalar(&format!(
        "explain (analyze) execute lookup('{org}', array['{id}']::uuid[])"
    ))
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    let plan = plan.join("\n");
    assert!(plan.contains("$1"), "a generic plan: {plan}");
    // What each node on invoices produced (rows times loops) and read and dropped: one invoice.
    let mut on_invoices = false;
    let mut invoice_nodes = 0;
    for line in plan.lines() {
        if line.contains("(actual ") || line.contains("(never executed)") {
            on_invoices = line.contains(" on invoices ");
            if on_invoices && line.contains("(actual ") {
                invoice_nodes += 1;
                let field = |name: &str| -> f64 {
                    line.split("(actual ")
                        .nth(1)
                        .unwrap()
                        .split_whitespace()
                        .find_map(|p| p.strip_prefix(name))
                        .unwrap()
                        .trim_end_matches(')')
                        .parse()
                        .unwrap()
                };
                assert!(field("rows=") * field("loops=") <= 1.0, "{line}\n{plan}");
            }
        } else if on_invoices && line.contains("Rows Removed by") {
            let removed: f64 = line.rsplit(':').next().unwrap().trim().parse().unwrap();
            assert_eq!(removed, 0.0, "{line}\n{plan}");
        }
    }
    // The checks above judged something: the plan reads invoices through at least one node.
    assert!(invoice_nodes >= 1, "no node on invoices ran: {plan}");
}

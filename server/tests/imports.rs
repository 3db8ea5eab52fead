//! Customer imports: a CSV file checked row by row into a preview (each refused row named), the same
//! file twice one import, applying once however often it is pressed, in batches that a crashed
//! worker leaves whole and the next one finishes without adding a customer twice.

use std::time::Duration;

use uuid::Uuid;

use crate::common::served::TestApp;
use crate::common::{client, login, pages, rows};

const PASSWORD: &str = "correct horse";

async fn owner(app: &TestApp) -> (model::OrgId, reqwest::Client) {
    let email = format!("{}@example.com", Uuid::new_v4().simple());
    let account =
        invoicer_core::accounts::create_org_with_owner(&app.pool, "Import Co", &email, PASSWORD)
            .await
            .unwrap();
    let http = client();
    login(&http, &app.base, &email, PASSWORD).await;
    (account.org_id, http)
}

/// Uploads `csv` as the import form does: (status, where it sends the browser, the body).
async fn upload(
    app: &TestApp,
    http: &reqwest::Client,
    org: model::OrgId,
    csv: Vec<u8>,
) -> (u16, String, String) {
    let form = reqwest::multipart::Form::new()
        .text("idempotency_key", model::form_key(org).to_string())
        .part(
            "file",
            reqwest::multipart::Part::bytes(csv)
                .file_name("customers.csv")
                .mime_str("text/csv")
                .unwrap(),
        );
    let res = http
        .post(format!("{}/customers/import", app.base))
        .header("origin", &app.base)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let location = res
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, location, res.text().await.unwrap())
}

/// Starts the import in a transaction of its own.
async fn start(pool: &sqlx::PgPool, org: model::OrgId, id: Uuid) -> bool {
    let mut tx = pool.begin().await.unwrap();
    let started = invoicer_core::customers::imports::start(&mut tx, org, id)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    started
}

fn import_id(location: &str) -> Uuid {
    Uuid::parse_str(location.strip_prefix("/customers/import/").unwrap()).unwrap()
}

async fn drain(app: &TestApp) {
    let mailer = invoicer_core::mail::Mailer::new(
        None,
        None,
        &std::env::temp_dir().join("invoicer-import-mail"),
        Duration::from_secs(5),
        invoicer_core::mail::DEV_FROM,
    )
    .unwrap();
    let config = invoicer_core::worker::WorkerConfig::default();
    while invoicer_core::worker::drain_once(&app.pool, &mailer, &config)
        .await
        .unwrap()
        > 0
    {}
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_file_is_previewed_with_its_refused_rows_and_applied_once(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, http) = owner(&app).await;
    let csv = "\u{feff}Name,email,city,country,locale\n\
               Acme GmbH,ap@acme.example,Berlin,de,de\n\
               \"Müller, Söhne\",info@mueller.example,Köln,DE,\n\
               =cmd,formula@example.com,,,\n\
               ,nobody@example.com,,,\n\
               Bad Mail,not-an-email,,,\n\
               Wrong Locale,wl@example.com,,,xx\n\
               Short,row\n";
    let (status, location, body) = upload(&app, &http, org, csv.as_bytes().to_vec()).await;
    assert_eq!(status, 303, "{body}");
    let id = import_id(&location);
    // The same file again: the same import, nothing new stored.
    let (_, again, _) = upload(&app, &http, org, csv.as_bytes().to_vec()).await;
    assert_eq!(again, location);
    assert_eq!(app.count("select count(*) from customer_imports").await, 1);

    let view = invoicer_core::customers::imports::get(&app.pool, org, id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (view.total, view.valid, view.status.as_str()),
        (7, 3, "previewed")
    );
    let refused: Vec<(usize, &str)> = view
        .errors
        .iter()
        .map(|e| (e.row, e.field.as_str()))
        .collect();
    assert_eq!(
        refused,
        vec![(5, "name"), (6, "email"), (7, "locale"), (8, "row")]
    );
    assert_eq!(view.sample[1].1, "Müller, Söhne");
    // The page shows it.
    let page = pages::text(&http, format!("{}/customers/import/{id}", app.base)).await;
    assert!(
        page.contains("7 rows, 3 can be imported, 4 cannot."),
        "{page}"
    );
    assert!(page.contains("Add 3 customers"));

    // Pressed twice at once: started once, one job.
    let form = [
        ("idempotency_key", model::form_key(org).to_string()),
        ("id", id.to_string()),
    ];
    let url = format!("{}/rpc/apply_customer_import", app.base);
    let press = || pages::submit(&http, url.clone(), &form);
    let (a, b) = tokio::join!(press(), press());
    assert!(
        a.status().is_success() || a.status().is_redirection(),
        "{}",
        a.status()
    );
    assert!(
        b.status().is_success() || b.status().is_redirection(),
        "{}",
        b.status()
    );
    assert_eq!(
        app.count("select count(*) from outbox where kind = 'customer_import'")
            .await,
        1
    );
    drain(&app).await;
    let view = invoicer_core::customers::imports::get(&app.pool, org, id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((view.applied, view.status.as_str()), (3, "done"));
    let names: Vec<String> = rows::scalars_for(
        &app.pool,
        "select name from customers where org_id = $1 order by name",
        org,
    )
    .await;
    assert_eq!(names, vec!["=cmd", "Acme GmbH", "Müller, Söhne"]);
    let country: String = rows::scalar(
        &app.pool,
        "select country from customers where name = 'Acme GmbH'",
    )
    .await;
    assert_eq!(country, "DE");
    // Done is done: pressing again and uploading again add nothing.
    press().await;
    upload(&app, &http, org, csv.as_bytes().to_vec()).await;
    drain(&app).await;
    assert_eq!(app.count("select count(*) from customers").await, 3);
    let page = pages::text(&http, format!("{}/customers/import/{id}", app.base)).await;
    assert!(page.contains("Done: 3 customers added."), "{page}");

    // Another org sees none of it, and cannot start it.
    let (other, _) = owner(&app).await;
    assert!(invoicer_core::customers::imports::get(&app.pool, other, id)
        .await
        .unwrap()
        .is_none());
    assert!(!start(&app.pool, other, id).await);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_large_file_resumes_from_its_counter_and_racing_workers_add_each_customer_once(
    pool: sqlx::PgPool,
) {
    let app = TestApp::spawn(pool).await;
    let (org, http) = owner(&app).await;
    let mut csv = String::from("name,email\n");
    for n in 0..1_100 {
        csv.push_str(&format!("Customer {n},c{n}@example.com\n"));
    }
    let (_, location, _) = upload(&app, &http, org, csv.into_bytes()).await;
    let id = import_id(&location);
    assert!(start(&app.pool, org, id).await);
    assert!(!start(&app.pool, org, id).await, "started once");
    // One batch, then the worker dies: a whole batch is in, and the counter says so.
    assert!(
        invoicer_core::customers::imports::apply_batch(&app.pool, id)
            .await
            .unwrap()
    );
    let (applied, added): (i32, i64) = sqlx::query_as(
        "select applied, (select count(*) from customers where org_id = $1) from customer_imports where id = $2",
    )
    .bind(org)
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(applied as i64, invoicer_core::customers::imports::BATCH);
    assert_eq!(added, invoicer_core::customers::imports::BATCH);
    // Two workers carry on at once.
    let payload = serde_json::json!({ "import_id": id });
    let (a, b) = tokio::join!(
        invoicer_core::customers::imports::apply(&app.pool, &payload),
        invoicer_core::customers::imports::apply(&app.pool, &payload)
    );
    a.unwrap();
    b.unwrap();
    let (applied, status): (i32, String) =
        sqlx::query_as("select applied, status from customer_imports where id = $1")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((applied, status.as_str()), (1_100, "done"));
    let (count, distinct): (i64, i64) =
        sqlx::query_as("select count(*), count(distinct email) from customers where org_id = $1")
            .bind(org)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((count, distinct), (1_100, 1_100));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn files_that_are_not_customer_csv_are_refused_with_a_message(pool: sqlx::PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, http) = owner(&app).await;
    for (file, status, says) in [
        (
            b"name,email,password\nA,a@example.com,x\n".to_vec(),
            422,
            "Unknown column password",
        ),
        (b"city\nBerlin\n".to_vec(), 422, "at least name and email"),
        (vec![0xff, 0xfe, 0x00, 0x41], 422, "not UTF-8"),
        (
            vec![b'a'; invoicer_core::customers::imports::MAX_BYTES + 1],
            413,
            "larger than 2 MB",
        ),
        (
            format!(
                "name,email\n{}",
                "X,x@example.com\n".repeat(invoicer_core::customers::imports::MAX_ROWS + 1)
            )
            .into_bytes(),
            422,
            "more than 5000 customers",
        ),
    ] {
        let (got, _, body) = upload(&app, &http, org, file).await;
        assert_eq!(got, status, "{says}: {body}");
        assert!(body.contains(says), "{says}: {body}");
    }
    assert_eq!(app.count("select count(*) from customer_imports").await, 0);
    // A form rendered for another org is refused.
    let form = reqwest::multipart::Form::new()
        .text(
            "idempotency_key",
            model::form_key(Uuid::now_v7().into()).to_string(),
        )
        .part(
            "file",
            reqwest::multipart::Part::bytes(b"name,email\nA,a@example.com\n".to_vec())
                .file_name("a.csv"),
        );
    let res = http
        .post(format!("{}/customers/import", app.base))
        .header("origin", &app.base)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
}

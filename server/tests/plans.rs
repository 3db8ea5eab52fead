//! How Postgres plans the pages' reads. A prepared statement is planned with its values five times,
//! then on its generic plan if that looks no dearer. For a big org it looks dearer (the generic plan
//! is costed for the average org), so Postgres planned the list, the activity page and the invoice
//! lookups again on every execution, as long as it took to run them. Those reads run on
//! `AppState::reads`, whose connections always use the generic plan (`lab bench read --explain
//! --forbid-big-scans` checks those plans at the large size).

use std::time::{Duration, Instant};

use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;
use tokio::time::timeout;
use uuid::Uuid;

use crate::common::rows::{new_owner, scalar_for};
use crate::common::served::TestApp;
use crate::common::{client, login};

/// Executions of each page: five planned with their values, then Postgres' choice.
const ROUNDS: usize = 8;

/// How long a page may take: alone ~20 ms, 350 ms at most with two copies of the suite on two cores.
const PAGE_WAIT: Duration = Duration::from_secs(15);

/// The server's pools and every other session of the test's database, while a page waits.
async fn waiting(pool: &PgPool, one: &PgPool, reads: &PgPool) -> String {
    let sessions: Vec<String> = sqlx::query_scalar(
        "select format('%s, waiting for %s, for %s s: %s', state, \
                       wait_event_type || ':' || wait_event, \
                       round(extract(epoch from now() - query_start), 1), left(query, 200)) \
         from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()",
    )
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    // A pool opening a connection while Postgres is full retries until its acquire timeout:
    // how full the whole server is says whether that is the wait.
    let full: String = sqlx::query_scalar(
        "select format('postgres: %s of %s connections in use', count(*), \
                       current_setting('max_connections')) from pg_stat_activity",
    )
    .fetch_one(pool)
    .await
    .unwrap_or_else(|e| format!("postgres: could not count connections: {e}"));
    let pools = format!(
        "pool: {} open, {} idle; reads: {} open, {} idle; {full}",
        one.size(),
        one.num_idle(),
        reads.size(),
        reads.num_idle()
    );
    sessions.iter().fold(pools, |all, s| format!("{all}\n{s}"))
}

/// What `pool`'s session has prepared: (statement, generic plans, custom plans).
async fn prepared(pool: &PgPool) -> Vec<(String, i64, i64)> {
    sqlx::query_as(
        "select statement, generic_plans, custom_plans from pg_prepared_statements \
         order by statement",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

fn show(statements: &[&(String, i64, i64)]) -> String {
    statements
        .iter()
        .map(|(sql, generic, custom)| {
            let sql = sql.split_whitespace().collect::<Vec<_>>().join(" ");
            format!("--- generic {generic}, custom {custom}: {sql:.300}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_big_orgs_pages_are_planned_once_per_connection(pool: PgPool) {
    // The server on one connection per pool, so everything each pool prepares is in one session's
    // pg_prepared_statements (a request that held one connection while waiting for another of the
    // same pool would time out here).
    let one = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(server::db::ACQUIRE_TIMEOUT)
        .connect_with((*pool.connect_options()).clone())
        .await
        .unwrap();
    let app = TestApp::spawn(one.clone()).await;
    // Skewed like production: the big org holds most invoices, the average org few.
    let (email, account) = new_owner(&pool, "Big").await;
    let org = account.org_id;
    lab::datagen::skewed(&pool, org, 20_000, 200, 10)
        .await
        .unwrap();
    let invoice: Uuid = scalar_for(
        &pool,
        "select id from invoices where org_id = $1 order by created_at desc offset 10000 limit 1",
        org,
    )
    .await;
    let key = crate::common::rows::owners_key(&pool, &account).await;
    let http = client();
    login(&http, &app.base, &email, "correct horse").await;
    let cursor = app.get(&key, "/api/v1/invoices?limit=50").await.json()["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();

    for _ in 0..ROUNDS {
        for path in [
            format!("/api/v1/invoices?limit=20&cursor={cursor}"),
            format!("/api/v1/invoices/{invoice}"),
        ] {
            assert_eq!(app.get(&key, &path).await.status, 200, "{path}");
        }
        for path in [
            "/invoices".to_owned(),
            format!("/invoices?before={cursor}"),
            "/invoices?status=open".to_owned(),
            "/invoices?status=overdue".to_owned(),
            "/invoices?payment_state=paid".to_owned(),
            format!("/invoices/{invoice}"),
            "/activity".to_owned(),
            "/activity?surface=webhook".to_owned(),
        ] {
            // The whole page is read, as a browser does, so no part of its work outlives its
            // request. A pool wait ends in 503 after ACQUIRE_TIMEOUT; a page still unanswered
            // well after that waits for something else, and what the pools and the database's
            // sessions are doing while it still waits says what.
            let started = Instant::now();
            let page = async {
                let res = http.get(format!("{}{path}", app.base)).send().await?;
                let status = res.status();
                Ok::<_, reqwest::Error>((status, res.text().await?))
            };
            let (status, body) = match timeout(PAGE_WAIT, page).await {
                Ok(answer) => answer.unwrap_or_else(|e| {
                    panic!("{path}: no answer after {:?}: {e}", started.elapsed())
                }),
                Err(_) => panic!(
                    "{path}: no whole answer after {:?}; meanwhile:\n{}",
                    started.elapsed(),
                    waiting(&pool, &one, &app.reads).await
                ),
            };
            assert_eq!(
                status,
                200,
                "{path} after {:?}: {body:.300}; meanwhile:\n{}",
                started.elapsed(),
                waiting(&pool, &one, &app.reads).await
            );
            assert!(body.contains("</html>"), "{path}: {body:.300}");
        }
    }

    // The pool that plans as Postgres chooses (sessions, users, writes) re-plans nothing.
    let main = prepared(&one).await;
    let replanned: Vec<_> = main.iter().filter(|(_, _, custom)| *custom > 5).collect();
    assert!(
        replanned.is_empty(),
        "planned again on every execution:\n{}",
        show(&replanned)
    );
    // The reads ran on the reads' connection, each on one plan: its list and activity shapes, the
    // invoice lookups, the invoice page's emails, history and payments.
    let reads = prepared(&app.reads).await;
    let once: Vec<_> = reads
        .iter()
        .filter(|(_, generic, custom)| *generic >= ROUNDS as i64 && *custom == 0)
        .collect();
    for shape in [
        "join orgs o on o.id = i.org_id where i.org_id = $1 order by",
        "from unnest($2::uuid[]) as wanted",
        "from invoice_lines",
        "from attempts a",
        "from outbox",
        "from payments p",
    ] {
        assert!(
            once.iter().any(|(sql, _, _)| sql
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains(shape)),
            "no statement with `{shape}` ran {ROUNDS} times on one plan on the reads' connection:\n{}",
            show(&reads.iter().collect::<Vec<_>>())
        );
    }
}

//! The claim primitive and the form surface against a real Postgres: a fresh database per test.

#![cfg(feature = "ssr")]

use std::sync::Arc;
use std::time::Duration;

use app::model::{InvoiceInput, LineInput};
use app::ssr::accounts::create_org_with_owner;
use app::ssr::claim::{self, ClaimKey, Claimed, Outcome, Rules, Scope};
use app::ssr::form_surface::{create_invoice_once, FormOutcome};
use app::ssr::invoices;
use app::ssr::observe::{Attempt, AttemptOutcome, Surface};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use uuid::Uuid;

const LEASE: Duration = Duration::from_secs(300);

fn input(customer: &str) -> InvoiceInput {
    InvoiceInput {
        customer_name: customer.into(),
        customer_email: "billing@example.com".into(),
        currency: "usd".into(),
        due_date: "2027-01-31".parse().unwrap(),
        lines: vec![LineInput {
            description: "Consulting".into(),
            quantity: 3,
            unit_amount_cents: 12_500,
        }],
    }
}

async fn new_org(pool: &PgPool, email: &str) -> Uuid {
    create_org_with_owner(pool, "Acme", email, "correct horse")
        .await
        .unwrap()
        .org_id
}

async fn invoice_count(pool: &PgPool, org: Uuid) -> i64 {
    sqlx::query_scalar("select count(*) from invoices where org_id = $1")
        .bind(org)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn numbers(pool: &PgPool, org: Uuid) -> Vec<i32> {
    sqlx::query_scalar("select number from invoices where org_id = $1 order by number")
        .bind(org)
        .fetch_all(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn the_same_key_twice_in_sequence_makes_one_invoice(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let key = Uuid::new_v4();
    let first = create_invoice_once(&pool, org, key, &input("Ada"), LEASE, None)
        .await
        .unwrap();
    let second = create_invoice_once(&pool, org, key, &input("Ada"), LEASE, None)
        .await
        .unwrap();
    let FormOutcome::Created(id) = first else {
        panic!("first submit must create: {first:?}")
    };
    assert_eq!(second, FormOutcome::Replayed(id));
    assert_eq!(invoice_count(&pool, org).await, 1);
    let status: String =
        sqlx::query_scalar("select status from claims where scope = 'form' and key = $1")
            .bind(key.to_string())
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(status, "done");
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn fifty_concurrent_submits_make_one_invoice_and_49_replays(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    // Our own pool, big enough that all 50 transactions are open in Postgres at once.
    let pool = PgPoolOptions::new()
        .max_connections(50)
        .connect_with(connect)
        .await
        .unwrap();
    let org = new_org(&pool, "a@example.com").await;
    let key = Uuid::new_v4();
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (pool, barrier) = (pool.clone(), barrier.clone());
            tokio::spawn(async move {
                // Hold a connection first, so the race is in Postgres and not in the pool queue.
                let conn = pool.acquire().await.unwrap();
                barrier.wait().await;
                drop(conn);
                // Each submit brings its activity row; only the winner's may commit.
                let (owner, key_text) = (org.to_string(), key.to_string());
                let this = Attempt {
                    surface: Surface::Form,
                    org: Some(org),
                    owner: &owner,
                    key: &key_text,
                    outcome: AttemptOutcome::Won,
                    invoice: None,
                    request_id: None,
                    started: std::time::Instant::now(),
                };
                create_invoice_once(&pool, org, key, &input("Ada"), LEASE, Some(&this))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut created = Vec::new();
    let mut replayed = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            FormOutcome::Created(id) => created.push(id),
            FormOutcome::Replayed(id) => replayed.push(id),
            other => panic!("only created or replayed, got {other:?}"),
        }
    }
    assert_eq!(created.len(), 1, "exactly one submit wins");
    assert_eq!(replayed.len(), 49);
    assert!(
        replayed.iter().all(|id| *id == created[0]),
        "every replay names the one invoice"
    );
    assert_eq!(invoice_count(&pool, org).await, 1);
    assert_eq!(numbers(&pool, org).await, [1]);
    // The winner's activity row committed with its invoice, and nobody else's did.
    let won: Vec<(String, Option<Uuid>)> =
        sqlx::query_as("select outcome, invoice_id from attempts where org_id = $1")
            .bind(org)
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(won, [("won".to_owned(), Some(created[0]))]);
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn a_transaction_that_fails_after_claiming_leaves_the_key_free(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let form_key = Uuid::new_v4();
    let key = ClaimKey::form(org, form_key);
    {
        let mut tx = pool.begin().await.unwrap();
        assert_eq!(
            claim::claim(&mut tx, &key, &Rules::new(LEASE))
                .await
                .unwrap(),
            Claimed::Won
        );
        invoices::insert(&mut tx, Uuid::new_v4(), org, None, &input("Ada"))
            .await
            .unwrap();
        // The failure: the transaction ends without commit (an error, a crash, a dropped connection).
        tx.rollback().await.unwrap();
    }
    let claims: i64 = sqlx::query_scalar("select count(*) from claims")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(claims, 0, "the claim rolled back with the work");
    let retry = create_invoice_once(&pool, org, form_key, &input("Ada"), LEASE, None)
        .await
        .unwrap();
    assert!(
        matches!(retry, FormOutcome::Created(_)),
        "the retry is not mistaken for a replay"
    );
    assert_eq!(
        numbers(&pool, org).await,
        [1],
        "the failed attempt used no number"
    );
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn the_same_uuid_in_two_orgs_makes_two_invoices(pool: PgPool) {
    let first = new_org(&pool, "a@example.com").await;
    let second = new_org(&pool, "b@example.com").await;
    let key = Uuid::new_v4();
    let a = create_invoice_once(&pool, first, key, &input("Ada"), LEASE, None)
        .await
        .unwrap();
    let b = create_invoice_once(&pool, second, key, &input("Bob"), LEASE, None)
        .await
        .unwrap();
    assert!(matches!(a, FormOutcome::Created(_)));
    assert!(matches!(b, FormOutcome::Created(_)));
    assert_ne!(a.invoice_id(), b.invoice_id());
    assert!(a.invoice_id().is_some());
    assert_eq!(numbers(&pool, first).await, [1]);
    assert_eq!(numbers(&pool, second).await, [1]);
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn a_replay_consumes_no_invoice_number(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let key = Uuid::new_v4();
    create_invoice_once(&pool, org, key, &input("Ada"), LEASE, None)
        .await
        .unwrap();
    for _ in 0..3 {
        create_invoice_once(&pool, org, key, &input("Ada"), LEASE, None)
            .await
            .unwrap();
    }
    create_invoice_once(&pool, org, Uuid::new_v4(), &input("Bob"), LEASE, None)
        .await
        .unwrap();
    assert_eq!(numbers(&pool, org).await, [1, 2]);
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn a_lost_claim_row_still_cannot_duplicate_the_invoice(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let key = Uuid::new_v4();
    let first = create_invoice_once(&pool, org, key, &input("Ada"), LEASE, None)
        .await
        .unwrap();
    sqlx::query("delete from claims")
        .execute(&pool)
        .await
        .unwrap();
    let again = create_invoice_once(&pool, org, key, &input("Ada"), LEASE, None)
        .await
        .unwrap();
    assert_eq!(again, FormOutcome::Replayed(first.invoice_id().unwrap()));
    assert_eq!(numbers(&pool, org).await, [1]);
}

// The primitive's other outcomes, which the webhook, API and job surfaces build on.

fn fingerprinted(fingerprint: &[u8]) -> Rules<'_> {
    Rules {
        fingerprint: Some(fingerprint),
        ..Rules::new(LEASE)
    }
}

fn api_key(key: &str) -> ClaimKey {
    ClaimKey {
        scope: Scope::Api,
        owner: "client-1".into(),
        key: key.into(),
    }
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn a_reused_key_with_another_fingerprint_is_a_mismatch(pool: PgPool) {
    let key = api_key("k1");
    let mut tx = pool.begin().await.unwrap();
    assert_eq!(
        claim::claim(&mut tx, &key, &fingerprinted(b"request-a"))
            .await
            .unwrap(),
        Claimed::Won
    );
    claim::complete(&mut tx, &key, &Outcome::default())
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let mut conn = pool.acquire().await.unwrap();
    assert_eq!(
        claim::claim(&mut conn, &key, &fingerprinted(b"request-b"))
            .await
            .unwrap(),
        Claimed::Mismatch
    );
    assert_eq!(
        claim::claim(&mut conn, &key, &fingerprinted(b"request-a"))
            .await
            .unwrap(),
        Claimed::Done(Outcome::default())
    );
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn a_fresh_lease_is_in_flight_and_a_stale_one_can_be_taken_over(pool: PgPool) {
    let key = api_key("k2");
    let mut conn = pool.acquire().await.unwrap();
    // Committed in progress (autocommit), as work that leaves the database does.
    assert_eq!(
        claim::claim(&mut conn, &key, &Rules::new(LEASE))
            .await
            .unwrap(),
        Claimed::Won
    );
    match claim::claim(&mut conn, &key, &Rules::new(LEASE))
        .await
        .unwrap()
    {
        Claimed::InFlight { retry_after } => {
            assert!(retry_after <= LEASE && retry_after.as_secs() >= 1)
        }
        other => panic!("expected in flight, got {other:?}"),
    }
    sqlx::query("update claims set locked_until = now() - interval '1 second'")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(
        claim::claim(&mut conn, &key, &Rules::new(LEASE))
            .await
            .unwrap(),
        Claimed::Won,
        "stale lease taken over"
    );
    assert!(matches!(
        claim::claim(&mut conn, &key, &Rules::new(LEASE))
            .await
            .unwrap(),
        Claimed::InFlight { .. }
    ));
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn the_same_form_resubmitted_with_other_content_is_refused_not_replayed(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let key = Uuid::new_v4();
    let first = create_invoice_once(&pool, org, key, &input("Ada"), LEASE, None)
        .await
        .unwrap();
    assert!(matches!(first, FormOutcome::Created(_)));
    // Back, edit, submit: the same rendered form with other content.
    let edited = create_invoice_once(&pool, org, key, &input("Bob"), LEASE, None)
        .await
        .unwrap();
    assert_eq!(edited, FormOutcome::KeyReused);
    let same = create_invoice_once(&pool, org, key, &input("Ada"), LEASE, None)
        .await
        .unwrap();
    assert_eq!(same, FormOutcome::Replayed(first.invoice_id().unwrap()));
    assert_eq!(numbers(&pool, org).await, [1]);
}

#[sqlx::test(migrator = "app::ssr::MIGRATOR")]
async fn a_claim_that_knows_its_result_is_written_done_even_over_a_stale_lease(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let with_result = |id| Rules {
        result_id: Some(id),
        ..Rules::new(LEASE)
    };
    let stored = |key: ClaimKey| {
        let pool = pool.clone();
        async move {
            sqlx::query_as::<_, (String, Option<Uuid>, bool, bool)>(
                "select status, result_id, completed_at is not null, locked_until is null
                 from claims where scope = 'form' and owner = $1 and key = $2",
            )
            .bind(key.owner)
            .bind(key.key)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };

    // Won by insert: done with the result, nothing to complete.
    let fresh = ClaimKey::form(org, Uuid::new_v4());
    let result = Uuid::new_v4();
    let mut tx = pool.begin().await.unwrap();
    let won = claim::claim(&mut tx, &fresh, &with_result(result)).await;
    assert_eq!(won.unwrap(), Claimed::Won);
    tx.commit().await.unwrap();
    assert_eq!(
        stored(fresh.clone()).await,
        ("done".into(), Some(result), true, true)
    );
    let mut conn = pool.acquire().await.unwrap();
    let again = claim::claim(&mut conn, &fresh, &Rules::new(LEASE)).await;
    assert_eq!(
        again.unwrap(),
        Claimed::Done(Outcome {
            result_id: Some(result),
            response: None
        })
    );

    // Won by taking over a stale lease: written done as well.
    let stale = ClaimKey::form(org, Uuid::new_v4());
    let held = claim::claim(&mut conn, &stale, &Rules::new(LEASE)).await;
    assert_eq!(held.unwrap(), Claimed::Won);
    sqlx::query("update claims set locked_until = now() - interval '1 second' where key = $1")
        .bind(&stale.key)
        .execute(&pool)
        .await
        .unwrap();
    let result = Uuid::new_v4();
    let mut tx = pool.begin().await.unwrap();
    let taken = claim::claim(&mut tx, &stale, &with_result(result)).await;
    assert_eq!(taken.unwrap(), Claimed::Won);
    tx.commit().await.unwrap();
    assert_eq!(
        stored(stale).await,
        ("done".into(), Some(result), true, true)
    );
}

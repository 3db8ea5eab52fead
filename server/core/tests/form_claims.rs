//! The claim primitive and the form surface against a real Postgres: a fresh database per test.

use std::sync::Arc;
use std::time::Duration;

use invoicer_core::accounts::create_org_with_owner;
use invoicer_core::claim::{self, ClaimKey, Claimed, Fence, Leased, Outcome, Terms};
use invoicer_core::invoicing::invoices;
use invoicer_core::observe::{Attempt, Surface};
use invoicer_core::surfaces::form::{
    invoice_from_form, queue_invoice_email, FormOutcome, SendOutcome,
};
use invoicer_core::surfaces::forms::Form;
use model::error::AppError;
use model::{InvoiceInput, LineInput, Thousandths};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use uuid::Uuid;

const LEASE: Duration = Duration::from_secs(300);

fn input(customer: &str) -> InvoiceInput {
    InvoiceInput {
        customer_name: customer.into(),
        customer_email: "billing@example.com".into(),
        currency: "usd".into(),
        due_date: Some("2027-01-31".parse().unwrap()),
        lines: vec![LineInput {
            description: "Consulting".into(),
            quantity: Thousandths::whole(3),
            unit_amount_cents: 12_500,
            tax_rate_id: None,
        }],
        draft: false,
        customer_id: None,
        ..Default::default()
    }
}

/// One submission of the create form of `org` rendered with `key`.
async fn submit(
    pool: &PgPool,
    org: model::OrgId,
    key: Uuid,
    input: &InvoiceInput,
) -> Result<FormOutcome, AppError> {
    let attempt = Attempt::new(Surface::Form, key.to_string(), None);
    attempt.identify(org.to_string(), Some(org));
    invoice_from_form(pool, &attempt, org, key, input).await
}

async fn new_org(pool: &PgPool, email: &str) -> model::OrgId {
    create_org_with_owner(pool, "Acme", email, "correct horse")
        .await
        .unwrap()
        .org_id
}

async fn invoice_count(pool: &PgPool, org: model::OrgId) -> i64 {
    sqlx::query_scalar("select count(*) from invoices where org_id = $1")
        .bind(org)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn numbers(pool: &PgPool, org: model::OrgId) -> Vec<i32> {
    sqlx::query_scalar("select number from invoices where org_id = $1 order by number")
        .bind(org)
        .fetch_all(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_same_key_twice_in_sequence_makes_one_invoice(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let key = Uuid::new_v4();
    let first = submit(&pool, org, key, &input("Ada")).await.unwrap();
    let second = submit(&pool, org, key, &input("Ada")).await.unwrap();
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

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
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
                submit(&pool, org, key, &input("Ada")).await.unwrap()
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

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_transaction_that_fails_after_claiming_leaves_the_key_free(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let form_key = Uuid::new_v4();
    let key = Form::CreateInvoice.claim_key(org, form_key);
    {
        let mut tx = pool.begin().await.unwrap();
        assert_eq!(
            claim::claim(&mut tx, &key, &Terms::default())
                .await
                .unwrap(),
            Claimed::Won
        );
        invoices::create(
            &mut tx,
            invoices::NewInvoice::new(model::InvoiceId::from(Uuid::new_v4()), org),
            &input("Ada"),
        )
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
    let retry = submit(&pool, org, form_key, &input("Ada")).await.unwrap();
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

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_same_uuid_in_two_orgs_makes_two_invoices(pool: PgPool) {
    let first = new_org(&pool, "a@example.com").await;
    let second = new_org(&pool, "b@example.com").await;
    let key = Uuid::new_v4();
    let a = submit(&pool, first, key, &input("Ada")).await.unwrap();
    let b = submit(&pool, second, key, &input("Bob")).await.unwrap();
    assert!(matches!(a, FormOutcome::Created(_)));
    assert!(matches!(b, FormOutcome::Created(_)));
    assert_ne!(a.invoice_id(), b.invoice_id());
    assert!(a.invoice_id().is_some());
    assert_eq!(numbers(&pool, first).await, [1]);
    assert_eq!(numbers(&pool, second).await, [1]);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_replay_consumes_no_invoice_number(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let key = Uuid::new_v4();
    submit(&pool, org, key, &input("Ada")).await.unwrap();
    for _ in 0..3 {
        submit(&pool, org, key, &input("Ada")).await.unwrap();
    }
    submit(&pool, org, Uuid::new_v4(), &input("Bob"))
        .await
        .unwrap();
    assert_eq!(numbers(&pool, org).await, [1, 2]);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_lost_claim_row_still_cannot_duplicate_the_invoice(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let key = Uuid::new_v4();
    let first = submit(&pool, org, key, &input("Ada")).await.unwrap();
    sqlx::query("delete from claims")
        .execute(&pool)
        .await
        .unwrap();
    let again = submit(&pool, org, key, &input("Ada")).await.unwrap();
    assert_eq!(again, FormOutcome::Replayed(first.invoice_id().unwrap()));
    assert_eq!(numbers(&pool, org).await, [1]);
}

// The primitive's two shapes, which the webhook, API and job surfaces build on.

fn fingerprinted(fingerprint: &[u8]) -> Terms<'_> {
    Terms {
        fingerprint: Some(fingerprint),
        ..Terms::default()
    }
}

fn api_key(key: &str) -> ClaimKey {
    ClaimKey::api(Uuid::nil(), key)
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_reused_key_with_another_fingerprint_is_a_mismatch(pool: PgPool) {
    let key = api_key("k1");
    let mut tx = pool.begin().await.unwrap();
    assert_eq!(
        claim::claim(&mut tx, &key, &fingerprinted(b"request-a"))
            .await
            .unwrap(),
        Claimed::Won
    );
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

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_fresh_lease_is_busy_and_a_stale_one_can_be_taken_over(pool: PgPool) {
    let key = ClaimKey::job("queue", "run-1");
    let mut conn = pool.acquire().await.unwrap();
    // Committed in progress (autocommit), as work that leaves the database does.
    let Leased::Acquired(first) = claim::lease(&mut conn, &key, LEASE).await.unwrap() else {
        panic!("a free key is leased")
    };
    match claim::lease(&mut conn, &key, LEASE).await.unwrap() {
        Leased::Busy { retry_after } => {
            assert!(retry_after <= LEASE && retry_after.as_secs() >= 1)
        }
        other => panic!("expected busy, got {other:?}"),
    }
    sqlx::query("update claims set locked_until = now() - interval '1 second'")
        .execute(&pool)
        .await
        .unwrap();
    let Leased::Acquired(second) = claim::lease(&mut conn, &key, LEASE).await.unwrap() else {
        panic!("a stale lease is taken over")
    };
    assert_ne!(
        first.token(),
        second.token(),
        "a takeover changes the token"
    );
    assert!(matches!(
        claim::lease(&mut conn, &key, LEASE).await.unwrap(),
        Leased::Busy { .. }
    ));
    assert_eq!(
        second
            .complete(&mut conn, &Outcome::result(Uuid::nil()))
            .await
            .unwrap(),
        Fence::Held
    );
    assert_eq!(
        claim::lease(&mut conn, &key, LEASE)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .done(),
        Some(Outcome::result(Uuid::nil())),
        "a completed lease is done for everyone after"
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_lease_cannot_complete_or_release_after_it_was_taken_over(pool: PgPool) {
    let mut conn = pool.acquire().await.unwrap();
    let stale = |key: &ClaimKey| {
        let (pool, key) = (pool.clone(), key.key.clone());
        async move {
            sqlx::query(
                "update claims set locked_until = now() - interval '1 second' where key = $1",
            )
            .bind(key)
            .execute(&pool)
            .await
            .unwrap();
        }
    };
    for settle_with_complete in [true, false] {
        let key = ClaimKey::job("queue", &Uuid::new_v4().to_string());
        let Leased::Acquired(slow) = claim::lease(&mut conn, &key, LEASE).await.unwrap() else {
            panic!("leased")
        };
        stale(&key).await;
        let Leased::Acquired(fast) = claim::lease(&mut conn, &key, LEASE).await.unwrap() else {
            panic!("taken over")
        };
        let late = if settle_with_complete {
            slow.complete(&mut conn, &Outcome::result(Uuid::new_v4()))
                .await
                .unwrap()
        } else {
            slow.release(&mut conn).await.unwrap()
        };
        assert_eq!(late, Fence::TakenOver, "the old holder records nothing");
        let row: (String, Option<Uuid>) =
            sqlx::query_as("select status, result_id from claims where key = $1")
                .bind(&key.key)
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(row, ("in_progress".into(), None), "still the new holder's");
        assert_eq!(fast.release(&mut conn).await.unwrap(), Fence::Held);
    }
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_claim_of_one_shape_cannot_be_handled_as_the_other(pool: PgPool) {
    let mut conn = pool.acquire().await.unwrap();
    // A claim that commits with its work never takes over a lease, however stale: the lease
    // holder's side effect may be under way.
    let leased = ClaimKey::job("queue", "shared-1");
    let Leased::Acquired(_held) = claim::lease(&mut conn, &leased, LEASE).await.unwrap() else {
        panic!("leased")
    };
    sqlx::query("update claims set locked_until = now() - interval '1 second'")
        .execute(&pool)
        .await
        .unwrap();
    let mut tx = pool.begin().await.unwrap();
    assert!(matches!(
        claim::claim(&mut tx, &leased, &Terms::default())
            .await
            .unwrap(),
        Claimed::Busy { .. }
    ));
    tx.rollback().await.unwrap();

    // And a lease on a key whose work committed is done, never acquired.
    let committed = ClaimKey::job("queue", "shared-2");
    let mut tx = pool.begin().await.unwrap();
    let result = Uuid::new_v4();
    let terms = Terms {
        result_id: Some(result),
        ..Terms::default()
    };
    assert_eq!(
        claim::claim(&mut tx, &committed, &terms).await.unwrap(),
        Claimed::Won
    );
    tx.commit().await.unwrap();
    match claim::lease(&mut conn, &committed, LEASE).await.unwrap() {
        Leased::Done(outcome) => assert_eq!(outcome, Outcome::result(result)),
        other => panic!("expected done, got {other:?}"),
    }
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_same_form_resubmitted_with_other_content_is_refused_not_replayed(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let key = Uuid::new_v4();
    let first = submit(&pool, org, key, &input("Ada")).await.unwrap();
    assert!(matches!(first, FormOutcome::Created(_)));
    // Back, edit, submit: the same rendered form with other content.
    let edited = submit(&pool, org, key, &input("Bob")).await.unwrap();
    assert_eq!(edited, FormOutcome::KeyReused);
    let same = submit(&pool, org, key, &input("Ada")).await.unwrap();
    assert_eq!(same, FormOutcome::Replayed(first.invoice_id().unwrap()));
    assert_eq!(numbers(&pool, org).await, [1]);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_claim_that_knows_its_result_is_written_done_with_it(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let key = Form::CreateInvoice.claim_key(org, Uuid::new_v4());
    let result = Uuid::new_v4();
    let terms = Terms {
        result_id: Some(result),
        ..Terms::default()
    };
    let mut tx = pool.begin().await.unwrap();
    assert_eq!(
        claim::claim(&mut tx, &key, &terms).await.unwrap(),
        Claimed::Won
    );
    tx.commit().await.unwrap();
    let stored: (String, Option<Uuid>, bool, bool) = sqlx::query_as(
        "select status, result_id, completed_at is not null, locked_until is null
         from claims where scope = 'form' and owner = $1 and key = $2",
    )
    .bind(&key.owner)
    .bind(&key.key)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(stored, ("done".into(), Some(result), true, true));
    let mut conn = pool.acquire().await.unwrap();
    assert_eq!(
        claim::claim(&mut conn, &key, &Terms::default())
            .await
            .unwrap(),
        Claimed::Done(Outcome::result(result))
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_key_minted_for_one_form_is_never_answered_with_another_forms_result(pool: PgPool) {
    let org = new_org(&pool, "a@example.com").await;
    let first = submit(&pool, org, Uuid::new_v4(), &input("Ada"))
        .await
        .unwrap();
    let invoice = first.invoice_id().unwrap();
    // A Send button's key...
    let key = Uuid::new_v4();
    let attempt = Attempt::new(Surface::Form, key.to_string(), None);
    let sent = queue_invoice_email(
        &pool,
        &attempt,
        org,
        key,
        model::InvoiceId::from(invoice),
        gate(),
    )
    .await
    .unwrap();
    let SendOutcome::Queued(outbox_row) = sent else {
        panic!("first click queues: {sent:?}")
    };
    // ...posted to the create form is a new attempt of that form, not a replay of the email.
    let created = submit(&pool, org, key, &input("Bob")).await.unwrap();
    let FormOutcome::Created(id) = created else {
        panic!("the create form's own attempt: {created:?}")
    };
    assert_ne!(id, outbox_row);
    assert_eq!(numbers(&pool, org).await, [1, 2]);
    // And the other way round: the create form's key on the Send button queues its own email.
    let attempt = Attempt::new(Surface::Form, key.to_string(), None);
    let again = queue_invoice_email(
        &pool,
        &attempt,
        org,
        first_key_of(&pool, invoice).await,
        model::InvoiceId::from(invoice),
        gate(),
    )
    .await
    .unwrap();
    assert!(matches!(again, SendOutcome::Queued(row) if row != outbox_row && row != invoice));
}

/// The mail gate of a verified member.
fn gate() -> invoicer_core::mail::gate::Gate {
    invoicer_core::mail::gate::Gate::new(
        invoicer_core::mail::gate::Allowance::DEFAULT,
        invoicer_core::mail::gate::Sender::Member { verified: true },
    )
}

/// The form key an invoice was created with (its `form:<uuid>` source key).
async fn first_key_of(pool: &PgPool, invoice: Uuid) -> Uuid {
    let source: String = sqlx::query_scalar("select source_key from invoices where id = $1")
        .bind(invoice)
        .fetch_one(pool)
        .await
        .unwrap();
    source.strip_prefix("form:").unwrap().parse().unwrap()
}

/// Raises what Postgres raises when it aborts a transaction to break a deadlock.
async fn deadlock(conn: &mut sqlx::PgConnection) -> sqlx::Error {
    sqlx::query("do $$ begin raise exception 'deadlock detected' using errcode = '40P01'; end $$")
        .execute(conn)
        .await
        .unwrap_err()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_transaction_aborted_by_a_deadlock_is_run_again_from_the_claim(pool: PgPool) {
    use invoicer_core::surfaces::{once, Once, Work};
    let key = ClaimKey::job("test", "k-deadlock");
    let attempt = Attempt::new(Surface::Form, "k-deadlock", None);
    let runs = std::sync::atomic::AtomicU32::new(0);
    let ran = once(&pool, &attempt, &key, &Terms::default(), || {
        async |tx| {
            let run = runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            sqlx::query(
                "insert into orgs (id, name) values (gen_random_uuid(), 'written in the try')",
            )
            .execute(&mut *tx)
            .await?;
            if run < 3 {
                return Err(deadlock(tx).await);
            }
            Ok(Work::Commit {
                answer: run,
                outcome: Outcome::default(),
                concerns: Default::default(),
            })
        }
    })
    .await
    .unwrap();
    assert_eq!(
        ran,
        Once::Ran(3),
        "two aborted tries, then the third commits"
    );
    let written: i64 = sqlx::query_scalar("select count(*) from orgs")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(written, 1, "the aborted tries left nothing");
    let attempts: i64 = sqlx::query_scalar("select count(*) from attempts where outcome = 'won'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(attempts, 1);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_transaction_that_keeps_deadlocking_is_answered_after_a_bounded_number_of_tries(
    pool: PgPool,
) {
    use invoicer_core::surfaces::{once, Once, Transient, MAX_TRIES};
    let key = ClaimKey::job("test", "k-stuck");
    let attempt = Attempt::new(Surface::Form, "k-stuck", None);
    let runs = std::sync::atomic::AtomicU32::new(0);
    let result: Result<Once<()>, sqlx::Error> =
        once(&pool, &attempt, &key, &Terms::default(), || {
            async |tx| {
                runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Err(deadlock(tx).await)
            }
        })
        .await;
    let err = result.unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert_eq!(runs.into_inner(), MAX_TRIES);
    let claims: i64 = sqlx::query_scalar("select count(*) from claims")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(claims, 0, "no claim is left behind");
    // The surfaces' error type turns it into a plain 500 after the tries.
    let app_error: AppError = err.into();
    assert_eq!(app_error, AppError::Contended);
}

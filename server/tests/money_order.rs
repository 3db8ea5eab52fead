//! Order never matters: random sets of Stripe events about one invoice (payments that succeed, wait
//! or fail, partial and full refunds, disputes won and lost, for one or two payments), of payments
//! recorded by hand through the API (some deleted afterwards by an owner) and of credit notes that
//! keep the money, each delivered one to three times, in random order, some at once, through the
//! real routes and real Postgres; then credit notes that pay money back outside the app (their
//! amount depends on what was paid when they are issued, so they come after, each sent twice). The
//! invoice and payment rows must equal those of the same events delivered once each, in order, to a
//! second invoice (a differential oracle that owes nothing to the model), and what a plain in-memory
//! model of the same set says.
//!
//! `MONEY_ORDER_CASES` sets the number of cases (default 150; e.g. 5000 for a long run);
//! `MONEY_ORDER_SEED` replays a run (the seed is printed).

use std::collections::BTreeMap;

use crate::common::rows::count_rows;
use crate::common::served::TestApp;
use futures::future::join_all;
use invoicer_core::payments::stripe::standin;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use sqlx::PgPool;
use uuid::Uuid;

const TOTAL: i64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Completed {
        paid: bool,
    },
    AsyncSucceeded,
    AsyncFailed,
    /// Cumulative refunded amount so far.
    Refunded {
        amount: i64,
    },
    RefundedFully,
    DisputeOpened,
    DisputeClosed {
        lost: bool,
    },
}

#[derive(Debug, Clone)]
struct Payment {
    amount: i64,
    events: Vec<Event>,
}

/// A payment recorded by hand: its amount, and whether an owner deletes it once everything else
/// has arrived (then every record request is sent again: a retry after the deletion must not bring
/// it back).
#[derive(Debug, Clone, Copy)]
struct Manual {
    amount: i64,
    deleted: bool,
}

/// A credit note: its amount, and whether it pays back outside the app what was paid beyond what
/// is then due (`refund: manual`, issued after everything else) or keeps it (`none`, delivered in
/// any order with the rest).
#[derive(Debug, Clone, Copy)]
struct Credit {
    amount: i64,
    pays_back: bool,
}

#[derive(Debug, Clone)]
struct Case {
    payments: Vec<Payment>,
    manual: Vec<Manual>,
    credits: Vec<Credit>,
    /// Each distinct event (payment index, event index) with how often it is delivered.
    repeats: Vec<usize>,
    /// A permutation of all deliveries.
    order: Vec<usize>,
    /// Sizes of the groups delivered at once, in order.
    groups: Vec<usize>,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        any::<bool>().prop_map(|paid| Event::Completed { paid }),
        Just(Event::AsyncSucceeded),
        Just(Event::AsyncFailed),
        (1..=4i64).prop_map(|q| Event::Refunded { amount: q * 1_000 }),
        Just(Event::RefundedFully),
        Just(Event::DisputeOpened),
        any::<bool>().prop_map(|lost| Event::DisputeClosed { lost }),
    ]
}

fn payment() -> impl Strategy<Value = Payment> {
    (
        prop_oneof![Just(4_000i64), Just(6_000), Just(10_000)],
        prop::collection::vec(event(), 1..=5),
    )
        .prop_map(|(amount, mut events)| {
            events.dedup();
            Payment { amount, events }
        })
}

fn manual() -> impl Strategy<Value = Manual> {
    (
        prop_oneof![Just(2_500i64), Just(6_000), Just(10_000)],
        any::<bool>(),
    )
        .prop_map(|(amount, deleted)| Manual { amount, deleted })
}

fn credit() -> impl Strategy<Value = Credit> {
    (
        prop_oneof![Just(1_000i64), Just(2_500), Just(4_000)],
        any::<bool>(),
    )
        .prop_map(|(amount, pays_back)| Credit { amount, pays_back })
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(payment(), 0..=2),
        prop::collection::vec(manual(), 0..=2),
        prop::collection::vec(credit(), 0..=2),
    )
        .prop_filter("something happens", |(p, m, _)| {
            !p.is_empty() || !m.is_empty()
        })
        .prop_flat_map(|(payments, manual, credits)| {
            let kept_credits = credits.iter().filter(|c| !c.pays_back).count();
            let distinct: usize = payments.iter().map(|p| p.events.len()).sum::<usize>()
                + manual.len()
                + kept_credits;
            prop::collection::vec(1..=3usize, distinct).prop_flat_map(move |repeats| {
                let deliveries: usize = repeats.iter().sum();
                let (payments, manual, credits) =
                    (payments.clone(), manual.clone(), credits.clone());
                (
                    Just((0..deliveries).collect::<Vec<_>>()).prop_shuffle(),
                    prop::collection::vec(1..=4usize, deliveries),
                )
                    .prop_map(move |(order, groups)| Case {
                        payments: payments.clone(),
                        manual: manual.clone(),
                        credits: credits.clone(),
                        repeats: repeats.clone(),
                        order,
                        groups,
                    })
            })
        })
}

/// What the set of events means, computed without the database.
#[derive(Debug, PartialEq, Eq)]
struct Expected {
    status: String,
    payment_state: String,
    amount_paid: i64,
    /// payment intent index → pending | failed | succeeded, for payments with a checkout event.
    payments: BTreeMap<usize, String>,
    receipts: i64,
    /// The sum of the payments recorded by hand (and not deleted).
    by_hand: i64,
    /// What the credit notes took off, and what they paid back outside the app.
    credited: i64,
    paid_back: i64,
}

fn model(payments: &[Payment], manual: &[Manual], credits: &[Credit]) -> Expected {
    let kept_by_hand: i64 = manual.iter().filter(|m| !m.deleted).map(|m| m.amount).sum();
    let (mut received, mut kept) = (kept_by_hand, kept_by_hand);
    let (mut disputed, mut pending) = (false, false);
    let mut statuses = BTreeMap::new();
    for (i, p) in payments.iter().enumerate() {
        // 0 pending, 1 failed, 2 succeeded: the highest wins.
        let rank = p
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Completed { paid: true } | Event::AsyncSucceeded => Some(2),
                Event::AsyncFailed => Some(1),
                Event::Completed { paid: false } => Some(0),
                _ => None,
            })
            .max();
        let Some(rank) = rank else { continue };
        statuses.insert(i, ["pending", "failed", "succeeded"][rank].to_owned());
        pending |= rank == 0;
        if rank != 2 {
            continue;
        }
        let full = p.events.contains(&Event::RefundedFully);
        let partial = p
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Refunded { amount } => Some(*amount),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let refunded = if full {
            p.amount
        } else {
            partial.min(p.amount)
        };
        let closed = p.events.iter().find_map(|e| match e {
            Event::DisputeClosed { lost } => Some(*lost),
            _ => None,
        });
        let lost = p.events.contains(&Event::DisputeClosed { lost: true });
        let open = closed.is_none() && p.events.contains(&Event::DisputeOpened);
        disputed |= open;
        received += p.amount;
        kept += (p.amount - refunded - if lost { p.amount } else { 0 }).max(0);
    }
    // The credit notes that keep the money first (their order does not matter), then those that
    // pay back, in the order they are issued: each pays back what was paid beyond what the invoice
    // then asks for, up to its amount.
    let mut credited: i64 = credits
        .iter()
        .filter(|c| !c.pays_back)
        .map(|c| c.amount)
        .sum();
    let mut paid_back = 0;
    for c in credits.iter().filter(|c| c.pays_back) {
        let asked_after = TOTAL - credited - c.amount;
        let back = (kept - paid_back - asked_after).clamp(0, c.amount);
        paid_back += back;
        credited += c.amount;
    }
    let kept = (kept - paid_back).max(0);
    let due = TOTAL - credited;
    let payment_state = if disputed {
        "disputed"
    } else if received == 0 && pending {
        "processing"
    } else if received == 0 && credited >= TOTAL {
        "paid"
    } else if received == 0 {
        "unpaid"
    } else if kept == 0 {
        "refunded"
    } else if kept >= due {
        "paid"
    } else if kept < received {
        "partially_refunded"
    } else {
        "partially_paid"
    };
    let status = if (received > 0 || credited > 0) && kept >= due {
        "paid"
    } else if received > 0 && kept == 0 {
        "refunded"
    } else {
        "open"
    };
    Expected {
        status: status.into(),
        payment_state: payment_state.into(),
        amount_paid: kept,
        by_hand: kept_by_hand,
        credited,
        paid_back,
        receipts: statuses.values().filter(|s| *s == "succeeded").count() as i64,
        payments: statuses,
    }
}

/// The payload of each distinct event of `case` for `invoice`.
fn payloads(case: &Case, invoice: Uuid, tag: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, p) in case.payments.iter().enumerate() {
        let pi = format!("pi_{tag}_{i}");
        let dispute = format!("dp_{tag}_{i}");
        for (j, e) in p.events.iter().enumerate() {
            let id = format!("evt_{tag}_{i}_{j}");
            let session = |kind: &'static str, status: &'static str| {
                standin::Session {
                    kind,
                    payment_intent: &pi,
                    invoice: model::InvoiceId::from(invoice),
                    amount: p.amount,
                    currency: "usd",
                    payment_status: status,
                    livemode: false,
                }
                .event(&id)
            };
            let dispute = |kind: &'static str, status: &'static str| {
                standin::Dispute {
                    kind,
                    dispute_id: &dispute,
                    payment_intent: &pi,
                    amount: p.amount,
                    currency: "usd",
                    status,
                    livemode: false,
                }
                .event(&id)
            };
            out.push(match *e {
                Event::Completed { paid } => session(
                    "checkout.session.completed",
                    if paid { "paid" } else { "unpaid" },
                ),
                Event::AsyncSucceeded => session("checkout.session.async_payment_succeeded", ""),
                Event::AsyncFailed => session("checkout.session.async_payment_failed", ""),
                Event::Refunded { amount } => {
                    standin::refund_event(&id, &pi, amount, "usd", false, false)
                }
                Event::RefundedFully => {
                    standin::refund_event(&id, &pi, p.amount, "usd", true, false)
                }
                Event::DisputeOpened => dispute("charge.dispute.created", ""),
                Event::DisputeClosed { lost } => {
                    dispute("charge.dispute.closed", if lost { "lost" } else { "won" })
                }
            });
        }
    }
    out
}

/// One thing that arrives: a Stripe event, or the API request that records a payment by hand (its
/// Idempotency-Key and body).
#[derive(Debug, Clone)]
enum Delivery {
    Stripe(String),
    Record { key: String, body: String },
    Credit { key: String, body: String },
}

/// Every distinct delivery of `case` for `invoice`: its Stripe events, then its manual payments.
fn distinct(case: &Case, invoice: Uuid, tag: &str) -> Vec<Delivery> {
    let mut out: Vec<Delivery> = payloads(case, invoice, tag)
        .into_iter()
        .map(Delivery::Stripe)
        .collect();
    out.extend(case.manual.iter().enumerate().map(|(i, m)| Delivery::Record {
        key: format!("manual-{tag}-{i}"),
        body: serde_json::json!({"amount_cents": m.amount, "method": "bank_transfer", "paid_on": "2026-12-01"})
            .to_string(),
    }));
    out.extend(credit_notes(case, tag, false));
    out
}

/// The credit notes of `case` that keep the money (`pays_back` false) or pay it back (true).
fn credit_notes(case: &Case, tag: &str, pays_back: bool) -> Vec<Delivery> {
    let refund = if pays_back { "manual" } else { "none" };
    case.credits
        .iter()
        .enumerate()
        .filter(|(_, c)| c.pays_back == pays_back)
        .map(|(i, c)| Delivery::Credit {
            key: format!("credit-{tag}-{i}"),
            body:
                serde_json::json!({"amount_cents": c.amount, "reason": "Agreed", "refund": refund})
                    .to_string(),
        })
        .collect()
}

/// The owner's API key of `org` (the org [`TestApp::invoice`] made).
async fn owners_key(app: &TestApp, org: model::OrgId) -> String {
    let owner: Uuid = crate::common::rows::scalar_for(
        &app.pool,
        "select user_id from memberships where org_id = $1",
        org,
    )
    .await;
    invoicer_core::accounts::api_keys::create_for_user(&app.pool, org, owner, "money order")
        .await
        .unwrap()
        .plaintext
}

async fn deliver(app: &TestApp, api_key: &str, invoice: Uuid, delivery: &Delivery, case: &Case) {
    match delivery {
        Delivery::Stripe(payload) => {
            let (status, body) = app.deliver(payload).await;
            assert_eq!(status, 200, "{body} in {case:?}");
        }
        Delivery::Record { key, body } | Delivery::Credit { key, body } => {
            let what = if matches!(delivery, Delivery::Record { .. }) {
                "payments"
            } else {
                "credit_notes"
            };
            let path = format!("/api/v1/invoices/{invoice}/{what}");
            let res = app.post_to(&path, Some(api_key), Some(key), body).await;
            // 409: the same key still in flight beside it (a retry would get the stored answer).
            assert!(
                res.status == 201 || res.status == 409,
                "{} in {case:?}",
                res.status
            );
        }
    }
}

/// The corrections that come after: the owner deletes the payments `case` marks (twice: a double
/// click), every record request is sent again (a retry after the deletion brings nothing back), and
/// the credit notes that pay back are issued, each sent twice.
async fn corrections(
    app: &TestApp,
    api_key: &str,
    org: model::OrgId,
    invoice: Uuid,
    tag: &str,
    all: &[Delivery],
    case: &Case,
) {
    let records: Vec<&Delivery> = all
        .iter()
        .filter(|d| matches!(d, Delivery::Record { .. }))
        .collect();
    let listed = app
        .get(api_key, &format!("/api/v1/invoices/{invoice}/payments"))
        .await
        .json();
    let manual_ids: Vec<(i64, Uuid)> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["source"] == "manual")
        .map(|p| {
            (
                p["amount_cents"].as_i64().unwrap(),
                p["id"].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        manual_ids.len(),
        case.manual.len(),
        "one payment per key: {case:?}"
    );
    // Each manual payment's id, by its key (recorded in key order is not promised: find by amount
    // and position among equals).
    let mut taken = vec![false; manual_ids.len()];
    for m in &case.manual {
        let at = manual_ids
            .iter()
            .enumerate()
            .position(|(n, (amount, _))| !taken[n] && *amount == m.amount)
            .unwrap();
        taken[at] = true;
        if m.deleted {
            let mut gone = Vec::new();
            for _ in 0..2 {
                let mut tx = app.pool.begin().await.unwrap();
                let actor = invoicer_core::accounts::audit::Actor::operator();
                gone.push(
                    invoicer_core::payments::manual::delete(
                        &mut tx,
                        org,
                        model::InvoiceId::from(invoice),
                        manual_ids[at].1,
                        &actor,
                    )
                    .await,
                );
                tx.commit().await.unwrap();
            }
            // Deleted once; the repeat finds it gone.
            assert!(
                matches!(
                    gone.as_slice(),
                    [
                        Ok(_),
                        Err(invoicer_core::payments::manual::PaymentError::NotFound)
                    ]
                ),
                "deleting twice: {gone:?}"
            );
        }
    }
    for record in records {
        deliver(app, api_key, invoice, record, case).await;
    }
    for credit in credit_notes(case, tag, true) {
        for _ in 0..2 {
            deliver(app, api_key, invoice, &credit, case).await;
        }
    }
}

/// The rows of `invoice` (of `org`) as the comparison reads them.
async fn observed(app: &TestApp, org: model::OrgId, invoice: Uuid) -> Expected {
    let (status, payment_state, amount_paid): (String, String, i64) = sqlx::query_as(
        "select status, payment_state, amount_paid_cents from invoices where id = $1",
    )
    .bind(invoice)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let rows: Vec<(String, String)> =
        sqlx::query_as("select provider_payment_id, status from payments where invoice_id = $1 and provider <> 'manual'")
            .bind(invoice)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    let payments = rows
        .into_iter()
        .map(|(pi, s)| (pi.rsplit('_').next().unwrap().parse().unwrap(), s))
        .collect();
    let receipts: i64 = count_rows(
        &app.pool,
        "outbox where org_id = $1 and kind = 'payment_receipt'",
        org,
    )
    .await;
    let by_hand: i64 = sqlx::query_scalar(
        "select coalesce(sum(amount_cents), 0)::int8 from payments where invoice_id = $1 and provider = 'manual'",
    )
    .bind(invoice)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let (credited, paid_back): (i64, i64) = sqlx::query_as(
        "select amount_credited_cents, (select coalesce(sum(refunded_cents), 0)::int8 \
         from credit_notes where invoice_id = $1) from invoices where id = $1",
    )
    .bind(invoice)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    Expected {
        status,
        payment_state,
        amount_paid,
        payments,
        receipts,
        by_hand,
        credited,
        paid_back,
    }
}

/// The differential oracle: the same events delivered once each, in the order they happened, one
/// at a time, to a second invoice. Its rows owe nothing to the model's copy of the rule.
async fn in_order(app: &TestApp, case: &Case) -> Expected {
    in_order_read(app, case).await.0
}

/// [`in_order`], with the invoice as the API then answers it.
async fn in_order_read(app: &TestApp, case: &Case) -> (Expected, serde_json::Value) {
    let (org, invoice) = app.invoice(TOTAL, "usd").await;
    let key = owners_key(app, org).await;
    let tag = Uuid::new_v4().simple().to_string();
    let all = distinct(case, invoice, &tag);
    for delivery in &all {
        deliver(app, &key, invoice, delivery, case).await;
    }
    corrections(app, &key, org, invoice, &tag, &all, case).await;
    let read = app
        .get(&key, &format!("/api/v1/invoices/{invoice}"))
        .await
        .json();
    (observed(app, org, invoice).await, read)
}

async fn run(app: &TestApp, case: &Case) {
    let (org, invoice) = app.invoice(TOTAL, "usd").await;
    let key = owners_key(app, org).await;
    let tag = Uuid::new_v4().simple().to_string();
    let distinct = distinct(case, invoice, &tag);
    let deliveries: Vec<&Delivery> = case
        .repeats
        .iter()
        .enumerate()
        .flat_map(|(i, n)| std::iter::repeat_n(&distinct[i], *n))
        .collect();
    let mut order = case.order.iter();
    for size in &case.groups {
        let group: Vec<_> = order.by_ref().take(*size).map(|&k| deliveries[k]).collect();
        if group.is_empty() {
            break;
        }
        join_all(
            group
                .into_iter()
                .map(|d| deliver(app, &key, invoice, d, case)),
        )
        .await;
    }
    corrections(app, &key, org, invoice, &tag, &distinct, case).await;
    let got = observed(app, org, invoice).await;
    // Out of order and repeated, the rows are those of the same events delivered once each in
    // order (the differential oracle), and those the model computes.
    assert_eq!(
        got,
        in_order(app, case).await,
        "against in-order delivery: {case:?}"
    );
    assert_eq!(
        got,
        model(&case.payments, &case.manual, &case.credits),
        "against the model: {case:?}"
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_final_invoice_is_a_function_of_the_set_of_its_events(pool: PgPool) {
    let cases: u32 = std::env::var("MONEY_ORDER_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(150);
    // Replayable: MONEY_ORDER_SEED=<n> runs the same cases again.
    let seed: u64 = std::env::var("MONEY_ORDER_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| u64::from(Uuid::new_v4().as_u128() as u32));
    eprintln!("money_order: {cases} cases, MONEY_ORDER_SEED={seed} replays them");
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&seed.to_le_bytes());
    }
    let rng = proptest::test_runner::TestRng::from_seed(
        proptest::test_runner::RngAlgorithm::ChaCha,
        &bytes,
    );
    let app = TestApp::spawn(pool).await;
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = case();
    for n in 0..cases {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        // A failure names the seed and the case's place to replay it.
        let _seed = SeedOnPanic { seed, case: n };
        run(&app, &case).await;
        std::mem::forget(_seed);
    }
}

/// Prints the seed when a case panics (dropped while unwinding), so the run can be replayed.
struct SeedOnPanic {
    seed: u64,
    case: u32,
}

impl Drop for SeedOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "money_order failed at case {}: replay with MONEY_ORDER_SEED={}",
                self.case, self.seed
            );
        }
    }
}

#[test]
fn the_model_reads_the_rule_table() {
    let stripe_only = |payments: &[Payment]| model(payments, &[], &[]);
    let paid = |amount, events: Vec<Event>| Payment { amount, events };
    let m = stripe_only(&[paid(10_000, vec![Event::Completed { paid: true }])]);
    assert_eq!(
        (m.status.as_str(), m.payment_state.as_str(), m.amount_paid),
        ("paid", "paid", 10_000)
    );
    let m = stripe_only(&[paid(10_000, vec![Event::Completed { paid: false }])]);
    assert_eq!(
        (m.status.as_str(), m.payment_state.as_str()),
        ("open", "processing")
    );
    let m = stripe_only(&[
        paid(6_000, vec![Event::Completed { paid: true }]),
        paid(
            4_000,
            vec![Event::RefundedFully, Event::Completed { paid: true }],
        ),
    ]);
    assert_eq!(
        (m.status.as_str(), m.payment_state.as_str(), m.amount_paid),
        ("open", "partially_refunded", 6_000)
    );
    let m = stripe_only(&[paid(
        10_000,
        vec![Event::Completed { paid: true }, Event::DisputeOpened],
    )]);
    assert_eq!(m.payment_state, "disputed");
    let m = stripe_only(&[paid(
        10_000,
        vec![
            Event::DisputeOpened,
            Event::Completed { paid: true },
            Event::DisputeClosed { lost: true },
        ],
    )]);
    assert_eq!(
        (m.status.as_str(), m.payment_state.as_str(), m.amount_paid),
        ("refunded", "refunded", 0)
    );
    let by_hand = |amount, deleted| Manual { amount, deleted };
    let m = model(
        &[paid(4_000, vec![Event::Completed { paid: true }])],
        &[by_hand(6_000, false), by_hand(2_500, true)],
        &[],
    );
    assert_eq!(
        (
            m.status.as_str(),
            m.payment_state.as_str(),
            m.amount_paid,
            m.by_hand
        ),
        ("paid", "paid", 10_000, 6_000)
    );
    let m = model(&[], &[by_hand(2_500, false)], &[]);
    assert_eq!(
        (m.status.as_str(), m.payment_state.as_str(), m.receipts),
        ("open", "partially_paid", 0)
    );
    // 10,000 paid by hand; 4,000 credited and kept, then 2,500 credited and paid back: the
    // invoice asks 3,500, and 7,500 is kept (4,000 of it the customer's credit).
    let credit = |amount, pays_back| Credit { amount, pays_back };
    let m = model(
        &[],
        &[by_hand(10_000, false)],
        &[credit(2_500, true), credit(4_000, false)],
    );
    assert_eq!(
        (m.status.as_str(), m.amount_paid, m.credited, m.paid_back),
        ("paid", 7_500, 6_500, 2_500)
    );
}

/// One row of the hand-computed table: what happens, in order, to an invoice of 100.00, and what
/// docs/webhooks.md (the state rule) and docs/invoices.md (credit notes) say the invoice then is.
struct Row {
    what: &'static str,
    payments: Vec<Payment>,
    manual: Vec<Manual>,
    credits: Vec<Credit>,
    /// status, payment_state, paid, credited, due (cents).
    then: (&'static str, &'static str, i64, i64, i64),
}

/// Small cases worked out by hand (not by [`model`]), each run through the server's routes once,
/// in the order written: Stripe's events, then payments recorded by hand, credit notes that keep the
/// money, the deletions, and last the credit notes that pay money back.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn hand_computed_cases_through_the_server(pool: PgPool) {
    use Event::*;
    let card = |amount, events: Vec<Event>| Payment { amount, events };
    let by_hand = |amount| Manual {
        amount,
        deleted: false,
    };
    let keeps = |amount| Credit {
        amount,
        pays_back: false,
    };
    let pays_back = |amount| Credit {
        amount,
        pays_back: true,
    };
    let paid = Completed { paid: true };
    let debit = Completed { paid: false };
    let none = Vec::new;
    let rows = vec![
        Row {
            what: "a card pays it all",
            payments: vec![card(10_000, vec![paid])],
            manual: none(),
            credits: vec![],
            then: ("paid", "paid", 10_000, 0, 0),
        },
        Row {
            what: "a bank debit under way",
            payments: vec![card(10_000, vec![debit])],
            manual: none(),
            credits: vec![],
            then: ("open", "processing", 0, 0, 10_000),
        },
        Row {
            what: "a bank debit that fails",
            payments: vec![card(10_000, vec![debit, AsyncFailed])],
            manual: none(),
            credits: vec![],
            then: ("open", "unpaid", 0, 0, 10_000),
        },
        Row {
            what: "a bank debit that succeeds",
            payments: vec![card(10_000, vec![debit, AsyncSucceeded])],
            manual: none(),
            credits: vec![],
            then: ("paid", "paid", 10_000, 0, 0),
        },
        Row {
            what: "a card pays 40.00",
            payments: vec![card(4_000, vec![paid])],
            manual: none(),
            credits: vec![],
            then: ("open", "partially_paid", 4_000, 0, 6_000),
        },
        Row {
            what: "paid, then 40.00 refunded",
            payments: vec![card(10_000, vec![paid, Refunded { amount: 4_000 }])],
            manual: none(),
            credits: vec![],
            then: ("open", "partially_refunded", 6_000, 0, 4_000),
        },
        Row {
            what: "paid, then refunded in full",
            payments: vec![card(10_000, vec![paid, RefundedFully])],
            manual: none(),
            credits: vec![],
            then: ("refunded", "refunded", 0, 0, 10_000),
        },
        Row {
            what: "the refund arrives before its payment",
            payments: vec![card(10_000, vec![RefundedFully, paid])],
            manual: none(),
            credits: vec![],
            then: ("refunded", "refunded", 0, 0, 10_000),
        },
        Row {
            what: "paid, then disputed",
            payments: vec![card(10_000, vec![paid, DisputeOpened])],
            manual: none(),
            credits: vec![],
            then: ("paid", "disputed", 10_000, 0, 0),
        },
        Row {
            what: "a dispute won",
            payments: vec![card(
                10_000,
                vec![paid, DisputeOpened, DisputeClosed { lost: false }],
            )],
            manual: none(),
            credits: vec![],
            then: ("paid", "paid", 10_000, 0, 0),
        },
        Row {
            what: "a dispute lost",
            payments: vec![card(
                10_000,
                vec![paid, DisputeOpened, DisputeClosed { lost: true }],
            )],
            manual: none(),
            credits: vec![],
            then: ("refunded", "refunded", 0, 0, 10_000),
        },
        Row {
            what: "two cards, 60.00 and 40.00",
            payments: vec![card(6_000, vec![paid]), card(4_000, vec![paid])],
            manual: none(),
            credits: vec![],
            then: ("paid", "paid", 10_000, 0, 0),
        },
        Row {
            what: "25.00 by transfer",
            payments: vec![],
            manual: vec![by_hand(2_500)],
            credits: vec![],
            then: ("open", "partially_paid", 2_500, 0, 7_500),
        },
        Row {
            what: "60.00 by transfer and 60.00 by card: 20.00 too much",
            payments: vec![card(6_000, vec![paid])],
            manual: vec![by_hand(6_000)],
            credits: vec![],
            then: ("paid", "paid", 12_000, 0, 0),
        },
        Row {
            what: "a transfer recorded, then deleted",
            payments: vec![],
            manual: vec![Manual {
                amount: 10_000,
                deleted: true,
            }],
            credits: vec![],
            then: ("open", "unpaid", 0, 0, 10_000),
        },
        Row {
            what: "40.00 credited, nothing paid",
            payments: vec![],
            manual: vec![],
            credits: vec![keeps(4_000)],
            then: ("open", "unpaid", 0, 4_000, 6_000),
        },
        Row {
            what: "40.00 credited, 60.00 by transfer",
            payments: vec![],
            manual: vec![by_hand(6_000)],
            credits: vec![keeps(4_000)],
            then: ("paid", "paid", 6_000, 4_000, 0),
        },
        Row {
            what: "all of it credited",
            payments: vec![],
            manual: vec![],
            credits: vec![keeps(10_000)],
            then: ("paid", "paid", 0, 10_000, 0),
        },
        Row {
            what: "paid by card, then 25.00 credited and paid back",
            payments: vec![card(10_000, vec![paid])],
            manual: vec![],
            credits: vec![pays_back(2_500)],
            then: ("paid", "paid", 7_500, 2_500, 0),
        },
        Row {
            what: "40.00 paid, then 25.00 credited: nothing to pay back",
            payments: vec![card(4_000, vec![paid])],
            manual: vec![],
            credits: vec![pays_back(2_500)],
            then: ("open", "partially_paid", 4_000, 2_500, 3_500),
        },
        Row {
            what: "paid by transfer, 40.00 credited and kept, 25.00 credited and paid back",
            payments: vec![],
            manual: vec![by_hand(10_000)],
            credits: vec![pays_back(2_500), keeps(4_000)],
            then: ("paid", "paid", 7_500, 6_500, 0),
        },
    ];
    let app = TestApp::spawn(pool).await;
    let mut wrong = Vec::new();
    for row in &rows {
        let case = Case {
            payments: row.payments.clone(),
            manual: row.manual.clone(),
            credits: row.credits.clone(),
            repeats: vec![],
            order: vec![],
            groups: vec![],
        };
        let (_, read) = in_order_read(&app, &case).await;
        let got = (
            read["status"].as_str().unwrap_or("?").to_owned(),
            read["payment_state"].as_str().unwrap_or("?").to_owned(),
            read["amount_paid_cents"].as_i64().unwrap_or(-1),
            read["amount_credited_cents"].as_i64().unwrap_or(-1),
            read["amount_due_cents"].as_i64().unwrap_or(-1),
        );
        let want = row.then;
        if (got.0.as_str(), got.1.as_str(), got.2, got.3, got.4) != want {
            wrong.push(format!("{}: got {got:?}, want {want:?}", row.what));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

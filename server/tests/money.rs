//! Money as Stripe means it, one row of the state table at a time (docs/webhooks.md), through the real
//! route with real signatures.

use crate::common::rows::scalar;
use crate::common::served::TestApp;
use invoicer_core::payments::stripe::standin;
use sqlx::PgPool;
use uuid::Uuid;

/// Builds and delivers the events of one payment of one invoice.
struct Pay<'a> {
    app: &'a TestApp,
    invoice: Uuid,
    pi: String,
    amount: i64,
    currency: &'a str,
}

impl Pay<'_> {
    async fn session(&self, kind: &str, payment_status: &str, livemode: bool) -> String {
        let payload = standin::Session {
            kind,
            payment_intent: &self.pi,
            invoice: model::InvoiceId::from(self.invoice),
            amount: self.amount,
            currency: self.currency,
            payment_status,
            livemode,
        }
        .event(&standin::event_id());
        self.deliver(&payload).await
    }

    async fn completed(&self, payment_status: &str, livemode: bool) -> String {
        self.session("checkout.session.completed", payment_status, livemode)
            .await
    }

    async fn paid(&self) -> String {
        self.completed("paid", false).await
    }

    async fn refund(&self, amount: i64, full: bool) -> String {
        let payload = standin::refund_event(
            &standin::event_id(),
            &self.pi,
            amount,
            self.currency,
            full,
            false,
        );
        self.deliver(&payload).await
    }

    async fn dispute(&self, kind: &str, id: &str, status: &str) -> String {
        let payload = standin::Dispute {
            kind,
            dispute_id: id,
            payment_intent: &self.pi,
            amount: self.amount,
            currency: self.currency,
            status,
            livemode: false,
        }
        .event(&standin::event_id());
        self.deliver(&payload).await
    }

    /// Delivers `payload`; the outcome it was stored with.
    async fn deliver(&self, payload: &str) -> String {
        let (status, body) = self.app.deliver(payload).await;
        assert_eq!(status, 200, "{body}");
        let id: String = serde_json::from_str::<serde_json::Value>(payload).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        sqlx::query_scalar("select outcome from stripe_events where id = $1")
            .bind(id)
            .fetch_one(&self.app.pool)
            .await
            .unwrap()
    }
}

async fn pay<'a>(app: &'a TestApp, invoice: Uuid, amount: i64, currency: &'a str) -> Pay<'a> {
    Pay {
        app,
        invoice,
        pi: standin::payment_intent_id(),
        amount,
        currency,
    }
}

/// A served app with one open invoice of `total` in `currency`.
async fn opened(pool: PgPool, total: i64, currency: &str) -> (TestApp, Uuid) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice) = app.invoice(total, currency).await;
    (app, invoice)
}

/// (status, payment_state, amount_paid_cents)
async fn state(app: &TestApp, invoice: Uuid) -> (String, String, i64) {
    app.money(invoice).await
}

fn s(status: &str, state: &str, paid: i64) -> (String, String, i64) {
    (status.into(), state.into(), paid)
}

async fn receipts(app: &TestApp) -> i64 {
    app.count("select count(*) from outbox where kind = 'payment_receipt'")
        .await
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_delayed_payment_is_processing_until_it_succeeds_and_only_then_mailed(pool: PgPool) {
    let (app, invoice) = opened(pool, 5_000, "eur").await;
    let p = pay(&app, invoice, 5_000, "eur").await;
    assert_eq!(p.completed("unpaid", false).await, "applied");
    assert_eq!(state(&app, invoice).await, s("open", "processing", 0));
    assert_eq!(receipts(&app).await, 0, "no money yet, no receipt");
    assert_eq!(
        p.session("checkout.session.async_payment_succeeded", "", false)
            .await,
        "applied"
    );
    assert_eq!(state(&app, invoice).await, s("paid", "paid", 5_000));
    assert_eq!(receipts(&app).await, 1);
    // The pending event arriving again (or late) changes nothing.
    assert_eq!(p.completed("unpaid", false).await, "ignored");
    assert_eq!(state(&app, invoice).await, s("paid", "paid", 5_000));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_failed_delayed_payment_leaves_the_invoice_open_with_the_reason(pool: PgPool) {
    let (app, invoice) = opened(pool, 5_000, "eur").await;
    let p = pay(&app, invoice, 5_000, "eur").await;
    p.completed("unpaid", false).await;
    assert_eq!(
        p.session("checkout.session.async_payment_failed", "", false)
            .await,
        "applied"
    );
    assert_eq!(state(&app, invoice).await, s("open", "unpaid", 0));
    let (status, failure): (String, Option<String>) =
        sqlx::query_as("select status, failure from payments")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(status, "failed");
    assert!(failure.unwrap().contains("failed"));
    assert_eq!(receipts(&app).await, 0);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn no_payment_required_records_nothing(pool: PgPool) {
    let (app, invoice) = opened(pool, 5_000, "usd").await;
    let p = pay(&app, invoice, 5_000, "usd").await;
    assert_eq!(p.completed("no_payment_required", false).await, "ignored");
    assert_eq!(app.count("select count(*) from payments").await, 0);
    assert_eq!(state(&app, invoice).await, s("open", "unpaid", 0));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_event_of_the_other_mode_is_stored_and_applies_nothing(pool: PgPool) {
    let (app, invoice) = opened(pool, 5_000, "usd").await;
    let p = pay(&app, invoice, 5_000, "usd").await;
    assert_eq!(p.completed("paid", true).await, "anomaly");
    assert_eq!(app.count("select count(*) from payments").await, 0);
    assert_eq!(receipts(&app).await, 0);
    assert_eq!(state(&app, invoice).await, s("open", "unpaid", 0));
    // A live deployment takes live events and refuses test ones.
    let live = TestApp::spawn_with(app.pool.clone(), |s| s.stripe_livemode = true).await;
    let (_, other) = live.invoice(5_000, "usd").await;
    // A live deployment's sessions are live ones.
    sqlx::query("update checkout_sessions set livemode = true where invoice_id = $1")
        .bind(other)
        .execute(&app.pool)
        .await
        .unwrap();
    let q = pay(&live, other, 5_000, "usd").await;
    assert_eq!(q.completed("paid", false).await, "anomaly");
    assert_eq!(q.completed("paid", true).await, "applied");
    assert_eq!(state(&live, other).await, s("paid", "paid", 5_000));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn partial_refunds_are_cumulative_and_set_not_added(pool: PgPool) {
    let (app, invoice) = opened(pool, 5_000, "usd").await;
    let p = pay(&app, invoice, 5_000, "usd").await;
    p.paid().await;
    assert_eq!(p.refund(1_000, false).await, "applied");
    assert_eq!(
        state(&app, invoice).await,
        s("open", "partially_refunded", 4_000)
    );
    assert_eq!(p.refund(3_000, false).await, "applied");
    assert_eq!(
        state(&app, invoice).await,
        s("open", "partially_refunded", 2_000)
    );
    // An older cumulative amount arriving late changes nothing.
    assert_eq!(p.refund(1_000, false).await, "ignored");
    assert_eq!(state(&app, invoice).await.2, 2_000);
    assert_eq!(p.refund(5_000, true).await, "applied");
    assert_eq!(state(&app, invoice).await, s("refunded", "refunded", 0));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_early_refund_of_one_payment_never_hides_the_other(pool: PgPool) {
    // Total 100: A pays 50; B's refund arrives before B's payment.
    let (app, invoice) = opened(pool, 10_000, "usd").await;
    let a = pay(&app, invoice, 5_000, "usd").await;
    let b = pay(&app, invoice, 5_000, "usd").await;
    a.paid().await;
    assert_eq!(
        state(&app, invoice).await,
        s("open", "partially_paid", 5_000)
    );
    assert_eq!(b.refund(5_000, true).await, "deferred");
    assert_eq!(b.paid().await, "applied");
    assert_eq!(
        state(&app, invoice).await,
        s("open", "partially_refunded", 5_000)
    );
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_dispute_marks_the_invoice_and_its_outcome_decides_the_money(pool: PgPool) {
    let (app, won) = opened(pool, 5_000, "usd").await;
    let p = pay(&app, won, 5_000, "usd").await;
    p.paid().await;
    assert_eq!(
        p.dispute("charge.dispute.created", "dp_won", "").await,
        "applied"
    );
    assert_eq!(state(&app, won).await, s("paid", "disputed", 5_000));
    assert_eq!(
        p.dispute("charge.dispute.closed", "dp_won", "won").await,
        "applied"
    );
    assert_eq!(state(&app, won).await, s("paid", "paid", 5_000));

    let (_, lost) = app.invoice(5_000, "usd").await;
    let q = pay(&app, lost, 5_000, "usd").await;
    q.paid().await;
    q.dispute("charge.dispute.created", "dp_lost", "").await;
    assert_eq!(
        q.dispute("charge.dispute.closed", "dp_lost", "lost").await,
        "applied"
    );
    assert_eq!(state(&app, lost).await, s("refunded", "refunded", 0));
    // A late "created" cannot reopen a closed dispute.
    assert_eq!(
        q.dispute("charge.dispute.created", "dp_lost", "").await,
        "ignored"
    );
    assert_eq!(state(&app, lost).await.1, "refunded");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn money_for_a_void_invoice_is_recorded_flagged_and_not_mailed(pool: PgPool) {
    let (app, invoice) = opened(pool, 5_000, "usd").await;
    sqlx::query("update invoices set status = 'void' where id = $1")
        .bind(invoice)
        .execute(&app.pool)
        .await
        .unwrap();
    let p = pay(&app, invoice, 5_000, "usd").await;
    assert_eq!(p.paid().await, "anomaly");
    assert_eq!(
        app.count("select count(*) from payments").await,
        1,
        "the money is real"
    );
    assert_eq!(receipts(&app).await, 0);
    assert_eq!(state(&app, invoice).await, s("void", "paid", 5_000));
    let detail: String = scalar(&app.pool, "select detail from stripe_events").await;
    assert!(detail.contains("void"), "{detail}");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn an_overpayment_is_recorded_and_flagged(pool: PgPool) {
    let (app, invoice) = opened(pool, 5_000, "usd").await;
    pay(&app, invoice, 5_000, "usd").await.paid().await;
    assert_eq!(
        pay(&app, invoice, 2_000, "usd").await.paid().await,
        "anomaly"
    );
    assert_eq!(state(&app, invoice).await, s("paid", "paid", 7_000));
    assert_eq!(receipts(&app).await, 2, "both payments are real money");
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn amounts_travel_in_stripes_units(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    // ISK: 500 krónur on the invoice, 50000 in Stripe's API.
    let (_, isk) = app.invoice(500, "isk").await;
    let p = pay(&app, isk, 500, "isk").await;
    let payload = standin::Session {
        kind: "checkout.session.completed",
        payment_intent: &p.pi,
        invoice: model::InvoiceId::from(isk),
        amount: 500,
        currency: "isk",
        payment_status: "paid",
        livemode: false,
    }
    .event(&standin::event_id());
    assert!(payload.contains("\"amount_total\":50000"), "{payload}");
    assert_eq!(p.deliver(&payload).await, "applied");
    assert_eq!(state(&app, isk).await, s("paid", "paid", 500));
    // A fractional króna cannot be ours: an anomaly, nothing recorded.
    let (_, other) = app.invoice(500, "isk").await;
    let mut odd: serde_json::Value = serde_json::from_str(&payload).unwrap();
    odd["id"] = standin::event_id().into();
    odd["data"]["object"]["amount_total"] = 50_050.into();
    odd["data"]["object"]["client_reference_id"] = other.to_string().into();
    odd["data"]["object"]["payment_intent"] = "pi_odd".into();
    let odd = odd.to_string();
    assert_eq!(p.deliver(&odd).await, "anomaly");
    assert_eq!(state(&app, other).await, s("open", "unpaid", 0));
    // Another currency than the invoice's.
    let (_, usd) = app.invoice(500, "usd").await;
    assert_eq!(pay(&app, usd, 500, "eur").await.paid().await, "anomaly");
    assert_eq!(state(&app, usd).await, s("open", "unpaid", 0));
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_invoice_page_and_api_show_the_payment_state(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (org, token) = app.api_client().await;
    let created = app
        .post_invoice(
            Some(&token),
            Some("state-1"),
            &crate::common::served::invoice_body("State"),
        )
        .await;
    assert_eq!(created.status, 201);
    assert_eq!(created.json()["payment_state"], "unpaid");
    let invoice: Uuid = created.json()["id"].as_str().unwrap().parse().unwrap();
    let total = created.json()["total_cents"].as_i64().unwrap();
    invoicer_core::payments::stripe::standin::open_simulated_session(
        &app.pool,
        model::InvoiceId::from(invoice),
    )
    .await
    .unwrap();
    let outcome = pay(&app, invoice, total, "eur")
        .await
        .completed("unpaid", false)
        .await;
    assert_eq!(outcome, "applied");
    let got = app
        .get(&token, &format!("/api/v1/invoices/{invoice}"))
        .await;
    assert_eq!(got.json()["payment_state"], "processing");
    let (payments, _) =
        invoicer_core::payments::for_invoice(&app.pool, org, model::InvoiceId::from(invoice))
            .await
            .unwrap();
    assert_eq!(payments[0].status.as_str(), "pending");
}

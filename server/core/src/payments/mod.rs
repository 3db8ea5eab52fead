//! Payments, refunds and disputes as facts, keyed by Stripe's ids and merged by rules that ignore
//! arrival order: a payment's status only moves up `pending < failed < succeeded`, a refund is the
//! largest cumulative `amount_refunded` seen, a dispute only moves up `open < won < lost`. After each
//! fact, the invoice's paid amount, payment state and status are derived from all of its facts by
//! one SQL rule (`invoice_money()`, migration 20261203000001), in the same transaction. So the final
//! state is a function of the set of events, whatever their order or repetition.

pub mod charges;
pub mod checkout;
pub mod credit_balance;
pub mod manual;
pub mod provider;
pub mod refunds;
pub mod saved;
pub mod stripe;

use model::InvoiceId;
use model::OrgId;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::outbox;
use model::{
    currency, format_money, DisputeStatus, InvoiceStatus, PaymentMethod, PaymentState,
    PaymentStatus,
};

/// What an event did, recorded with the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    pub outcome: EffectKind,
    pub detail: Option<String>,
    pub org_id: Option<OrgId>,
    pub invoice_id: Option<Uuid>,
    pub payment_id: Option<Uuid>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EffectKind {
    /// Changed something.
    Applied,
    /// Nothing to do (an event type we do not act on, or already reflected).
    Ignored,
    /// Kept for later: a refund or dispute whose payment has not arrived yet.
    Deferred,
    /// Needs the owner's eye and retrying will not help (unknown invoice, wrong currency or mode,
    /// money for a void invoice, an overpayment).
    Anomaly,
}

impl EffectKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EffectKind::Applied => "applied",
            EffectKind::Ignored => "ignored",
            EffectKind::Deferred => "deferred",
            EffectKind::Anomaly => "anomaly",
        }
    }
}

impl Effect {
    pub fn new(outcome: EffectKind, detail: impl Into<Option<String>>) -> Self {
        Effect {
            outcome,
            detail: detail.into(),
            org_id: None,
            invoice_id: None,
            payment_id: None,
        }
    }

    fn on_invoice(mut self, org: OrgId, invoice: InvoiceId) -> Self {
        self.org_id = Some(org);
        self.invoice_id = Some(invoice.uuid());
        self
    }
}

/// A checkout session event (completed, async succeeded, async failed), as far as invoices care.
/// `amount` is in Stripe's units of `currency`.
#[derive(Debug, Clone)]
pub struct SessionFact<'a> {
    pub provider: &'a str,
    /// The checkout session (`cs_...`): it must be one the app created for this invoice.
    pub session_id: Option<&'a str>,
    /// The event's mode (this deployment's, or the event was refused before).
    pub livemode: bool,
    pub payment_intent: &'a str,
    pub invoice_ref: Option<&'a str>,
    pub amount: i64,
    pub currency: &'a str,
    pub status: PaymentStatus,
    pub failure: Option<&'a str>,
    pub event_id: &'a str,
}

/// `charge.refunded`: the cumulative refunded amount of a charge (Stripe's units), or all of it.
#[derive(Debug, Clone)]
pub struct RefundFact<'a> {
    pub provider: &'a str,
    pub payment_intent: &'a str,
    pub amount_refunded: i64,
    pub full: bool,
    pub currency: &'a str,
    pub event_id: &'a str,
}

/// `charge.dispute.created` / `charge.dispute.closed`.
#[derive(Debug, Clone)]
pub struct DisputeFact<'a> {
    pub provider: &'a str,
    pub dispute_id: &'a str,
    pub payment_intent: &'a str,
    pub amount: i64,
    pub currency: &'a str,
    pub status: DisputeStatus,
    pub event_id: &'a str,
}

/// Stripe's amount of `code` in our minor units, or why it cannot be ours.
fn ours(amount: i64, code: &str) -> Result<i64, String> {
    let c = currency(&code.to_ascii_lowercase())
        .ok_or_else(|| format!("unsupported currency {code}"))?;
    if amount < 0 {
        return Err(format!("negative amount {amount}"));
    }
    c.from_stripe(amount)
        .ok_or_else(|| format!("{amount} is not a whole amount of {code} as invoicer counts it"))
}

/// Why `p`'s checkout session does not bind its payment to invoice `invoice` of `org` (read only on
/// that cold path).
async fn unbound(
    tx: &mut PgConnection,
    p: &SessionFact<'_>,
    org: OrgId,
    invoice: InvoiceId,
) -> sqlx::Result<String> {
    let Some(session) = p.session_id else {
        return Ok("a checkout event without a session id".to_owned());
    };
    // language=PostgreSQL
    let created = sqlx::query!(
        "select org_id, invoice_id, currency, livemode from checkout_sessions where id = $1",
        session
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(match created {
        None => format!(
            "checkout session {session} was not created by invoicer: unmatched payment, nothing applied"
        ),
        Some(s) if org != s.org_id || s.invoice_id != invoice => format!(
            "checkout session {session} was created for another invoice: nothing applied"
        ),
        Some(s) if !s.currency.eq_ignore_ascii_case(p.currency) => format!(
            "checkout session {session} was created in {}, the event says {}: nothing applied",
            s.currency, p.currency
        ),
        _ => format!(
            "checkout session {session} was created in the other mode: nothing applied"
        ),
    })
}

/// Records a checkout session's payment fact against its invoice and derives the invoice again.
/// Call it in the transaction that claimed the event.
pub async fn record_session(tx: &mut PgConnection, p: &SessionFact<'_>) -> sqlx::Result<Effect> {
    let Some(invoice_id) = p.invoice_ref.and_then(|r| Uuid::try_parse(r).ok()) else {
        return Ok(Effect::new(
            EffectKind::Anomaly,
            format!(
                "client_reference_id {:?} is not an invoice id",
                p.invoice_ref
            ),
        ));
    };
    // The payment intent's lock (see `lock_payment`), then the invoice's row, in one statement: the
    // uncorrelated lock subquery is a one-time filter, evaluated before the invoice is read.
    // language=PostgreSQL
    let Some(invoice) = sqlx::query!(
        r#"
        select org_id, currency, status as "status: InvoiceStatus" from invoices
        where id = $1
          and (select true from (select pg_advisory_xact_lock(hashtextextended($2 || '/' || $3, 0))) l)
        for update
        "#,
        invoice_id as _,
        p.provider,
        p.payment_intent,
    )
    .fetch_optional(&mut *tx)
    .await?
    else {
        return Ok(Effect::new(
            EffectKind::Anomaly,
            format!("unknown invoice {invoice_id}"),
        ));
    };
    let on_invoice = |e: Effect| e.on_invoice(invoice.org_id.into(), InvoiceId::from(invoice_id));
    // Money is believed only through a session the app created, for this invoice, in this mode and
    // currency; anything else is kept for the owner to review and changes nothing. One statement
    // checks the binding and marks the session used (the next Pay makes a new one).
    // language=PostgreSQL
    let bound = sqlx::query_scalar!(
        r#"
        update checkout_sessions set completed_at = coalesce(completed_at, now())
        where id = $1 and org_id = $2 and invoice_id = $3 and lower(currency) = lower($4)
          and livemode = $5
        returning true as "bound!"
        "#,
        p.session_id,
        invoice.org_id as _,
        invoice_id as _,
        p.currency,
        p.livemode
    )
    .fetch_optional(&mut *tx)
    .await?;
    if bound.is_none() {
        let why = unbound(tx, p, invoice.org_id.into(), InvoiceId::from(invoice_id)).await?;
        return Ok(on_invoice(Effect::new(EffectKind::Anomaly, why)));
    }
    if !invoice.currency.eq_ignore_ascii_case(p.currency) {
        return Ok(on_invoice(Effect::new(
            EffectKind::Anomaly,
            format!(
                "paid in {} but the invoice is in {}",
                p.currency, invoice.currency
            ),
        )));
    }
    let amount = match ours(p.amount, &invoice.currency) {
        Ok(amount) if amount > 0 => amount,
        Ok(_) => {
            return Ok(on_invoice(Effect::new(
                EffectKind::Anomaly,
                "a payment of nothing".to_owned(),
            )))
        }
        Err(why) => return Ok(on_invoice(Effect::new(EffectKind::Anomaly, why))),
    };

    settle(
        tx,
        &Settled {
            org: invoice.org_id.into(),
            invoice: InvoiceId::from(invoice_id),
            currency: &invoice.currency,
            status: invoice.status,
            provider: p.provider,
            payment_intent: p.payment_intent,
            amount,
            payment: p.status,
            failure: p.failure,
            event_id: p.event_id,
        },
    )
    .await
}

/// A provider's payment of an invoice, bound to it and in its currency (in our minor units), ready
/// to be written.
pub(crate) struct Settled<'a> {
    pub org: OrgId,
    pub invoice: InvoiceId,
    /// The invoice's.
    pub currency: &'a str,
    /// The invoice's, as locked by the caller.
    pub status: InvoiceStatus,
    pub provider: &'a str,
    pub payment_intent: &'a str,
    pub amount: i64,
    pub payment: PaymentStatus,
    pub failure: Option<&'a str>,
    pub event_id: &'a str,
}

/// Writes payment `p` (its status only moving up its ranking) with its receipt, and derives the
/// invoice again. The caller holds the payment's lock and then the invoice's row lock.
pub(crate) async fn settle(tx: &mut PgConnection, p: &Settled<'_>) -> sqlx::Result<Effect> {
    let invoice_id = p.invoice.uuid();
    let on_invoice = |e: Effect| e.on_invoice(p.org, p.invoice);
    let amount = p.amount;
    // Money for a void invoice or a draft (never sent, no number) keeps its status: the owner reviews it.
    let void = matches!(p.status, InvoiceStatus::Void | InvoiceStatus::Draft);
    // The payment and, for money received, its receipt in the outbox: one statement. The status only
    // moves up its ranking (a late `pending` never undoes a `succeeded`); a receipt is written once
    // per payment (outbox_receipt_once), never for a void invoice or a draft, nor for a payment
    // intent that belongs to another invoice.
    // language=PostgreSQL
    let written = sqlx::query!(
        r#"
        with payment as (
            insert into payments (id, org_id, invoice_id, provider, provider_payment_id, amount_cents,
                                  currency, event_id, status, failure)
            values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            on conflict (provider, provider_payment_id) do update
                set status = excluded.status, failure = excluded.failure, event_id = excluded.event_id
                where array_position(array['pending', 'failed', 'succeeded'], excluded.status)
                    > array_position(array['pending', 'failed', 'succeeded'], payments.status)
            returning id, invoice_id
        ), receipt as (
            insert into outbox (id, org_id, invoice_id, kind, payload)
            select $11, $2, $3, $12, jsonb_build_object('payment_id', p.id)
            from payment p
            where $13 and p.invoice_id = $3
            on conflict do nothing
        )
        select id as "id!", invoice_id as "invoice_id!" from payment
        "#,
        Uuid::now_v7(),
        p.org as _,
        invoice_id as _,
        p.provider,
        p.payment_intent,
        amount,
        p.currency,
        p.event_id,
        p.payment.as_str(),
        p.failure,
        Uuid::now_v7(),
        outbox::Kind::PaymentReceipt.as_str(),
        p.payment == PaymentStatus::Succeeded && !void,
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(payment) = written else {
        return Ok(on_invoice(Effect::new(
            EffectKind::Ignored,
            format!(
                "payment {} is already {} or further",
                p.payment_intent,
                p.payment.as_str()
            ),
        )));
    };
    if payment.invoice_id != invoice_id {
        return Ok(on_invoice(Effect::new(
            EffectKind::Anomaly,
            format!("payment {} belongs to another invoice", p.payment_intent),
        )));
    }
    let money = derive(tx, InvoiceId::from(invoice_id)).await?;
    let what = match p.payment {
        PaymentStatus::Pending => "processing",
        PaymentStatus::Failed => "failed",
        PaymentStatus::Succeeded => "received",
    };
    let mut detail = format!(
        "payment {} {what} ({}); invoice {}, {}",
        p.payment_intent,
        format_money(amount, p.currency),
        money.status,
        money.payment_state
    );
    let mut outcome = EffectKind::Applied;
    if void && p.payment == PaymentStatus::Succeeded {
        outcome = EffectKind::Anomaly;
        detail.push_str(&format!(
            "; money received for a {} invoice: refund it or re-open the invoice",
            p.status
        ));
    } else if money.overpaid > 0 {
        outcome = EffectKind::Anomaly;
        detail.push_str(&format!(
            "; overpaid by {}",
            format_money(money.overpaid, p.currency)
        ));
    }
    let mut effect = on_invoice(Effect::new(outcome, detail));
    effect.payment_id = Some(payment.id);
    Ok(effect)
}

/// Records a refund fact (the largest cumulative amount seen) and, once its payment is known,
/// derives the invoice again; before that it waits in `refunds`.
pub async fn record_refund(tx: &mut PgConnection, r: &RefundFact<'_>) -> sqlx::Result<Effect> {
    let amount = match ours(r.amount_refunded, r.currency) {
        Ok(amount) => amount,
        Err(why) => return Ok(Effect::new(EffectKind::Anomaly, why)),
    };
    lock_payment(tx, r.provider, r.payment_intent).await?;
    // language=PostgreSQL
    let grew = sqlx::query_scalar!(
        r#"
        insert into refunds (provider, provider_payment_id, amount_refunded_cents, full_refund, event_id)
        values ($1, $2, $3, $4, $5)
        on conflict (provider, provider_payment_id) do update
            set amount_refunded_cents = greatest(refunds.amount_refunded_cents, excluded.amount_refunded_cents),
                full_refund = refunds.full_refund or excluded.full_refund,
                event_id = excluded.event_id
            where excluded.amount_refunded_cents > refunds.amount_refunded_cents
               or (excluded.full_refund and not refunds.full_refund)
        returning 1 as "one!"
        "#,
        r.provider,
        r.payment_intent,
        amount,
        r.full,
        r.event_id,
    )
    .fetch_optional(&mut *tx)
    .await?
    .is_some();
    let what = if r.full {
        "refunded in full".to_owned()
    } else {
        format!("refunded {} so far", format_money(amount, r.currency))
    };
    after_fact(tx, r.provider, r.payment_intent, grew, &what).await
}

/// Records a dispute fact (its highest-ranked status) and, once its payment is known, derives the
/// invoice again.
pub async fn record_dispute(tx: &mut PgConnection, d: &DisputeFact<'_>) -> sqlx::Result<Effect> {
    let amount = match ours(d.amount, d.currency) {
        Ok(amount) => amount,
        Err(why) => return Ok(Effect::new(EffectKind::Anomaly, why)),
    };
    lock_payment(tx, d.provider, d.payment_intent).await?;
    // language=PostgreSQL
    let moved = sqlx::query_scalar!(
        r#"
        insert into disputes (provider, dispute_id, provider_payment_id, amount_cents, status, event_id)
        values ($1, $2, $3, $4, $5, $6)
        on conflict (provider, dispute_id) do update
            set status = excluded.status, event_id = excluded.event_id
            where array_position(array['open', 'won', 'lost'], excluded.status)
                > array_position(array['open', 'won', 'lost'], disputes.status)
        returning 1 as "one!"
        "#,
        d.provider,
        d.dispute_id,
        d.payment_intent,
        amount,
        d.status.as_str(),
        d.event_id,
    )
    .fetch_optional(&mut *tx)
    .await?
    .is_some();
    let what = format!(
        "dispute {} {} ({})",
        d.dispute_id,
        d.status.as_str(),
        format_money(amount, d.currency)
    );
    after_fact(tx, d.provider, d.payment_intent, moved, &what).await
}

/// After a refund or dispute fact: derive its payment's invoice again, or say it waits.
async fn after_fact(
    tx: &mut PgConnection,
    provider: &str,
    payment_intent: &str,
    changed: bool,
    what: &str,
) -> sqlx::Result<Effect> {
    // language=PostgreSQL
    // Finding the payment locks its invoice (see `derive`).
    let payment = sqlx::query!(
        r#"
        select p.id, p.org_id, p.invoice_id
        from payments p join invoices i on i.id = p.invoice_id
        where p.provider = $1 and p.provider_payment_id = $2
        for update of i
        "#,
        provider,
        payment_intent
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(payment) = payment else {
        return Ok(Effect::new(
            EffectKind::Deferred,
            format!("{payment_intent} {what}: kept until its payment arrives"),
        ));
    };
    let on_invoice =
        |e: Effect| e.on_invoice(payment.org_id.into(), InvoiceId::from(payment.invoice_id));
    if !changed {
        return Ok(on_invoice(Effect::new(
            EffectKind::Ignored,
            format!("{payment_intent} {what}: already known"),
        )));
    }
    let money = derive(tx, InvoiceId::from(payment.invoice_id)).await?;
    let mut effect = on_invoice(Effect::new(
        EffectKind::Applied,
        format!(
            "{payment_intent} {what}; invoice {}, {}",
            money.status, money.payment_state
        ),
    ));
    effect.payment_id = Some(payment.id);
    Ok(effect)
}

/// The invoice as its facts make it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Money {
    pub status: InvoiceStatus,
    pub payment_state: PaymentState,
    pub amount_paid_cents: i64,
    /// Kept beyond the total.
    pub overpaid: i64,
}

/// Writes the invoice's status, payment state and paid amount as `invoice_money()` derives them
/// from all of its payments, refunds and disputes. The caller holds the invoice's row lock, taken
/// by an earlier statement: at READ COMMITTED this update then takes its snapshot after any
/// transaction that held the invoice has committed, so it sees every fact committed before it (an
/// update that itself waited for the lock would compute from its older snapshot).
pub async fn derive(tx: &mut PgConnection, invoice: InvoiceId) -> sqlx::Result<Money> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        update invoices i
        set (status, payment_state, amount_paid_cents) =
                (select m.new_status, m.new_payment_state, m.kept_cents from invoice_money(i.id) m),
            updated_at = now()
        where i.id = $1
        returning i.status as "status: InvoiceStatus", i.payment_state as "payment_state: PaymentState",
                  i.amount_paid_cents, i.total_cents - i.amount_credited_cents as "asked!"
        "#,
        invoice as _
    )
    .fetch_one(&mut *tx)
    .await?;
    Ok(Money {
        overpaid: (row.amount_paid_cents - row.asked).max(0),
        status: row.status,
        payment_state: row.payment_state,
        amount_paid_cents: row.amount_paid_cents,
    })
}

/// Events of one payment take different claims (different event ids), so they could run
/// concurrently and miss each other's uncommitted rows. This transaction-scoped lock on the payment
/// makes them take turns; it is the first lock any of them takes (the invoice row comes second).
pub(crate) async fn lock_payment(
    tx: &mut PgConnection,
    provider: &str,
    provider_payment_id: &str,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"select 1 as "locked!" from (select pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 0))) l"#,
        provider,
        provider_payment_id
    )
    .fetch_one(&mut *tx)
    .await?;
    Ok(())
}

/// The payments of `org`'s `invoice` with their refunds and disputes, oldest first, and the
/// anomalies Stripe's events about it raised.
pub async fn for_invoice(
    pool: &sqlx::PgPool,
    org: OrgId,
    invoice: InvoiceId,
) -> sqlx::Result<(Vec<model::PaymentRow>, Vec<String>)> {
    // language=PostgreSQL
    let payments = sqlx::query!(
        r#"
        select p.id, p.provider, p.provider_payment_id, p.amount_cents, p.status as "status: PaymentStatus", p.failure,
               p.method as "method: PaymentMethod", p.paid_on as "paid_on: chrono::NaiveDate", p.reference,
               coalesce(case when r.provider is null then 0
                             when r.full_refund then p.amount_cents
                             else least(p.amount_cents, r.amount_refunded_cents) end, 0) as "refunded!",
               (select d.status from disputes d
                where d.provider = p.provider and d.provider_payment_id = p.provider_payment_id
                order by d.received_at desc limit 1) as "dispute: DisputeStatus"
        from payments p
        left join refunds r on r.provider = p.provider and r.provider_payment_id = p.provider_payment_id
        where p.org_id = $1 and p.invoice_id = $2
        order by p.created_at
        "#,
        org as _,
        invoice as _
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|r| model::PaymentRow {
        id: r.id,
        source: match r.provider.as_str() {
            "manual" => model::PaymentSource::Manual,
            "bank" => model::PaymentSource::Bank,
            _ => model::PaymentSource::Stripe,
        },
        manual: r.method.map(|method| model::ManualDetail {
            method,
            paid_on: r.paid_on.unwrap_or_default(),
            reference: r.reference,
        }),
        payment_intent: r.provider_payment_id,
        amount_cents: r.amount_cents,
        status: r.status,
        failure: r.failure,
        refunded_cents: r.refunded,
        dispute: r.dispute,
    })
    .collect();
    // language=PostgreSQL
    let anomalies = sqlx::query_scalar!(
        r#"
        select coalesce(detail, type) as "detail!" from stripe_events
        where org_id = $1 and invoice_id = $2 and outcome = 'anomaly'
        order by received_at
        "#,
        org as _,
        invoice as _
    )
    .fetch_all(pool)
    .await?;
    Ok((payments, anomalies))
}

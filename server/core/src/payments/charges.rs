//! Automatic charges: an invoice collected automatically is charged off-session to its customer's
//! default saved method. Each try is an attempt with a name, `(invoice, n)`: written `scheduled` in
//! the transaction that makes it due (the invoice's finalization, by a trigger; a retry, by the
//! failure of the one before; `POST /api/v1/invoices/{id}/charge`), then leased by a worker as the
//! claim `(job, charge:<invoice>, <n>)` and sent to the provider under
//! `Idempotency-Key: invoicer-charge-<invoice>-<n>`.
//!
//! The call leaves the database, so the claim is a lease: committed before the call, completed
//! with the provider's answer in one transaction, fenced (a worker whose lease was taken over
//! records nothing). A crash after the provider answered and before that commit leaves the lease to
//! go stale; the next worker sends the same key and parameters and gets the same PaymentIntent back:
//! one attempt, one charge. The money itself is a fact of the provider's `payment_intent.*` events,
//! merged by rank whatever their order ([`model::collection::ChargeState`]), and written as a payment
//! by the rules every payment follows ([`crate::payments::settle`]).

use std::time::Duration;

use chrono::{DateTime, Utc};
use model::collection::{ChargeState, CollectionMethod, RetryDays};
use model::{InvoiceId, InvoiceStatus, OrgId, PaymentState, PaymentStatus};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::claim::{self, ClaimKey, Fence, Leased, Outcome};
use crate::mail::gate::{Allowance, Gate, Sender};
use crate::outbox;
use crate::payments::stripe::client::{NewCharge, Stripe, StripeError};
use crate::payments::{Effect, EffectKind, Settled};

/// The provider's Idempotency-Key for attempt `n` of `invoice`.
pub fn idempotency_key(invoice: Uuid, n: i16) -> String {
    format!("invoicer-charge-{invoice}-{n}")
}

/// The claim a worker leases for attempt `n` of `invoice`.
pub fn claim_key(invoice: Uuid, n: i16) -> ClaimKey {
    ClaimKey::job(&format!("charge:{invoice}"), &n.to_string())
}

/// The most attempts one invoice may have (the first, six retries, and owner's tries).
pub const MAX_ATTEMPTS: i16 = 10;

/// Charges up to `batch` attempts due at `now`; returns how many it handled. The attempts are
/// picked and leased in one short transaction that skips rows another worker is picking, and
/// passes over attempts whose lease another worker holds: workers share the due attempts.
pub async fn run_due(
    pool: &PgPool,
    stripe: Option<&Stripe>,
    now: DateTime<Utc>,
    batch: i64,
    lease: Duration,
    allowance: Allowance,
) -> sqlx::Result<usize> {
    let Some(stripe) = stripe.filter(|s| s.configured()) else {
        return Ok(0);
    };
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let due = sqlx::query!(
        r#"
        select a.invoice_id, a.n from charge_attempts a
        where a.state = 'scheduled' and a.due_at <= $1
          and not exists (select from claims c
                          where c.scope = 'job' and c.owner = 'charge:' || a.invoice_id
                            and c.key = a.n::text
                            and (c.status = 'done' or c.locked_until > now()))
        order by a.due_at, a.invoice_id
        limit $2
        for update of a skip locked
        "#,
        now,
        batch
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut held = Vec::new();
    for row in due {
        if let Leased::Acquired(leased) =
            claim::lease(&mut tx, &claim_key(row.invoice_id, row.n), lease).await?
        {
            held.push((row.invoice_id, row.n, leased));
        }
    }
    tx.commit().await?;
    let handled = held.len();
    for (invoice, n, leased) in held {
        charge(pool, stripe, invoice, n, leased, allowance).await?;
    }
    Ok(handled)
}

/// Sends attempt `n` of `invoice`, whose claim this worker leased, and records the answer.
async fn charge(
    pool: &PgPool,
    stripe: &Stripe,
    invoice: Uuid,
    n: i16,
    lease: claim::Lease,
    allowance: Allowance,
) -> sqlx::Result<()> {
    // What to charge, read after the lease: everything sent is fixed by the attempt (the amount due
    // when it is first sent; a retry after a takeover reads the same, or finds nothing to do).
    // language=PostgreSQL
    let what = sqlx::query!(
        r#"
        select a.state, a.org_id, i.status as "status: InvoiceStatus",
               i.payment_state as "payment_state: PaymentState",
               i.collection_method as "collection_method: CollectionMethod",
               i.charge_retries_stopped_at is not null as "stopped!",
               i.currency, i.number_text, coalesce(a.amount_cents,
               i.total_cents - i.amount_credited_cents - i.amount_paid_cents) as "due!",
               m.id as "method_id?", m.provider_method as "method?",
               pc.provider_customer as "customer?"
        from charge_attempts a
        join invoices i on i.id = a.invoice_id
        -- The method the attempt was first sent with, else the customer's default now.
        left join lateral (
            select pm.id, pm.provider_method from payment_methods pm
            where pm.id = a.payment_method_id
               or (a.payment_method_id is null and pm.customer_id = i.customer_id
                   and pm.is_default and pm.removed_at is null and pm.provider = 'stripe')
            limit 1
        ) m on true
        left join provider_customers pc on pc.customer_id = i.customer_id and pc.provider = 'stripe'
        where a.invoice_id = $1 and a.n = $2
        "#,
        invoice,
        n
    )
    .fetch_optional(pool)
    .await?;
    let Some(what) = what else {
        let mut conn = pool.acquire().await?;
        let _ = lease.complete(&mut conn, &Outcome::default()).await?;
        return Ok(());
    };
    let org = OrgId::from(what.org_id);
    let chargeable = matches!(
        what.status,
        InvoiceStatus::Open | InvoiceStatus::Uncollectible
    ) && what.payment_state != PaymentState::Processing
        && what.collection_method == CollectionMethod::ChargeAutomatically
        && !what.stopped
        && what.due > 0;
    // Sent already (a takeover after the provider answered): the same key below asks again.
    let sent = what.state != "scheduled";
    let (Some(method_id), Some(method), Some(customer), true) = (
        what.method_id,
        what.method,
        what.customer,
        chargeable || sent,
    ) else {
        let mut tx = pool.begin().await?;
        if chargeable {
            // Nothing saved to charge: the invoice is sent for the customer to pay.
            set_state(
                &mut tx,
                invoice,
                n,
                ChargeState::Failed,
                Some("no saved payment method"),
                None,
                None,
            )
            .await?;
            fall_back(&mut tx, org, invoice, allowance).await?;
        } else {
            cancel(&mut tx, invoice, n).await?;
        }
        if lease.complete(&mut tx, &Outcome::default()).await? == Fence::Held {
            tx.commit().await?;
        }
        return Ok(());
    };
    let Some(currency) = model::currency(&what.currency) else {
        return Err(sqlx::Error::Protocol(format!("currency {}", what.currency)));
    };
    // Only what the attempt fixes: a repeat under the same key must send the same parameters.
    let description = format!("Invoice {}", what.number_text.unwrap_or_default());
    // The amount is fixed on the attempt before the call, so a repeat sends the same parameters.
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update charge_attempts set amount_cents = coalesce(amount_cents, $3),
                                   payment_method_id = coalesce(payment_method_id, $4)
        where invoice_id = $1 and n = $2
        "#,
        invoice,
        n,
        what.due,
        method_id
    )
    .execute(pool)
    .await?;
    let charge = NewCharge {
        org,
        invoice,
        attempt: n,
        amount: currency.to_stripe(what.due),
        currency: currency.code,
        customer: &customer,
        payment_method: &method,
        description: &description,
    };
    let answered = stripe
        .create_charge(&charge, &idempotency_key(invoice, n))
        .await;
    let intent = match answered {
        Ok(intent) => intent,
        Err(e) if e.retryable() => {
            // Not yet: the lease runs out and a worker asks again under the same key.
            tracing::warn!(error = %e, %invoice, n, "charge: the provider could not be reached");
            return Ok(());
        }
        Err(e) => {
            let why = match &e {
                StripeError::Api { message, .. } if !message.is_empty() => message.clone(),
                _ => "the provider refused the charge".to_owned(),
            };
            tracing::warn!(error = %e, %invoice, n, "charge: refused by the provider");
            let mut tx = pool.begin().await?;
            if set_state(
                &mut tx,
                invoice,
                n,
                ChargeState::Failed,
                Some(&why),
                None,
                None,
            )
            .await?
            {
                after_failure(&mut tx, org, invoice, n, allowance).await?;
            }
            if lease.complete(&mut tx, &Outcome::default()).await? == Fence::Held {
                tx.commit().await?;
            }
            return Ok(());
        }
    };
    // Killed here, the provider has made the intent and we have not recorded it: the next worker's
    // same key finds it.
    crate::failpoint::hit_at("charge", "after_stripe");
    let state = match intent.status.as_str() {
        "succeeded" => ChargeState::Succeeded,
        "requires_action" | "requires_confirmation" => ChargeState::RequiresAction,
        "requires_payment_method" | "canceled" => ChargeState::Failed,
        // Anything else is under way: its events say how it ends.
        _ => ChargeState::Processing,
    };
    // Stripe's answer is a fact about the intent as good as its events (which may come later, or
    // have gone to a process that died): recorded by the same rule, once.
    let (reason, action) = (intent.failure(), intent.action_url());
    let (invoice_ref, attempt_ref) = (invoice.to_string(), n.to_string());
    let answered_as = format!("answer:{}", intent.id);
    let fact = ChargeFact {
        provider: crate::payments::stripe::PROVIDER,
        payment_intent: &intent.id,
        invoice_ref: Some(&invoice_ref),
        attempt_ref: Some(&attempt_ref),
        amount: charge.amount,
        currency: charge.currency,
        state,
        reason: reason.as_deref(),
        action_url: action.as_deref(),
        event_id: &answered_as,
    };
    let mut tx = pool.begin().await?;
    let effect = record_charge(&mut tx, &fact, allowance).await?;
    if effect.outcome == EffectKind::Anomaly {
        tracing::warn!(%invoice, n, detail = effect.detail.as_deref().unwrap_or(""), "charge: anomaly");
    }
    match lease.complete(&mut tx, &Outcome::default()).await? {
        Fence::Held => tx.commit().await?,
        Fence::TakenOver => {
            tracing::warn!(%invoice, n, "charge: the lease was taken over; nothing recorded");
        }
    }
    Ok(())
}

/// The payment intent's lock, the first any writer of its facts takes (see `payments`).
async fn lock_intent(tx: &mut PgConnection, intent: &str) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"select 1 as "locked!" from (select pg_advisory_xact_lock(hashtextextended('stripe/' || $1, 0))) l"#,
        intent
    )
    .fetch_one(&mut *tx)
    .await?;
    Ok(())
}

/// Moves attempt `n` of `invoice` up to `state` (never down: see [`ChargeState`]); true when it
/// moved. The reason and the confirmation page go with the state that brought them.
async fn set_state(
    tx: &mut PgConnection,
    invoice: Uuid,
    n: i16,
    state: ChargeState,
    reason: Option<&str>,
    action_url: Option<&str>,
    intent: Option<&str>,
) -> sqlx::Result<bool> {
    let reason = reason.map(|r| r.chars().take(500).collect::<String>());
    let action_url = action_url.filter(|u| u.len() <= 2000);
    // language=PostgreSQL
    let moved = sqlx::query_scalar!(
        r#"
        update charge_attempts
        set state = $3, reason = coalesce($4, case when $3 = 'succeeded' then null else reason end),
            action_url = coalesce($5, action_url), payment_intent = coalesce(payment_intent, $6),
            sent_at = coalesce(sent_at, now()), updated_at = now()
        where invoice_id = $1 and n = $2 and state <> 'canceled'
          and coalesce(array_position(array['scheduled', 'processing', 'requires_action', 'failed', 'succeeded'], state), 0)
            < array_position(array['scheduled', 'processing', 'requires_action', 'failed', 'succeeded'], $3)
        returning true as "moved!"
        "#,
        invoice,
        n,
        state.as_str(),
        reason,
        action_url,
        intent
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(moved.is_some())
}

/// Nothing to charge any more (paid, void, sent instead, retries stopped).
async fn cancel(tx: &mut PgConnection, invoice: Uuid, n: i16) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update charge_attempts set state = 'canceled', updated_at = now()
        where invoice_id = $1 and n = $2 and state = 'scheduled'
        "#,
        invoice,
        n
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// What follows an attempt's move: a failure's retry or fallback, or the customer asked to confirm.
async fn after_move(
    tx: &mut PgConnection,
    org: OrgId,
    invoice: Uuid,
    n: i16,
    state: ChargeState,
    action_url: Option<&str>,
    allowance: Allowance,
) -> sqlx::Result<()> {
    match (state, action_url) {
        (ChargeState::Failed, _) => after_failure(tx, org, invoice, n, allowance).await,
        (ChargeState::RequiresAction, Some(url)) => {
            ask_customer(tx, org, invoice, n, url, allowance).await
        }
        _ => Ok(()),
    }
}

/// A charge that needs its customer (3-D Secure): they are emailed the provider's page to confirm
/// it, once per attempt.
async fn ask_customer(
    tx: &mut PgConnection,
    org: OrgId,
    invoice: Uuid,
    n: i16,
    url: &str,
    allowance: Allowance,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    let inv = sqlx::query!(
        r#"
        select i.customer_email, i.number_text, i.currency, a.amount_cents, o.name as org_name
        from invoices i join orgs o on o.id = i.org_id
        join charge_attempts a on a.invoice_id = i.id and a.n = $2
        where i.id = $1
        "#,
        invoice,
        n
    )
    .fetch_one(&mut *tx)
    .await?;
    let gate = Gate::new(allowance, Sender::Automatic);
    match gate.permit(&mut *tx, org, &inv.customer_email).await? {
        Ok(permit) => {
            outbox::enqueue_email(
                &mut *tx,
                permit,
                Some(invoice),
                outbox::MailKind::ChargeAction,
                serde_json::json!({
                    "to": inv.customer_email,
                    "org_name": inv.org_name,
                    "number": inv.number_text.unwrap_or_default(),
                    "amount": model::format_money(inv.amount_cents.unwrap_or(0), &inv.currency),
                    "url": url,
                    "dedupe": format!("charge-action/{invoice}/{n}"),
                }),
            )
            .await?;
        }
        Err(refused) => {
            tracing::warn!(%invoice, ?refused, "charge: the confirmation email was not sent");
        }
    }
    Ok(())
}

/// After attempt `n` failed: the next retry on the org's days, or, once they are spent (or the
/// owner stopped them), the invoice is sent for the customer to pay. The caller holds the attempt.
async fn after_failure(
    tx: &mut PgConnection,
    org: OrgId,
    invoice: Uuid,
    n: i16,
    allowance: Allowance,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    let at = sqlx::query!(
        r#"
        select o.retry_days as "retry_days!: Vec<i16>",
               i.collection_method as "collection_method: CollectionMethod",
               i.charge_retries_stopped_at is not null as "stopped!",
               i.status as "status: InvoiceStatus",
               (select a.due_at from charge_attempts a where a.invoice_id = i.id order by a.n limit 1)
                   as "first!: DateTime<Utc>",
               (select max(a.n) from charge_attempts a where a.invoice_id = i.id) as "last!: i16"
        from invoices i join orgs o on o.id = i.org_id
        where i.id = $1
        for update of i
        "#,
        invoice
    )
    .fetch_one(&mut *tx)
    .await?;
    if at.collection_method != CollectionMethod::ChargeAutomatically
        || !matches!(
            at.status,
            InvoiceStatus::Open | InvoiceStatus::Uncollectible
        )
        || at.last > n
    {
        return Ok(());
    }
    let days = RetryDays(at.retry_days.iter().map(|d| *d as u32).collect());
    let next = u32::try_from(n + 1)
        .ok()
        .and_then(|m| days.day_of_attempt(m));
    match next {
        Some(day) if !at.stopped && n < MAX_ATTEMPTS => {
            // language=PostgreSQL
            sqlx::query!(
                r#"
                insert into charge_attempts (invoice_id, n, org_id, due_at)
                values ($1, $2, $3, $4)
                on conflict do nothing
                "#,
                invoice,
                n + 1,
                org as _,
                at.first + chrono::TimeDelta::days(day.into())
            )
            .execute(&mut *tx)
            .await?;
            Ok(())
        }
        _ => fall_back(tx, org, invoice, allowance).await,
    }
}

/// The invoice is no longer collected automatically: it is sent, with its Pay link, as any invoice
/// is (once: the email's dedupe names the invoice's fallback).
async fn fall_back(
    tx: &mut PgConnection,
    org: OrgId,
    invoice: Uuid,
    allowance: Allowance,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    let to = sqlx::query_scalar!(
        r#"
        update invoices set collection_method = 'send_invoice', updated_at = now()
        where id = $1 and collection_method = 'charge_automatically'
        returning customer_email
        "#,
        invoice
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(to) = to else {
        return Ok(());
    };
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update charge_attempts set state = 'canceled', updated_at = now()
        where invoice_id = $1 and state = 'scheduled'
        "#,
        invoice
    )
    .execute(&mut *tx)
    .await?;
    let gate = Gate::new(allowance, Sender::Automatic);
    match gate.permit(&mut *tx, org, &to).await? {
        Ok(permit) => {
            outbox::enqueue_email(
                &mut *tx,
                permit,
                Some(invoice),
                outbox::MailKind::InvoiceEmail,
                serde_json::json!({
                    "invoice_id": invoice,
                    "dedupe": format!("charge-fallback/{invoice}"),
                }),
            )
            .await?;
        }
        Err(refused) => {
            tracing::warn!(%invoice, ?refused, "charge: the fallback email was not sent");
        }
    }
    Ok(())
}

/// A `payment_intent.*` event as far as an attempt cares. `amount` is in the provider's units.
#[derive(Debug, Clone)]
pub struct ChargeFact<'a> {
    pub provider: &'a str,
    pub payment_intent: &'a str,
    pub invoice_ref: Option<&'a str>,
    pub attempt_ref: Option<&'a str>,
    pub amount: i64,
    pub currency: &'a str,
    pub state: ChargeState,
    pub reason: Option<&'a str>,
    pub action_url: Option<&'a str>,
    pub event_id: &'a str,
}

/// Records a charge's event: the attempt it names moves up to the event's state, its money is a
/// payment of the invoice (processing, failed or received) by the rules of every payment, and a
/// failure schedules the next retry or sends the invoice. Call it in the transaction that claimed
/// the event.
pub async fn record_charge(
    tx: &mut PgConnection,
    f: &ChargeFact<'_>,
    allowance: Allowance,
) -> sqlx::Result<Effect> {
    let parsed = f
        .invoice_ref
        .and_then(|r| Uuid::try_parse(r).ok())
        .zip(f.attempt_ref.and_then(|a| a.parse::<i16>().ok()));
    let Some((invoice_id, n)) = parsed else {
        return Ok(Effect::new(
            EffectKind::Ignored,
            format!(
                "payment intent {} names no invoice attempt: not one of invoicer's charges",
                f.payment_intent
            ),
        ));
    };
    lock_intent(tx, f.payment_intent).await?;
    // language=PostgreSQL
    let found = sqlx::query!(
        r#"
        select i.org_id, i.currency, i.status as "status: InvoiceStatus", a.payment_intent
        from invoices i join charge_attempts a on a.invoice_id = i.id and a.n = $2
        where i.id = $1
        for update of i, a
        "#,
        invoice_id,
        n
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(found) = found else {
        return Ok(Effect::new(
            EffectKind::Anomaly,
            format!("no charge attempt {n} of invoice {invoice_id}: nothing applied"),
        ));
    };
    let (org, invoice) = (OrgId::from(found.org_id), InvoiceId::from(invoice_id));
    let on_invoice = |mut e: Effect| {
        e.org_id = Some(org);
        e.invoice_id = Some(invoice_id);
        e
    };
    if found
        .payment_intent
        .as_deref()
        .is_some_and(|known| known != f.payment_intent)
    {
        return Ok(on_invoice(Effect::new(
            EffectKind::Anomaly,
            format!(
                "attempt {n} was made as {}, the event names {}: nothing applied",
                found.payment_intent.unwrap_or_default(),
                f.payment_intent
            ),
        )));
    }
    if !found.currency.eq_ignore_ascii_case(f.currency) {
        return Ok(on_invoice(Effect::new(
            EffectKind::Anomaly,
            format!(
                "charged in {} but the invoice is in {}",
                f.currency, found.currency
            ),
        )));
    }
    let amount = match super::ours(f.amount, &found.currency) {
        Ok(amount) if amount > 0 => amount,
        Ok(_) => {
            return Ok(on_invoice(Effect::new(
                EffectKind::Anomaly,
                "a charge of nothing".to_owned(),
            )))
        }
        Err(why) => return Ok(on_invoice(Effect::new(EffectKind::Anomaly, why))),
    };
    let moved = set_state(
        tx,
        invoice_id,
        n,
        f.state,
        f.reason,
        f.action_url,
        Some(f.payment_intent),
    )
    .await?;
    let payment = match f.state {
        ChargeState::Processing => Some(PaymentStatus::Pending),
        ChargeState::Failed => Some(PaymentStatus::Failed),
        ChargeState::Succeeded => Some(PaymentStatus::Succeeded),
        ChargeState::RequiresAction => None,
    };
    let effect = match payment {
        Some(payment) => {
            super::settle(
                tx,
                &Settled {
                    org,
                    invoice,
                    currency: &found.currency,
                    status: found.status,
                    provider: f.provider,
                    payment_intent: f.payment_intent,
                    amount,
                    payment,
                    failure: f.reason.filter(|_| payment == PaymentStatus::Failed),
                    event_id: f.event_id,
                },
            )
            .await?
        }
        None => on_invoice(Effect::new(
            if moved {
                EffectKind::Applied
            } else {
                EffectKind::Ignored
            },
            format!(
                "charge attempt {n} ({}) waits for the customer to confirm it",
                f.payment_intent
            ),
        )),
    };
    if moved {
        after_move(tx, org, invoice_id, n, f.state, f.action_url, allowance).await?;
    }
    Ok(effect)
}

/// Why an owner's "charge now" was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    NotFound,
    /// Draft, paid, void, or nothing due.
    NothingDue(InvoiceStatus),
    /// An attempt is scheduled or under way.
    UnderWay,
    NoMethod,
    TooMany,
}

/// `POST /api/v1/invoices/{id}/charge`: a new attempt, due now, in the caller's transaction (the
/// API claim's). Returns its number.
pub async fn charge_now(
    tx: &mut PgConnection,
    org: OrgId,
    invoice: InvoiceId,
) -> sqlx::Result<Result<i16, Refusal>> {
    // language=PostgreSQL
    let inv = sqlx::query!(
        r#"
        select i.status as "status: InvoiceStatus", i.payment_state as "payment_state: PaymentState",
               i.total_cents - i.amount_credited_cents - i.amount_paid_cents as "due!",
               exists (select from payment_methods m where m.customer_id = i.customer_id
                       and m.is_default and m.removed_at is null) as "method!",
               exists (select from charge_attempts a where a.invoice_id = i.id
                       and a.state in ('scheduled', 'processing')) as "under_way!",
               coalesce((select max(a.n) from charge_attempts a where a.invoice_id = i.id), 0)
                   as "last!: i16"
        from invoices i
        where i.id = $1 and i.org_id = $2
        for update of i
        "#,
        invoice as _,
        org as _
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(inv) = inv else {
        return Ok(Err(Refusal::NotFound));
    };
    if !matches!(
        inv.status,
        InvoiceStatus::Open | InvoiceStatus::Uncollectible
    ) || inv.due <= 0
    {
        return Ok(Err(Refusal::NothingDue(inv.status)));
    }
    if inv.under_way || inv.payment_state == PaymentState::Processing {
        return Ok(Err(Refusal::UnderWay));
    }
    if !inv.method {
        return Ok(Err(Refusal::NoMethod));
    }
    if inv.last >= MAX_ATTEMPTS {
        return Ok(Err(Refusal::TooMany));
    }
    let n = inv.last + 1;
    // The owner's try is an automatic charge, whatever the invoice was collected by.
    // language=PostgreSQL
    sqlx::query!(
        r#"
        with method as (
            update invoices set collection_method = 'charge_automatically', charge_retries_stopped_at = null
            where id = $1
        )
        insert into charge_attempts (invoice_id, n, org_id, due_at) values ($1, $2, $3, now())
        "#,
        invoice as _,
        n,
        org as _
    )
    .execute(&mut *tx)
    .await?;
    Ok(Ok(n))
}

/// The org's retry days and late fees.
pub async fn settings(
    conn: &mut PgConnection,
    org: OrgId,
) -> sqlx::Result<(RetryDays, model::collection::LateFees)> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"select retry_days as "retry_days!: Vec<i16>", late_fees from orgs where id = $1"#,
        org as _
    )
    .fetch_one(&mut *conn)
    .await?;
    let days = RetryDays(row.retry_days.iter().map(|d| *d as u32).collect());
    // Written only through `save_settings`, checked: anything else reads as no fee.
    let fees = serde_json::from_value(row.late_fees).unwrap_or_default();
    Ok((days, fees))
}

/// Saves the org's retry days and late fees (checked by the caller).
pub async fn save_settings(
    tx: &mut PgConnection,
    org: OrgId,
    days: &RetryDays,
    fees: &model::collection::LateFees,
) -> sqlx::Result<()> {
    let days: Vec<i16> = days.0.iter().map(|d| *d as i16).collect();
    // language=PostgreSQL
    sqlx::query!(
        "update orgs set retry_days = $2, late_fees = $3 where id = $1",
        org as _,
        &days,
        serde_json::to_value(fees).expect("late fees serialise")
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

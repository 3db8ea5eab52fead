//! The workers' job of automatic charges (the attempts themselves: `payments::charges`): each due
//! attempt `(invoice, n)` leased as the claim `(job, charge:<invoice>, <n>)` and sent to the
//! provider under `Idempotency-Key: invoicer-charge-<invoice>-<n>`.
//!
//! The call leaves the database, so the claim is a lease: committed before the call, completed
//! with the provider's answer in one transaction, fenced (a worker whose lease was taken over
//! records nothing), and the charge's row on the activity page (and the invoice's history) written
//! in that transaction. A crash after the provider answered and before that commit leaves the
//! lease to go stale; the next worker sends the same key and parameters and gets the same payment
//! back: one attempt, one charge.

use std::time::Duration;

use chrono::{DateTime, Utc};
use model::collection::{ChargeState, CollectionMethod};
use model::{InvoiceStatus, OrgId, PaymentState};
use sqlx::PgPool;
use uuid::Uuid;

use crate::claim::{self, Fence, Leased, Outcome};
use crate::mail::gate::Allowance;
use crate::observe::{self, Attempt, AttemptOutcome, Concerns, Surface};
use crate::payments::charges::{
    after_failure, cancel, claim_key, fall_back, idempotency_key, record_charge, set_state,
    ChargeFact,
};
use crate::payments::provider::{NewCharge, Provider};
use crate::payments::EffectKind;

/// Charges up to `batch` attempts due at `now`; returns how many it handled. The attempts are
/// picked and leased in one short transaction that skips rows another worker is picking, and
/// passes over attempts whose lease another worker holds (the lease is mirrored on the attempt's
/// row, where a pick that waited re-checks it): workers share the due attempts.
pub async fn run_due(
    pool: &PgPool,
    provider: Option<&impl Provider>,
    now: DateTime<Utc>,
    batch: i64,
    lease: Duration,
    allowance: Allowance,
) -> sqlx::Result<usize> {
    let Some(provider) = provider.filter(|p| p.configured()) else {
        return Ok(0);
    };
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let due = sqlx::query!(
        r#"
        select a.invoice_id, a.n from charge_attempts a
        where a.state = 'scheduled' and a.due_at <= $1
          and (a.leased_until is null or a.leased_until <= now())
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
            // language=PostgreSQL
            sqlx::query!(
                r#"
                update charge_attempts set leased_until = now() + make_interval(secs => $3)
                where invoice_id = $1 and n = $2
                "#,
                row.invoice_id,
                row.n,
                lease.as_secs_f64()
            )
            .execute(&mut *tx)
            .await?;
            held.push((row.invoice_id, row.n, leased));
        }
    }
    tx.commit().await?;
    let handled = held.len();
    for (invoice, n, leased) in held {
        charge(pool, provider, invoice, n, leased, allowance).await?;
    }
    Ok(handled)
}

/// Sends attempt `n` of `invoice`, whose claim this worker leased, and records the answer.
async fn charge(
    pool: &PgPool,
    provider: &impl Provider,
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
                   and pm.is_default and pm.removed_at is null and pm.provider = $3)
            limit 1
        ) m on true
        left join provider_customers pc on pc.customer_id = i.customer_id and pc.provider = $3
        where a.invoice_id = $1 and a.n = $2
        "#,
        invoice,
        n,
        provider.name()
    )
    .fetch_optional(pool)
    .await?;
    let Some(what) = what else {
        let mut conn = pool.acquire().await?;
        let _ = lease.complete(&mut conn, &Outcome::default()).await?;
        return Ok(());
    };
    let org = OrgId::from(what.org_id);
    let attempt = Attempt::new(Surface::Job, n.to_string(), None);
    attempt.identify(format!("charge:{invoice}"), Some(org));
    let done = Done {
        lease,
        attempt: &attempt,
        invoice,
        n,
        org,
    };
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
        return done.record(tx).await;
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
    let answered = provider.charge(&charge, &idempotency_key(invoice, n)).await;
    let answer = match answered {
        Ok(answer) => answer,
        Err(e) if e.retryable() => {
            // Not yet: the lease runs out and a worker asks again under the same key.
            tracing::warn!(error = %e, %invoice, n, "charge: the provider could not be reached");
            return Ok(());
        }
        Err(e) => {
            tracing::warn!(error = %e, %invoice, n, "charge: refused by the provider");
            let why = match e {
                crate::payments::provider::ProviderError::Refused(words) => words,
                _ => "the provider refused the charge".to_owned(),
            };
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
            return done.record(tx).await;
        }
    };
    // Killed here, the provider has made the payment and we have not recorded it: the next
    // worker's same key finds it.
    crate::failpoint::hit_at("charge", "after_stripe");
    // The provider's answer is a fact about the payment as good as its events (which may come
    // later, or have gone to a process that died): recorded by the same rule, once.
    let (invoice_ref, attempt_ref) = (invoice.to_string(), n.to_string());
    let answered_as = format!("answer:{}", answer.id);
    let fact = ChargeFact {
        provider: provider.name(),
        payment_intent: &answer.id,
        invoice_ref: Some(&invoice_ref),
        attempt_ref: Some(&attempt_ref),
        amount: charge.amount,
        currency: charge.currency,
        state: answer.state,
        reason: answer.reason.as_deref(),
        action_url: answer.action_url.as_deref(),
        event_id: &answered_as,
    };
    let mut tx = pool.begin().await?;
    let effect = record_charge(&mut tx, &fact, allowance).await?;
    if effect.outcome == EffectKind::Anomaly {
        tracing::warn!(%invoice, n, detail = effect.detail.as_deref().unwrap_or(""), "charge: anomaly");
    }
    done.record(tx).await
}

/// A leased attempt whose outcome is written.
struct Done<'a> {
    lease: claim::Lease,
    attempt: &'a Attempt,
    invoice: Uuid,
    n: i16,
    org: OrgId,
}

impl Done<'_> {
    /// Completes the lease in `tx`, with the charge's row on the activity page (and the invoice's
    /// history), and commits: all with what `tx` recorded, or, when another worker took the lease
    /// over, nothing at all.
    async fn record(self, mut tx: sqlx::Transaction<'_, sqlx::Postgres>) -> sqlx::Result<()> {
        let (invoice, n) = (self.invoice, self.n);
        if self.lease.complete(&mut tx, &Outcome::default()).await? != Fence::Held {
            tracing::warn!(%invoice, n, "charge: the lease was taken over; nothing recorded");
            return Ok(());
        }
        let concerns = Concerns {
            org: Some(self.org),
            invoice: Some(invoice),
        };
        let key = claim_key(invoice, n);
        crate::surfaces::record::finish(&mut tx, &key, None, self.attempt, concerns).await?;
        tx.commit().await?;
        self.attempt.mark_stored();
        observe::log_and_count(self.attempt, AttemptOutcome::Won);
        Ok(())
    }
}

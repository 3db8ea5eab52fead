//! Refunds through Stripe that a credit note asks for. The call leaves the database, so it is split
//! as the design says: the credit note's transaction *plans* each refund (which payment, how much:
//! fixed by the attempt) and queues one outbox row for the credit note; a worker leases that row (the
//! claim `(job, outbox, row)`), calls Stripe under the Idempotency-Key named by the credit note and the
//! payment, and stores Stripe's answer with the refund fact in one transaction, fenced by the lease:
//! a worker whose lease was taken over while its call was in flight records nothing, not even a
//! refusal. A crash after Stripe answered and before that commit leaves the lease to go stale: the
//! next worker sends the same key and parameters, Stripe answers with the refund it already made, and
//! nothing is refunded twice. A 409 (the same key still in progress) is "not yet": retried, never a
//! failure. Past Stripe's 24 hours of key memory the key proves nothing, so an attempt that old
//! first looks for the refund by its metadata. `charge.refunded` reconciles the payment by the
//! cumulative rule of [`crate::payments`].

use model::InvoiceId;
use model::OrgId;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::claim::Fence;
use crate::failpoint;
use crate::outbox;
use crate::payments::stripe::client::{Stripe, StripeError};
use crate::payments::{record_refund, RefundFact};
use model::format_money;

/// Stripe's Idempotency-Key for the refund of `payment_intent` that `credit_note` asks for.
pub fn idempotency_key(credit_note: Uuid, payment_intent: &str) -> String {
    format!("invoicer-refund-{credit_note}-{payment_intent}")
}

/// What can be refunded through Stripe of `invoice`'s card payments, oldest first: what each
/// payment brought, less what Stripe refunded, what a lost dispute took, and refunds planned and
/// not made yet. Read in the caller's transaction, which holds the invoice's row lock.
async fn refundable(tx: &mut PgConnection, invoice: InvoiceId) -> sqlx::Result<Vec<(String, i64)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select p.provider_payment_id,
               (p.amount_cents
               - coalesce(case when r.full_refund then p.amount_cents else r.amount_refunded_cents end, 0)
               - coalesce((select sum(d.amount_cents) from disputes d
                           where d.provider = p.provider and d.provider_payment_id = p.provider_payment_id
                             and d.status = 'lost'), 0)
               - coalesce((select sum(c.amount_cents) from credit_note_refunds c
                           where c.provider_payment_id = p.provider_payment_id and c.state = 'pending'), 0)
               )::bigint as "left!"
        from payments p
        left join refunds r on r.provider = p.provider and r.provider_payment_id = p.provider_payment_id
        where p.invoice_id = $1 and p.provider = 'stripe' and p.status = 'succeeded'
        order by p.created_at, p.id
        "#,
        invoice as _
    )
    .fetch_all(&mut *tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.provider_payment_id, r.left.max(0)))
        .collect())
}

/// What planned refunds of `invoice` have not been made yet (they are still counted as kept).
pub async fn pending(tx: &mut PgConnection, invoice: InvoiceId) -> sqlx::Result<i64> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"
        select coalesce(sum(c.amount_cents), 0)::bigint as "pending!"
        from credit_note_refunds c join credit_notes n on n.id = c.credit_note_id
        where n.invoice_id = $1 and c.state = 'pending'
        "#,
        invoice as _
    )
    .fetch_one(&mut *tx)
    .await
}

/// How `amount` is refunded through Stripe from `invoice`'s card payments, oldest first: (payment
/// intent, part). Err: at most this much can be refunded through Stripe. Read in the caller's
/// transaction, which holds the invoice's row lock.
pub async fn split(
    tx: &mut PgConnection,
    invoice: InvoiceId,
    amount: i64,
) -> sqlx::Result<Result<Vec<(String, i64)>, i64>> {
    let payments = refundable(tx, invoice).await?;
    let available: i64 = payments.iter().map(|(_, left)| left).sum();
    if amount > available {
        return Ok(Err(available));
    }
    let mut rest = amount;
    let mut parts = Vec::new();
    for (intent, left) in payments {
        let part = rest.min(left);
        if part > 0 {
            parts.push((intent, part));
            rest -= part;
        }
    }
    Ok(Ok(parts))
}

/// Plans the refunds `parts` (from [`split`]) for `credit_note` of `org`'s `invoice` and queues the
/// worker's row, in the caller's transaction.
pub async fn plan(
    tx: &mut PgConnection,
    org: OrgId,
    invoice: InvoiceId,
    credit_note: Uuid,
    parts: &[(String, i64)],
    currency: &str,
) -> sqlx::Result<()> {
    for (intent, part) in parts {
        // language=PostgreSQL
        sqlx::query!(
            r#"
            insert into credit_note_refunds (credit_note_id, provider_payment_id, amount_cents, currency)
            values ($1, $2, $3, $4)
            "#,
            credit_note,
            intent,
            part,
            currency,
        )
        .execute(&mut *tx)
        .await?;
    }
    if !parts.is_empty() {
        let payload = serde_json::json!({
            "credit_note_id": credit_note,
            "invoice_id": invoice,
            "dedupe": format!("refund/{credit_note}"),
        });
        // Not one of the invoice's emails: the credit note shows the refund's state.
        outbox::enqueue_job(tx, org, outbox::JobKind::StripeRefund, payload).await?;
    }
    Ok(())
}

/// The metadata a refund is made with, naming its credit note (the list finds it by this).
const METADATA_KEY: &str = "credit_note_id";

/// Stripe keeps an Idempotency-Key for at least 24 hours: an attempt whose row is younger than this
/// (its first call came after the row) can rely on the key; an older one looks its refund up first.
/// The hour between covers the two clocks.
const KEY_TRUSTED_FOR: &str = "23 hours";

/// A worker's call for a `stripe_refund` row it holds: each planned refund of the credit note still
/// pending is asked of Stripe and stored with its refund fact, every outcome fenced by the row's
/// lease. Err: (shown, detail, permanent).
pub async fn at_stripe(
    pool: &PgPool,
    stripe: Option<&Stripe>,
    row: &outbox::Leased,
) -> Result<(), (String, String, bool)> {
    let db = |e: sqlx::Error| {
        (
            "temporary error while refunding".to_owned(),
            e.to_string(),
            false,
        )
    };
    // Another worker holds the row now and makes the refund; this one recorded nothing.
    let fenced = || {
        (
            "another worker took the refund over".to_owned(),
            "the lease on the stripe_refund row was taken over; nothing recorded".to_owned(),
            false,
        )
    };
    let Some(credit_note) = row.payload["credit_note_id"]
        .as_str()
        .and_then(|s| s.parse::<Uuid>().ok())
    else {
        return Err((
            "no credit note to refund".into(),
            "payload has no credit_note_id".into(),
            true,
        ));
    };
    // language=PostgreSQL
    let planned = sqlx::query!(
        r#"
        select provider_payment_id, amount_cents, currency from credit_note_refunds
        where credit_note_id = $1 and state = 'pending'
        order by provider_payment_id
        "#,
        credit_note
    )
    .fetch_all(pool)
    .await
    .map_err(db)?;
    if planned.is_empty() {
        return Ok(());
    }
    // language=PostgreSQL
    let key_may_be_forgotten = sqlx::query_scalar!(
        r#"
        select created_at <= now() - $2::text::interval as "forgotten!" from outbox where id = $1
        "#,
        row.id,
        KEY_TRUSTED_FOR,
    )
    .fetch_optional(pool)
    .await
    .map_err(db)?
    .unwrap_or(true);
    for refund in planned {
        let intent = refund.provider_payment_id;
        let key = idempotency_key(credit_note, &intent);
        let Some(currency) = model::currency(&refund.currency) else {
            let why = format!("unknown currency {}", refund.currency);
            match fail(pool, row, credit_note, &intent, &why)
                .await
                .map_err(db)?
            {
                Fence::Held => continue,
                Fence::TakenOver => return Err(fenced()),
            }
        };
        let Some(stripe) = stripe.filter(|s| s.configured()) else {
            return Err((
                "Stripe is not configured".into(),
                "no STRIPE_SECRET_KEY for a planned refund".into(),
                false,
            ));
        };
        let ours = credit_note.to_string();
        let metadata = [(METADATA_KEY, ours.clone())];
        // Past the key's memory a create would make a second refund: what an earlier attempt made
        // is found by the metadata it was made with.
        let found = if key_may_be_forgotten {
            match stripe.list_refunds(&intent).await {
                Ok(refunds) => refunds
                    .into_iter()
                    .find(|r| r.metadata.get(METADATA_KEY) == Some(&ours)),
                // Not knowing what was made, make nothing.
                Err(e) => {
                    return Err((
                        "Stripe could not be reached".into(),
                        e.to_string(),
                        !e.retryable(),
                    ))
                }
            }
        } else {
            None
        };
        let made = match found {
            Some(found) => {
                tracing::info!(%credit_note, payment_intent = %intent, refund_id = %found.id,
                    "refund found at Stripe by its metadata");
                Ok(found)
            }
            None => {
                stripe
                    .create_refund(
                        &intent,
                        currency.to_stripe(refund.amount_cents),
                        &metadata,
                        &key,
                    )
                    .await
            }
        };
        let made = match made {
            Ok(made) => made,
            // Stripe refused (already refunded from its dashboard, disputed, ...): the money stays
            // the customer's credit, and the owner sees why. A 409 (a request under the same key
            // still in progress) and a 429 say "not now", never "no".
            Err(StripeError::Api {
                status, message, ..
            }) if (400..500).contains(&status) && status != 409 && status != 429 => {
                match fail(pool, row, credit_note, &intent, &message)
                    .await
                    .map_err(db)?
                {
                    Fence::Held => continue,
                    Fence::TakenOver => return Err(fenced()),
                }
            }
            Err(e) => {
                return Err((
                    "Stripe could not be reached".into(),
                    e.to_string(),
                    !e.retryable(),
                ))
            }
        };
        failpoint::hit_at("refund", "after_stripe");
        match store(pool, row, credit_note, &intent, &made.id)
            .await
            .map_err(db)?
        {
            Fence::Held => {}
            Fence::TakenOver => return Err(fenced()),
        }
    }
    Ok(())
}

/// Whether `row`'s lease still holds its claim. Locks the outbox row, then the claim (the order
/// every writer of both takes), so no takeover can slip in before the caller's transaction ends.
async fn lease_holds(tx: &mut PgConnection, row: &outbox::Leased) -> sqlx::Result<Fence> {
    // language=PostgreSQL
    sqlx::query_scalar!("select id from outbox where id = $1 for update", row.id)
        .fetch_one(&mut *tx)
        .await?;
    let claim = row.lease.key();
    let token = row.lease.token();
    // language=PostgreSQL
    let held = sqlx::query_scalar!(
        r#"
        select true as "held!" from claims
        where scope = $1 and owner = $2 and key = $3 and status = 'in_progress' and claimed_at = $4
        for update
        "#,
        claim.surface.as_str(),
        claim.owner,
        claim.key,
        token as _,
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(if held.is_some() {
        Fence::Held
    } else {
        Fence::TakenOver
    })
}

/// Marks the planned refund made as Stripe's `refund_id` and records the refund fact (the sum of
/// what this app refunded of the payment, a lower bound of Stripe's cumulative amount), in one
/// transaction, if `row`'s lease still holds. A second store of the same refund changes nothing.
async fn store(
    pool: &PgPool,
    row: &outbox::Leased,
    credit_note: Uuid,
    payment_intent: &str,
    refund_id: &str,
) -> sqlx::Result<Fence> {
    let mut tx = pool.begin().await?;
    if lease_holds(&mut tx, row).await? == Fence::TakenOver {
        tx.rollback().await?;
        tracing::warn!(%credit_note, payment_intent, refund_id,
            "refund made at Stripe, but the row was taken over: the new holder stores it");
        return Ok(Fence::TakenOver);
    }
    // language=PostgreSQL
    let made = sqlx::query!(
        r#"
        update credit_note_refunds
        set state = 'succeeded', stripe_refund_id = $3, completed_at = now()
        where credit_note_id = $1 and provider_payment_id = $2 and state = 'pending'
        returning currency,
                  (select coalesce(sum(c.amount_cents), 0) from credit_note_refunds c
                   where c.provider_payment_id = $2 and c.state = 'succeeded')::bigint + amount_cents
                  as "refunded!"
        "#,
        credit_note,
        payment_intent,
        refund_id,
    )
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(made) = made {
        let stripe_units =
            model::currency(&made.currency).map_or(made.refunded, |c| c.to_stripe(made.refunded));
        let event_id = format!("refund:{refund_id}");
        let effect = record_refund(
            &mut tx,
            &RefundFact {
                provider: "stripe",
                payment_intent,
                amount_refunded: stripe_units,
                full: false,
                currency: &made.currency,
                event_id: &event_id,
            },
        )
        .await?;
        tracing::info!(%credit_note, payment_intent, refund_id, refunded = %format_money(made.refunded, &made.currency),
            effect = ?effect.outcome, "refund made at Stripe");
    }
    tx.commit().await?;
    Ok(Fence::Held)
}

/// Marks the planned refund refused by Stripe for `why`, if `row`'s lease still holds.
async fn fail(
    pool: &PgPool,
    row: &outbox::Leased,
    credit_note: Uuid,
    payment_intent: &str,
    why: &str,
) -> sqlx::Result<Fence> {
    let why: String = why.chars().take(300).collect();
    let mut tx = pool.begin().await?;
    if lease_holds(&mut tx, row).await? == Fence::TakenOver {
        tx.rollback().await?;
        return Ok(Fence::TakenOver);
    }
    tracing::warn!(%credit_note, payment_intent, why, "Stripe refused a refund");
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update credit_note_refunds set state = 'failed', failure = $3, completed_at = now()
        where credit_note_id = $1 and provider_payment_id = $2 and state = 'pending'
        "#,
        credit_note,
        payment_intent,
        why,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Fence::Held)
}

//! An attempt's facts: the provider's answer to the call and its `payment_intent.*` events, merged
//! by rank whatever their order ([`ChargeState`]), and what each move brings (the next retry, the
//! invoice sent instead, the customer asked to confirm).

use chrono::{DateTime, Utc};
use model::collection::{ChargeState, CollectionMethod, RetryDays};
use model::{InvoiceId, InvoiceStatus, OrgId, PaymentStatus};
use sqlx::PgConnection;
use uuid::Uuid;

use super::MAX_ATTEMPTS;
use crate::mail::gate::{Allowance, Gate, Sender};
use crate::outbox;
use crate::payments::{Effect, EffectKind, Settled};

/// Moves attempt `n` of `invoice` up to `state` (never down: see [`ChargeState`]); true when it
/// moved. The reason and the confirmation page go with the state that brought them.
pub(crate) async fn set_state(
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
pub(crate) async fn cancel(tx: &mut PgConnection, invoice: Uuid, n: i16) -> sqlx::Result<()> {
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
pub(crate) async fn after_failure(
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
pub(crate) async fn fall_back(
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
    // The payment's lock, the first any writer of its facts takes (see `payments`).
    crate::payments::lock_payment(tx, f.provider, f.payment_intent).await?;
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
    let amount = match crate::payments::ours(f.amount, &found.currency) {
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
            crate::payments::settle(
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

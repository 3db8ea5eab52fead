//! Payments and refunds, as business writes that are idempotent on their own: a payment is unique on
//! the provider's payment id, and invoice states only move by conditional updates
//! (`open → paid`, `paid → refunded`), so neither a duplicate nor a late event can undo anything.

use sqlx::PgConnection;
use uuid::Uuid;

use crate::ssr::outbox;

/// What an event did, recorded with the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    pub outcome: EffectKind,
    pub detail: Option<String>,
    pub org_id: Option<Uuid>,
    pub invoice_id: Option<Uuid>,
    pub payment_id: Option<Uuid>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EffectKind {
    /// Changed something.
    Applied,
    /// Nothing to do (an event type we do not act on, or already reflected).
    Ignored,
    /// Kept for later: a refund whose payment has not arrived yet.
    Deferred,
    /// Cannot be applied and retrying will not help (unknown invoice, wrong currency).
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

    fn on_invoice(mut self, org: Uuid, invoice: Uuid) -> Self {
        self.org_id = Some(org);
        self.invoice_id = Some(invoice);
        self
    }
}

/// A completed checkout, as far as invoices care.
#[derive(Debug, Clone)]
pub struct PaymentReceived<'a> {
    pub provider: &'a str,
    pub provider_payment_id: &'a str,
    pub invoice_ref: Option<&'a str>,
    pub amount_cents: i64,
    pub currency: &'a str,
    pub event_id: &'a str,
}

/// Records a payment against its invoice and moves the invoice `open → paid` once fully paid.
/// Call it in the transaction that claimed the event.
pub async fn record_payment(
    tx: &mut PgConnection,
    p: &PaymentReceived<'_>,
) -> sqlx::Result<Effect> {
    let Some(invoice_id) = p.invoice_ref.and_then(|r| Uuid::try_parse(r).ok()) else {
        return Ok(Effect::new(
            EffectKind::Anomaly,
            format!(
                "client_reference_id {:?} is not an invoice id",
                p.invoice_ref
            ),
        ));
    };
    lock_payment(tx, p.provider, p.provider_payment_id).await?;
    // language=PostgreSQL
    let Some(invoice) = sqlx::query!(
        "select org_id, currency from invoices where id = $1 for update",
        invoice_id
    )
    .fetch_optional(&mut *tx)
    .await?
    else {
        return Ok(Effect::new(
            EffectKind::Anomaly,
            format!("unknown invoice {invoice_id}"),
        ));
    };
    let on_invoice = |e: Effect| e.on_invoice(invoice.org_id, invoice_id);
    if !invoice.currency.eq_ignore_ascii_case(p.currency) {
        return Ok(on_invoice(Effect::new(
            EffectKind::Anomaly,
            format!(
                "paid in {} but the invoice is in {}",
                p.currency, invoice.currency
            ),
        )));
    }

    let payment_id = Uuid::now_v7();
    // language=PostgreSQL
    let inserted = sqlx::query_scalar!(
        r#"
        insert into payments (id, org_id, invoice_id, provider, provider_payment_id, amount_cents,
                              currency, event_id)
        values ($1, $2, $3, $4, $5, $6, $7, $8)
        on conflict (provider, provider_payment_id) do nothing
        returning id
        "#,
        payment_id,
        invoice.org_id,
        invoice_id,
        p.provider,
        p.provider_payment_id,
        p.amount_cents,
        p.currency.to_ascii_lowercase(),
        p.event_id,
    )
    .fetch_optional(&mut *tx)
    .await?;
    if inserted.is_none() {
        return Ok(on_invoice(Effect::new(
            EffectKind::Ignored,
            format!("payment {} was already recorded", p.provider_payment_id),
        )));
    }
    // The receipt leaves with this transaction or not at all.
    outbox::enqueue(
        tx,
        invoice.org_id,
        Some(invoice_id),
        outbox::Kind::PaymentReceipt,
        serde_json::json!({ "payment_id": payment_id }),
    )
    .await?;

    // A refund that overtook this payment is applied now.
    // language=PostgreSQL
    let refunded_early = sqlx::query_scalar!(
        r#"
        delete from pending_refunds where provider = $1 and provider_payment_id = $2
        returning event_id
        "#,
        p.provider,
        p.provider_payment_id
    )
    .fetch_optional(&mut *tx)
    .await?;
    if refunded_early.is_some() {
        // language=PostgreSQL
        sqlx::query!(
            "update payments set refunded_at = now() where id = $1",
            payment_id
        )
        .execute(&mut *tx)
        .await?;
    }

    // Conditional transitions only: a void or refunded invoice stays what it is.
    // language=PostgreSQL
    let status = sqlx::query_scalar!(
        r#"
        update invoices
        set amount_paid_cents = amount_paid_cents + case when $3 then 0 else $2::int8 end,
            status = case
                when status = 'open' and amount_paid_cents + $2 >= total_cents
                    then case when $3 then 'refunded' else 'paid' end
                else status
            end,
            updated_at = now()
        where id = $1
        returning status
        "#,
        invoice_id,
        p.amount_cents,
        refunded_early.is_some(),
    )
    .fetch_one(&mut *tx)
    .await?;

    let detail = match &refunded_early {
        Some(refund_event) => format!(
            "payment {} recorded; its earlier refund ({refund_event}) applied; invoice {status}",
            p.provider_payment_id
        ),
        None => format!(
            "payment {} recorded; invoice {status}",
            p.provider_payment_id
        ),
    };
    let mut effect = on_invoice(Effect::new(EffectKind::Applied, detail));
    effect.payment_id = Some(payment_id);
    Ok(effect)
}

/// Payment and refund events of one payment take different claims (different event ids), so they
/// could run concurrently and miss each other's uncommitted rows (a refund parked as pending while
/// its payment commits). This transaction-scoped lock on the payment makes them take turns; it is the
/// first lock either takes.
async fn lock_payment(
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

/// Marks a payment refunded and moves its invoice `paid → refunded`. A refund for a payment we have
/// not seen yet is kept and applied when the payment arrives.
pub async fn record_refund(
    tx: &mut PgConnection,
    provider: &str,
    provider_payment_id: &str,
    event_id: &str,
) -> sqlx::Result<Effect> {
    lock_payment(tx, provider, provider_payment_id).await?;
    // language=PostgreSQL
    let payment = sqlx::query!(
        r#"
        select id, org_id, invoice_id, amount_cents, refunded_at is not null as "already!"
        from payments
        where provider = $1 and provider_payment_id = $2
        for update
        "#,
        provider,
        provider_payment_id
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(payment) = payment else {
        // language=PostgreSQL
        sqlx::query!(
            r#"
            insert into pending_refunds (provider, provider_payment_id, event_id)
            values ($1, $2, $3)
            on conflict do nothing
            "#,
            provider,
            provider_payment_id,
            event_id
        )
        .execute(&mut *tx)
        .await?;
        return Ok(Effect::new(
            EffectKind::Deferred,
            format!(
                "refund for unknown payment {provider_payment_id} kept until the payment arrives"
            ),
        ));
    };
    let on_invoice = |e: Effect| e.on_invoice(payment.org_id, payment.invoice_id);
    if payment.already {
        return Ok(on_invoice(Effect::new(
            EffectKind::Ignored,
            format!("payment {provider_payment_id} was already refunded"),
        )));
    }
    // language=PostgreSQL
    sqlx::query!(
        "update payments set refunded_at = now() where id = $1",
        payment.id
    )
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    // The refunded amount is no longer paid. A fully paid invoice whose payments are all refunded is
    // `refunded`; one that is partly paid again (one of two payments refunded) is `open`.
    // language=PostgreSQL
    let status = sqlx::query_scalar!(
        r#"
        update invoices
        set amount_paid_cents = greatest(amount_paid_cents - $2, 0),
            status = case
                when status = 'paid' and amount_paid_cents - $2 <= 0 then 'refunded'
                when status = 'paid' and amount_paid_cents - $2 < total_cents then 'open'
                else status
            end,
            updated_at = now()
        where id = $1
        returning status
        "#,
        payment.invoice_id,
        payment.amount_cents,
    )
    .fetch_one(&mut *tx)
    .await?;
    let detail = format!("payment {provider_payment_id} refunded; invoice {status}");
    let mut effect = on_invoice(Effect::new(EffectKind::Applied, detail));
    effect.payment_id = Some(payment.id);
    Ok(effect)
}

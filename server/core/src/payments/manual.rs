//! Money recorded by hand: a bank transfer, cash, a cheque, a card taken elsewhere. A recorded
//! payment is a row of `payments` like Stripe's (provider `manual`), named by the attempt that
//! recorded it (its business key, so even a lost claim row cannot record it twice), and the invoice
//! is derived again from all of its payments in the same transaction. An owner can delete one
//! (audited, the invoice derived again) unless a refund depends on it (a refund of the payment, or
//! money a credit note paid back or credit applied elsewhere that the other payments would no
//! longer cover).

use chrono::{DateTime, NaiveDate, Utc};
use model::InvoiceId;
use model::OrgId;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::accounts::audit::{self, Actor};
use crate::payments::{derive, Money};
use model::error::FieldErrors;
use model::{InvoiceStatus, Payment, PaymentInput, PaymentMethod, PaymentSource};
use model::{PaymentStatus, MAX_PAYMENT_CENTS};

/// Why a payment was not recorded or deleted.
#[derive(Debug, thiserror::Error)]
pub enum PaymentError {
    #[error("no such invoice or payment")]
    NotFound,
    /// Drafts (no number, never sent) and void invoices take no payments.
    #[error("a {0} invoice takes no payments")]
    NotPayable(InvoiceStatus),
    #[error("invalid payment")]
    Invalid(FieldErrors),
    /// Stripe's payments are deleted by nobody: their events are the record.
    #[error("only payments recorded by hand can be deleted")]
    NotManual,
    #[error("a refund depends on this payment")]
    Refunded,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The org's date now, in its time zone: a payment is dated at most today.
pub async fn org_today(db: impl sqlx::PgExecutor<'_>, org: OrgId) -> sqlx::Result<NaiveDate> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"select (now() at time zone time_zone)::date as "today!: NaiveDate" from orgs where id = $1"#,
        org as _
    )
    .fetch_one(db)
    .await
}

/// The command that records a payment by hand, whichever surface asks: `input` on `org`'s `invoice`
/// as the payment `id`, named by `attempt` (`form:<key>`, `api:<client>/<key>`), in the caller's
/// claimed transaction, checked against the org's date ([`PaymentInput::check`]) there, and the
/// invoice derived again. A repeat of
/// the attempt returns the payment it recorded. More than is due is recorded: the invoice's
/// `amount_paid_cents` then exceeds its total (an overpayment, shown as such).
pub async fn record(
    tx: &mut PgConnection,
    org: OrgId,
    invoice: InvoiceId,
    id: Uuid,
    attempt: &str,
    input: &PaymentInput,
    by: Option<Uuid>,
) -> Result<(Payment, Money), PaymentError> {
    let today = org_today(&mut *tx, org).await?;
    input.check(today).map_err(PaymentError::Invalid)?;
    let status = lock_invoice(tx, org, invoice).await?;
    if matches!(status, InvoiceStatus::Draft | InvoiceStatus::Void) {
        return Err(PaymentError::NotPayable(status));
    }
    if !(1..=MAX_PAYMENT_CENTS).contains(&input.amount_cents) {
        return Err(PaymentError::Invalid(FieldErrors::from([(
            "amount_cents".to_owned(),
            "Enter an amount above zero.".to_owned(),
        )])));
    }
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into payments (id, org_id, invoice_id, provider, provider_payment_id, amount_cents,
                              currency, event_id, status, method, paid_on, reference, recorded_by)
        select $1, $2, $3, 'manual', $4, $5, i.currency, $4, 'succeeded', $6, $7, $8, $9
        from invoices i where i.id = $3
        on conflict (provider, provider_payment_id) do nothing
        "#,
        id,
        org as _,
        invoice as _,
        attempt,
        input.amount_cents,
        input.method as PaymentMethod,
        input.paid_on as _,
        input.reference.trim(),
        by,
    )
    .execute(&mut *tx)
    .await?;
    let money = derive(tx, invoice).await?;
    let payment = list_on(tx, org, invoice)
        .await?
        .into_iter()
        .find(|p| p.source == PaymentSource::Manual && p.attempt == attempt)
        .ok_or(PaymentError::NotFound)?;
    Ok((payment.payment, money))
}

/// Deletes the payment `id` recorded by hand on `org`'s `invoice`, writes it in the audit log as
/// `actor`'s, and derives the invoice again.
pub async fn delete(
    tx: &mut PgConnection,
    org: OrgId,
    invoice: InvoiceId,
    id: Uuid,
    actor: &Actor,
) -> Result<Money, PaymentError> {
    lock_invoice(tx, org, invoice).await?;
    // language=PostgreSQL
    let gone = sqlx::query!(
        r#"
        delete from payments p
        where p.id = $1 and p.org_id = $2 and p.invoice_id = $3 and p.provider = 'manual'
          and not exists (select 1 from refunds r
                          where r.provider = p.provider and r.provider_payment_id = p.provider_payment_id)
          -- What credit notes paid back outside the app, and the credit moved to other invoices,
          -- must stay covered by the payments left.
          and coalesce((select sum(c.refunded_cents) from credit_notes c where c.invoice_id = p.invoice_id), 0)
              + coalesce((select sum(a.amount_cents) from credit_applications a
                          where a.from_invoice_id = p.invoice_id), 0)
              <= coalesce((select sum(q.amount_cents) from payments q
                           where q.invoice_id = p.invoice_id and q.id <> p.id and q.status = 'succeeded'), 0)
        returning p.amount_cents, p.currency, p.method as "method: PaymentMethod",
                  p.paid_on as "paid_on: NaiveDate",
                  p.reference, (select number_text from invoices where id = p.invoice_id) as number_text
        "#,
        id,
        org as _,
        invoice as _,
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(gone) = gone else {
        // language=PostgreSQL
        let found = sqlx::query_scalar!(
            "select provider from payments where id = $1 and org_id = $2 and invoice_id = $3",
            id,
            org as _,
            invoice as _,
        )
        .fetch_optional(&mut *tx)
        .await?;
        return Err(match found.as_deref() {
            None => PaymentError::NotFound,
            Some("manual") => PaymentError::Refunded,
            Some(_) => PaymentError::NotManual,
        });
    };
    let subject = format!(
        "{} of {} ({})",
        model::format_money(gone.amount_cents, &gone.currency),
        gone.number_text.unwrap_or_default(),
        gone.method.map_or("", PaymentMethod::label),
    );
    let detail = serde_json::json!({
        "payment_id": id,
        "invoice_id": invoice,
        "amount_cents": gone.amount_cents,
        "paid_on": gone.paid_on,
        "reference": gone.reference,
    });
    audit::record(tx, org, actor, "payment.deleted", &subject, detail).await?;
    Ok(derive(tx, invoice).await?)
}

/// The payments of `org`'s `invoice`, oldest first, Stripe's and those recorded by hand alike; None
/// when the org has no such invoice.
pub async fn list(
    pool: &PgPool,
    org: OrgId,
    invoice: InvoiceId,
) -> sqlx::Result<Option<Vec<Payment>>> {
    let mut conn = pool.acquire().await?;
    // language=PostgreSQL
    let exists = sqlx::query_scalar!(
        r#"select true as "found!" from invoices where id = $1 and org_id = $2"#,
        invoice as _,
        org as _
    )
    .fetch_optional(&mut *conn)
    .await?;
    if exists.is_none() {
        return Ok(None);
    }
    let rows = list_on(&mut conn, org, invoice).await?;
    Ok(Some(rows.into_iter().map(|r| r.payment).collect()))
}

/// A payment with the attempt that recorded it.
struct Named {
    payment: Payment,
    source: PaymentSource,
    attempt: String,
}

async fn list_on(
    conn: &mut PgConnection,
    org: OrgId,
    invoice: InvoiceId,
) -> sqlx::Result<Vec<Named>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select p.id, p.invoice_id, p.provider, p.provider_payment_id, p.amount_cents, p.currency,
               p.method as "method: PaymentMethod", coalesce(p.paid_on, p.created_at::date) as "paid_on!: NaiveDate",
               p.reference, p.status as "status: PaymentStatus",
               p.created_at as "created_at: DateTime<Utc>",
               coalesce(case when r.provider is null then 0
                             when r.full_refund then p.amount_cents
                             else least(p.amount_cents, r.amount_refunded_cents) end, 0) as "refunded!"
        from payments p
        left join refunds r on r.provider = p.provider and r.provider_payment_id = p.provider_payment_id
        where p.org_id = $1 and p.invoice_id = $2
        order by p.created_at, p.id
        "#,
        org as _,
        invoice as _
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let source = match r.provider.as_str() {
                "manual" => PaymentSource::Manual,
                "bank" => PaymentSource::Bank,
                _ => PaymentSource::Stripe,
            };
            let reference = match source {
                PaymentSource::Manual | PaymentSource::Bank => r.reference,
                PaymentSource::Stripe => r.provider_payment_id.clone(),
            };
            Named {
                source,
                attempt: r.provider_payment_id,
                payment: Payment {
                    id: r.id,
                    invoice_id: r.invoice_id,
                    source,
                    amount_cents: r.amount_cents,
                    currency: r.currency,
                    method: r.method,
                    paid_on: r.paid_on,
                    reference,
                    status: r.status,
                    refunded_cents: r.refunded,
                    created_at: r.created_at,
                },
            }
        })
        .collect())
}

/// Locks `org`'s `invoice` (payments of one invoice take turns) and reads its status.
async fn lock_invoice(
    tx: &mut PgConnection,
    org: OrgId,
    invoice: InvoiceId,
) -> Result<InvoiceStatus, PaymentError> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"select status as "status: InvoiceStatus" from invoices where id = $1 and org_id = $2 for update"#,
        invoice as _,
        org as _
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(PaymentError::NotFound)
}

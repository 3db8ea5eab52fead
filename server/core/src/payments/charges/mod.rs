//! Automatic charges: an invoice collected automatically is charged off-session to its customer's
//! default saved method. Each try is an attempt with a name, `(invoice, n)`: written `scheduled` in
//! the transaction that makes it due (the invoice's finalization, by a trigger; a retry, by the
//! failure of the one before; `POST /api/v1/invoices/{id}/charge`), then leased by a worker as the
//! claim `(job, charge:<invoice>, <n>)` and sent to the provider under
//! `Idempotency-Key: invoicer-charge-<invoice>-<n>`.
//!
//! The workers' job that sends them is `jobs::charges`. The money itself is a fact of the provider's
//! answer and its `payment_intent.*` events, merged by rank whatever their order
//! ([`model::collection::ChargeState`]), and written as a payment by the rules every payment follows
//! ([`crate::payments::settle`]).

mod record;

use model::{InvoiceId, InvoiceStatus, OrgId, PaymentState};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::claim::ClaimKey;
pub(crate) use record::{after_failure, cancel, fall_back, set_state};
pub use record::{record_charge, ChargeFact};

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

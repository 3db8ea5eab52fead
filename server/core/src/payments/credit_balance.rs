//! A customer's credit balance: what their invoices kept beyond what they ask for (an overpayment,
//! or a credit note on a paid invoice that kept the money), per currency. Applying it to another
//! open invoice of the same customer moves that money from the invoices that hold it (oldest first)
//! to the one that is due, named by the attempt, and derives every invoice it touched again, all in
//! the caller's transaction.

use model::CustomerId;
use model::InvoiceId;
use model::OrgId;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::payments::{derive, Money};
use model::InvoiceStatus;

#[derive(Debug, thiserror::Error)]
pub enum BalanceError {
    #[error("no such invoice")]
    NotFound,
    #[error("the invoice has no saved customer, so no credit balance")]
    NoCustomer,
    #[error("a {0} invoice takes no credit")]
    NotOpen(InvoiceStatus),
    #[error("nothing is due on this invoice")]
    NothingDue,
    #[error("the customer has no credit in this currency")]
    NoCredit,
    #[error("at most {available} can be applied (what is due, and what the customer has)")]
    TooMuch { available: i64 },
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// What `customer` of `org` has as credit, per currency: (currency, amount), by currency.
pub async fn of_customer(
    conn: &mut PgConnection,
    org: OrgId,
    customer: CustomerId,
) -> sqlx::Result<Vec<(String, i64)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select currency, sum(amount_paid_cents - (total_cents - amount_credited_cents))::bigint as "credit!"
        from invoices
        where org_id = $1 and customer_id = $2 and status <> 'void'
          and amount_paid_cents > total_cents - amount_credited_cents
        group by currency
        order by currency
        "#,
        org as _,
        customer as _
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.currency, r.credit)).collect())
}

/// What the customer of `org`'s `invoice` could apply to it now: at most what is due and what they
/// have in its currency (0 without a saved customer).
pub async fn available_for(
    conn: &mut PgConnection,
    org: OrgId,
    invoice: InvoiceId,
) -> sqlx::Result<i64> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"
        select least(greatest(i.total_cents - i.amount_credited_cents - i.amount_paid_cents, 0),
                     coalesce((select sum(o.amount_paid_cents - (o.total_cents - o.amount_credited_cents))
                               from invoices o
                               where o.org_id = i.org_id and o.customer_id = i.customer_id
                                 and o.currency = i.currency and o.id <> i.id and o.status <> 'void'
                                 and o.amount_paid_cents > o.total_cents - o.amount_credited_cents), 0))::bigint
               as "available!"
        from invoices i
        where i.id = $1 and i.org_id = $2 and i.customer_id is not null
        "#,
        invoice as _,
        org as _
    )
    .fetch_optional(&mut *conn)
    .await
    .map(|a| a.unwrap_or(0))
}

/// Applies the customer's credit to `org`'s `invoice`: `amount` (None: as much as is due and
/// available, and less is applied when less is available), as the attempt `source_key` by `by`.
/// A repeat of the attempt applies nothing more. Returns what the attempt applied, and the invoice.
pub async fn apply(
    tx: &mut PgConnection,
    org: OrgId,
    invoice: InvoiceId,
    amount: Option<i64>,
    source_key: &str,
    by: Option<Uuid>,
) -> Result<(i64, Money), BalanceError> {
    // Customer and currency of a finalized invoice never change: read them first, then lock every
    // invoice the move touches in one statement, in id order (two moves never wait on each other
    // in a circle).
    // language=PostgreSQL
    let target = sqlx::query!(
        "select customer_id, currency from invoices where id = $1 and org_id = $2",
        invoice as _,
        org as _
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(BalanceError::NotFound)?;
    let customer = target.customer_id.ok_or(BalanceError::NoCustomer)?;
    // language=PostgreSQL
    let locked = sqlx::query!(
        r#"
        select id, status as "status: InvoiceStatus",
               amount_paid_cents - (total_cents - amount_credited_cents) as "over!"
        from invoices
        where org_id = $1 and customer_id = $2 and currency = $3 and status <> 'void'
          and (id = $4 or amount_paid_cents > total_cents - amount_credited_cents)
        order by id
        for update
        "#,
        org as _,
        customer as _,
        target.currency,
        invoice as _
    )
    .fetch_all(&mut *tx)
    .await?;
    // language=PostgreSQL
    let done = sqlx::query_scalar!(
        r#"select sum(amount_cents)::bigint from credit_applications where org_id = $1 and source_key = $2"#,
        org as _,
        source_key
    )
    .fetch_one(&mut *tx)
    .await?;
    if let Some(done) = done {
        return Ok((done, derive(tx, invoice).await?));
    }
    let Some(me) = locked.iter().find(|r| r.id == invoice) else {
        return Err(BalanceError::NotOpen(InvoiceStatus::Void));
    };
    if !matches!(
        me.status,
        InvoiceStatus::Open | InvoiceStatus::Uncollectible
    ) {
        return Err(BalanceError::NotOpen(me.status));
    }
    let due = -me.over;
    if due <= 0 {
        return Err(BalanceError::NothingDue);
    }
    let sources: Vec<(Uuid, i64)> = locked
        .iter()
        .filter(|r| r.id != invoice && r.over > 0)
        .map(|r| (r.id, r.over))
        .collect();
    let available: i64 = sources.iter().map(|s| s.1).sum();
    if available == 0 {
        return Err(BalanceError::NoCredit);
    }
    let most = due.min(available);
    let mut rest = match amount {
        Some(asked) if asked > most => return Err(BalanceError::TooMuch { available: most }),
        Some(asked) => asked,
        None => most,
    };
    let applied = rest;
    for (from, over) in sources {
        let part = rest.min(over);
        if part == 0 {
            break;
        }
        // language=PostgreSQL
        sqlx::query!(
            r#"
            insert into credit_applications (id, org_id, customer_id, from_invoice_id, to_invoice_id,
                                             currency, amount_cents, source_key, created_by)
            values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            "#,
            Uuid::now_v7(),
            org as _,
            customer as _,
            from,
            invoice as _,
            target.currency,
            part,
            source_key,
            by,
        )
        .execute(&mut *tx)
        .await?;
        derive(tx, InvoiceId::from(from)).await?;
        rest -= part;
    }
    Ok((applied, derive(tx, invoice).await?))
}

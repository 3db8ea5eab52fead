//! Invoices: the business writes and reads. These functions take an open connection or transaction
//! and do not know which surface called them.

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::model::{
    invoice_number, Invoice, InvoiceInput, InvoiceLine, InvoiceStatus, InvoiceSummary, PaymentState,
};

/// Inserts invoice `id` (minted by the caller with `Uuid::now_v7()`, so a claim can name it before
/// the insert) and its lines, taking the org's next number. Call it inside the transaction that
/// claimed the attempt: a rollback gives the number back, so numbers stay gapless on success.
pub async fn insert(
    tx: &mut PgConnection,
    id: Uuid,
    org: Uuid,
    source_key: Option<&str>,
    input: &InvoiceInput,
) -> sqlx::Result<Invoice> {
    let total = input.total_cents();
    let positions: Vec<i16> = (1..=input.lines.len() as i16).collect();
    let descriptions: Vec<String> = input.lines.iter().map(|l| l.description.clone()).collect();
    let quantities: Vec<i32> = input.lines.iter().map(|l| l.quantity as i32).collect();
    let amounts: Vec<i64> = input.lines.iter().map(|l| l.unit_amount_cents).collect();
    // One statement, one round trip: the org's next number, the invoice, its lines. The counter's
    // row lock serialises numbering per org until commit (a rollback gives the number back); claims
    // on other keys are not blocked, and the org row itself is never written here. The lines'
    // foreign key is checked at the end of the statement, when the invoice row exists.
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        with counter as (
            insert into invoice_counters (org_id, last_number) values ($2::uuid, 1)
            on conflict (org_id) do update set last_number = invoice_counters.last_number + 1
            returning last_number
        ), invoice as (
            insert into invoices (id, org_id, number, customer_name, customer_email, currency,
                                  due_date, total_cents, source_key)
            select $1::uuid, $2::uuid, last_number, $3::text, $4::text, $5::text, $6::date,
                   $7::int8, $8::text
            from counter
            returning number, created_at
        ), lines as (
            insert into invoice_lines (invoice_id, position, description, quantity, unit_amount_cents)
            select $1::uuid, * from unnest($9::int2[], $10::text[], $11::int4[], $12::int8[])
        )
        select number as "number!", created_at as "created_at!: DateTime<Utc>" from invoice
        "#,
        id,
        org,
        input.customer_name,
        input.customer_email,
        input.currency,
        input.due_date as _,
        total,
        source_key,
        &positions,
        &descriptions,
        &quantities,
        &amounts,
    )
    .fetch_one(&mut *tx)
    .await?;
    let (number, created_at) = (row.number, row.created_at);

    Ok(Invoice {
        id,
        number: invoice_number(number),
        status: InvoiceStatus::Open,
        customer_name: input.customer_name.clone(),
        customer_email: input.customer_email.clone(),
        currency: input.currency.clone(),
        due_date: input.due_date,
        lines: input
            .lines
            .iter()
            .map(|l| InvoiceLine {
                description: l.description.clone(),
                quantity: l.quantity,
                unit_amount_cents: l.unit_amount_cents,
                amount_cents: l.quantity * l.unit_amount_cents,
            })
            .collect(),
        total_cents: total,
        amount_paid_cents: 0,
        payment_state: PaymentState::Unpaid,
        created_at,
    })
}

/// Newest first. Scoped to `org`.
pub async fn list(
    db: impl PgExecutor<'_>,
    org: Uuid,
    limit: i64,
) -> sqlx::Result<Vec<InvoiceSummary>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select id, number, status, customer_name, currency, due_date as "due_date: NaiveDate",
               total_cents, amount_paid_cents, payment_state,
               created_at as "created_at: DateTime<Utc>"
        from invoices
        where org_id = $1
        order by created_at desc, number desc
        limit $2
        "#,
        org,
        limit
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| InvoiceSummary {
            id: r.id,
            number: invoice_number(r.number),
            status: InvoiceStatus::parse(&r.status).unwrap_or(InvoiceStatus::Open),
            customer_name: r.customer_name,
            currency: r.currency,
            due_date: r.due_date,
            total_cents: r.total_cents,
            amount_paid_cents: r.amount_paid_cents,
            payment_state: PaymentState::parse(&r.payment_state).unwrap_or(PaymentState::Unpaid),
            created_at: r.created_at,
        })
        .collect())
}

/// Whether invoice `id` belongs to `org`.
pub async fn exists(conn: &mut PgConnection, org: Uuid, id: Uuid) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let found = sqlx::query_scalar!(
        r#"select true as "found!" from invoices where id = $1 and org_id = $2"#,
        id,
        org
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(found.is_some())
}

/// The invoice a surface created under `source_key` (its business key, e.g. `form:<uuid>`).
pub async fn id_by_source_key(
    db: impl PgExecutor<'_>,
    org: Uuid,
    source_key: &str,
) -> sqlx::Result<Uuid> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        "select id from invoices where org_id = $1 and source_key = $2",
        org,
        source_key
    )
    .fetch_one(db)
    .await
}

/// One invoice of `org`, or None, also when it belongs to another org (callers answer 404).
pub async fn get(conn: &mut PgConnection, org: Uuid, id: Uuid) -> sqlx::Result<Option<Invoice>> {
    Ok(fetch(conn, org, Some(id), 1).await?.pop())
}

/// Newest first, with lines (the API's list).
pub async fn list_full(
    conn: &mut PgConnection,
    org: Uuid,
    limit: i64,
) -> sqlx::Result<Vec<Invoice>> {
    fetch(conn, org, None, limit).await
}

struct InvoiceRow {
    id: Uuid,
    number: i32,
    status: String,
    customer_name: String,
    customer_email: String,
    currency: String,
    due_date: NaiveDate,
    total_cents: i64,
    amount_paid_cents: i64,
    payment_state: String,
    created_at: DateTime<Utc>,
}

/// Invoices of `org` with their lines, newest first; `only` narrows to one id. Two queries whatever
/// the count; one statement per case (not `$2 is null or id = $2`), so each keeps a generic plan
/// on its own index.
async fn fetch(
    conn: &mut PgConnection,
    org: Uuid,
    only: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<Invoice>> {
    let rows = match only {
        // language=PostgreSQL
        Some(id) => {
            sqlx::query_as!(
                InvoiceRow,
                r#"
            select id, number, status, customer_name, customer_email, currency,
                   due_date as "due_date: NaiveDate", total_cents, amount_paid_cents,
                   payment_state, created_at as "created_at: DateTime<Utc>"
            from invoices
            where id = $2 and org_id = $1
            limit $3
            "#,
                org,
                id,
                limit
            )
            .fetch_all(&mut *conn)
            .await?
        }
        // language=PostgreSQL
        None => {
            sqlx::query_as!(
                InvoiceRow,
                r#"
            select id, number, status, customer_name, customer_email, currency,
                   due_date as "due_date: NaiveDate", total_cents, amount_paid_cents,
                   payment_state, created_at as "created_at: DateTime<Utc>"
            from invoices
            where org_id = $1
            order by created_at desc, number desc
            limit $2
            "#,
                org,
                limit
            )
            .fetch_all(&mut *conn)
            .await?
        }
    };
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    // language=PostgreSQL
    let lines = sqlx::query!(
        r#"
        select invoice_id, description, quantity, unit_amount_cents
        from invoice_lines
        where invoice_id = any($1)
        order by invoice_id, position
        "#,
        &ids
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut by_invoice: std::collections::HashMap<Uuid, Vec<InvoiceLine>> = Default::default();
    for l in lines {
        by_invoice
            .entry(l.invoice_id)
            .or_default()
            .push(InvoiceLine {
                description: l.description,
                quantity: l.quantity as i64,
                unit_amount_cents: l.unit_amount_cents,
                amount_cents: l.quantity as i64 * l.unit_amount_cents,
            });
    }
    Ok(rows
        .into_iter()
        .map(|r| Invoice {
            id: r.id,
            number: invoice_number(r.number),
            status: InvoiceStatus::parse(&r.status).unwrap_or(InvoiceStatus::Open),
            customer_name: r.customer_name,
            customer_email: r.customer_email,
            currency: r.currency,
            due_date: r.due_date,
            lines: by_invoice.remove(&r.id).unwrap_or_default(),
            total_cents: r.total_cents,
            amount_paid_cents: r.amount_paid_cents,
            payment_state: PaymentState::parse(&r.payment_state).unwrap_or(PaymentState::Unpaid),
            created_at: r.created_at,
        })
        .collect())
}

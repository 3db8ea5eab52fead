//! Invoices: the business writes and reads. These functions take an open connection or transaction
//! and do not know which surface called them.

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::model::{
    Invoice, InvoiceInput, InvoiceLine, InvoiceStatus, InvoiceSummary, PaymentState,
};

/// A fresh public-page token: two random (v4) UUIDs, 244 random bits, as 64 hex characters.
pub fn mint_public_token() -> String {
    format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple())
}

/// The customer's page of an invoice whose token is `token`.
pub fn public_url(base: &str, token: &str) -> String {
    format!("{base}/i/{token}")
}

/// Inserts invoice `id` (minted by the caller with `Uuid::now_v7()`, so a claim can name it before
/// the insert) and its lines: a draft when `input.draft`, else finalized at once with the org's next
/// number. Call it inside the transaction that claimed the attempt: a rollback gives the number back,
/// so numbers stay gapless on success.
pub async fn insert(
    tx: &mut PgConnection,
    id: Uuid,
    org: Uuid,
    source_key: Option<&str>,
    input: &InvoiceInput,
    public_base: &str,
) -> sqlx::Result<Invoice> {
    let total = input.total_cents();
    let positions: Vec<i16> = (1..=input.lines.len() as i16).collect();
    let descriptions: Vec<String> = input.lines.iter().map(|l| l.description.clone()).collect();
    let quantities: Vec<i32> = input.lines.iter().map(|l| l.quantity as i32).collect();
    let amounts: Vec<i64> = input.lines.iter().map(|l| l.unit_amount_cents).collect();
    let token = (!input.draft).then(mint_public_token);
    // One statement, one round trip: for a finalized invoice the org's next number in its format (a
    // draft takes none), the invoice, its lines. The counter's row lock serialises numbering per org
    // and period until commit (a rollback gives the number back); claims on other keys are not
    // blocked, and the org row is only read. The lines' foreign key is checked at the end of the
    // statement, when the invoice row exists.
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        with org as (
            select number_format, number_reset,
                   extract(year from now() at time zone time_zone)::int as yr
            from orgs where id = $2::uuid and $13::text is not null
        ), counter as (
            insert into invoice_counters (org_id, period, last_number)
            select $2::uuid, case when number_reset = 'yearly' then yr else 0 end, 1 from org
            on conflict (org_id, period) do update set last_number = invoice_counters.last_number + 1
            returning period, last_number
        ), invoice as (
            insert into invoices (id, org_id, status, number, number_period, number_text,
                                  public_token, finalized_at, customer_name, customer_email,
                                  currency, due_date, total_cents, source_key)
            select $1::uuid, $2::uuid, case when c.last_number is null then 'draft' else 'open' end,
                   c.last_number, c.period, invoice_number_text(org.number_format, c.last_number, org.yr),
                   $13::text, case when c.last_number is not null then now() end,
                   $3::text, $4::text, $5::text, $6::date, $7::int8, $8::text
            from (select) one left join counter c on true left join org on true
            returning number_text, finalized_at, created_at
        ), lines as (
            insert into invoice_lines (invoice_id, position, description, quantity, unit_amount_cents)
            select $1::uuid, * from unnest($9::int2[], $10::text[], $11::int4[], $12::int8[])
        )
        select number_text, finalized_at as "finalized_at: DateTime<Utc>",
               created_at as "created_at!: DateTime<Utc>",
               $13::text is not null and $6::date < (select (now() at time zone o.time_zone)::date
                                                     from orgs o where o.id = $2::uuid)
                   as "overdue!"
        from invoice
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
        token,
    )
    .fetch_one(&mut *tx)
    .await?;

    Ok(Invoice {
        id,
        number: row.number_text,
        status: if input.draft {
            InvoiceStatus::Draft
        } else {
            InvoiceStatus::Open
        },
        version: 1,
        customer_id: None,
        customer_name: input.customer_name.clone(),
        customer_email: input.customer_email.clone(),
        customer_address: String::new(),
        customer_tax_id: None,
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
        overdue: row.overdue,
        public_url: token.map(|t| public_url(public_base, &t)),
        finalized_at: row.finalized_at,
        viewed_at: None,
        created_at: row.created_at,
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
        select i.id, i.number_text, i.status, i.customer_name, i.currency,
               i.due_date as "due_date: NaiveDate", i.total_cents, i.amount_paid_cents,
               i.payment_state, i.created_at as "created_at: DateTime<Utc>",
               i.status in ('open', 'uncollectible')
                   and i.due_date < (now() at time zone o.time_zone)::date as "overdue!"
        from invoices i join orgs o on o.id = i.org_id
        where i.org_id = $1
        order by i.created_at desc, i.id desc
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
            number: r.number_text,
            status: InvoiceStatus::parse(&r.status).unwrap_or(InvoiceStatus::Open),
            customer_name: r.customer_name,
            currency: r.currency,
            due_date: r.due_date,
            total_cents: r.total_cents,
            amount_paid_cents: r.amount_paid_cents,
            payment_state: PaymentState::parse(&r.payment_state).unwrap_or(PaymentState::Unpaid),
            overdue: r.overdue,
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
pub async fn get(
    conn: &mut PgConnection,
    org: Uuid,
    id: Uuid,
    public_base: &str,
) -> sqlx::Result<Option<Invoice>> {
    Ok(fetch(conn, org, Some(id), 1, public_base).await?.pop())
}

/// Newest first, with lines (the API's list).
pub async fn list_full(
    conn: &mut PgConnection,
    org: Uuid,
    limit: i64,
    public_base: &str,
) -> sqlx::Result<Vec<Invoice>> {
    fetch(conn, org, None, limit, public_base).await
}

struct InvoiceRow {
    id: Uuid,
    number_text: Option<String>,
    status: String,
    version: i32,
    customer_id: Option<Uuid>,
    customer_name: String,
    customer_email: String,
    customer_address: String,
    customer_tax_id: Option<String>,
    currency: String,
    due_date: NaiveDate,
    total_cents: i64,
    amount_paid_cents: i64,
    payment_state: String,
    overdue: bool,
    public_token: Option<String>,
    finalized_at: Option<DateTime<Utc>>,
    first_viewed_at: Option<DateTime<Utc>>,
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
    public_base: &str,
) -> sqlx::Result<Vec<Invoice>> {
    let rows = match only {
        // language=PostgreSQL
        Some(id) => {
            sqlx::query_as!(
                InvoiceRow,
                r#"
            select i.id, i.number_text, i.status, i.version, i.customer_id, i.customer_name,
                   i.customer_email, i.customer_address, i.customer_tax_id, i.currency,
                   i.due_date as "due_date: NaiveDate", i.total_cents, i.amount_paid_cents,
                   i.payment_state,
                   i.status in ('open', 'uncollectible')
                       and i.due_date < (now() at time zone o.time_zone)::date as "overdue!",
                   i.public_token, i.finalized_at as "finalized_at: DateTime<Utc>",
                   i.first_viewed_at as "first_viewed_at: DateTime<Utc>",
                   i.created_at as "created_at: DateTime<Utc>"
            from invoices i join orgs o on o.id = i.org_id
            where i.id = $2 and i.org_id = $1
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
            select i.id, i.number_text, i.status, i.version, i.customer_id, i.customer_name,
                   i.customer_email, i.customer_address, i.customer_tax_id, i.currency,
                   i.due_date as "due_date: NaiveDate", i.total_cents, i.amount_paid_cents,
                   i.payment_state,
                   i.status in ('open', 'uncollectible')
                       and i.due_date < (now() at time zone o.time_zone)::date as "overdue!",
                   i.public_token, i.finalized_at as "finalized_at: DateTime<Utc>",
                   i.first_viewed_at as "first_viewed_at: DateTime<Utc>",
                   i.created_at as "created_at: DateTime<Utc>"
            from invoices i join orgs o on o.id = i.org_id
            where i.org_id = $1
            order by i.created_at desc, i.id desc
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
            number: r.number_text,
            status: InvoiceStatus::parse(&r.status).unwrap_or(InvoiceStatus::Open),
            version: r.version,
            customer_id: r.customer_id,
            customer_name: r.customer_name,
            customer_email: r.customer_email,
            customer_address: r.customer_address,
            customer_tax_id: r.customer_tax_id,
            currency: r.currency,
            due_date: r.due_date,
            lines: by_invoice.remove(&r.id).unwrap_or_default(),
            total_cents: r.total_cents,
            amount_paid_cents: r.amount_paid_cents,
            payment_state: PaymentState::parse(&r.payment_state).unwrap_or(PaymentState::Unpaid),
            overdue: r.overdue,
            public_url: r.public_token.map(|t| public_url(public_base, &t)),
            finalized_at: r.finalized_at,
            viewed_at: r.first_viewed_at,
            created_at: r.created_at,
        })
        .collect())
}

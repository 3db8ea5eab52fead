//! Reports: the aging of what customers owe, per customer and currency, from the open invoices
//! (`invoices_org_unpaid_due_idx`), on the org's date.

use chrono::NaiveDate;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::model::reports::{AgingReport, AgingRow};

/// The most rows a report lists (an org with more debtors gets the biggest).
pub const MAX_ROWS: i64 = 10_000;

/// `org`'s aging report: its biggest `limit` rows, or every row (the dashboard's sums).
pub async fn aging(
    conn: &mut PgConnection,
    org: Uuid,
    limit: Option<i64>,
) -> sqlx::Result<AgingReport> {
    // language=PostgreSQL
    let today = sqlx::query_scalar!(
        r#"select (now() at time zone time_zone)::date as "today!: NaiveDate" from orgs where id = $1"#,
        org
    )
    .fetch_one(&mut *conn)
    .await?;
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        with open as (
            select customer_id, customer_name, lower(customer_email) as email, currency, due_date,
                   total_cents - amount_credited_cents - amount_paid_cents as due,
                   $2::date - due_date as late
            from invoices
            where org_id = $1 and status in ('open', 'uncollectible')
        )
        select customer_id, min(customer_name) as "name!", min(email) as "email!",
               currency as "currency!",
               coalesce(sum(due) filter (where late <= 0), 0)::bigint as "current!",
               coalesce(sum(due) filter (where late between 1 and 30), 0)::bigint as "d30!",
               coalesce(sum(due) filter (where late between 31 and 60), 0)::bigint as "d60!",
               coalesce(sum(due) filter (where late between 61 and 90), 0)::bigint as "d90!",
               coalesce(sum(due) filter (where late > 90), 0)::bigint as "older!",
               sum(due)::bigint as "total!", count(*) as "invoices!",
               min(due_date) as "oldest!: NaiveDate"
        from open where due > 0
        group by customer_id, case when customer_id is null then email end, currency
        order by 10 desc, 2
        limit $3
        "#,
        org,
        today as _,
        limit,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(AgingReport {
        today,
        data: rows
            .into_iter()
            .map(|r| AgingRow {
                customer_id: r.customer_id,
                name: r.name,
                email: r.email,
                currency: r.currency,
                current_cents: r.current,
                days_1_30_cents: r.d30,
                days_31_60_cents: r.d60,
                days_61_90_cents: r.d90,
                over_90_cents: r.older,
                total_cents: r.total,
                invoices: r.invoices,
                oldest_due: r.oldest,
            })
            .collect(),
    })
}

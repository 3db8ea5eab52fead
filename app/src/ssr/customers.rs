//! Customers: the business writes and reads, scoped to their org.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::model::{Customer, CustomerInput};

struct Row {
    id: Uuid,
    name: String,
    email: String,
    billing_address: String,
    tax_id: Option<String>,
    notes: String,
    created_at: DateTime<Utc>,
}

impl From<Row> for Customer {
    fn from(r: Row) -> Self {
        Customer {
            id: r.id,
            name: r.name,
            email: r.email,
            billing_address: r.billing_address,
            tax_id: r.tax_id,
            notes: r.notes,
            created_at: r.created_at,
        }
    }
}

/// Inserts customer `id` (minted by the caller, so a claim can name it) of `org`.
pub async fn insert(
    tx: &mut PgConnection,
    id: Uuid,
    org: Uuid,
    input: &CustomerInput,
) -> sqlx::Result<Customer> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Row,
        r#"
        insert into customers (id, org_id, name, email, billing_address, tax_id, notes)
        values ($1, $2, $3, $4, $5, $6, $7)
        returning id, name, email, billing_address, tax_id, notes,
                  created_at as "created_at: DateTime<Utc>"
        "#,
        id,
        org,
        input.name.trim(),
        input.email.trim(),
        input.billing_address,
        input
            .tax_id
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty()),
        input.notes,
    )
    .fetch_one(&mut *tx)
    .await?;
    Ok(row.into())
}

/// `org`'s customer `id`, or None (also for another org's).
pub async fn get(pool: &PgPool, org: Uuid, id: Uuid) -> sqlx::Result<Option<Customer>> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Row,
        r#"
        select id, name, email, billing_address, tax_id, notes,
               created_at as "created_at: DateTime<Utc>"
        from customers where org_id = $1 and id = $2
        "#,
        org,
        id
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(Into::into))
}

/// `org`'s customers, newest first, or those whose name or email starts with `search`
/// (case-insensitive, from the indexes on `lower(name)` and `lower(email)`).
pub async fn list(
    pool: &PgPool,
    org: Uuid,
    search: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<Customer>> {
    let rows = match search.map(str::trim).filter(|s| !s.is_empty()) {
        None => {
            // language=PostgreSQL
            sqlx::query_as!(
                Row,
                r#"
                select id, name, email, billing_address, tax_id, notes,
                       created_at as "created_at: DateTime<Utc>"
                from customers where org_id = $1
                order by created_at desc, id desc
                limit $2
                "#,
                org,
                limit
            )
            .fetch_all(pool)
            .await?
        }
        Some(text) => {
            let prefix = format!(
                "{}%",
                text.to_lowercase()
                    .replace('\\', "\\\\")
                    .replace('%', "\\%")
                    .replace('_', "\\_")
            );
            // language=PostgreSQL
            sqlx::query_as!(
                Row,
                r#"
                select id, name, email, billing_address, tax_id, notes,
                       created_at as "created_at: DateTime<Utc>"
                from customers
                where org_id = $1 and (lower(name) like $2 or lower(email) like $2)
                order by lower(name), id
                limit $3
                "#,
                org,
                prefix,
                limit
            )
            .fetch_all(pool)
            .await?
        }
    };
    Ok(rows.into_iter().map(Into::into).collect())
}

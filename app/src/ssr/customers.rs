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

/// The tax id as stored: trimmed, and none when blank.
fn tax_id(input: &CustomerInput) -> Option<&str> {
    input
        .tax_id
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// Inserts customer `id` (minted by the caller, so a claim can name it) of `org`; `source_key`
/// names the attempt (unique per org) when a form made it.
pub async fn insert(
    tx: &mut PgConnection,
    id: Uuid,
    org: Uuid,
    source_key: Option<&str>,
    input: &CustomerInput,
) -> sqlx::Result<Customer> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Row,
        r#"
        insert into customers (id, org_id, source_key, name, email, billing_address, tax_id, notes)
        values ($1, $2, $8, $3, $4, $5, $6, $7)
        returning id, name, email, billing_address, tax_id, notes,
                  created_at as "created_at: DateTime<Utc>"
        "#,
        id,
        org,
        input.name.trim(),
        input.email.trim(),
        input.billing_address,
        tax_id(input),
        input.notes,
        source_key,
    )
    .fetch_one(&mut *tx)
    .await?;
    Ok(row.into())
}

/// Replaces customer `id`'s details; None when `org` has no such customer. Invoices already
/// finalized keep the details they were finalized with; drafts pick the new ones up at finalization.
pub async fn update(
    tx: &mut PgConnection,
    org: Uuid,
    id: Uuid,
    input: &CustomerInput,
) -> sqlx::Result<Option<Customer>> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Row,
        r#"
        update customers
        set name = $3, email = $4, billing_address = $5, tax_id = $6, notes = $7, updated_at = now()
        where org_id = $1 and id = $2
        returning id, name, email, billing_address, tax_id, notes,
                  created_at as "created_at: DateTime<Utc>"
        "#,
        org,
        id,
        input.name.trim(),
        input.email.trim(),
        input.billing_address,
        tax_id(input),
        input.notes,
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(row.map(Into::into))
}

/// The customer a form created under `source_key`.
pub async fn id_by_source_key(pool: &PgPool, org: Uuid, source_key: &str) -> sqlx::Result<Uuid> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        "select id from customers where org_id = $1 and source_key = $2",
        org,
        source_key
    )
    .fetch_one(pool)
    .await
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
            let prefix = crate::ssr::like_prefix(&text.to_lowercase());
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

/// An invoice that names one of `org`'s customers takes that customer's name and email (the rest
/// is copied at finalization). A customer of another org, or none, is a field error, before anything
/// is claimed.
pub async fn fill_invoice(
    pool: &PgPool,
    org: Uuid,
    customer: Option<Uuid>,
    name: &mut String,
    email: &mut String,
) -> Result<(), crate::ssr::invoice_error::InvoiceError> {
    let Some(id) = customer else {
        return Ok(());
    };
    match get(pool, org, id).await? {
        Some(c) => {
            *name = c.name;
            *email = c.email;
            Ok(())
        }
        None => Err(crate::ssr::invoice_error::InvoiceError::field(
            "customer_id",
            "Choose one of your customers.",
        )),
    }
}

/// Why a customer edit cannot be saved; each surface answers it its own way.
#[derive(Debug, thiserror::Error)]
pub enum CustomerError {
    /// The result is not a customer (serde's reason).
    #[error("not a customer: {0}")]
    Unreadable(String),
    /// Field → message.
    #[error("invalid customer: {0:?}")]
    Invalid(crate::error::FieldErrors),
}

impl From<CustomerError> for crate::error::AppError {
    fn from(err: CustomerError) -> Self {
        match err {
            CustomerError::Unreadable(reason) => crate::error::AppError::BadRequest(reason),
            CustomerError::Invalid(fields) => crate::error::AppError::invalid(fields),
        }
    }
}

/// `current` with `patch` (a JSON merge patch of its fields) applied, checked as a new one would be.
pub fn patched(
    current: &Customer,
    patch: &serde_json::Value,
) -> Result<CustomerInput, CustomerError> {
    let input = CustomerInput {
        name: current.name.clone(),
        email: current.email.clone(),
        billing_address: current.billing_address.clone(),
        tax_id: current.tax_id.clone(),
        notes: current.notes.clone(),
    };
    let input = crate::ssr::patch::patched(&input, patch).map_err(CustomerError::Unreadable)?;
    input.check().map_err(CustomerError::Invalid)?;
    Ok(input)
}

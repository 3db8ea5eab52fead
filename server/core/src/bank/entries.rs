//! Reading bank entries: by state for the lists, one for an action on it.

use chrono::NaiveDate;
use model::OrgId;
use sqlx::PgExecutor;
use uuid::Uuid;

/// An entry as the API and the pages show it.
pub type Row = model::BankEntry;

/// `org`'s entries in `state`, newest booking first, at most `limit`.
pub async fn list(
    db: impl PgExecutor<'_>,
    org: OrgId,
    state: &str,
    limit: i64,
) -> sqlx::Result<Vec<Row>> {
    // language=PostgreSQL
    sqlx::query_as!(
        Row,
        r#"select id, booked_on as "booked_on: NaiveDate", amount_cents, currency, counterparty,
                  remittance, bank_reference, state, invoice_id
           from bank_entries where org_id = $1 and state = $2
           order by booked_on desc, id desc limit $3"#,
        org as _,
        state,
        limit
    )
    .fetch_all(db)
    .await
}

/// `org`'s entry `id`.
pub async fn get(db: impl PgExecutor<'_>, org: OrgId, id: Uuid) -> sqlx::Result<Option<Row>> {
    // language=PostgreSQL
    sqlx::query_as!(
        Row,
        r#"select id, booked_on as "booked_on: NaiveDate", amount_cents, currency, counterparty,
                  remittance, bank_reference, state, invoice_id
           from bank_entries where org_id = $1 and id = $2"#,
        org as _,
        id
    )
    .fetch_optional(db)
    .await
}

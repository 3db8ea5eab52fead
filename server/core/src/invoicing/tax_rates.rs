//! An org's tax rates: added, listed, archived, and looked up for an invoice's lines. A rate's percent
//! never changes; lines keep the name and percent they were saved with.

use model::OrgId;
use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::invoicing::error::InvoiceError;
use model::error::FieldErrors;
use model::{AppliedTax, InvoiceInput, TaxCategory, TaxRate, TaxRateInput, Thousandths};

/// `org`'s rates, oldest first; archived ones only when `archived`.
pub async fn list(
    db: impl PgExecutor<'_>,
    org: OrgId,
    archived: bool,
) -> sqlx::Result<Vec<TaxRate>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select id, name, percent_milli, category, exemption_reason,
               archived_at is not null as "archived!", created_at as "created_at: DateTime<Utc>"
        from tax_rates
        where org_id = $1 and ($2 or archived_at is null)
        order by created_at, id
        limit 500
        "#,
        org as _,
        archived
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| TaxRate {
            id: r.id,
            name: r.name,
            percent: Thousandths(r.percent_milli.into()),
            category: TaxCategory::parse(&r.category).unwrap_or_default(),
            exemption_reason: r.exemption_reason,
            archived: r.archived,
            created_at: r.created_at,
        })
        .collect())
}

/// Adds rate `id` to `org`; `source_key` names the attempt (unique per org). If that attempt already
/// added one (its claim row lost to retention), that rate is the answer: the write is idempotent by
/// itself.
pub async fn add(
    tx: &mut PgConnection,
    id: Uuid,
    org: OrgId,
    source_key: &str,
    input: &TaxRateInput,
) -> sqlx::Result<TaxRate> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        with added as (
            insert into tax_rates (id, org_id, name, percent_milli, source_key, category,
                                   exemption_reason)
            values ($1, $2, $3, $4, $5, $6, $7)
            on conflict (org_id, source_key) do nothing
            returning id, name, percent_milli, category, exemption_reason, archived_at, created_at
        )
        select id as "id!", name as "name!", percent_milli as "percent_milli!",
               category as "category!", exemption_reason as "exemption_reason!",
               archived_at is not null as "archived!", created_at as "created_at!: DateTime<Utc>"
        from added
        union all
        select id, name, percent_milli, category, exemption_reason, archived_at is not null,
               created_at
        from tax_rates
        where org_id = $2 and source_key = $5 and not exists (select from added)
        "#,
        id,
        org as _,
        input.name.trim(),
        input.percent.0 as i32,
        source_key,
        input.category().code(),
        input.exemption_reason.trim(),
    )
    .fetch_one(&mut *tx)
    .await?;
    Ok(TaxRate {
        id: row.id,
        name: row.name,
        percent: Thousandths(row.percent_milli.into()),
        category: TaxCategory::parse(&row.category).unwrap_or_default(),
        exemption_reason: row.exemption_reason,
        archived: row.archived,
        created_at: row.created_at,
    })
}

/// The rate a surface created under `source_key`.
pub async fn by_source_key(
    db: impl PgExecutor<'_>,
    org: OrgId,
    source_key: &str,
) -> sqlx::Result<Option<Uuid>> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        "select id from tax_rates where org_id = $1 and source_key = $2",
        org as _,
        source_key
    )
    .fetch_optional(db)
    .await
}

/// Archives `org`'s rate `id`: new lines can no longer pick it; lines that have it keep it. True when
/// the rate exists (archived now or before).
pub async fn archive(tx: &mut PgConnection, org: OrgId, id: Uuid) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let found = sqlx::query_scalar!(
        r#"
        update tax_rates set archived_at = coalesce(archived_at, now())
        where org_id = $1 and id = $2
        returning true as "found!"
        "#,
        org as _,
        id
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(found.is_some())
}

/// Whether `id` is one of `org`'s rates, not archived.
pub async fn is_active(db: impl PgExecutor<'_>, org: OrgId, id: Uuid) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let found = sqlx::query_scalar!(
        r#"select true as "found!" from tax_rates where id = $1 and org_id = $2 and archived_at is null"#,
        id,
        org as _
    )
    .fetch_optional(db)
    .await?;
    Ok(found.is_some())
}

/// `org`'s rates among those `input`'s lines name (archived ones too: a draft saved with a rate keeps
/// it). One query, and none when no line is taxed.
async fn named(
    db: impl PgExecutor<'_>,
    org: OrgId,
    input: &InvoiceInput,
) -> sqlx::Result<HashMap<Uuid, AppliedTax>> {
    let wanted: Vec<Uuid> = input.lines.iter().filter_map(|l| l.tax_rate_id).collect();
    if wanted.is_empty() {
        return Ok(HashMap::new());
    }
    // language=PostgreSQL
    let rows = sqlx::query!(
        "select id, name, percent_milli, category, exemption_reason from tax_rates where org_id = $1 and id = any($2)",
        org as _,
        &wanted
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let tax = AppliedTax {
                rate_id: r.id,
                name: r.name,
                percent: Thousandths(r.percent_milli.into()),
                category: TaxCategory::parse(&r.category).unwrap_or_default(),
                exemption_reason: r.exemption_reason,
            };
            (r.id, tax)
        })
        .collect())
}

/// The tax of each of `input`'s lines, read once, in the transaction that writes them: a field error
/// on each line whose rate is not one of `org`'s.
pub async fn of_lines(
    conn: &mut PgConnection,
    org: OrgId,
    input: &InvoiceInput,
) -> Result<Vec<Option<AppliedTax>>, InvoiceError> {
    let found = named(&mut *conn, org, input).await?;
    let mut errors = FieldErrors::new();
    let taxes = (input.lines.iter().enumerate())
        .map(|(index, line)| {
            let tax = line.tax_rate_id.and_then(|id| found.get(&id).cloned());
            if line.tax_rate_id.is_some() && tax.is_none() {
                let field = format!("lines[{index}].tax_rate_id");
                errors.insert(field, "Choose one of your tax rates.".to_owned());
            }
            tax
        })
        .collect();
    if errors.is_empty() {
        Ok(taxes)
    } else {
        Err(InvoiceError::Invalid(errors))
    }
}

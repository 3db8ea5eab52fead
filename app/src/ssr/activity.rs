//! The activity log: every attempt of an org, newest first, with what it produced.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::model::{invoice_number, ActivityCount, ActivityPage, ActivityRow};

pub const PAGE_SIZE: i64 = 50;

#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub surface: Option<String>,
    pub outcome: Option<String>,
    /// Part of a key / event id, or an invoice number.
    pub search: Option<String>,
    pub invoice: Option<Uuid>,
}

/// One page of `org`'s attempts (pages from 0) and the last 24 hours' counts.
pub async fn list(
    pool: &PgPool,
    org: Uuid,
    filter: &Filter,
    page: u32,
) -> sqlx::Result<ActivityPage> {
    let search = filter
        .search
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select a.created_at as "created_at: DateTime<Utc>", a.surface, a.key, a.outcome, a.invoice_id,
               i.number as "number?", a.duration_ms, a.request_id,
               case a.surface
                   when 'webhook' then (select e.payload from stripe_events e
                                        where e.id = a.key and e.org_id = a.org_id limit 1)
                   when 'api' then (select convert_from(c.response_body, 'UTF8') from claims c
                                    where c.scope = 'api' and c.owner = a.owner and c.key = a.key)
               end as "detail?"
        from attempts a
        left join invoices i on i.id = a.invoice_id
        where a.org_id = $1
          and ($2::text is null or a.surface = $2)
          and ($3::text is null or a.outcome = $3)
          and ($4::text is null or a.key ilike '%' || $4 || '%'
               or 'INV-' || lpad(i.number::text, 6, '0') ilike '%' || $4 || '%')
          and ($5::uuid is null or a.invoice_id = $5)
        order by a.created_at desc, a.id desc
        limit $6 offset $7
        "#,
        org,
        filter.surface,
        filter.outcome,
        search,
        filter.invoice,
        PAGE_SIZE + 1,
        i64::from(page) * PAGE_SIZE,
    )
    .fetch_all(pool)
    .await?;
    let has_more = rows.len() as i64 > PAGE_SIZE;
    let rows = rows
        .into_iter()
        .take(PAGE_SIZE as usize)
        .map(|r| ActivityRow {
            created_at: r.created_at,
            surface: r.surface,
            key: r.key,
            outcome: r.outcome,
            invoice_id: r.invoice_id,
            invoice_number: r.number.map(invoice_number),
            duration_ms: r.duration_ms,
            request_id: r.request_id,
            detail: r.detail,
        })
        .collect();
    // language=PostgreSQL
    let counts = sqlx::query!(
        r#"
        select surface, outcome, count(*) as "count!"
        from attempts
        where org_id = $1 and created_at > now() - interval '24 hours'
        group by surface, outcome
        order by surface, outcome
        "#,
        org
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|r| ActivityCount {
        surface: r.surface,
        outcome: r.outcome,
        count: r.count,
    })
    .collect();
    Ok(ActivityPage {
        rows,
        counts,
        page,
        has_more,
    })
}

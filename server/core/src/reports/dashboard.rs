//! The dashboard's figures, each one statement over an index of the org's rows: the open
//! invoices (outstanding, overdue, aging, debtors: the aging report) from
//! `invoices_org_unpaid_due_idx`, what came in
//! this quarter from `payments_org_created_idx`, and twelve months of invoicing from
//! `invoices_org_finalized_idx` and the credit notes of those months.

use model::OrgId;
use std::collections::BTreeMap;

use chrono::{Datelike, NaiveDate};
use sqlx::PgConnection;

use model::dashboard::{Dashboard, Debtor, MonthRevenue, Owed, Received};

pub use crate::reports::quarter_start;

/// The first day of the month eleven months before `date`'s: twelve months with this one.
pub fn twelve_months_from(date: NaiveDate) -> NaiveDate {
    let first = date.with_day(1).expect("a month's first day");
    first - chrono::Months::new(11)
}

/// `org`'s dashboard. What is owed (per currency, by age, and by whom) is the aging report summed:
/// one scan of the open invoices serves the figures, the buckets and the debtors.
pub async fn dashboard(conn: &mut PgConnection, org: OrgId) -> sqlx::Result<Dashboard> {
    let report = crate::reports::aging(conn, org, None).await?;
    let today = report.today;
    let mut owed: BTreeMap<String, Owed> = BTreeMap::new();
    for r in &report.data {
        let o = owed.entry(r.currency.clone()).or_insert_with(|| Owed {
            currency: r.currency.clone(),
            ..Owed::default()
        });
        o.outstanding_cents += r.total_cents;
        o.overdue_cents += r.total_cents - r.current_cents;
        let buckets = [
            r.current_cents,
            r.days_1_30_cents,
            r.days_31_60_cents,
            r.days_61_90_cents,
            r.over_90_cents,
        ];
        for (sum, cents) in o.aging_cents.iter_mut().zip(buckets) {
            *sum += cents;
        }
    }
    // The report is biggest first.
    let debtors = report
        .data
        .iter()
        .take(5)
        .map(|r| Debtor {
            customer_id: r.customer_id,
            name: r.name.clone(),
            currency: r.currency.clone(),
            owed_cents: r.total_cents,
            overdue_cents: r.total_cents - r.current_cents,
            oldest_due: r.oldest_due,
        })
        .collect();
    let owed = owed.into_values().collect();
    let quarter = quarter_start(today);
    let month = today.with_day(1).expect("a month's first day");
    // A payment counts on the day it was paid (a manual one's date, else when Stripe said so):
    // never before it was recorded, so the index's lower bound is exact.
    // language=PostgreSQL
    let received = sqlx::query!(
        r#"
        with paid as (
            select p.currency, p.amount_cents,
                   coalesce(p.paid_on, (p.created_at at time zone o.time_zone)::date) as day
            from payments p join orgs o on o.id = p.org_id
            where p.org_id = $1 and p.status = 'succeeded'
              and p.created_at >= ($2::date::timestamp at time zone o.time_zone)
        )
        select currency as "currency!",
               coalesce(sum(amount_cents) filter (where day >= $3::date), 0)::bigint as "month!",
               coalesce(sum(amount_cents) filter (where day >= $2::date), 0)::bigint as "quarter!"
        from paid group by currency order by currency
        "#,
        org as _,
        quarter as _,
        month as _,
    )
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(|r| Received {
        currency: r.currency,
        this_month_cents: r.month,
        this_quarter_cents: r.quarter,
    })
    .filter(|r| r.this_quarter_cents > 0)
    .collect();
    let from = twelve_months_from(today);
    // language=PostgreSQL
    let revenue = sqlx::query!(
        r#"
        with invoiced as (
            select date_trunc('month', i.finalized_at at time zone o.time_zone)::date as month,
                   i.currency, sum(i.total_cents)::bigint as cents
            from invoices i join orgs o on o.id = i.org_id
            where i.org_id = $1 and i.finalized_at >= ($2::date::timestamp at time zone o.time_zone)
              and i.status <> 'void'
            group by 1, 2
        ), credited as (
            select date_trunc('month', c.created_at at time zone o.time_zone)::date as month,
                   c.currency, sum(c.total_cents)::bigint as cents
            from credit_notes c join orgs o on o.id = c.org_id
            where c.org_id = $1 and c.created_at >= ($2::date::timestamp at time zone o.time_zone)
            group by 1, 2
        )
        select coalesce(i.month, c.month) as "month!: NaiveDate",
               coalesce(i.currency, c.currency) as "currency!",
               coalesce(i.cents, 0)::bigint as "invoiced!", coalesce(c.cents, 0)::bigint as "credited!"
        from invoiced i full join credited c on c.month = i.month and c.currency = i.currency
        order by 1, 2
        "#,
        org as _,
        from as _,
    )
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(|r| MonthRevenue {
        month: r.month,
        currency: r.currency,
        invoiced_cents: r.invoiced,
        credited_cents: r.credited,
    })
    .collect();
    Ok(Dashboard {
        today,
        owed,
        received,
        revenue,
        debtors,
        owed_invoices: report.data.iter().map(|r| r.invoices).sum(),
        as_of: chrono::Utc::now(),
    })
}

/// A dashboard that sums more open invoices than this is kept for [`CACHE_FOR`]: a big org's
/// figures (tens of thousands of open invoices, ~50 ms of Postgres) come from memory between two
/// reads, and a small org's are read afresh every time.
pub const BIG: i64 = 5_000;
/// How long a slow dashboard is kept.
pub const CACHE_FOR: std::time::Duration = std::time::Duration::from_secs(10);
/// Orgs kept at most (beyond it the cache starts over).
const CACHED_ORGS: usize = 10_000;

type Slot = std::sync::Arc<tokio::sync::Mutex<Option<(std::time::Instant, Dashboard)>>>;

static CACHE: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<OrgId, Slot>>> =
    std::sync::LazyLock::new(Default::default);

/// `org`'s dashboard: from the cache when a slow read of it is younger than [`CACHE_FOR`], else
/// read now. Readers of one org wait for one read (the slot's lock), not one read each.
pub async fn cached(pool: &sqlx::PgPool, org: OrgId) -> sqlx::Result<Dashboard> {
    let slot = {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHED_ORGS && !cache.contains_key(&org) {
            cache.clear();
        }
        cache.entry(org).or_default().clone()
    };
    let mut held = slot.lock().await;
    if let Some((at, d)) = held.as_ref() {
        if at.elapsed() < CACHE_FOR {
            return Ok(d.clone());
        }
    }
    let started = std::time::Instant::now();
    let mut conn = pool.acquire().await?;
    let fresh = dashboard(&mut conn, org).await?;
    let summed: i64 = fresh.owed_invoices;
    *held = (summed > BIG).then(|| (started, fresh.clone()));
    Ok(fresh)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quarters_and_twelve_months_start_where_they_should() {
        let d = |y, m, day| NaiveDate::from_ymd_opt(y, m, day).unwrap();
        assert_eq!(quarter_start(d(2026, 12, 5)), d(2026, 10, 1));
        assert_eq!(quarter_start(d(2026, 1, 1)), d(2026, 1, 1));
        assert_eq!(quarter_start(d(2026, 6, 30)), d(2026, 4, 1));
        assert_eq!(twelve_months_from(d(2026, 12, 5)), d(2026, 1, 1));
        assert_eq!(twelve_months_from(d(2026, 3, 31)), d(2025, 4, 1));
    }
}

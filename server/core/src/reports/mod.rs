//! Reports: the aging of what customers owe, per customer and currency, from the open invoices
//! (`invoices_org_unpaid_due_idx`), on the org's date.

pub mod dashboard;
pub mod exports;

use model::OrgId;
use std::collections::BTreeMap;

use chrono::NaiveDate;
use sqlx::PgConnection;

use model::reports::{AgingReport, AgingRow, TaxDocuments, TaxNet, TaxReport, TaxRow};
use model::TaxCategory;

/// The most rows a report lists (an org with more debtors gets the biggest).
pub const MAX_ROWS: i64 = 10_000;

/// `org`'s aging report: its biggest `limit` rows, or every row (the dashboard's sums).
pub async fn aging(
    conn: &mut PgConnection,
    org: OrgId,
    limit: Option<i64>,
) -> sqlx::Result<AgingReport> {
    // language=PostgreSQL
    let today = sqlx::query_scalar!(
        r#"select (now() at time zone time_zone)::date as "today!: NaiveDate" from orgs where id = $1"#,
        org as _
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
        org as _,
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

/// The first day of `date`'s quarter.
pub fn quarter_start(date: NaiveDate) -> NaiveDate {
    use chrono::Datelike;
    let month = (date.month0() / 3) * 3 + 1;
    NaiveDate::from_ymd_opt(date.year(), month, 1).expect("a quarter's first day")
}

/// The period a tax summary covers: `from`..=`to` as typed, or when neither is given the quarter
/// so far (the org's `today`).
pub fn tax_period(
    from: Option<&str>,
    to: Option<&str>,
    today: NaiveDate,
) -> Result<crate::customers::statements::Period, String> {
    let blank = |t: Option<&str>| t.is_none_or(|t| t.trim().is_empty());
    if blank(from) && blank(to) {
        let from = quarter_start(today);
        return Ok(crate::customers::statements::Period { from, to: today });
    }
    crate::customers::statements::Period::parse(from, to, today)
}

/// The rate a tax row sums: its category (None: no tax rate) and percent.
type Rate = (Option<String>, i64);

/// `org`'s tax summary of `period`: per currency and rate, the taxable base and tax of the invoices
/// finalized in it (void ones left out) and of the credit notes issued in it. Invoices sum their
/// lines as stored; a credit note splits what it credits back into each rate's net and tax as its
/// e-invoice does (credited lines at their line's rate, an amount over the invoice's rates in
/// proportion).
pub async fn tax(
    conn: &mut PgConnection,
    org: OrgId,
    period: crate::customers::statements::Period,
) -> sqlx::Result<TaxReport> {
    // language=PostgreSQL
    let invoices = sqlx::query!(
        r#"
        with period as (
            select ($2::date::timestamp at time zone time_zone) as since,
                   (($3::date + 1)::timestamp at time zone time_zone) as until
            from orgs where id = $1
        )
        select i.currency as "currency!", tr.category as "category?",
               coalesce(l.tax_percent_milli, 0)::bigint as "percent!",
               array_remove(array_agg(distinct l.tax_name), null) as "names!",
               sum(l.amount_cents - l.discount_cents)::bigint as "taxable!",
               sum(l.tax_cents)::bigint as "tax!", count(distinct i.id) as "count!"
        from period, invoices i
        join invoice_lines l on l.invoice_id = i.id
        left join tax_rates tr on tr.id = l.tax_rate_id
        where i.org_id = $1 and i.finalized_at >= period.since and i.finalized_at < period.until
          and i.status <> 'void'
        group by 1, 2, 3
        "#,
        org as _,
        period.from as _,
        period.to as _,
    )
    .fetch_all(&mut *conn)
    .await?;
    // One row per credited line, or per rate of the invoice an amount is credited against.
    // language=PostgreSQL
    let credits = sqlx::query!(
        r#"
        with period as (
            select ($2::date::timestamp at time zone time_zone) as since,
                   (($3::date + 1)::timestamp at time zone time_zone) as until
            from orgs where id = $1
        ), notes as (
            select c.id, c.invoice_id, c.currency, c.total_cents,
                   exists (select 1 from credit_note_lines x where x.credit_note_id = c.id) as by_line
            from period, credit_notes c
            where c.org_id = $1 and c.created_at >= period.since and c.created_at < period.until
        )
        select n.id as "id!", n.currency as "currency!", n.total_cents as "total!",
               n.by_line as "by_line!", tr.category as "category?", il.tax_name as "name?",
               coalesce(il.tax_percent_milli, 0)::bigint as "percent!",
               coalesce(tr.exemption_reason, '') as "reason!", cl.amount_cents as "gross!"
        from notes n
        join credit_note_lines cl on cl.credit_note_id = n.id
        join invoice_lines il on il.invoice_id = cl.invoice_id and il.position = cl.position
        left join tax_rates tr on tr.id = il.tax_rate_id
        where n.by_line
        union all
        select n.id, n.currency, n.total_cents, false, tr.category, il.tax_name,
               coalesce(il.tax_percent_milli, 0)::bigint, coalesce(tr.exemption_reason, ''),
               sum(il.amount_cents - il.discount_cents + il.tax_cents)::bigint
        from notes n
        join invoice_lines il on il.invoice_id = n.invoice_id
        left join tax_rates tr on tr.id = il.tax_rate_id
        where not n.by_line
        group by n.id, n.currency, n.total_cents, tr.category, il.tax_name, il.tax_percent_milli,
                 tr.exemption_reason
        order by 1
        "#,
        org as _,
        period.from as _,
        period.to as _,
    )
    .fetch_all(&mut *conn)
    .await?;

    let mut rows: BTreeMap<Key, TaxRow> = BTreeMap::new();
    for r in invoices {
        let row = tax_row(
            &mut rows,
            (r.currency, TaxDocuments::Invoices, (r.category, r.percent)),
        );
        row.names = r.names;
        row.taxable_cents = r.taxable;
        row.tax_cents = r.tax;
        row.count = r.count;
    }
    // Credit notes, one at a time (the rows come grouped by credit note).
    for note in credits.chunk_by(|a, b| a.id == b.id) {
        // Each part: the rate it is reported under, its name, its gross.
        let mut parts: Vec<(Rate, Option<String>, i64)> = Vec::new();
        if note[0].by_line {
            for c in note {
                parts.push(((c.category.clone(), c.percent), c.name.clone(), c.gross));
            }
        } else {
            // An amount: over the invoice's rates, grouped and ordered as the e-invoice's VAT
            // groups (its last share takes the rounding).
            let mut groups: BTreeMap<TaxSort, (Rate, Option<String>, i64)> = BTreeMap::new();
            for c in note {
                let category = c.category.as_deref().and_then(TaxCategory::parse);
                let sort = (
                    category.unwrap_or(TaxCategory::O),
                    c.percent,
                    c.reason.clone(),
                );
                let group = groups.entry(sort).or_insert((
                    (c.category.clone(), c.percent),
                    c.name.clone(),
                    0,
                ));
                group.2 += c.gross;
            }
            let weights: Vec<i64> = groups.values().map(|g| g.2).collect();
            let shares = crate::documents::einvoice::spread(note[0].total, &weights);
            for ((rate, name, _), share) in groups.into_values().zip(shares) {
                parts.push((rate, name, share));
            }
        }
        let mut seen: Vec<Rate> = Vec::new();
        for (rate, name, gross) in parts {
            let net = crate::documents::einvoice::net_of(gross, rate.1);
            let first = !seen.contains(&rate);
            seen.push(rate.clone());
            let row = tax_row(
                &mut rows,
                (note[0].currency.clone(), TaxDocuments::CreditNotes, rate),
            );
            if let Some(name) = name.filter(|n| !row.names.contains(n)) {
                row.names.push(name);
            }
            row.taxable_cents += net;
            row.tax_cents += gross - net;
            row.count += i64::from(first);
        }
    }
    let mut net: BTreeMap<String, TaxNet> = BTreeMap::new();
    for row in rows.values() {
        let sign = match row.documents {
            TaxDocuments::Invoices => 1,
            TaxDocuments::CreditNotes => -1,
        };
        let n = net.entry(row.currency.clone()).or_insert_with(|| TaxNet {
            currency: row.currency.clone(),
            taxable_cents: 0,
            tax_cents: 0,
        });
        n.taxable_cents += sign * row.taxable_cents;
        n.tax_cents += sign * row.tax_cents;
    }
    Ok(TaxReport {
        from: period.from,
        to: period.to,
        data: rows.into_values().collect(),
        net: net.into_values().collect(),
    })
}

/// How the e-invoice orders its VAT groups (an amount's last share takes the rounding).
type TaxSort = (TaxCategory, i64, String);

type Key = (String, TaxDocuments, Rate);

/// The row of `key`, empty when new.
fn tax_row(rows: &mut BTreeMap<Key, TaxRow>, key: Key) -> &mut TaxRow {
    rows.entry(key.clone()).or_insert_with(|| TaxRow {
        currency: key.0,
        documents: key.1,
        category: key.2 .0,
        percent_milli: key.2 .1,
        names: Vec::new(),
        taxable_cents: 0,
        tax_cents: 0,
        count: 0,
    })
}

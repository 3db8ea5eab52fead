//! A customer's statement over a period, read from `customer_entries()`: the balance each currency
//! opened with (everything before the period, summed by the database), then the period's entries
//! oldest first with the balance running. Bounded: at most [`MAX_DAYS`] long and [`MAX_ENTRIES`]
//! listed, so a public link costs two indexed statements whatever the customer's history.

use chrono::{DateTime, NaiveDate, Utc};
use model::CustomerId;
use model::OrgId;
use sqlx::PgConnection;
use uuid::Uuid;

use model::statement::{MAX_DAYS, MAX_ENTRIES};
use model::{describe, Statement, StatementEntry, StatementSection};

/// A period a statement can cover: `from` ≤ `to`, at most [`MAX_DAYS`] long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub from: NaiveDate,
    pub to: NaiveDate,
}

impl Period {
    /// The period `from`..=`to` as typed (`YYYY-MM-DD`; either left out: the year up to `today`),
    /// or what is wrong with it.
    pub fn parse(from: Option<&str>, to: Option<&str>, today: NaiveDate) -> Result<Period, String> {
        let date = |text: Option<&str>, default: NaiveDate| match text.map(str::trim) {
            None | Some("") => Ok(default),
            Some(text) => NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .map_err(|_| format!("{text:.20} is not a date like 2027-01-31.")),
        };
        let to = date(to, today)?;
        let from = date(from, to - chrono::Days::new(364))?;
        if from > to {
            return Err("The period ends before it begins.".into());
        }
        if (to - from).num_days() >= MAX_DAYS {
            return Err(format!("A period covers at most {MAX_DAYS} days."));
        }
        Ok(Period { from, to })
    }
}

/// The customer of `org` whose statement link is `token`: (org, customer). None for a malformed,
/// unknown or replaced token, and for an archived customer's, alike.
pub async fn by_token(conn: &mut PgConnection, token: &str) -> sqlx::Result<Option<(Uuid, Uuid)>> {
    if !crate::invoicing::link_token::well_formed(token) {
        return Ok(None);
    }
    // language=PostgreSQL
    let row = sqlx::query!(
        "select org_id, id from customers where statement_token = $1 and archived_at is null",
        token
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|r| (r.org_id, r.id)))
}

/// The org's date today (a statement's default end).
pub async fn org_today(conn: &mut PgConnection, org: OrgId) -> sqlx::Result<NaiveDate> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"select (now() at time zone time_zone)::date as "today!: NaiveDate" from orgs where id = $1"#,
        org as _
    )
    .fetch_one(&mut *conn)
    .await
}

/// `customer` of `org`'s statement over `period`, with its link's token (none: archived, or no new
/// link made since); None for an unknown customer (or another org's).
pub async fn statement(
    conn: &mut PgConnection,
    org: OrgId,
    customer: CustomerId,
    period: Period,
) -> sqlx::Result<Option<(Statement, Option<String>)>> {
    // language=PostgreSQL
    let Some(who) = sqlx::query!(
        r#"
        select c.name, c.statement_token as "statement_token?", o.name as org_name
        from customers c join orgs o on o.id = c.org_id
        where c.id = $1 and c.org_id = $2
        "#,
        customer as _,
        org as _
    )
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(None);
    };
    // language=PostgreSQL
    let opening = sqlx::query!(
        r#"
        select currency as "currency!", sum(debit - credit)::bigint as "owed!"
        from customer_entries($1, $2)
        where day < $3
        group by currency
        "#,
        org as _,
        customer as _,
        period.from as _,
    )
    .fetch_all(&mut *conn)
    .await?;
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select day as "day!: NaiveDate", kind as "kind!", reference as "reference!",
               detail as "detail!", note as "note!", currency as "currency!", debit as "debit!",
               credit as "credit!"
        from customer_entries($1, $2)
        where day between $3 and $4
        order by day, rank, at, reference
        limit $5
        "#,
        org as _,
        customer as _,
        period.from as _,
        period.to as _,
        MAX_ENTRIES as i64 + 1,
    )
    .fetch_all(&mut *conn)
    .await?;
    let truncated = rows.len() > MAX_ENTRIES;
    let mut sections: Vec<StatementSection> = opening
        .into_iter()
        .filter(|o| o.owed != 0)
        .map(|o| StatementSection {
            currency: o.currency,
            opening_cents: o.owed,
            entries: Vec::new(),
            closing_cents: o.owed,
        })
        .collect();
    for r in rows.into_iter().take(MAX_ENTRIES) {
        let at = match sections.iter().position(|s| s.currency == r.currency) {
            Some(at) => at,
            None => {
                sections.push(StatementSection {
                    currency: r.currency.clone(),
                    opening_cents: 0,
                    entries: Vec::new(),
                    closing_cents: 0,
                });
                sections.len() - 1
            }
        };
        let section = &mut sections[at];
        section.closing_cents += r.debit - r.credit;
        section.entries.push(StatementEntry {
            day: r.day,
            description: describe(&r.kind, &r.detail, &r.note),
            kind: r.kind,
            reference: r.reference,
            debit_cents: r.debit,
            credit_cents: r.credit,
            balance_cents: section.closing_cents,
        });
    }
    sections.sort_by(|a, b| a.currency.cmp(&b.currency));
    Ok(Some((
        Statement {
            org_name: who.org_name,
            customer_name: who.name,
            from: period.from,
            to: period.to,
            sections,
            truncated,
        },
        who.statement_token,
    )))
}

/// A customer's statement link as their page shows it to the owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// None: archived, or unarchived and no new link made since.
    pub token: Option<String>,
    pub archived_at: Option<DateTime<Utc>>,
}

/// `customer` of `org`'s statement link and whether it is archived; None for an unknown customer
/// (or another org's).
pub async fn link(
    conn: &mut PgConnection,
    org: OrgId,
    customer: CustomerId,
) -> sqlx::Result<Option<Link>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select statement_token as "statement_token?",
               archived_at as "archived_at?: DateTime<Utc>"
        from customers where id = $1 and org_id = $2
        "#,
        customer as _,
        org as _
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|r| Link {
        token: r.statement_token,
        archived_at: r.archived_at,
    }))
}

/// Gives `customer` of `org` a new statement link, unless archived: the old token matches nothing
/// from this commit on. The customer's name when it was replaced; None when archived or unknown.
pub async fn replace_link(
    tx: &mut PgConnection,
    org: OrgId,
    customer: CustomerId,
) -> sqlx::Result<Option<String>> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"
        update customers set statement_token = $3, updated_at = now()
        where id = $1 and org_id = $2 and archived_at is null
        returning name
        "#,
        customer as _,
        org as _,
        crate::invoicing::link_token::mint()
    )
    .fetch_optional(&mut *tx)
    .await
}

/// The customer's page of their statement over the default period.
pub fn link_url(base: &str, token: &str) -> String {
    format!("{base}/s/{token}")
}

/// The customer's page of their statement.
pub fn public_url(base: &str, token: &str, period: Period) -> String {
    format!("{base}/s/{token}?from={}&to={}", period.from, period.to)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn a_period_defaults_to_the_year_up_to_today_and_is_bounded() {
        let today = day("2027-03-10");
        assert_eq!(
            Period::parse(None, None, today),
            Ok(Period {
                from: day("2026-03-11"),
                to: today
            })
        );
        let p = Period::parse(Some("2027-01-01"), Some("2027-01-31"), today).unwrap();
        assert_eq!((p.from, p.to), (day("2027-01-01"), day("2027-01-31")));
        assert!(Period::parse(Some("2027-02-01"), Some("2027-01-31"), today).is_err());
        assert!(Period::parse(Some("2000-01-01"), Some("2027-01-31"), today).is_err());
        assert!(Period::parse(Some("31/01/2027"), None, today).is_err());
    }
}

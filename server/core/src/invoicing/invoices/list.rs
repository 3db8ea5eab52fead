//! The invoice list: the owner's filters, the cursor of the next page, and the keyset query of one
//! page (the page and the API share them).

use chrono::{DateTime, NaiveDate, Utc};
use model::OrgId;
use sqlx::PgExecutor;
use uuid::Uuid;

use model::{InvoiceStatus, InvoiceSummary, PaymentState};

/// The owner's filters on the invoice list (the page and the API share them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// A lifecycle status, or `overdue` (open or uncollectible, past due in the org's time zone).
    pub status: Option<String>,
    pub payment_state: Option<String>,
    /// The start of a number (`INV-0000`) or of the customer's name, case-insensitive.
    pub q: Option<String>,
}

/// What a filter refuses, in words for the page and the API.
pub fn check_filter(filter: &ListFilter) -> Result<(), String> {
    if let Some(status) = &filter.status {
        if status != "overdue" && InvoiceStatus::parse(status).is_none() {
            return Err(format!(
                "status must be draft, open, paid, void, uncollectible, refunded or overdue, not {status:?}"
            ));
        }
    }
    if let Some(state) = &filter.payment_state {
        if PaymentState::parse(state).is_none() {
            return Err(format!("payment_state {state:?} is not a payment state"));
        }
    }
    if filter
        .q
        .as_ref()
        .is_some_and(|q| q.chars().count() > 200 || q.contains('\0'))
    {
        return Err("q is at most 200 characters, without NUL".to_owned());
    }
    for value in [&filter.status, &filter.payment_state]
        .into_iter()
        .flatten()
    {
        if value.contains('\0') {
            return Err("filters cannot contain NUL".to_owned());
        }
    }
    Ok(())
}

impl ListFilter {
    /// The overdue filter runs most overdue first; every other list newest first.
    pub fn by_due_date(&self) -> bool {
        self.status.as_deref() == Some("overdue")
    }

    /// The search text, trimmed, when there is any.
    fn search_text(&self) -> Option<&str> {
        self.q.as_deref().map(str::trim).filter(|t| !t.is_empty())
    }
}

/// Where a page of the list starts: strictly after this invoice in the list's order. Newest first
/// (`<micros>.<id>`), or for the overdue filter most overdue first (`d<yyyy-mm-dd>.<id>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListCursor {
    Created { created_at: DateTime<Utc>, id: Uuid },
    Due { due_date: NaiveDate, id: Uuid },
}

impl ListCursor {
    pub fn encode(self) -> String {
        match self {
            ListCursor::Created { created_at, id } => {
                format!("{}.{}", created_at.timestamp_micros(), id.simple())
            }
            ListCursor::Due { due_date, id } => format!("d{due_date}.{}", id.simple()),
        }
    }

    /// A cursor this list gave out for `filter`'s order; `None` for anything else.
    pub fn parse(text: &str, filter: &ListFilter) -> Option<ListCursor> {
        let (key, id) = text.split_once('.')?;
        let id = Uuid::try_parse(id).ok()?;
        match key.strip_prefix('d') {
            Some(date) if filter.by_due_date() => Some(ListCursor::Due {
                due_date: NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()?,
                id,
            }),
            None if !filter.by_due_date() => Some(ListCursor::Created {
                created_at: DateTime::from_timestamp_micros(key.parse().ok()?)?,
                id,
            }),
            _ => None,
        }
    }
}

/// One page of `org`'s invoices, filtered, after `before`; and where the next page starts when there
/// is one. Newest first, except the overdue filter: most overdue first (a collections list), which
/// its index of unpaid invoices by due date reads from the oldest due date and stops at a page, however
/// many invoices are open and not yet due. Pages by key, never by offset, each filter served by an
/// index that leads with the org.
pub async fn page(
    db: impl PgExecutor<'_>,
    org: OrgId,
    filter: &ListFilter,
    before: Option<ListCursor>,
    limit: i64,
) -> sqlx::Result<(Vec<InvoiceSummary>, Option<ListCursor>)> {
    use sqlx::Row;

    let mut q = page_query("", org, filter, before, limit);
    // Prepared and sent in one round trip; the caller runs it on `AppState::reads`, where it is
    // planned once per connection, without its values.
    let rows = q.build().fetch_all(db).await?;
    let more = rows.len() as i64 > limit;
    let by_due_date = filter.by_due_date();
    let mut page = Vec::with_capacity(rows.len());
    for r in rows.into_iter().take(limit as usize) {
        page.push(InvoiceSummary {
            id: r.try_get("id")?,
            number: r.try_get("number_text")?,
            status: r.try_get("status")?,
            customer_name: r.try_get("customer_name")?,
            currency: r.try_get("currency")?,
            due_date: r.try_get("due_date")?,
            total_cents: r.try_get("total_cents")?,
            amount_paid_cents: r.try_get("amount_paid_cents")?,
            payment_state: r.try_get("payment_state")?,
            overdue: r.try_get("overdue")?,
            created_at: r.try_get("created_at")?,
        });
    }
    let next = more
        .then(|| {
            page.last().map(|s| match by_due_date {
                true => ListCursor::Due {
                    due_date: s.due_date,
                    id: s.id,
                },
                false => ListCursor::Created {
                    created_at: s.created_at,
                    id: s.id,
                },
            })
        })
        .flatten();
    Ok((page, next))
}

/// A search that matches more invoices than this walks the list's own index instead of sorting its
/// matches: see [`page_query`].
pub const SEARCH_SORTS_AT_MOST: i64 = 1000;

/// The statement [`page`] sends, after `head` (`""`, or `"explain "` to read its plan in tests).
///
/// A search (a number or customer name prefix) is one statement of two branches, of which Postgres
/// runs one, as its planner would pick between them if it planned each search with its value
/// (which costs more than running it: 0.3-1 ms, and a round trip to describe an unprepared
/// statement). First it counts the matches in the two prefix indexes, up to
/// [`SEARCH_SORTS_AT_MOST`] + 1 each. At most that many: they are read by their prefix ranges and
/// sorted. More: the list's own index is walked in the list's order, keeping the matches, until the
/// page is full (with a thousand matches or more spread over the org's invoices, that stops early;
/// sorting them all would not).
pub fn page_query<'a>(
    head: &str,
    org: OrgId,
    filter: &ListFilter,
    before: Option<ListCursor>,
    limit: i64,
) -> sqlx::QueryBuilder<'a, sqlx::Postgres> {
    let mut q = sqlx::QueryBuilder::new(head);
    let Some(text) = filter.search_text() else {
        push_page(&mut q, org, filter, before, limit, None);
        return q;
    };
    let text = text.to_lowercase();
    let range = crate::search::PrefixRange::new(&text);
    q.push("with probe as materialized (select count(*) as matches from (");
    for (i, expr) in ["lower(number_text)", "lower(customer_name)"]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            q.push(" union all ");
        }
        q.push("(select from invoices where org_id = ")
            .push_bind(org)
            .push(" and ");
        range.push_bounds(&mut q, expr);
        q.push(" limit ")
            .push_bind(SEARCH_SORTS_AT_MOST + 1)
            .push(")");
    }
    q.push(") matched) select * from (");
    for (i, search) in [Search::Sorted(&range), Search::Walked(&text)]
        .into_iter()
        .enumerate()
    {
        q.push(if i > 0 { ") union all (" } else { "(" });
        push_page(&mut q, org, filter, before, limit, Some(search));
    }
    q.push(")) page");
    push_order(&mut q, filter, "", limit);
    q
}

/// How one branch of a search finds its matches.
enum Search<'r> {
    /// By the prefix indexes, when the probe counted few matches.
    Sorted(&'r crate::search::PrefixRange),
    /// Filtered along the list's index (`starts_with` bounds no index scan), when it counted many.
    Walked(&'r str),
}

fn push_page(
    q: &mut sqlx::QueryBuilder<'_, sqlx::Postgres>,
    org: OrgId,
    filter: &ListFilter,
    before: Option<ListCursor>,
    limit: i64,
    search: Option<Search>,
) {
    q.push(
        r#"
        select i.id, i.number_text, i.status, i.customer_name, i.currency, i.due_date, i.total_cents,
               i.amount_paid_cents, i.payment_state, i.created_at,
               invoice_overdue(i.status, i.due_date, o.time_zone) as overdue
        from invoices i join orgs o on o.id = i.org_id
        where i.org_id = "#,
    );
    q.push_bind(org);
    match filter.status.as_deref() {
        Some("overdue") => {
            // invoice_overdue, spelled so that the due date bounds the index scan: today in the
            // org's time zone is a one-time subquery, not a value per row.
            q.push(" and i.status in ('open', 'uncollectible') and i.due_date < (select (now() at time zone time_zone)::date from orgs where id = ")
                .push_bind(org)
                .push(")");
        }
        Some(status) => {
            q.push(" and i.status = ").push_bind(status.to_owned());
        }
        None => {}
    }
    if let Some(state) = &filter.payment_state {
        q.push(" and i.payment_state = ").push_bind(state.clone());
    }
    // Each branch's gate has no column in it: Postgres tests it once, before running the branch.
    match search {
        Some(Search::Sorted(range)) => {
            q.push(" and (select matches from probe) <= ")
                .push_bind(SEARCH_SORTS_AT_MOST)
                .push(" and (");
            range.push_bounds(q, "lower(i.number_text)");
            q.push(" or ");
            range.push_bounds(q, "lower(i.customer_name)");
            q.push(")");
        }
        Some(Search::Walked(text)) => {
            q.push(" and (select matches from probe) > ")
                .push_bind(SEARCH_SORTS_AT_MOST)
                .push(" and (starts_with(lower(i.number_text), ")
                .push_bind(text.to_owned())
                .push(") or starts_with(lower(i.customer_name), ")
                .push_bind(text.to_owned())
                .push("))");
        }
        None => {}
    }
    match before {
        Some(ListCursor::Created { created_at, id }) => {
            q.push(" and (i.created_at, i.id) < (")
                .push_bind(created_at)
                .push(", ")
                .push_bind(id)
                .push(")");
        }
        Some(ListCursor::Due { due_date, id }) => {
            q.push(" and (i.due_date, i.id) > (")
                .push_bind(due_date)
                .push(", ")
                .push_bind(id)
                .push(")");
        }
        None => {}
    }
    push_order(q, filter, "i.", limit);
}

/// ` order by ... limit $n`, the list's order, its columns qualified by `table` (`"i."` or `""`).
fn push_order(
    q: &mut sqlx::QueryBuilder<'_, sqlx::Postgres>,
    filter: &ListFilter,
    table: &str,
    limit: i64,
) {
    q.push(if filter.by_due_date() {
        format!(" order by {table}due_date, {table}id limit ")
    } else {
        format!(" order by {table}created_at desc, {table}id desc limit ")
    })
    .push_bind(limit + 1);
}

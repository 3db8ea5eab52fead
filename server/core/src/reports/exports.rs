//! CSV exports of invoices, their lines, payments, credit notes and customers, a page of rows at a
//! time: the caller writes each page out before it reads the next, so an export of a million
//! invoices holds one page in memory. Pages follow keys, never offsets: invoices and their lines
//! walk the invoice list itself ([`invoices::page`], its filters and order), payments and credit
//! notes go oldest first from the period's start, customers newest first. Each page is its own
//! statement, so a row added during an export may or may not be in it, and none is listed twice.

use chrono::{DateTime, NaiveDate, Utc};
use model::OrgId;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::invoicing::invoices::{self, ListCursor, ListFilter};
use model::{plain_amount, Thousandths};

/// Rows per page (per statement).
pub const PAGE: i64 = 1000;

/// What an export lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Invoices,
    Lines,
    Payments,
    CreditNotes,
    Customers,
}

impl Kind {
    /// `invoices`, `lines`, `payments`, `credit_notes` or `customers`.
    pub fn parse(name: &str) -> Option<Kind> {
        Some(match name {
            "invoices" => Kind::Invoices,
            "lines" => Kind::Lines,
            "payments" => Kind::Payments,
            "credit_notes" => Kind::CreditNotes,
            "customers" => Kind::Customers,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Invoices => "invoices",
            Kind::Lines => "lines",
            Kind::Payments => "payments",
            Kind::CreditNotes => "credit_notes",
            Kind::Customers => "customers",
        }
    }

    /// The file's first record.
    pub fn header(self) -> &'static [&'static str] {
        match self {
            Kind::Invoices => &[
                "id",
                "number",
                "status",
                "payment_state",
                "customer_id",
                "customer_name",
                "customer_email",
                "currency",
                "subtotal",
                "discount",
                "tax",
                "total",
                "paid",
                "credited",
                "due",
                "issued_on",
                "due_date",
                "overdue",
                "created_at",
            ],
            Kind::Lines => &[
                "invoice_id",
                "invoice_number",
                "line_id",
                "description",
                "quantity",
                "unit_price",
                "amount",
                "discount",
                "tax_name",
                "tax_percent",
                "tax",
                "currency",
            ],
            Kind::Payments => &[
                "id",
                "invoice_id",
                "invoice_number",
                "customer_name",
                "provider",
                "method",
                "reference",
                "status",
                "currency",
                "amount",
                "refunded",
                "paid_on",
                "recorded_at",
            ],
            Kind::CreditNotes => &[
                "id",
                "number",
                "invoice_id",
                "invoice_number",
                "customer_name",
                "currency",
                "total",
                "refund",
                "refunded",
                "reason",
                "issued_on",
                "created_at",
            ],
            Kind::Customers => &[
                "id",
                "name",
                "email",
                "address_line1",
                "address_line2",
                "postal_code",
                "city",
                "region",
                "country",
                "vat_id",
                "buyer_reference",
                "locale",
                "created_at",
            ],
        }
    }
}

/// What an export is filtered by: invoices and lines by the invoice list's filters, payments and
/// credit notes by a period of the org's dates (paid / issued), customers by the customer list's
/// search.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub invoices: ListFilter,
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    pub q: Option<String>,
}

/// Where the next page starts.
#[derive(Debug, Clone, Copy)]
pub enum Cursor {
    List(ListCursor),
    /// After this row, in (created_at, id) order: ascending for payments and credit notes,
    /// descending for customers.
    Row(DateTime<Utc>, Uuid),
}

/// `text` safe to open in a spreadsheet: a cell that begins with `=`, `+`, `-`, `@`, a tab or a
/// carriage return gets a leading `'` (OWASP's advice against CSV injection), unless it is a plain
/// decimal number (`-5.00` is an amount, not a formula). The CSV writer applies it to every cell.
pub fn cell(text: &str) -> std::borrow::Cow<'_, str> {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) && !plain_number(text) {
        format!("'{text}").into()
    } else {
        text.into()
    }
}

/// `-12`, `-12.5`: an optional minus, digits, at most one decimal point between digits.
fn plain_number(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, "0"));
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    all_digits(whole) && all_digits(fraction)
}

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// One page of `org`'s export after `after`: its records, and where the next starts (None: done).
pub async fn page(
    conn: &mut PgConnection,
    org: OrgId,
    kind: Kind,
    filter: &Filter,
    after: Option<Cursor>,
) -> sqlx::Result<(Vec<Vec<String>>, Option<Cursor>)> {
    match kind {
        Kind::Invoices | Kind::Lines => {
            let before = match after {
                Some(Cursor::List(c)) => Some(c),
                _ => None,
            };
            let (listed, next) =
                invoices::page(&mut *conn, org, &filter.invoices, before, PAGE).await?;
            let ids: Vec<Uuid> = listed.iter().map(|s| s.id).collect();
            let records = if kind == Kind::Invoices {
                invoice_records(conn, org, &ids).await?
            } else {
                line_records(conn, org, &ids).await?
            };
            Ok((records, next.map(Cursor::List)))
        }
        Kind::Payments => payment_records(conn, org, filter, row_cursor(after)).await,
        Kind::CreditNotes => credit_note_records(conn, org, filter, row_cursor(after)).await,
        Kind::Customers => customer_records(conn, org, filter, row_cursor(after)).await,
    }
}

fn row_cursor(after: Option<Cursor>) -> (Option<DateTime<Utc>>, Option<Uuid>) {
    match after {
        Some(Cursor::Row(at, id)) => (Some(at), Some(id)),
        _ => (None, None),
    }
}

/// One page of records (each row drawn by `record`), and where the next page starts: after the last
/// row, when the page is full.
fn row_page<R>(
    rows: Vec<R>,
    key: impl Fn(&R) -> (DateTime<Utc>, Uuid),
    record: impl FnMut(R) -> Vec<String>,
) -> (Vec<Vec<String>>, Option<Cursor>) {
    let next = (rows.len() as i64 == PAGE)
        .then(|| rows.last().map(&key))
        .flatten()
        .map(|(at, id)| Cursor::Row(at, id));
    (rows.into_iter().map(record).collect(), next)
}

async fn invoice_records(
    conn: &mut PgConnection,
    org: OrgId,
    ids: &[Uuid],
) -> sqlx::Result<Vec<Vec<String>>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select i.id, i.number_text, i.status, i.payment_state, i.customer_id, i.customer_name,
               i.customer_email, i.currency, i.subtotal_cents, i.discount_cents, i.tax_cents,
               i.total_cents, i.amount_paid_cents, i.amount_credited_cents,
               (i.finalized_at at time zone o.time_zone)::date as "issued: NaiveDate",
               i.due_date as "due_date: NaiveDate",
               invoice_overdue(i.status, i.due_date, o.time_zone) as "overdue!",
               i.created_at as "created_at: DateTime<Utc>"
        from unnest($2::uuid[]) with ordinality as listed (id, place)
        join invoices i on i.id = listed.id
        join orgs o on o.id = i.org_id
        where i.org_id = $1
        order by listed.place
        "#,
        org as _,
        ids,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let c = &r.currency;
            let due = if matches!(r.status.as_str(), "open" | "uncollectible") {
                (r.total_cents - r.amount_credited_cents - r.amount_paid_cents).max(0)
            } else {
                0
            };
            vec![
                r.id.to_string(),
                r.number_text.unwrap_or_default(),
                r.status,
                r.payment_state,
                r.customer_id.map(|id| id.to_string()).unwrap_or_default(),
                r.customer_name,
                r.customer_email,
                c.to_uppercase(),
                plain_amount(r.subtotal_cents, c),
                plain_amount(r.discount_cents, c),
                plain_amount(r.tax_cents, c),
                plain_amount(r.total_cents, c),
                plain_amount(r.amount_paid_cents, c),
                plain_amount(r.amount_credited_cents, c),
                plain_amount(due, c),
                r.issued.map(|d| d.to_string()).unwrap_or_default(),
                r.due_date.to_string(),
                r.overdue.to_string(),
                time(r.created_at),
            ]
        })
        .collect())
}

async fn line_records(
    conn: &mut PgConnection,
    org: OrgId,
    ids: &[Uuid],
) -> sqlx::Result<Vec<Vec<String>>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select i.id, i.number_text, i.currency, l.position, l.description, l.quantity_milli,
               l.unit_amount_cents, l.amount_cents, l.discount_cents, l.tax_name,
               l.tax_percent_milli, l.tax_cents
        from unnest($2::uuid[]) with ordinality as listed (id, place)
        join invoices i on i.id = listed.id
        join invoice_lines l on l.invoice_id = i.id
        where i.org_id = $1
        order by listed.place, l.position
        "#,
        org as _,
        ids,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let c = &r.currency;
            vec![
                r.id.to_string(),
                r.number_text.unwrap_or_default(),
                r.position.to_string(),
                r.description,
                Thousandths(r.quantity_milli).to_string(),
                plain_amount(r.unit_amount_cents, c),
                plain_amount(r.amount_cents, c),
                plain_amount(r.discount_cents, c),
                r.tax_name.unwrap_or_default(),
                r.tax_percent_milli
                    .map(|p| Thousandths(i64::from(p)).to_string())
                    .unwrap_or_default(),
                plain_amount(r.tax_cents, c),
                c.to_uppercase(),
            ]
        })
        .collect())
}

async fn payment_records(
    conn: &mut PgConnection,
    org: OrgId,
    filter: &Filter,
    (at, id): (Option<DateTime<Utc>>, Option<Uuid>),
) -> sqlx::Result<(Vec<Vec<String>>, Option<Cursor>)> {
    // A payment is paid on its manual date, else the day it was recorded, never after it was
    // recorded: the period's start bounds the index scan exactly.
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select p.id, p.invoice_id, i.number_text, i.customer_name, p.provider, p.method,
               p.reference, p.status, p.currency, p.amount_cents,
               coalesce(r.amount_refunded_cents, 0) as "refunded!",
               coalesce(p.paid_on, (p.created_at at time zone o.time_zone)::date) as "paid_on!: NaiveDate",
               p.created_at as "created_at: DateTime<Utc>"
        from payments p
        join orgs o on o.id = p.org_id
        join invoices i on i.id = p.invoice_id
        left join refunds r on r.provider = p.provider and r.provider_payment_id = p.provider_payment_id
        where p.org_id = $1
          and ($2::date is null or p.created_at >= ($2::date::timestamp at time zone o.time_zone))
          and ($3::date is null or coalesce(p.paid_on, (p.created_at at time zone o.time_zone)::date) <= $3::date)
          and ($2::date is null or coalesce(p.paid_on, (p.created_at at time zone o.time_zone)::date) >= $2::date)
          and ($4::timestamptz is null or (p.created_at, p.id) > ($4, $5::uuid))
        order by p.created_at, p.id
        limit $6
        "#,
        org as _,
        filter.from as _,
        filter.to as _,
        at as _,
        id,
        PAGE,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(row_page(
        rows,
        |r| (r.created_at, r.id),
        |r| {
            let c = &r.currency;
            vec![
                r.id.to_string(),
                r.invoice_id.to_string(),
                r.number_text.unwrap_or_default(),
                r.customer_name,
                r.provider,
                r.method.unwrap_or_default(),
                r.reference,
                r.status,
                c.to_uppercase(),
                plain_amount(r.amount_cents, c),
                plain_amount(r.refunded, c),
                r.paid_on.to_string(),
                time(r.created_at),
            ]
        },
    ))
}

async fn credit_note_records(
    conn: &mut PgConnection,
    org: OrgId,
    filter: &Filter,
    (at, id): (Option<DateTime<Utc>>, Option<Uuid>),
) -> sqlx::Result<(Vec<Vec<String>>, Option<Cursor>)> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select c.id, c.number_text, c.invoice_id, i.number_text as "invoice_number?",
               i.customer_name, c.currency, c.total_cents, c.refund, c.refunded_cents, c.reason,
               (c.created_at at time zone o.time_zone)::date as "issued_on!: NaiveDate",
               c.created_at as "created_at: DateTime<Utc>"
        from credit_notes c
        join orgs o on o.id = c.org_id
        join invoices i on i.id = c.invoice_id
        where c.org_id = $1
          and ($2::date is null or c.created_at >= ($2::date::timestamp at time zone o.time_zone))
          and ($3::date is null or c.created_at < (($3::date + 1)::timestamp at time zone o.time_zone))
          and ($4::timestamptz is null or (c.created_at, c.id) > ($4, $5::uuid))
        order by c.created_at, c.id
        limit $6
        "#,
        org as _,
        filter.from as _,
        filter.to as _,
        at as _,
        id,
        PAGE,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(row_page(
        rows,
        |r| (r.created_at, r.id),
        |r| {
            let c = &r.currency;
            vec![
                r.id.to_string(),
                r.number_text,
                r.invoice_id.to_string(),
                r.invoice_number.unwrap_or_default(),
                r.customer_name,
                c.to_uppercase(),
                plain_amount(r.total_cents, c),
                r.refund,
                plain_amount(r.refunded_cents, c),
                r.reason,
                r.issued_on.to_string(),
                time(r.created_at),
            ]
        },
    ))
}

async fn customer_records(
    conn: &mut PgConnection,
    org: OrgId,
    filter: &Filter,
    (at, id): (Option<DateTime<Utc>>, Option<Uuid>),
) -> sqlx::Result<(Vec<Vec<String>>, Option<Cursor>)> {
    let prefix = filter
        .q
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(|q| crate::search::like_prefix(&q.to_lowercase()));
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select id, name, email, address_line1, address_line2, postal_code, city, region,
               coalesce(country, '') as "country!", coalesce(vat_id, '') as "vat_id!",
               buyer_reference, coalesce(locale, '') as "locale!",
               created_at as "created_at: DateTime<Utc>"
        from customers
        where org_id = $1
          and ($2::text is null or lower(name) like $2 or lower(email) like $2)
          and ($3::timestamptz is null or (created_at, id) < ($3, $4::uuid))
        order by created_at desc, id desc
        limit $5
        "#,
        org as _,
        prefix,
        at as _,
        id,
        PAGE,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(row_page(
        rows,
        |r| (r.created_at, r.id),
        |r| {
            vec![
                r.id.to_string(),
                r.name,
                r.email,
                r.address_line1,
                r.address_line2,
                r.postal_code,
                r.city,
                r.region,
                r.country,
                r.vat_id,
                r.buyer_reference,
                r.locale,
                time(r.created_at),
            ]
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_neutralised_and_the_rest_is_left_alone() {
        for bad in [
            "=1+1",
            "+1",
            "@SUM(A1)",
            "\tx",
            "\rx",
            "=HYPERLINK(\"http://x\")",
            "-1+2",
            "-1.",
            "--1",
            "-",
            "-1e3",
        ] {
            assert_eq!(cell(bad), format!("'{bad}"), "{bad:?}");
        }
        for fine in ["Acme", "1+1", "a=b", "", "'quoted", "-1", "-5.00", "12"] {
            assert_eq!(cell(fine), fine);
        }
    }

    #[test]
    fn every_kind_is_named_and_parsed_back() {
        for kind in [
            Kind::Invoices,
            Kind::Lines,
            Kind::Payments,
            Kind::CreditNotes,
            Kind::Customers,
        ] {
            assert_eq!(Kind::parse(kind.name()), Some(kind));
        }
        assert_eq!(Kind::parse("orgs"), None);
    }
}

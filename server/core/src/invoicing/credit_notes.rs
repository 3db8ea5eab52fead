//! Credit notes: issued from a finalized invoice for an amount (at most what is left to credit),
//! numbered gapless per org in their own series (the counter row is locked until commit, and a
//! rollback gives the number back), named by the attempt that issued them (their business key, so
//! even a lost claim row cannot issue one twice), and added to the invoice's credited amount, from
//! which the invoice is derived again, all in the caller's transaction.

use chrono::{DateTime, Utc};
use model::CustomerId;
use model::InvoiceId;
use model::OrgId;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::invoicing::link_token;
use crate::payments::{derive, Money};
use model::totals::part_of_line;
use model::{
    CreditLineInput, CreditNote, CreditNoteInput, CreditNoteLine, CreditRefund, InvoiceStatus,
    Thousandths,
};

/// Why a credit note was not issued.
#[derive(Debug, thiserror::Error)]
pub enum CreditError {
    #[error("no such invoice")]
    NotFound,
    /// Drafts (never sent) are edited or deleted; void invoices ask for nothing.
    #[error("a {0} invoice cannot be credited")]
    NotCreditable(InvoiceStatus),
    #[error("at most {creditable} is left to credit on this invoice")]
    TooMuch { creditable: i64 },
    #[error("the invoice has no line {0}")]
    NoSuchLine(i16),
    #[error("at most {left} of line {line} is left to credit")]
    LineTooMuch { line: i16, left: Thousandths },
    /// `refund: stripe` for more than the invoice's card payments have left to refund.
    #[error("at most {refundable} can be refunded through Stripe")]
    RefundTooMuch { refundable: i64 },
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The customer's page of a credit note.
pub fn public_url(base: &str, token: &str) -> String {
    format!("{base}/c/{token}")
}

/// Who credits what: `org`'s `invoice`, as the credit note `id`, named by the attempt `source_key`,
/// issued by the user `by` (None: an API key).
#[derive(Debug, Clone, Copy)]
pub struct Credit<'a> {
    pub org: OrgId,
    pub invoice: InvoiceId,
    pub id: Uuid,
    pub source_key: &'a str,
    pub by: Option<Uuid>,
}

/// Issues the credit note `credit` of `input` and derives the invoice again. A repeat of the
/// attempt returns the credit note it issued.
pub async fn issue(
    tx: &mut PgConnection,
    credit: &Credit<'_>,
    input: &CreditNoteInput,
    public_base: &str,
) -> Result<(CreditNote, Money), CreditError> {
    let Credit {
        org,
        invoice,
        id,
        source_key,
        by,
    } = *credit;
    // language=PostgreSQL
    let inv = sqlx::query!(
        r#"
        select status as "status: InvoiceStatus", total_cents - amount_credited_cents as "creditable!",
               currency, amount_paid_cents
        from invoices where id = $1 and org_id = $2
        for update
        "#,
        invoice as _,
        org as _
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(CreditError::NotFound)?;
    if let Some(done) = by_source(tx, org, source_key, public_base).await? {
        return Ok((done, derive(tx, invoice).await?));
    }
    if matches!(inv.status, InvoiceStatus::Draft | InvoiceStatus::Void) {
        return Err(CreditError::NotCreditable(inv.status));
    }
    let lines = match &input.lines {
        Some(wanted) => credited_lines(tx, invoice, wanted, &inv.currency).await?,
        None => Vec::new(),
    };
    let amount = match &input.lines {
        Some(_) => lines.iter().map(|l| l.2).sum(),
        None => input.amount_cents.unwrap_or(inv.creditable),
    };
    if amount < 1 || amount > inv.creditable {
        return Err(CreditError::TooMuch {
            creditable: inv.creditable,
        });
    }
    // What is paid back (outside the app, or through Stripe): what was paid beyond what the invoice
    // asks for once credited, up to the credit note's amount. Refunds planned and not yet made are
    // still counted as paid; they are paid back already.
    let pay_back = match input.refund {
        CreditRefund::None => 0,
        CreditRefund::Manual | CreditRefund::Stripe => {
            let paid =
                inv.amount_paid_cents - crate::payments::refunds::pending(tx, invoice).await?;
            (paid - (inv.creditable - amount)).clamp(0, amount)
        }
    };
    let (refunded, through_stripe) = match input.refund {
        CreditRefund::Manual => (pay_back, Vec::new()),
        CreditRefund::None => (0, Vec::new()),
        CreditRefund::Stripe => {
            let parts = crate::payments::refunds::split(tx, invoice, pay_back)
                .await?
                .map_err(|refundable| CreditError::RefundTooMuch { refundable })?;
            (0, parts)
        }
    };
    // The number: the org's credit-note counter for this period (the year, if the format names it),
    // taken in this transaction.
    // language=PostgreSQL
    sqlx::query!(
        r#"
        with org as (
            select credit_note_format as format,
                   extract(year from now() at time zone time_zone)::int as yr,
                   credit_note_format ~ '\{YY' as yearly
            from orgs where id = $2
        ), counter as (
            insert into credit_note_counters (org_id, period, last_number)
            select $2, case when org.yearly then org.yr else 0 end, 1 from org
            on conflict (org_id, period) do update
                set last_number = credit_note_counters.last_number + 1
            returning period, last_number
        )
        insert into credit_notes (id, org_id, invoice_id, number, number_period, number_text, currency,
                                  total_cents, reason, refund, source_key, public_token, created_by,
                                  refunded_cents)
        select $1, $2, $3, c.last_number, c.period, invoice_number_text(org.format, c.last_number, org.yr),
               $4, $5, $6, $7, $8, $9, $10, $11
        from counter c, org
        "#,
        id,
        org as _,
        invoice as _,
        inv.currency,
        amount,
        input.reason.trim(),
        input.refund.as_str(),
        source_key,
        link_token::mint(),
        by,
        refunded,
    )
    .execute(&mut *tx)
    .await?;
    for (position, quantity, part) in lines {
        // language=PostgreSQL
        sqlx::query!(
            r#"
            insert into credit_note_lines (credit_note_id, invoice_id, position, quantity_milli, amount_cents)
            values ($1, $2, $3, $4, $5)
            "#,
            id,
            invoice as _,
            position,
            quantity.0,
            part,
        )
        .execute(&mut *tx)
        .await?;
    }
    crate::payments::refunds::plan(tx, org, invoice, id, &through_stripe, &inv.currency).await?;
    // language=PostgreSQL
    sqlx::query!(
        "update invoices set amount_credited_cents = amount_credited_cents + $2 where id = $1",
        invoice as _,
        amount
    )
    .execute(&mut *tx)
    .await?;
    let money = derive(tx, invoice).await?;
    let note = by_source(tx, org, source_key, public_base)
        .await?
        .ok_or(CreditError::NotFound)?;
    Ok((note, money))
}

/// The invoice lines `wanted` names, each as (position, quantity, worth), checked against what is
/// left uncredited of each. The caller holds the invoice's row lock.
async fn credited_lines(
    tx: &mut PgConnection,
    invoice: InvoiceId,
    wanted: &[CreditLineInput],
    currency: &str,
) -> Result<Vec<(i16, Thousandths, i64)>, CreditError> {
    let step = model::currency(currency).map_or(1, |c| c.step);
    // language=PostgreSQL
    let have = sqlx::query!(
        r#"
        select l.position, l.quantity_milli, l.amount_cents - l.discount_cents + l.tax_cents as "gross!",
               coalesce((select sum(c.quantity_milli) from credit_note_lines c
                         where c.invoice_id = l.invoice_id and c.position = l.position), 0)::bigint
               as "credited!",
               coalesce((select sum(c.amount_cents) from credit_note_lines c
                         where c.invoice_id = l.invoice_id and c.position = l.position), 0)::bigint
               as "credited_cents!"
        from invoice_lines l
        where l.invoice_id = $1
        "#,
        invoice as _
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut out = Vec::with_capacity(wanted.len());
    for w in wanted {
        let line = have
            .iter()
            .find(|l| l.position == w.line_id)
            .ok_or(CreditError::NoSuchLine(w.line_id))?;
        let left = line.quantity_milli - line.credited;
        if w.quantity.0 > left {
            return Err(CreditError::LineTooMuch {
                line: w.line_id,
                left: Thousandths(left),
            });
        }
        // The last part of a line is what is left of its worth, so the parts add up to the line.
        let worth_left = line.gross - line.credited_cents;
        let part = if w.quantity.0 == left {
            worth_left
        } else {
            part_of_line(
                line.gross,
                w.quantity,
                Thousandths(line.quantity_milli),
                step,
            )
            .min(worth_left)
        };
        out.push((w.line_id, w.quantity, part));
    }
    Ok(out)
}

/// `org`'s credit note `id`.
pub async fn get(
    pool: &PgPool,
    org: OrgId,
    id: Uuid,
    public_base: &str,
) -> sqlx::Result<Option<CreditNote>> {
    let mut conn = pool.acquire().await?;
    Ok(select(&mut conn, org, Which::Id(id), public_base)
        .await?
        .pop())
}

/// The credit notes of `org`'s `invoice`, oldest first.
pub async fn for_invoice(
    pool: &PgPool,
    org: OrgId,
    invoice: InvoiceId,
    public_base: &str,
) -> sqlx::Result<Vec<CreditNote>> {
    let mut conn = pool.acquire().await?;
    select(&mut conn, org, Which::Invoice(invoice.uuid()), public_base).await
}

/// The credit notes of `org`'s invoices to `customer`, oldest first.
pub async fn for_customer(
    pool: &PgPool,
    org: OrgId,
    customer: CustomerId,
    public_base: &str,
) -> sqlx::Result<Vec<CreditNote>> {
    let mut conn = pool.acquire().await?;
    select(
        &mut conn,
        org,
        Which::Customer(customer.uuid()),
        public_base,
    )
    .await
}

/// A credit note found by its customer page's token, with its org's name and e-invoicing.
pub struct ByToken {
    pub note: CreditNote,
    pub org_id: Uuid,
    pub org_name: String,
    pub einvoicing: bool,
}

/// The credit note whose customer page is `token`: None for an unknown token.
pub async fn by_token(
    pool: &PgPool,
    token: &str,
    public_base: &str,
) -> sqlx::Result<Option<ByToken>> {
    if !crate::invoicing::link_token::well_formed(token) {
        return Ok(None);
    }
    // language=PostgreSQL
    let found = sqlx::query!(
        r#"
        select c.org_id, c.id, o.name as org_name, o.einvoicing
        from credit_notes c join orgs o on o.id = c.org_id
        where c.public_token = $1
        "#,
        token
    )
    .fetch_optional(pool)
    .await?;
    let Some(found) = found else { return Ok(None) };
    let note = get(pool, found.org_id.into(), found.id, public_base).await?;
    Ok(note.map(|note| ByToken {
        note,
        org_id: found.org_id,
        org_name: found.org_name,
        einvoicing: found.einvoicing,
    }))
}

async fn by_source(
    tx: &mut PgConnection,
    org: OrgId,
    source_key: &str,
    public_base: &str,
) -> sqlx::Result<Option<CreditNote>> {
    Ok(select(tx, org, Which::SourceKey(source_key), public_base)
        .await?
        .pop())
}

/// A credited line as [`select`] reads it.
#[derive(Debug, serde::Deserialize)]
struct LineRow {
    line_id: i16,
    description: String,
    quantity_milli: i64,
    amount_cents: i64,
}

/// Which of an org's credit notes [`select`] reads.
enum Which<'a> {
    Id(Uuid),
    SourceKey(&'a str),
    Invoice(Uuid),
    Customer(Uuid),
}

/// `org`'s credit notes `which` names, oldest first, in one statement.
async fn select(
    conn: &mut PgConnection,
    org: OrgId,
    which: Which<'_>,
    public_base: &str,
) -> sqlx::Result<Vec<CreditNote>> {
    let (mut id, mut source_key, mut invoice, mut customer) = (None, None, None, None);
    match which {
        Which::Id(v) => id = Some(v),
        Which::SourceKey(v) => source_key = Some(v),
        Which::Invoice(v) => invoice = Some(v),
        Which::Customer(v) => customer = Some(v),
    }
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select c.id, c.number_text, c.invoice_id, i.number_text as "invoice_number?", c.currency,
               c.total_cents, c.reason, c.refund, c.public_token,
               (c.refunded_cents + coalesce(s.made, 0))::bigint as "refunded_cents!",
               case when s.pending then 'pending' when s.failed then 'failed'
                    when c.refunded_cents + coalesce(s.made, 0) > 0 then 'refunded'
                    else 'none' end as "refund_state!",
               c.created_at as "created_at: DateTime<Utc>",
               coalesce((select json_agg(json_build_object(
                                     'line_id', l.position, 'description', il.description,
                                     'quantity_milli', l.quantity_milli, 'amount_cents', l.amount_cents)
                                 order by l.position)
                         from credit_note_lines l
                         join invoice_lines il on il.invoice_id = l.invoice_id and il.position = l.position
                         where l.credit_note_id = c.id), '[]') as "lines!: sqlx::types::Json<Vec<LineRow>>"
        from credit_notes c join invoices i on i.id = c.invoice_id
        left join lateral (
            select sum(r.amount_cents) filter (where r.state = 'succeeded') as made,
                   bool_or(r.state = 'pending') as pending, bool_or(r.state = 'failed') as failed
            from credit_note_refunds r where r.credit_note_id = c.id
        ) s on true
        where c.org_id = $1
          and (c.id = $2 or c.source_key = $3 or c.invoice_id = $4 or i.customer_id = $5)
        order by c.created_at, c.id
        "#,
        org as _,
        id,
        source_key,
        invoice as _,
        customer as _,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| CreditNote {
            id: r.id,
            number: r.number_text,
            invoice_id: r.invoice_id,
            invoice_number: r.invoice_number.unwrap_or_default(),
            currency: r.currency,
            total_cents: r.total_cents,
            reason: r.reason,
            refund: match r.refund.as_str() {
                "manual" => CreditRefund::Manual,
                "stripe" => CreditRefund::Stripe,
                _ => CreditRefund::None,
            },
            refund_state: r.refund_state,
            refunded_cents: r.refunded_cents,
            lines: r
                .lines
                .0
                .into_iter()
                .map(|l| CreditNoteLine {
                    line_id: l.line_id,
                    description: l.description,
                    quantity: Thousandths(l.quantity_milli),
                    amount_cents: l.amount_cents,
                })
                .collect(),
            public_url: public_url(public_base, &r.public_token),
            created_at: r.created_at,
        })
        .collect())
}

//! Quotes: created once per attempt (like invoices: a draft, or open at once with its number and
//! customer page), sent by email through the outbox, and decided once on the customer's page.
//! Accepting moves the quote from open to accepted under its row lock and issues the invoice whose
//! business key is `quote:<id>` in the same transaction: two accepts at once make one invoice, and
//! an accept after the expiry date (the org's) changes nothing.

use chrono::{DateTime, NaiveDate, Utc};
use model::OrgId;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::invoicing::input::{settle_template, InvoiceError};
use crate::{invoicing::invoices, invoicing::tax_rates, outbox};
use model::error::FieldErrors;
use model::{Invoice, InvoiceInput, Quote, QuoteInput, QuoteStatus, RunAction};

#[derive(Debug, thiserror::Error)]
pub enum QuoteError {
    #[error("no such quote")]
    NotFound,
    #[error("invalid quote")]
    Invalid(FieldErrors),
    /// It cannot move from where it is (sending an accepted quote, accepting an expired one).
    #[error("the quote is {}", .0.as_str())]
    Refused(QuoteStatus),
    /// The mail gate refused its email.
    #[error(transparent)]
    Mail(#[from] crate::mail::gate::Refused),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

impl From<InvoiceError> for QuoteError {
    fn from(e: InvoiceError) -> Self {
        e.fields_of("invoice")
            .map_or_else(QuoteError::Db, QuoteError::Invalid)
    }
}

/// The customer's page of a quote whose token is `token`.
pub fn public_url(base: &str, token: &str) -> String {
    format!("{base}/q/{token}")
}

/// The command that creates a quote, whichever surface asks: quote `id` of `org` from `input`, named
/// by the attempt `source_key` (a repeat returns the quote it created); the quote's and its
/// invoice's rules are checked here, in the caller's claimed transaction.
pub async fn create(
    tx: &mut PgConnection,
    org: OrgId,
    id: Uuid,
    source_key: &str,
    input: &QuoteInput,
    today: NaiveDate,
    public_base: &str,
) -> Result<Quote, QuoteError> {
    // language=PostgreSQL
    let existing = sqlx::query_scalar!(
        "select id from quotes where org_id = $1 and source_key = $2",
        org as _,
        source_key
    )
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(existing) = existing {
        return get(tx, org, existing, public_base)
            .await?
            .ok_or(QuoteError::NotFound);
    }
    let mut input = input.clone();
    let fields = input.check(today).err().unwrap_or_default();
    let taxes = settle_template(tx, org, &mut input.invoice, fields).await?;
    let totals = input.invoice.totals(&taxes);
    let mut template = input.invoice.clone();
    let open = !template.draft;
    // The quote's own draft flag is not the invoice's: what accepting does is `on_accept`.
    template.draft = false;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into quotes (id, org_id, status, template, customer_id, customer_name, customer_email,
                            currency, total_cents, expires_on, on_accept, source_key)
        values ($1, $2, 'draft', $3, $4, $5, $6, $7, $8, $9, $10, $11)
        "#,
        id,
        org as _,
        serde_json::to_value(&template).expect("an input serialises"),
        template.customer_id,
        template.customer_name,
        template.customer_email,
        template.currency,
        totals.total_cents,
        input.quote.expires_on as _,
        input.quote.on_accept.as_str(),
        source_key,
    )
    .execute(&mut *tx)
    .await?;
    if open {
        open_quote(tx, org, id).await?;
    }
    get(tx, org, id, public_base)
        .await?
        .ok_or(QuoteError::NotFound)
}

/// Replaces draft quote `id`'s invoice, expiry and what accepting does (checked as at creation). An
/// open or decided quote is refused with where it is: what the customer saw does not change under
/// them.
pub async fn edit_draft(
    tx: &mut PgConnection,
    org: OrgId,
    id: Uuid,
    input: &QuoteInput,
    today: NaiveDate,
    public_base: &str,
) -> Result<Quote, QuoteError> {
    match locked(tx, org, id).await?.0 {
        QuoteStatus::Draft => {}
        other => return Err(QuoteError::Refused(other)),
    }
    let mut input = input.clone();
    let fields = input.check(today).err().unwrap_or_default();
    let taxes = settle_template(tx, org, &mut input.invoice, fields).await?;
    let totals = input.invoice.totals(&taxes);
    let mut template = input.invoice.clone();
    template.draft = false;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update quotes
        set template = $3, customer_id = $4, customer_name = $5, customer_email = $6, currency = $7,
            total_cents = $8, expires_on = $9, on_accept = $10, updated_at = now()
        where id = $1 and org_id = $2 and status = 'draft'
        "#,
        id,
        org as _,
        serde_json::to_value(&template).expect("an input serialises"),
        template.customer_id,
        template.customer_name,
        template.customer_email,
        template.currency,
        totals.total_cents,
        input.quote.expires_on as _,
        input.quote.on_accept.as_str(),
    )
    .execute(&mut *tx)
    .await?;
    get(tx, org, id, public_base)
        .await?
        .ok_or(QuoteError::NotFound)
}

/// Opens draft quote `id`: the org's next quote number and a customer page.
async fn open_quote(tx: &mut PgConnection, org: OrgId, id: Uuid) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        with counter as (
            insert into quote_counters (org_id, last_number) values ($1, 1)
            on conflict (org_id) do update set last_number = quote_counters.last_number + 1
            returning last_number
        )
        update quotes
        set status = 'open', number = counter.last_number,
            number_text = 'Q-' || lpad(counter.last_number::text, 4, '0'),
            public_token = $3, opened_at = now(), updated_at = now()
        from counter
        where id = $2 and org_id = $1 and status = 'draft'
        "#,
        org as _,
        id,
        crate::invoicing::link_token::mint(),
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// A quote's row as read back.
struct Row {
    id: Uuid,
    status: String,
    number_text: Option<String>,
    public_token: Option<String>,
    template: serde_json::Value,
    customer_name: String,
    customer_email: String,
    currency: String,
    total_cents: i64,
    expires_on: NaiveDate,
    on_accept: String,
    invoice_id: Option<Uuid>,
    decided_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    today: NaiveDate,
}

impl Row {
    fn shown(self, public_base: &str) -> Quote {
        Quote {
            id: self.id,
            number: self.number_text,
            status: QuoteStatus::of(&self.status, self.expires_on, self.today),
            public_url: self.public_token.map(|t| public_url(public_base, &t)),
            invoice_id: self.invoice_id,
            customer_name: self.customer_name,
            customer_email: self.customer_email,
            currency: self.currency,
            total_cents: self.total_cents,
            expires_on: self.expires_on,
            on_accept: RunAction::parse(&self.on_accept).unwrap_or_default(),
            template: serde_json::from_value(self.template).expect("a stored template reads back"),
            decided_at: self.decided_at,
            created_at: self.created_at,
        }
    }
}

/// `org`'s quotes `ids` (any order), each seen on the org's today.
async fn rows(conn: &mut PgConnection, org: OrgId, ids: &[Uuid]) -> sqlx::Result<Vec<Row>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select q.id, q.status, q.number_text, q.public_token, q.template, q.customer_name,
               q.customer_email, q.currency, q.total_cents, q.expires_on as "expires_on: NaiveDate",
               q.on_accept, q.invoice_id, q.decided_at as "decided_at: DateTime<Utc>",
               q.created_at as "created_at: DateTime<Utc>",
               (now() at time zone o.time_zone)::date as "today!: NaiveDate"
        from quotes q join orgs o on o.id = q.org_id
        where q.org_id = $1 and q.id = any($2)
        order by q.created_at desc, q.id desc
        "#,
        org as _,
        ids,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Row {
            id: r.id,
            status: r.status,
            number_text: r.number_text,
            public_token: r.public_token,
            template: r.template,
            customer_name: r.customer_name,
            customer_email: r.customer_email,
            currency: r.currency,
            total_cents: r.total_cents,
            expires_on: r.expires_on,
            on_accept: r.on_accept,
            invoice_id: r.invoice_id,
            decided_at: r.decided_at,
            created_at: r.created_at,
            today: r.today,
        })
        .collect())
}

/// `org`'s quote `id`.
pub async fn get(
    conn: &mut PgConnection,
    org: OrgId,
    id: Uuid,
    public_base: &str,
) -> sqlx::Result<Option<Quote>> {
    Ok(rows(conn, org, &[id])
        .await?
        .pop()
        .map(|r| r.shown(public_base)))
}

/// `org`'s latest 200 quotes, newest first.
pub async fn list(
    conn: &mut PgConnection,
    org: OrgId,
    public_base: &str,
) -> sqlx::Result<Vec<Quote>> {
    // language=PostgreSQL
    let ids = sqlx::query_scalar!(
        "select id from quotes where org_id = $1 order by created_at desc, id desc limit 200",
        org as _
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows(conn, org, &ids)
        .await?
        .into_iter()
        .map(|r| r.shown(public_base))
        .collect())
}

/// The invoice `quote` proposes, priced as accepting would issue it today (`today`: the org's).
pub async fn preview(
    conn: &mut PgConnection,
    org: OrgId,
    quote: &Quote,
    today: NaiveDate,
) -> sqlx::Result<Invoice> {
    let taxes =
        (tax_rates::of_lines(conn, org, &quote.template).await).map_err(InvoiceError::stored)?;
    let due = match quote.template.payment_terms_days {
        Some(days) => today + chrono::Days::new(days.into()),
        None => quote.template.due_date.unwrap_or(today),
    };
    let mut invoice = invoices::preview(
        model::InvoiceId::from(quote.id),
        &quote.template,
        &taxes,
        due,
        quote.created_at,
    );
    invoice.number = quote.number.clone();
    Ok(invoice)
}

/// Locks `org`'s quote `id` until the transaction ends; its stored status, expiry and the org's
/// today.
async fn locked(
    tx: &mut PgConnection,
    org: OrgId,
    id: Uuid,
) -> Result<(QuoteStatus, NaiveDate), QuoteError> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select q.status, q.expires_on as "expires_on: NaiveDate",
               (now() at time zone o.time_zone)::date as "today!: NaiveDate"
        from quotes q join orgs o on o.id = q.org_id
        where q.id = $1 and q.org_id = $2
        for update of q
        "#,
        id,
        org as _
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(QuoteError::NotFound)?;
    Ok((
        QuoteStatus::of(&row.status, row.expires_on, row.today),
        row.today,
    ))
}

/// Where `org`'s quote `id` is emailed (its customer's address), if there is such a quote.
pub async fn recipient(
    conn: &mut PgConnection,
    org: OrgId,
    id: Uuid,
) -> sqlx::Result<Option<String>> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        "select customer_email from quotes where id = $1 and org_id = $2",
        id,
        org as _
    )
    .fetch_optional(&mut *conn)
    .await
}

/// Sends quote `id` to its customer: opens it if it is a draft, and queues its email through the
/// mail `gate` (committed with the caller's claim; the worker's lease sends it once). Only a draft
/// or open quote is sent.
pub async fn send(
    tx: &mut PgConnection,
    org: OrgId,
    id: Uuid,
    public_base: &str,
    gate: crate::mail::gate::Gate,
) -> Result<Quote, QuoteError> {
    match locked(tx, org, id).await?.0 {
        QuoteStatus::Draft => open_quote(tx, org, id).await?,
        QuoteStatus::Open => {}
        other => return Err(QuoteError::Refused(other)),
    }
    let to = recipient(tx, org, id).await?.ok_or(QuoteError::NotFound)?;
    let permit = gate.permit(tx, org, &to).await??;
    outbox::enqueue_email(
        tx,
        permit,
        None,
        outbox::MailKind::QuoteEmail,
        serde_json::json!({ "quote_id": id }),
    )
    .await?;
    get(tx, org, id, public_base)
        .await?
        .ok_or(QuoteError::NotFound)
}

/// What deciding did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// Accepted now; the invoice it issued.
    Accepted(Uuid),
    Declined,
}

/// Accepts (issuing its invoice, as `on_accept` says, its email under the mail `allowance`) or
/// declines `org`'s open quote `id`, under its row lock. A quote already decided, expired or still
/// a draft is refused with where it is.
pub async fn decide(
    tx: &mut PgConnection,
    org: OrgId,
    id: Uuid,
    accept: bool,
    public_base: &str,
    allowance: crate::mail::gate::Allowance,
) -> Result<Decided, QuoteError> {
    let (status, _) = locked(tx, org, id).await?;
    if status != QuoteStatus::Open {
        return Err(QuoteError::Refused(status));
    }
    if !accept {
        // language=PostgreSQL
        sqlx::query!(
            "update quotes set status = 'declined', decided_at = now(), updated_at = now() where id = $1",
            id
        )
        .execute(&mut *tx)
        .await?;
        return Ok(Decided::Declined);
    }
    // language=PostgreSQL
    let row = sqlx::query!("select template, on_accept from quotes where id = $1", id)
        .fetch_one(&mut *tx)
        .await?;
    let input: InvoiceInput =
        serde_json::from_value(row.template).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
    let action = RunAction::parse(&row.on_accept).unwrap_or_default();
    let source_key = format!("quote:{id}");
    let (invoice, _) = invoices::issue_keyed(
        tx,
        org,
        model::InvoiceId::from(Uuid::now_v7()),
        &source_key,
        &input,
        action,
        public_base,
        allowance,
    )
    .await?;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update quotes set status = 'accepted', invoice_id = $2, decided_at = now(), updated_at = now()
        where id = $1 and status = 'open'
        "#,
        id,
        invoice as _
    )
    .execute(&mut *tx)
    .await?;
    Ok(Decided::Accepted(invoice))
}

/// What the customer's page of a quote shows.
#[derive(Debug, Clone, PartialEq)]
pub struct PublicQuote {
    pub org_id: Uuid,
    pub org_name: String,
    pub org_address: String,
    pub quote: Quote,
    pub preview: Invoice,
    /// The accepted quote's invoice page, once it is finalized.
    pub invoice_url: Option<String>,
    pub branding: model::Branding,
    /// The language of the page: the customer's, else the org's.
    pub locale: model::Locale,
}

/// The quote whose public token is `token` (None for a malformed or unknown one alike).
pub async fn by_token(
    pool: &PgPool,
    token: &str,
    public_base: &str,
) -> sqlx::Result<Option<PublicQuote>> {
    if !crate::invoicing::link_token::well_formed(token) {
        return Ok(None);
    }
    let mut conn = pool.acquire().await?;
    // language=PostgreSQL
    let found = sqlx::query!(
        r#"
        select q.id, q.org_id, o.name as org_name,
               postal_text(o.address_line1, o.address_line2, o.postal_code, o.city, o.region, o.country) as "org_address!",
               i.public_token as "invoice_token?"
        from quotes q join orgs o on o.id = q.org_id
        left join invoices i on i.id = q.invoice_id
        where q.public_token = $1
        "#,
        token
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(found) = found else {
        return Ok(None);
    };
    let Some(row) = rows(&mut conn, found.org_id.into(), &[found.id])
        .await?
        .pop()
    else {
        return Ok(None);
    };
    let today = row.today;
    let quote = row.shown(public_base);
    let preview = preview(&mut conn, found.org_id.into(), &quote, today).await?;
    let branding = crate::documents::branding::of(&mut conn, found.org_id.into()).await?;
    let locale = crate::documents::i18n::locale_for(
        &mut conn,
        found.org_id.into(),
        quote.template.customer_id,
    )
    .await?;
    Ok(Some(PublicQuote {
        branding,
        locale,
        org_id: found.org_id,
        org_name: found.org_name,
        org_address: found.org_address,
        invoice_url: found
            .invoice_token
            .map(|t| invoices::public_url(public_base, &t)),
        quote,
        preview,
    }))
}

//! Invoices: the business writes; the reads are in `read`, the list pages in `list`. These
//! functions take an open connection or transaction and do not know which surface called them.

use chrono::{DateTime, NaiveDate, Utc};
use model::InvoiceId;
use model::OrgId;

use crate::invoicing::error::InvoiceError;
use serde::Serialize;
use sqlx::types::Json;
use sqlx::PgConnection;
use uuid::Uuid;

use model::{
    AppliedTax, Discount, Invoice, InvoiceInput, InvoiceLine, InvoiceStatus, PaymentState,
    Thousandths, Totals,
};

mod list;
mod read;
pub use list::{check_filter, page, page_query, ListCursor, ListFilter, SEARCH_SORTS_AT_MOST};
pub use read::{currency, exists, get, get_many, id_by_source_key, numbers, recipient};

/// The customer's page of an invoice whose token is `token`.
pub fn public_url(base: &str, token: &str) -> String {
    format!("{base}/i/{token}")
}

/// An invoice's content as the insert and the draft update bind it: one JSON row for the invoice's
/// own columns and one JSON array of line rows, whose keys are the column names
/// (`jsonb_populate_record(null::invoices, $n)` and `jsonb_populate_recordset(null::invoice_lines,
/// $n)` read them), instead of a positional parameter per column.
struct Content<'a> {
    header: Header<'a>,
    lines: Vec<LineRow<'a>>,
}

#[derive(Serialize)]
struct Header<'a> {
    customer_id: Option<Uuid>,
    customer_name: &'a str,
    customer_email: &'a str,
    currency: &'a str,
    due_date: Option<NaiveDate>,
    payment_terms_days: Option<i16>,
    subtotal_cents: i64,
    discount_percent_milli: Option<i32>,
    discount_amount_cents: Option<i64>,
    discount_cents: i64,
    tax_cents: i64,
    total_cents: i64,
    notes: &'a str,
    source_key: Option<&'a str>,
    collection_method: &'static str,
}

#[derive(Serialize)]
struct LineRow<'a> {
    position: i16,
    description: &'a str,
    quantity_milli: i64,
    unit_amount_cents: i64,
    amount_cents: i64,
    tax_rate_id: Option<Uuid>,
    tax_name: Option<&'a str>,
    tax_percent_milli: Option<i32>,
    discount_cents: i64,
    tax_cents: i64,
    /// The rate itself, for the answer (not a column).
    #[serde(skip)]
    tax: Option<&'a AppliedTax>,
}

impl<'a> Content<'a> {
    fn of(
        input: &'a InvoiceInput,
        taxes: &'a [Option<AppliedTax>],
        totals: &Totals,
        customer_id: Option<Uuid>,
        source_key: Option<&'a str>,
    ) -> Content<'a> {
        let (discount_percent_milli, discount_amount_cents) = discount_columns(input.discount);
        let lines = input.lines.iter().zip(taxes).zip(&totals.lines);
        Content {
            header: Header {
                customer_id,
                customer_name: &input.customer_name,
                customer_email: &input.customer_email,
                currency: &input.currency,
                due_date: input.due_date,
                payment_terms_days: input.payment_terms_days.map(|d| d as i16),
                subtotal_cents: totals.subtotal_cents,
                discount_percent_milli,
                discount_amount_cents,
                discount_cents: totals.discount_cents,
                tax_cents: totals.tax_cents,
                total_cents: totals.total_cents,
                notes: &input.notes,
                source_key,
                collection_method: input.collection_method.as_str(),
            },
            lines: (1..)
                .zip(lines)
                .map(|(position, ((line, tax), amounts))| LineRow {
                    position,
                    description: &line.description,
                    quantity_milli: line.quantity.0,
                    unit_amount_cents: line.unit_amount_cents,
                    amount_cents: amounts.amount_cents,
                    tax_rate_id: tax.as_ref().map(|t| t.rate_id),
                    tax_name: tax.as_ref().map(|t| t.name.as_str()),
                    tax_percent_milli: tax.as_ref().map(|t| t.percent.0 as i32),
                    discount_cents: amounts.discount_cents,
                    tax_cents: amounts.tax_cents,
                    tax: tax.as_ref(),
                })
                .collect(),
        }
    }

    /// The lines as the API shows them.
    fn lines(&self) -> Vec<InvoiceLine> {
        self.lines
            .iter()
            .map(|l| InvoiceLine {
                line_id: l.position,
                description: l.description.to_owned(),
                quantity: Thousandths(l.quantity_milli),
                unit_amount_cents: l.unit_amount_cents,
                amount_cents: l.amount_cents,
                tax_rate_id: l.tax_rate_id,
                tax_name: l.tax_name.map(str::to_owned),
                tax_percent: l.tax_percent_milli.map(|p| Thousandths(p.into())),
                tax_category: l.tax.map(|t| t.category),
                exemption_reason: l
                    .tax
                    .map(|t| t.exemption_reason.clone())
                    .unwrap_or_default(),
                discount_cents: l.discount_cents,
                tax_cents: l.tax_cents,
            })
            .collect()
    }
}

/// The discount as the two columns store it: (percent in thousandths, fixed amount).
pub(crate) fn discount_columns(discount: Option<Discount>) -> (Option<i32>, Option<i64>) {
    match discount {
        None => (None, None),
        Some(Discount::Percent(p)) => (Some(p.0 as i32), None),
        Some(Discount::AmountCents(a)) => (None, Some(a)),
    }
}

/// A new invoice as [`create`] takes it: its id (minted by the caller with `Uuid::now_v7()`, so a
/// claim can name it before the write), its org, the business key of the attempt that made it (a
/// second write under the same key fails on `invoices_org_source_key`), and the base of its
/// customer page's URL.
#[derive(Debug, Clone, Copy)]
pub struct NewInvoice<'a> {
    pub id: InvoiceId,
    pub org: OrgId,
    pub source_key: Option<&'a str>,
    pub public_base: &'a str,
}

impl NewInvoice<'static> {
    /// Invoice `id` of `org` under no business key, with no customer page base (seed data).
    pub fn new(id: InvoiceId, org: OrgId) -> Self {
        NewInvoice {
            id,
            org,
            source_key: None,
            public_base: "",
        }
    }
}

/// The command that creates an invoice, whichever surface asks (the form, the JSON API, a job that
/// issues one, the demo): inside the transaction that claimed the attempt, the org's rules read once
/// ([`settle`](crate::invoicing::input::settle): customer, tax rates), the write, and for an
/// e-invoicing org a finalized invoice checked to make a valid e-invoice. A refusal is an error and
/// the caller's transaction rolls back with its claim: the number is given back and the key stays
/// usable.
pub async fn create(
    tx: &mut PgConnection,
    new: NewInvoice<'_>,
    input: &InvoiceInput,
) -> Result<Invoice, InvoiceError> {
    let mut input = input.clone();
    let taxes = crate::invoicing::input::settle(tx, new.org, &mut input).await?;
    let (invoice, einvoicing, peppol) = write(tx, &new, &input, &taxes).await?;
    if !input.draft && (einvoicing || peppol) {
        let problems =
            crate::documents::einvoice::problems_of(tx, new.org, new.id.uuid(), einvoicing).await?;
        if !problems.is_empty() {
            return Err(InvoiceError::Invalid(problems));
        }
    }
    Ok(invoice)
}

/// Writes invoice `new` and its lines, priced with `taxes` (the rates its lines name): a draft when
/// `input.draft`, else finalized at once with the org's next number. A rollback gives the number
/// back, so numbers stay gapless on success. With `save_customer`, the typed name and email become
/// a customer of the org first, in the same transaction. Returns the invoice, whether the org
/// issues e-invoices and whether its customer receives by Peppol (read by the same statement).
async fn write(
    tx: &mut PgConnection,
    new: &NewInvoice<'_>,
    input: &InvoiceInput,
    taxes: &[Option<AppliedTax>],
) -> sqlx::Result<(Invoice, bool, bool)> {
    let NewInvoice {
        id,
        org,
        source_key,
        public_base,
    } = *new;
    let customer_id = match (input.save_customer, input.customer_id) {
        (true, None) => {
            let customer = Uuid::now_v7();
            let details = model::CustomerInput {
                name: input.customer_name.clone(),
                email: input.customer_email.clone(),
                ..Default::default()
            };
            let source_key = format!("invoice:{id}");
            crate::customers::create(
                tx,
                model::CustomerId::from(customer),
                org,
                Some(&source_key),
                &details,
            )
            .await?;
            Some(customer)
        }
        (_, picked) => picked,
    };
    let totals = input.totals(taxes);
    let c = Content::of(input, taxes, &totals, customer_id, source_key);
    let token = (!input.draft).then(crate::invoicing::link_token::mint);
    // One statement, one round trip: for a finalized invoice the org's next number in its format (a
    // draft takes none), the invoice, its lines. The counter's row lock serialises numbering per org
    // and period until commit (a rollback gives the number back); claims on other keys are not
    // blocked, and the org row is only read. The lines' foreign key is checked at the end of the
    // statement, when the invoice row exists. Payment terms set the due date from today in the org's
    // time zone (finalization sets it again for a draft).
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        with org as (
            select number_format, number_reset, time_zone,
                   extract(year from now() at time zone time_zone)::int as yr,
                   (now() at time zone time_zone)::date as today, org_party(orgs) as seller,
                   einvoicing
            from orgs where id = $2::uuid
        ), counter as (
            insert into invoice_counters (org_id, period, last_number)
            select $2::uuid, case when number_reset = 'yearly' then yr else 0 end, 1 from org
            where $3::text is not null
            on conflict (org_id, period) do update set last_number = invoice_counters.last_number + 1
            returning period, last_number
        ), invoice as (
            insert into invoices (id, org_id, status, number, number_period, number_text,
                                  public_token, finalized_at, customer_id, customer_name,
                                  customer_email, customer_address, customer_tax_id,
                                  currency, due_date, total_cents, source_key, subtotal_cents,
                                  discount_percent_milli, discount_amount_cents, discount_cents,
                                  tax_cents, notes, payment_terms_days, seller, buyer,
                                  collection_method)
            select $1::uuid, $2::uuid, case when c.last_number is null then 'draft' else 'open' end,
                   c.last_number, c.period, invoice_number_text(org.number_format, c.last_number, org.yr),
                   $3::text, case when c.last_number is not null then now() end,
                   cu.id, h.customer_name, h.customer_email, coalesce(customer_postal(cu), ''), cu.vat_id,
                   h.currency, coalesce(org.today + h.payment_terms_days, h.due_date), h.total_cents,
                   h.source_key, h.subtotal_cents, h.discount_percent_milli, h.discount_amount_cents,
                   h.discount_cents, h.tax_cents, h.notes, h.payment_terms_days,
                   case when c.last_number is not null then org.seller end, customer_party(cu),
                   h.collection_method
            from jsonb_populate_record(null::invoices, $4::jsonb) h
            left join counter c on true left join org on true
            left join customers cu on cu.id = h.customer_id and cu.org_id = $2::uuid
            returning status, due_date, number_text, finalized_at, created_at, customer_id,
                      customer_address, customer_tax_id
        ), lines as (
            insert into invoice_lines (invoice_id, position, description, quantity_milli,
                                       unit_amount_cents, amount_cents, tax_rate_id, tax_name,
                                       tax_percent_milli, discount_cents, tax_cents)
            select $1::uuid, l.position, l.description, l.quantity_milli, l.unit_amount_cents,
                   l.amount_cents, l.tax_rate_id, l.tax_name, l.tax_percent_milli, l.discount_cents,
                   l.tax_cents
            from jsonb_populate_recordset(null::invoice_lines, $5::jsonb) l
        )
        select number_text, finalized_at as "finalized_at: DateTime<Utc>",
               created_at as "created_at!: DateTime<Utc>", customer_id,
               customer_address as "customer_address!", customer_tax_id,
               due_date as "due_date!: NaiveDate",
               invoice_overdue(invoice.status, invoice.due_date, org.time_zone) as "overdue!",
               org.einvoicing as "einvoicing!",
               exists (select from customers cu where cu.id = invoice.customer_id
                                                  and cu.einvoice_channel = 'peppol') as "peppol!"
        from invoice, org
        "#,
        id as _,
        org as _,
        token,
        Json(&c.header) as _,
        Json(&c.lines) as _,
    )
    .fetch_one(&mut *tx)
    .await?;

    // What was written, as a new invoice shows it: the preview of its input, with what the
    // statement decided.
    let mut invoice = preview(id, input, taxes, row.due_date, row.created_at);
    invoice.number = row.number_text;
    if !input.draft {
        invoice.status = InvoiceStatus::Open;
    }
    invoice.customer_id = row.customer_id;
    invoice.customer_address = row.customer_address;
    invoice.customer_tax_id = row.customer_tax_id;
    invoice.overdue = row.overdue;
    invoice.public_url = token.map(|t| public_url(public_base, &t));
    invoice.finalized_at = row.finalized_at;
    if row.peppol && !input.draft {
        // Finalized for a buyer by Peppol: its transmission was queued by the same statement.
        invoice.transmissions = crate::peppol::send::transmissions(&mut *tx, id.uuid()).await?;
    }
    Ok((invoice, row.einvoicing, row.peppol))
}

/// The invoice `input` would be if it were issued now, priced with `taxes` (the rates its lines
/// name, [`crate::invoicing::tax_rates::of_lines`]): what a quote shows its customer. Nothing is written.
pub fn preview(
    id: InvoiceId,
    input: &InvoiceInput,
    taxes: &[Option<AppliedTax>],
    due_date: NaiveDate,
    created_at: DateTime<Utc>,
) -> Invoice {
    let totals = input.totals(taxes);
    let c = Content::of(input, taxes, &totals, input.customer_id, None);
    Invoice {
        id: id.uuid(),
        number: None,
        status: InvoiceStatus::Draft,
        version: 1,
        customer_id: input.customer_id,
        customer_name: input.customer_name.clone(),
        customer_email: input.customer_email.clone(),
        customer_address: String::new(),
        customer_tax_id: None,
        currency: input.currency.clone(),
        due_date,
        payment_terms_days: input.payment_terms_days,
        lines: c.lines(),
        subtotal_cents: totals.subtotal_cents,
        discount: input.discount,
        discount_cents: totals.discount_cents,
        taxes: totals.taxes,
        tax_cents: totals.tax_cents,
        total_cents: totals.total_cents,
        notes: input.notes.clone(),
        amount_paid_cents: 0,
        amount_credited_cents: 0,
        amount_due_cents: totals.total_cents,
        credit_notes: Vec::new(),
        payment_state: PaymentState::Unpaid,
        overdue: false,
        public_url: None,
        finalized_at: None,
        viewed_at: None,
        created_at,
        collection_method: input.collection_method,
        charge_attempts: Vec::new(),
        transmissions: Vec::new(),
        kind: "standard".to_owned(),
        fee_for: None,
        payment_reference: None,
    }
}

/// Issues invoice `id` of `org` from `input` under the business key `source_key` (a job's period,
/// an accepted quote) through [`create`]: a draft, finalized, or finalized and queued for email, as
/// `action` says.
/// Should an invoice with that key exist already (a claim row lost), it is that invoice. An
/// e-invoicing org's invoice is finalized only if it makes a valid e-invoice (its customer or the
/// org may have changed since the input was checked); otherwise it is left a draft for the owner
/// to fix, and nothing is sent. Its email passes the mail gate as the org's own (beyond the
/// allowance it waits for its slot; an org with no verified owner sends nothing, and the invoice
/// is only finalized). Returns the invoice and what was done with it.
#[allow(clippy::too_many_arguments)]
pub async fn issue_keyed(
    tx: &mut PgConnection,
    org: OrgId,
    id: InvoiceId,
    source_key: &str,
    input: &InvoiceInput,
    action: model::RunAction,
    public_base: &str,
    allowance: crate::mail::gate::Allowance,
) -> sqlx::Result<(Uuid, model::RunAction)> {
    use model::RunAction;
    // language=PostgreSQL
    let existing = sqlx::query_scalar!(
        "select id from invoices where org_id = $1 and source_key = $2",
        org as _,
        source_key
    )
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(existing) = existing {
        return Ok((existing, action));
    }
    let mut action = action;
    let mut input = input.clone();
    input.draft = action == RunAction::Draft;
    let new = NewInvoice {
        id,
        org,
        source_key: Some(source_key),
        public_base,
    };
    if !input.draft {
        // Only an e-invoicing org's rules can refuse a finalized input its draft would pass: what
        // they refuse is left a draft.
        sqlx::query("savepoint issue").execute(&mut *tx).await?;
    }
    match create(tx, new, &input).await {
        Ok(_) => {}
        Err(InvoiceError::Invalid(problems)) if !input.draft => {
            tracing::warn!(%org, %source_key, ?problems, "an invoice would not be a valid e-invoice: left as a draft");
            sqlx::query("rollback to savepoint issue")
                .execute(&mut *tx)
                .await?;
            input.draft = true;
            action = RunAction::Draft;
            create(tx, new, &input)
                .await
                .map_err(InvoiceError::stored)?;
        }
        Err(e) => return Err(e.stored()),
    }
    if action == RunAction::Send {
        use crate::mail::gate::{Gate, Sender};
        let to = recipient(tx, org, id).await?.unwrap_or_default();
        match Gate::new(allowance, Sender::Automatic)
            .permit(tx, org, &to)
            .await?
        {
            Ok(permit) => {
                crate::outbox::enqueue_email(
                    tx,
                    permit,
                    Some(id.uuid()),
                    crate::outbox::MailKind::InvoiceEmail,
                    serde_json::json!({ "invoice_id": id }),
                )
                .await?;
            }
            Err(refused) => {
                tracing::warn!(%org, %source_key, %refused, "an issued invoice is not emailed");
                action = RunAction::Finalize;
            }
        }
    }
    Ok((id.uuid(), action))
}

/// Replaces the content of draft `id` with `input`'s, priced with `taxes`: the lines, and the invoice's totals,
/// discount, notes and terms (the caller's update has checked it is a draft at the right version).
pub async fn replace_content(
    tx: &mut PgConnection,
    id: InvoiceId,
    input: &InvoiceInput,
    taxes: &[Option<AppliedTax>],
) -> sqlx::Result<()> {
    let totals = input.totals(taxes);
    let c = Content::of(input, taxes, &totals, None, None);
    // language=PostgreSQL
    sqlx::query!("delete from invoice_lines where invoice_id = $1", id as _)
        .execute(&mut *tx)
        .await?;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        with lines as (
            insert into invoice_lines (invoice_id, position, description, quantity_milli,
                                       unit_amount_cents, amount_cents, tax_rate_id, tax_name,
                                       tax_percent_milli, discount_cents, tax_cents)
            select $1, l.position, l.description, l.quantity_milli, l.unit_amount_cents,
                   l.amount_cents, l.tax_rate_id, l.tax_name, l.tax_percent_milli, l.discount_cents,
                   l.tax_cents
            from jsonb_populate_recordset(null::invoice_lines, $3::jsonb) l
        )
        update invoices i
        set subtotal_cents = h.subtotal_cents, discount_percent_milli = h.discount_percent_milli,
            discount_amount_cents = h.discount_amount_cents, discount_cents = h.discount_cents,
            tax_cents = h.tax_cents, total_cents = h.total_cents, notes = h.notes,
            payment_terms_days = h.payment_terms_days, collection_method = h.collection_method,
            due_date = coalesce((now() at time zone o.time_zone)::date + h.payment_terms_days,
                                h.due_date)
        from orgs o, jsonb_populate_record(null::invoices, $2::jsonb) h
        where i.id = $1 and o.id = i.org_id
        "#,
        id as _,
        Json(&c.header) as _,
        Json(&c.lines) as _,
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

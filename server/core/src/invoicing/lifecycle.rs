//! The invoice lifecycle: finalize, void, mark uncollectible, delete a draft, duplicate. Each move is
//! one conditional statement (it names the states it may start from), so a repeat or a race moves
//! nothing a second time and answers with where the invoice is now. Call them inside the
//! transaction that claimed the attempt.

use chrono::NaiveDate;
use model::InvoiceId;
use model::OrgId;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::invoicing::link_token;
use model::{InvoiceStatus, PaymentState};

/// A lifecycle action of the owner (a button) or an API client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Finalize,
    Void,
    MarkUncollectible,
    DeleteDraft,
    /// Replaces the customer's link `/i/{token}` of a finalized invoice (paid ones too): the old
    /// link stops at once, the new one is shown to the owner.
    NewLink,
    /// No more automatic charges of this invoice (nor retries): it is collected by sending it.
    StopRetries,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Finalize => "finalize",
            Action::Void => "void",
            Action::MarkUncollectible => "mark_uncollectible",
            Action::DeleteDraft => "delete",
            Action::NewLink => "new_link",
            Action::StopRetries => "stop_retries",
        }
    }

    /// The name its button's attempts are claimed under.
    pub fn form_name(self) -> &'static str {
        match self {
            Action::Finalize => "finalize_invoice",
            Action::Void => "void_invoice",
            Action::MarkUncollectible => "mark_uncollectible",
            Action::DeleteDraft => "delete_draft",
            Action::NewLink => "new_customer_link",
            Action::StopRetries => "stop_retries",
        }
    }

    pub fn parse(text: &str) -> Option<Action> {
        [
            Action::Finalize,
            Action::Void,
            Action::MarkUncollectible,
            Action::DeleteDraft,
            Action::NewLink,
            Action::StopRetries,
        ]
        .into_iter()
        .find(|a| a.as_str() == text)
    }

    /// What a person reads when the action could not apply.
    pub fn refusal(self, status: InvoiceStatus, payment: PaymentState) -> String {
        match self {
            Action::Finalize => "Only a draft can be finalized.".to_owned(),
            Action::Void if status == InvoiceStatus::Draft => {
                "A draft cannot be voided; delete it instead.".to_owned()
            }
            Action::Void => format!(
                "Only an open or uncollectible invoice with no payment can be voided; \
                 this one is {} and {}.",
                status.as_str(),
                payment.label()
            ),
            Action::MarkUncollectible => format!(
                "Only an open invoice can be marked uncollectible; this one is {}.",
                status.as_str()
            ),
            Action::DeleteDraft => "Only a draft can be deleted; void it instead.".to_owned(),
            Action::NewLink => format!(
                "Only a finalized invoice has a customer link; this one is {}.",
                status.as_str()
            ),
            Action::StopRetries => {
                "Only an invoice collected automatically has charges to stop.".to_owned()
            }
        }
    }
}

/// Where a move left the invoice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moved {
    /// This call made the move.
    Now,
    /// It was already where the action leads (a repeat, or someone else's click won).
    Already,
    /// It cannot go there from where it is.
    Refused(InvoiceStatus, PaymentState),
    /// No such invoice in this org (or, for a delete, already gone).
    NotFound,
}

/// Runs `action` on invoice `id` of `org`.
pub async fn apply(
    tx: &mut PgConnection,
    org: OrgId,
    id: InvoiceId,
    action: Action,
) -> sqlx::Result<Moved> {
    // Every action but finalize is one statement that changes one row when the invoice may move.
    let statement = match action {
        Action::Finalize => None,
        Action::Void => {
            // language=PostgreSQL
            Some(sqlx::query!(
                r#"
                update invoices
                set status = 'void', public_token = null, voided_at = now(), updated_at = now()
                where id = $1 and org_id = $2 and status in ('open', 'uncollectible')
                  and payment_state = 'unpaid'
                "#,
                id as _,
                org as _
            ))
        }
        Action::MarkUncollectible => {
            // language=PostgreSQL
            Some(sqlx::query!(
                r#"
                update invoices set status = 'uncollectible', updated_at = now()
                where id = $1 and org_id = $2 and status = 'open'
                "#,
                id as _,
                org as _
            ))
        }
        Action::StopRetries => {
            // language=PostgreSQL
            // A scheduled attempt finds nothing to charge and is canceled by its worker.
            Some(sqlx::query!(
                r#"
                update invoices
                set collection_method = 'send_invoice', charge_retries_stopped_at = now(),
                    updated_at = now()
                where id = $1 and org_id = $2 and collection_method = 'charge_automatically'
                "#,
                id as _,
                org as _
            ))
        }
        Action::NewLink => {
            // language=PostgreSQL
            Some(sqlx::query!(
                r#"
                update invoices set public_token = $3, updated_at = now()
                where id = $1 and org_id = $2 and status not in ('draft', 'void')
                "#,
                id as _,
                org as _,
                link_token::mint()
            ))
        }
        Action::DeleteDraft => {
            // language=PostgreSQL
            // A draft some Stripe event named (money for a draft is an anomaly the owner reviews)
            // keeps its row, so the event's record keeps pointing at something.
            Some(sqlx::query!(
                r#"
                delete from invoices
                where id = $1 and org_id = $2 and status = 'draft'
                  and not exists (select from stripe_events e where e.invoice_id = $1)
                  and not exists (select from payments p where p.invoice_id = $1)
                "#,
                id as _,
                org as _
            ))
        }
    };
    let moved = match statement {
        Some(statement) => statement.execute(&mut *tx).await?.rows_affected() == 1,
        None => finalize(tx, org, id).await?,
    };
    if moved {
        if action == Action::Void {
            // Nobody pays a void invoice through a session Stripe still holds open.
            crate::payments::checkout::expire_open_sessions(tx, org, id, None).await?;
        }
        return Ok(Moved::Now);
    }
    // language=PostgreSQL
    let now = sqlx::query!(
        r#"select status as "status: InvoiceStatus", payment_state as "payment_state: PaymentState"
           from invoices where id = $1 and org_id = $2"#,
        id as _,
        org as _
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(now) = now else {
        return Ok(Moved::NotFound);
    };
    let (status, payment) = (now.status, now.payment_state);
    let already = match action {
        // Any finalized invoice is past "finalize".
        Action::Finalize => status != InvoiceStatus::Draft,
        Action::Void => status == InvoiceStatus::Void,
        Action::MarkUncollectible => status == InvoiceStatus::Uncollectible,
        Action::DeleteDraft | Action::NewLink | Action::StopRetries => false,
    };
    Ok(if already {
        Moved::Already
    } else {
        Moved::Refused(status, payment)
    })
}

/// draft → open: the org's next number in its format (gapless per org and period: the counter row
/// is locked until commit, and a rollback gives the number back), a public token, and the customer's
/// billing details copied from the customer record, so the finalized invoice never changes with it.
async fn finalize(tx: &mut PgConnection, org: OrgId, id: InvoiceId) -> sqlx::Result<bool> {
    let token = link_token::mint();
    // The draft is locked first; a concurrent finalize or delete waits for it and then finds no
    // draft, so it takes no number.
    // language=PostgreSQL
    let done = sqlx::query_scalar!(
        r#"
        with draft as (
            select customer_id from invoices
            where id = $1 and org_id = $2 and status = 'draft'
            for update
        ), org as (
            select number_format, number_reset,
                   extract(year from now() at time zone time_zone)::int as yr,
                   (now() at time zone time_zone)::date as today, org_party(orgs) as seller
            from orgs where id = $2
        ), counter as (
            insert into invoice_counters (org_id, period, last_number)
            select $2, case when org.number_reset = 'yearly' then org.yr else 0 end, 1
            from draft, org
            on conflict (org_id, period) do update set last_number = invoice_counters.last_number + 1
            returning period, last_number
        )
        update invoices i
        set status = 'open', number = c.last_number, number_period = c.period,
            number_text = invoice_number_text(org.number_format, c.last_number, org.yr),
            public_token = $3, finalized_at = now(), updated_at = now(), version = i.version + 1,
            due_date = coalesce(org.today + i.payment_terms_days, i.due_date),
            customer_name = coalesce(cu.name, i.customer_name),
            customer_email = coalesce(cu.email, i.customer_email),
            customer_address = coalesce(customer_postal(cu), i.customer_address),
            customer_tax_id = case when cu.id is null then i.customer_tax_id else cu.vat_id end,
            buyer = case when cu.id is null then i.buyer else customer_party(cu) end,
            seller = org.seller
        from counter c
        cross join org
        left join customers cu on cu.id = (select customer_id from draft) and cu.org_id = $2
        where i.id = $1
        returning true as "done!"
        "#,
        id as _,
        org as _,
        token
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(done.is_some())
}

/// A new draft `new_id` with the lines (with their taxes), discount, notes, terms, customer and
/// currency of invoice `id` (any status), due by its payment terms, or else as many days after today
/// (in the org's time zone) as the original was after it was issued. None when
/// `id` is not an invoice of `org`.
pub async fn duplicate(
    tx: &mut PgConnection,
    org: OrgId,
    id: InvoiceId,
    new_id: Uuid,
    source_key: &str,
) -> sqlx::Result<Option<NaiveDate>> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"
        with src as (
            select i.*, (now() at time zone o.time_zone)::date as today,
                   (coalesce(i.finalized_at, i.created_at) at time zone o.time_zone)::date as issued
            from invoices i join orgs o on o.id = i.org_id
            where i.id = $1 and i.org_id = $2
        ), copy as (
            insert into invoices (id, org_id, status, customer_id, customer_name, customer_email,
                                  customer_address, customer_tax_id, currency, due_date,
                                  total_cents, source_key, subtotal_cents, discount_percent_milli,
                                  discount_amount_cents, discount_cents, tax_cents, notes,
                                  payment_terms_days)
            select $3, org_id, 'draft', customer_id, customer_name, customer_email,
                   customer_address, customer_tax_id, currency,
                   today + coalesce(payment_terms_days, greatest(due_date - issued, 0)),
                   total_cents, $4, subtotal_cents, discount_percent_milli, discount_amount_cents,
                   discount_cents, tax_cents, notes, payment_terms_days
            from src
            returning due_date
        ), lines as (
            insert into invoice_lines (invoice_id, position, description, quantity_milli,
                                       unit_amount_cents, amount_cents, tax_rate_id, tax_name,
                                       tax_percent_milli, discount_cents, tax_cents)
            select $3, l.position, l.description, l.quantity_milli, l.unit_amount_cents,
                   l.amount_cents, l.tax_rate_id, l.tax_name, l.tax_percent_milli,
                   l.discount_cents, l.tax_cents
            from invoice_lines l
            where l.invoice_id = $1 and exists (select from copy)
        )
        select due_date as "due_date!: NaiveDate" from copy
        "#,
        id as _,
        org as _,
        new_id,
        source_key
    )
    .fetch_optional(&mut *tx)
    .await
}

/// What an edit of a draft did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edited {
    /// Saved; the draft's new version.
    Now(i32),
    /// The draft is at another version than the edit was made from: someone saved in between.
    Stale {
        current: i32,
    },
    /// It is no longer a draft (finalized, or voided after).
    NotDraft(InvoiceStatus),
    NotFound,
}

/// The command that edits a draft, whichever surface asks: replaces draft `id`'s content with
/// `input` (the org's rules read in this transaction, [`settle`](crate::invoicing::input::settle)),
/// if it is still a draft at version `expected`. The version check is in the update's own
/// condition, so of two edits made from the same version exactly one is saved.
pub async fn edit_draft(
    tx: &mut PgConnection,
    org: OrgId,
    id: InvoiceId,
    expected: i32,
    input: &model::InvoiceInput,
) -> Result<Edited, crate::invoicing::error::InvoiceError> {
    let mut input = input.clone();
    let taxes = crate::invoicing::input::settle(tx, org, &mut input).await?;
    // language=PostgreSQL
    let saved = sqlx::query_scalar!(
        r#"
        update invoices
        set customer_name = $4, customer_email = $5, currency = $6,
            version = version + 1, updated_at = now(),
            customer_id = (select c.id from customers c where c.id = $7 and c.org_id = $2)
        where id = $1 and org_id = $2 and status = 'draft' and version = $3
        returning version
        "#,
        id as _,
        org as _,
        expected,
        input.customer_name,
        input.customer_email,
        input.currency,
        input.customer_id,
    )
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(version) = saved {
        crate::invoicing::invoices::replace_content(tx, id, &input, &taxes).await?;
        return Ok(Edited::Now(version));
    }
    // language=PostgreSQL
    let now = sqlx::query!(
        r#"select status as "status: InvoiceStatus", version from invoices where id = $1 and org_id = $2"#,
        id as _,
        org as _
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(match now {
        None => Edited::NotFound,
        Some(row) if row.status != InvoiceStatus::Draft => Edited::NotDraft(row.status),
        Some(row) => Edited::Stale {
            current: row.version,
        },
    })
}

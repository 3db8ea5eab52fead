//! Customers: the business writes and reads, scoped to their org.

pub mod imports;
pub mod statements;

use chrono::{DateTime, Utc};
use model::CustomerId;
use model::OrgId;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use model::{Address, Customer, CustomerInput};

struct Row {
    id: Uuid,
    name: String,
    email: String,
    address_line1: String,
    address_line2: String,
    city: String,
    postal_code: String,
    region: String,
    country: String,
    vat_id: Option<String>,
    buyer_reference: String,
    peppol_id: Option<String>,
    einvoice_channel: String,
    locale: Option<String>,
    notes: String,
    created_at: DateTime<Utc>,
}

impl From<Row> for Customer {
    fn from(r: Row) -> Self {
        let address = Address {
            line1: r.address_line1,
            line2: r.address_line2,
            city: r.city,
            postal_code: r.postal_code,
            region: r.region,
            country: r.country,
        };
        Customer {
            id: r.id,
            name: r.name,
            email: r.email,
            billing_address: address.lines().join(", "),
            address,
            tax_id: r.vat_id.clone(),
            vat_id: r.vat_id,
            buyer_reference: r.buyer_reference,
            peppol_id: r.peppol_id,
            einvoice_channel: model::peppol::EinvoiceChannel::parse(&r.einvoice_channel)
                .unwrap_or_default(),
            locale: r.locale.as_deref().and_then(model::Locale::parse),
            notes: r.notes,
            created_at: r.created_at,
        }
    }
}

/// The command that creates a customer, whichever surface asks (the form, the API, a CSV import, an
/// invoice that saves its customer): customer `id` (minted by the caller, so a claim can name it) of
/// `org`; `source_key` names the attempt (unique per org) when one made it.
pub async fn create(
    tx: &mut PgConnection,
    id: CustomerId,
    org: OrgId,
    source_key: Option<&str>,
    input: &CustomerInput,
) -> sqlx::Result<Customer> {
    let c = input.resolved();
    let a = &c.address;
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Row,
        r#"
        insert into customers (id, org_id, source_key, name, email, address_line1, address_line2,
                               city, postal_code, region, country, vat_id, buyer_reference, notes,
                               locale, peppol_id, einvoice_channel)
        values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, nullif($11, ''), $12, $13, $14, $15, $16,
                $17)
        returning id, name, email, address_line1, address_line2, city, postal_code, region,
                  coalesce(country, '') as "country!", vat_id, buyer_reference, peppol_id, einvoice_channel, locale, notes,
                  created_at as "created_at: DateTime<Utc>"
        "#,
        id as _,
        org as _,
        source_key,
        c.name,
        c.email,
        a.line1,
        a.line2,
        a.city,
        a.postal_code,
        a.region,
        a.country,
        c.vat_id,
        c.buyer_reference,
        c.notes,
        c.locale.map(|l| l.as_str()),
        c.peppol_id,
        c.einvoice_channel.as_str(),
    )
    .fetch_one(&mut *tx)
    .await?;
    Ok(row.into())
}

/// Replaces customer `id`'s details; None when `org` has no such customer. Invoices already
/// finalized keep the details they were finalized with; drafts pick the new ones up at finalization.
pub async fn update(
    tx: &mut PgConnection,
    org: OrgId,
    id: CustomerId,
    input: &CustomerInput,
) -> sqlx::Result<Option<Customer>> {
    let c = input.resolved();
    let a = &c.address;
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Row,
        r#"
        update customers
        set name = $3, email = $4, address_line1 = $5, address_line2 = $6, city = $7,
            postal_code = $8, region = $9, country = nullif($10, ''), vat_id = $11,
            buyer_reference = $12, notes = $13, locale = $14, peppol_id = $15,
            einvoice_channel = $16, updated_at = now()
        where org_id = $1 and id = $2
        returning id, name, email, address_line1, address_line2, city, postal_code, region,
                  coalesce(country, '') as "country!", vat_id, buyer_reference, peppol_id, einvoice_channel, locale, notes,
                  created_at as "created_at: DateTime<Utc>"
        "#,
        org as _,
        id as _,
        c.name,
        c.email,
        a.line1,
        a.line2,
        a.city,
        a.postal_code,
        a.region,
        a.country,
        c.vat_id,
        c.buyer_reference,
        c.notes,
        c.locale.map(|l| l.as_str()),
        c.peppol_id,
        c.einvoice_channel.as_str(),
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(row.map(Into::into))
}

/// The customer a form created under `source_key`.
pub async fn id_by_source_key(pool: &PgPool, org: OrgId, source_key: &str) -> sqlx::Result<Uuid> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        "select id from customers where org_id = $1 and source_key = $2",
        org as _,
        source_key
    )
    .fetch_one(pool)
    .await
}

/// `org`'s customer `id`, or None (also for another org's).
pub async fn get(
    db: impl sqlx::PgExecutor<'_>,
    org: OrgId,
    id: CustomerId,
) -> sqlx::Result<Option<Customer>> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Row,
        r#"
        select id, name, email, address_line1, address_line2, city, postal_code, region,
                       coalesce(country, '') as "country!", vat_id, buyer_reference, peppol_id, einvoice_channel, locale, notes,
               created_at as "created_at: DateTime<Utc>"
        from customers where org_id = $1 and id = $2
        "#,
        org as _,
        id as _
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(Into::into))
}

/// `org`'s customers, newest first, or those whose name or email starts with `search`
/// (case-insensitive, from the indexes on `lower(name)` and `lower(email)`).
pub async fn list(
    pool: &PgPool,
    org: OrgId,
    search: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<Customer>> {
    let rows = match search.map(str::trim).filter(|s| !s.is_empty()) {
        None => {
            // language=PostgreSQL
            sqlx::query_as!(
                Row,
                r#"
                select id, name, email, address_line1, address_line2, city, postal_code, region,
                       coalesce(country, '') as "country!", vat_id, buyer_reference, peppol_id, einvoice_channel, locale, notes,
                       created_at as "created_at: DateTime<Utc>"
                from customers where org_id = $1
                order by created_at desc, id desc
                limit $2
                "#,
                org as _,
                limit
            )
            .fetch_all(pool)
            .await?
        }
        Some(text) => {
            let prefix = crate::search::like_prefix(&text.to_lowercase());
            // language=PostgreSQL
            sqlx::query_as!(
                Row,
                r#"
                select id, name, email, address_line1, address_line2, city, postal_code, region,
                       coalesce(country, '') as "country!", vat_id, buyer_reference, peppol_id, einvoice_channel, locale, notes,
                       created_at as "created_at: DateTime<Utc>"
                from customers
                where org_id = $1 and (lower(name) like $2 or lower(email) like $2)
                order by lower(name), id
                limit $3
                "#,
                org as _,
                prefix,
                limit
            )
            .fetch_all(pool)
            .await?
        }
    };
    Ok(rows.into_iter().map(Into::into).collect())
}

/// The currency `org` invoices in unless told otherwise: its country's, US dollars when it has
/// none we know.
pub async fn org_currency(pool: &PgPool, org: OrgId) -> sqlx::Result<String> {
    // language=PostgreSQL
    let country = sqlx::query_scalar!(
        r#"select coalesce(country, '') as "country!" from orgs where id = $1"#,
        org as _
    )
    .fetch_optional(pool)
    .await?
    .unwrap_or_default();
    Ok(model::country_currency(&country)
        .unwrap_or("usd")
        .to_owned())
}

/// For each of `customers` (of `org`), the currency of their latest invoice; none for a customer
/// never invoiced.
pub async fn latest_currencies(
    pool: &PgPool,
    org: OrgId,
    customers: &[Uuid],
) -> sqlx::Result<Vec<(String, String)>> {
    // language=PostgreSQL
    let latest = sqlx::query!(
        r#"
        select c.id as "id!", last.currency
        from unnest($2::uuid[]) as c(id)
        cross join lateral (
            select currency from invoices i
            where i.customer_id = c.id and i.org_id = $1
            order by i.created_at desc
            limit 1
        ) last
        "#,
        org as _,
        customers
    )
    .fetch_all(pool)
    .await?;
    Ok((latest.into_iter())
        .map(|r| (r.id.to_string(), r.currency))
        .collect())
}

/// An invoice that names one of `org`'s customers takes that customer's name and email (the rest
/// is copied at finalization). A customer of another org, or none, is a field error (the write's
/// transaction rolls back with its claim).
pub async fn fill_invoice(
    db: impl sqlx::PgExecutor<'_>,
    org: OrgId,
    customer: Option<Uuid>,
    name: &mut String,
    email: &mut String,
) -> Result<(), crate::invoicing::error::InvoiceError> {
    let Some(id) = customer else {
        return Ok(());
    };
    match get(db, org, CustomerId::from(id)).await? {
        Some(c) => {
            *name = c.name;
            *email = c.email;
            Ok(())
        }
        None => Err(crate::invoicing::error::InvoiceError::field(
            "customer_id",
            "Choose one of your customers.",
        )),
    }
}

/// Why a customer edit cannot be saved; each surface answers it its own way.
#[derive(Debug, thiserror::Error)]
pub enum CustomerError {
    /// The result is not a customer (serde's reason).
    #[error("not a customer: {0}")]
    Unreadable(String),
    /// Field → message.
    #[error("invalid customer: {0:?}")]
    Invalid(model::error::FieldErrors),
}

impl From<CustomerError> for model::error::AppError {
    fn from(err: CustomerError) -> Self {
        match err {
            CustomerError::Unreadable(reason) => model::error::AppError::BadRequest(reason),
            CustomerError::Invalid(fields) => model::error::AppError::invalid(fields),
        }
    }
}

/// `current` with `patch` (a JSON merge patch of its fields) applied, checked as a new one would be.
pub fn patched(
    current: &Customer,
    patch: &serde_json::Value,
) -> Result<CustomerInput, CustomerError> {
    // The older names patch what they name now: `tax_id` the VAT id, `billing_address` line 1.
    let mut patch = patch.clone();
    if let Some(fields) = patch.as_object_mut() {
        if let Some(v) = fields.remove("tax_id") {
            fields.entry("vat_id").or_insert(v);
        }
        if let Some(v) = fields.remove("billing_address") {
            let address = fields
                .entry("address")
                .or_insert_with(|| serde_json::json!({}));
            if let Some(address) = address.as_object_mut() {
                address.entry("line1").or_insert(v);
            }
        }
    }
    let input =
        crate::patch::patched(&current.input(), &patch).map_err(CustomerError::Unreadable)?;
    input.check().map_err(CustomerError::Invalid)?;
    Ok(input)
}

/// A button on a customer's page: one key minted when the page was rendered names every button's
/// attempt, each claimed under its own form name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CustomerChange {
    /// Replaces the customer's statement link `/s/{token}`: the old link stops at once.
    NewLink,
    /// Archives the customer: their statement link stops working.
    Archive,
    /// Takes the customer out of the archive, still without a statement link: the link they had
    /// never works again, and the owner makes a new one on purpose.
    Unarchive,
}

impl CustomerChange {
    pub fn as_str(self) -> &'static str {
        match self {
            CustomerChange::NewLink => "new_link",
            CustomerChange::Archive => "archive",
            CustomerChange::Unarchive => "unarchive",
        }
    }

    /// The name its button's attempts are claimed under.
    pub fn form_name(self) -> &'static str {
        match self {
            CustomerChange::NewLink => "new_statement_link",
            CustomerChange::Archive => "archive_customer",
            CustomerChange::Unarchive => "unarchive_customer",
        }
    }

    /// What the audit log calls the change.
    pub fn audit_name(self) -> &'static str {
        match self {
            CustomerChange::NewLink => "customer.statement_link_replaced",
            CustomerChange::Archive => "customer.archived",
            CustomerChange::Unarchive => "customer.unarchived",
        }
    }

    pub fn parse(text: &str) -> Option<CustomerChange> {
        [
            CustomerChange::NewLink,
            CustomerChange::Archive,
            CustomerChange::Unarchive,
        ]
        .into_iter()
        .find(|a| a.as_str() == text)
    }
}

/// Where a customer button left the customer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CustomerMoved {
    /// This call made the change (the customer's name, for the audit log).
    Now(String),
    /// It was already where the action leads (a repeat, or someone else's click won).
    Already,
    /// An archived customer gets no statement link: unarchive them first.
    Archived,
    /// No such customer in this org.
    NotFound,
}

/// Runs `action` on customer `id` of `org`, as one conditional statement: a repeat or a race
/// changes nothing twice.
pub async fn apply(
    tx: &mut PgConnection,
    org: OrgId,
    id: CustomerId,
    action: CustomerChange,
) -> sqlx::Result<CustomerMoved> {
    let changed = match action {
        CustomerChange::NewLink => crate::customers::statements::replace_link(tx, org, id).await?,
        CustomerChange::Archive => {
            // language=PostgreSQL
            sqlx::query_scalar!(
                r#"
                update customers set archived_at = now(), statement_token = null, updated_at = now()
                where id = $1 and org_id = $2 and archived_at is null
                returning name
                "#,
                id as _,
                org as _
            )
            .fetch_optional(&mut *tx)
            .await?
        }
        CustomerChange::Unarchive => {
            // language=PostgreSQL
            sqlx::query_scalar!(
                r#"
                update customers set archived_at = null, updated_at = now()
                where id = $1 and org_id = $2 and archived_at is not null
                returning name
                "#,
                id as _,
                org as _
            )
            .fetch_optional(&mut *tx)
            .await?
        }
    };
    if let Some(name) = changed {
        return Ok(CustomerMoved::Now(name));
    }
    // language=PostgreSQL
    let archived = sqlx::query_scalar!(
        r#"select archived_at is not null as "archived!" from customers where id = $1 and org_id = $2"#,
        id as _,
        org as _
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(match (archived, action) {
        (None, _) => CustomerMoved::NotFound,
        // Only an archived customer refuses a new link.
        (Some(_), CustomerChange::NewLink) => CustomerMoved::Archived,
        (Some(_), CustomerChange::Archive | CustomerChange::Unarchive) => CustomerMoved::Already,
    })
}

impl crate::observe::Tracked for CustomerMoved {
    fn outcome(&self) -> crate::observe::AttemptOutcome {
        use crate::observe::AttemptOutcome;
        match self {
            CustomerMoved::Now(_) => AttemptOutcome::Won,
            CustomerMoved::Already => AttemptOutcome::Replay,
            CustomerMoved::Archived | CustomerMoved::NotFound => AttemptOutcome::Rejected,
        }
    }
}

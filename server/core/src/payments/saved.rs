//! Saved payment methods: a customer saves a card or a SEPA Direct Debit mandate on the provider's
//! setup page, and the provider's `setup_intent.succeeded` event (claimed as every event is, by its
//! id) records it under the provider's method id, the business key that keeps a method from being
//! saved twice. The newest saved method is the customer's default, the one charged automatically.
//!
//! The provider's calls here are idempotent by keys this module derives from what names the
//! attempt: the customer at the provider is made under `invoicer-customer-<customer id>`, a setup
//! page under a key derived from the request's own key; two deliveries of one request get the same
//! page.

use model::collection::SavedMethod;
use model::{CustomerId, OrgId};
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::payments::provider::{NewCustomer, NewSetup, Provider, ProviderError};
use crate::payments::{Effect, EffectKind};

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("the payment provider's calls are saturated")]
    Saturated,
    #[error("the email was refused: {0:?}")]
    Refused(crate::mail::gate::Refused),
}

/// Where the customer goes after saving (or going back from) the setup page.
pub struct SetupUrls {
    pub success: String,
    pub cancel: String,
}

/// The customer's id at the provider, made on first use under a key named by our customer (a
/// repeat finds the same one); `None` when `customer` is not one of `org`'s.
pub async fn provider_customer(
    pool: &PgPool,
    provider: &impl Provider,
    org: OrgId,
    customer: CustomerId,
) -> Result<Option<String>, LinkError> {
    // language=PostgreSQL
    let known = sqlx::query!(
        r#"
        select c.name, c.email, p.provider_customer as "provider_customer?"
        from customers c
        left join provider_customers p on p.customer_id = c.id and p.provider = $3
        where c.id = $1 and c.org_id = $2
        "#,
        customer as _,
        org as _,
        provider.name()
    )
    .fetch_optional(pool)
    .await?;
    let Some(known) = known else {
        return Ok(None);
    };
    if let Some(id) = known.provider_customer {
        return Ok(Some(id));
    }
    let new = NewCustomer {
        org,
        customer: customer.uuid(),
        email: &known.email,
        name: &known.name,
    };
    let made = provider
        .create_customer(&new, &format!("invoicer-customer-{customer}"))
        .await?;
    // A concurrent first use made the same one (same key) or, past the provider's memory of the
    // key, another: the first stored wins and is the one used from now on. (Its row is read by a
    // second statement: the insert's snapshot does not see a row committed while it waited.)
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into provider_customers (customer_id, provider, org_id, provider_customer, livemode)
        values ($1, $5, $2, $3, $4)
        on conflict do nothing
        "#,
        customer as _,
        org as _,
        made.id,
        made.livemode,
        provider.name()
    )
    .execute(pool)
    .await?;
    // language=PostgreSQL
    let stored = sqlx::query_scalar!(
        "select provider_customer from provider_customers where customer_id = $1 and provider = $2",
        customer as _,
        provider.name()
    )
    .fetch_one(pool)
    .await?;
    Ok(Some(stored))
}

/// A setup page where `customer` of `org` saves a method, for the attempt `attempt` (the API
/// client's key, the rendered button's key): the same attempt gets the same page. `None` when
/// `customer` is not one of `org`'s.
pub async fn setup_link(
    pool: &PgPool,
    provider: &impl Provider,
    org: OrgId,
    customer: CustomerId,
    currency: &str,
    attempt: &str,
    urls: &SetupUrls,
) -> Result<Option<String>, LinkError> {
    let Some(_slot) = provider.call_slot() else {
        return Err(LinkError::Saturated);
    };
    let Some(at_provider) = provider_customer(pool, provider, org, customer).await? else {
        return Ok(None);
    };
    let new = NewSetup {
        org,
        customer_id: customer.uuid(),
        customer: &at_provider,
        currency,
        success_url: &urls.success,
        cancel_url: &urls.cancel,
    };
    let digest = Sha256::digest(attempt.as_bytes());
    let key = format!("invoicer-setup-{}", hex::encode(&digest[..16]));
    Ok(Some(provider.setup_page(&new, &key).await?))
}

/// The methods `customer` of `org` saved and did not remove, oldest first; `None` when the customer
/// is not one of `org`'s.
pub async fn list(
    conn: &mut PgConnection,
    org: OrgId,
    customer: CustomerId,
) -> sqlx::Result<Option<Vec<SavedMethod>>> {
    // language=PostgreSQL
    let exists = sqlx::query_scalar!(
        r#"select true as "yes!" from customers where id = $1 and org_id = $2"#,
        customer as _,
        org as _
    )
    .fetch_optional(&mut *conn)
    .await?;
    if exists.is_none() {
        return Ok(None);
    }
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select id, type as kind, brand, last4, mandate_reference, mandate_status, is_default
        from payment_methods
        where customer_id = $1 and org_id = $2 and removed_at is null
        order by created_at, id
        "#,
        customer as _,
        org as _
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(Some(
        rows.into_iter()
            .map(|r| SavedMethod {
                id: r.id,
                kind: r.kind,
                brand: r.brand,
                last4: r.last4,
                mandate_reference: r.mandate_reference,
                mandate_status: r.mandate_status,
                default: r.is_default,
            })
            .collect(),
    ))
}

/// The methods the customer of invoice `invoice` saved and did not remove, oldest first (none
/// without a customer record): what their invoice page shows.
pub async fn of_invoice(pool: &PgPool, invoice: Uuid) -> sqlx::Result<Vec<SavedMethod>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select m.id, m.type as kind, m.brand, m.last4, m.mandate_reference, m.mandate_status,
               m.is_default
        from invoices i
        join payment_methods m on m.customer_id = i.customer_id and m.org_id = i.org_id
        where i.id = $1 and m.removed_at is null
        order by m.created_at, m.id
        "#,
        invoice
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| SavedMethod {
            id: r.id,
            kind: r.kind,
            brand: r.brand,
            last4: r.last4,
            mandate_reference: r.mandate_reference,
            mandate_status: r.mandate_status,
            default: r.is_default,
        })
        .collect())
}

/// A saved method as the provider's setup event names it, with what the provider told about it.
#[derive(Debug, Clone)]
pub struct SetupFact<'a> {
    pub provider: &'a str,
    pub provider_customer: &'a str,
    pub provider_method: &'a str,
    /// `card` or `sepa_debit`.
    pub kind: &'a str,
    pub brand: Option<&'a str>,
    pub last4: Option<&'a str>,
    pub mandate: Option<&'a str>,
    pub mandate_reference: Option<&'a str>,
    pub mandate_status: Option<&'a str>,
    pub event_id: &'a str,
}

/// Records a saved method for the customer the provider's customer is (one this app made), as its
/// newest and default method; a method already saved is left as it is. Call it in the transaction
/// that claimed the event.
pub async fn record_setup(tx: &mut PgConnection, f: &SetupFact<'_>) -> sqlx::Result<Effect> {
    if !matches!(f.kind, "card" | "sepa_debit") {
        return Ok(Effect::new(
            EffectKind::Ignored,
            format!(
                "a saved method of type {}: not one invoicer charges",
                f.kind
            ),
        ));
    }
    // The customer's row first: two methods saved at once take turns choosing the default.
    // language=PostgreSQL
    let owner = sqlx::query!(
        r#"
        select c.id, c.org_id from provider_customers p
        join customers c on c.id = p.customer_id
        where p.provider = $1 and p.provider_customer = $2
        for update of c
        "#,
        f.provider,
        f.provider_customer
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(owner) = owner else {
        return Ok(Effect::new(
            EffectKind::Anomaly,
            format!(
                "provider customer {} was not made by invoicer: nothing saved",
                f.provider_customer
            ),
        ));
    };
    let short = |text: Option<&str>, n: usize| text.map(|t| t.chars().take(n).collect::<String>());
    // language=PostgreSQL
    let saved = sqlx::query_scalar!(
        r#"
        with new as (
            insert into payment_methods (id, org_id, customer_id, provider, provider_method, type,
                                         brand, last4, mandate, mandate_reference, mandate_status,
                                         event_id)
            values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $12, $11)
            on conflict (provider, provider_method) do nothing
            returning id
        ), others as (
            update payment_methods set is_default = false
            where customer_id = $3 and is_default and exists (select from new)
        )
        select id as "id!" from new
        "#,
        Uuid::now_v7(),
        owner.org_id,
        owner.id,
        f.provider,
        f.provider_method,
        f.kind,
        short(f.brand, 40),
        short(f.last4, 4),
        short(f.mandate, 100),
        short(f.mandate_reference, 100),
        f.event_id,
        short(f.mandate_status, 20),
    )
    .fetch_optional(&mut *tx)
    .await?;
    let mut effect = match saved {
        Some(id) => {
            // After the others lost it (a separate statement: the unique default index is
            // checked per statement).
            // language=PostgreSQL
            sqlx::query!(
                "update payment_methods set is_default = true where id = $1",
                id
            )
            .execute(&mut *tx)
            .await?;
            let what = match (f.kind, f.last4) {
                ("card", Some(last4)) => format!("{} card ending {last4}", f.brand.unwrap_or("a")),
                ("sepa_debit", _) => format!(
                    "SEPA Direct Debit mandate {}",
                    f.mandate_reference.unwrap_or("")
                ),
                _ => f.kind.to_owned(),
            };
            Effect::new(
                EffectKind::Applied,
                format!("saved {what} as the customer's default"),
            )
        }
        None => Effect::new(
            EffectKind::Ignored,
            format!("method {} is saved already", f.provider_method),
        ),
    };
    effect.org_id = Some(owner.org_id.into());
    Ok(effect)
}

/// Removes saved method `method` of `org`'s customer (their default passes to the newest left), and
/// queues its detaching at the provider in the same transaction (a worker makes the call). Returns
/// the provider's id, or `None` when there is no such method.
pub async fn remove(
    tx: &mut PgConnection,
    org: OrgId,
    customer: CustomerId,
    method: Uuid,
) -> sqlx::Result<Option<String>> {
    // language=PostgreSQL
    let removed = sqlx::query!(
        r#"
        update payment_methods set removed_at = now(), is_default = false
        where id = $1 and org_id = $2 and customer_id = $3 and removed_at is null
        returning provider_method
        "#,
        method,
        org as _,
        customer as _
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(removed) = removed else {
        return Ok(None);
    };
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update payment_methods set is_default = true
        where id = (select id from payment_methods
                    where customer_id = $1 and removed_at is null
                    order by created_at desc, id desc limit 1)
          and not exists (select from payment_methods
                          where customer_id = $1 and removed_at is null and is_default)
        "#,
        customer as _
    )
    .execute(&mut *tx)
    .await?;
    crate::outbox::enqueue_job(
        tx,
        org,
        crate::outbox::JobKind::DetachPaymentMethod,
        serde_json::json!({ "method_id": method }),
    )
    .await?;
    Ok(Some(removed.provider_method))
}

/// A worker's call for a `detach_payment_method` row it holds: the removed method is let go at its
/// provider under a key named by the method (a repeat is the same call), then marked detached.
/// Err: (shown, detail, permanent).
pub async fn detach_at_provider(
    pool: &PgPool,
    provider: Option<&impl Provider>,
    payload: &serde_json::Value,
) -> Result<(), (String, String, bool)> {
    let db = |e: sqlx::Error| {
        let shown = "temporary error while detaching a payment method";
        (shown.to_owned(), e.to_string(), false)
    };
    let Some(method) = payload["method_id"]
        .as_str()
        .and_then(|s| s.parse::<Uuid>().ok())
    else {
        let detail = "payload has no method_id".to_owned();
        return Err(("no payment method to detach".into(), detail, true));
    };
    let Some(provider) = provider.filter(|p| p.configured()) else {
        // Without a provider nothing was saved there.
        return Ok(());
    };
    // language=PostgreSQL
    let found = sqlx::query_scalar!(
        r#"
        select provider_method from payment_methods
        where id = $1 and provider = $2 and removed_at is not null and detached_at is null
        "#,
        method,
        provider.name()
    )
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    let Some(at_provider) = found else {
        return Ok(());
    };
    provider
        .detach(&at_provider, &format!("invoicer-detach-{method}"))
        .await
        .map_err(|e| {
            let shown = "the payment provider could not detach the method";
            (shown.to_owned(), e.to_string(), !e.retryable())
        })?;
    // language=PostgreSQL
    sqlx::query!(
        "update payment_methods set detached_at = coalesce(detached_at, now()) where id = $1",
        method
    )
    .execute(pool)
    .await
    .map_err(db)?;
    Ok(())
}

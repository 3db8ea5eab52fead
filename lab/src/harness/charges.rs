//! Invoices due for charging: a customer of an org whose card is saved at a local Stripe (saved on
//! its setup page, as the customer would), and invoices of that org collected automatically from
//! them, each with its first attempt due now. `lab bench charges` and the pgbench script test use it.

use anyhow::Context;
use invoicer_core::payments::stripe::client::{NewSetupSession, Stripe};
use sqlx::PgPool;
use uuid::Uuid;

use crate::stripe_local::LocalStripe;

/// Makes `invoices` of `org` (open, with money due) charged automatically from a new customer with
/// a card saved at `local` (which `stripe` calls), each with its first attempt due now.
pub async fn due(
    pool: &PgPool,
    stripe: &Stripe,
    local: &LocalStripe,
    org: model::OrgId,
    invoices: &[Uuid],
) -> anyhow::Result<()> {
    let customer = Uuid::now_v7();
    let at_stripe = stripe
        .create_customer(
            "charged@example.com",
            "Charged",
            &[("customer_id", customer.to_string())],
            &format!("lab-customer-{customer}"),
        )
        .await?;
    let session = stripe
        .create_setup_session(
            &NewSetupSession {
                org,
                customer_id: customer,
                customer: &at_stripe.id,
                currency: "usd",
                success_url: "http://localhost/saved",
                cancel_url: "http://localhost/saved",
            },
            &format!("lab-setup-{customer}"),
        )
        .await?;
    local.save(&session.id, "card_4242").await?;
    let method = local
        .events()
        .iter()
        .rev()
        .find(|e| {
            e["type"] == "setup_intent.succeeded"
                && e["data"]["object"]["customer"].as_str() == Some(&at_stripe.id)
        })
        .and_then(|e| {
            e["data"]["object"]["payment_method"]
                .as_str()
                .map(str::to_owned)
        })
        .context("the saved card's setup event")?;
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    sqlx::query(
        r#"
        with customer as (
            insert into customers (id, org_id, name, email)
            values ($2, $1, 'Charged', 'charged@example.com')
        ), at_stripe as (
            insert into provider_customers (customer_id, provider, org_id, provider_customer, livemode)
            values ($2, 'stripe', $1, $3, false)
        ), method as (
            insert into payment_methods (id, org_id, customer_id, provider, provider_method, type,
                                         brand, last4, is_default, event_id)
            values (gen_random_uuid(), $1, $2, 'stripe', $4, 'card', 'visa', '4242', true, 'lab')
        ), invoices as (
            update invoices set customer_id = $2, collection_method = 'charge_automatically'
            where org_id = $1 and id = any($5)
        )
        insert into charge_attempts (invoice_id, n, org_id, due_at)
        select id, 1, $1, now() from unnest($5::uuid[]) id
        "#,
    )
    .bind(org)
    .bind(customer)
    .bind(&at_stripe.id)
    .bind(&method)
    .bind(invoices)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

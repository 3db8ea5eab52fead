//! A seeded org to put load on: an owner who can log in, an API key, and open invoices.

use anyhow::Context;
use sqlx::PgPool;
use uuid::Uuid;

/// An org with an owner who can log in, an API key, and `invoices` open invoices to pay.
pub struct Fixture {
    pub org: model::OrgId,
    pub user: Uuid,
    pub email: String,
    pub password: String,
    pub api_token: String,
    pub api_key_id: Uuid,
    pub invoices: Vec<Uuid>,
}

/// What every seeded invoice totals: large enough that one-cent payments never settle it.
pub const SEEDED_TOTAL_CENTS: i64 = 100_000_000;

/// Seeds a fresh org. Invoice ids are `md5('bench/' || org || '/' || n)::uuid` for n in 1..=count,
/// so pgbench scripts can name them without a lookup.
pub async fn seed(pool: &PgPool, invoices: usize) -> anyhow::Result<Fixture> {
    let tag = Uuid::new_v4().simple().to_string();
    let email = format!("load-{tag}@example.com");
    let password = "load test password".to_owned();
    let account = invoicer_core::accounts::create_org_with_owner(pool, "Load", &email, &password)
        .await
        .context("creating the load org")?;
    let key = invoicer_core::accounts::api_keys::create_for_user(
        pool,
        account.org_id,
        account.user_id,
        "load",
    )
    .await?;
    let count = i32::try_from(invoices).context("too many invoices")?;
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let ids = sqlx::query_scalar!(
        r#"
        insert into invoices (id, org_id, number, number_period, number_text, public_token,
                              finalized_at, customer_name, customer_email, currency, due_date,
                              total_cents, subtotal_cents)
        select md5('bench/' || $1::uuid || '/' || g)::uuid, $1, g, 0, 'INV-' || lpad(g::text, 6, '0'),
               md5('token/' || $1::uuid || '/' || g) || md5(random()::text), now(),
               'Load', 'load@example.com', 'usd', date '2030-01-01', $3, $3
        from generate_series(1, $2::int4) g
        order by g
        returning id
        "#,
        account.org_id as _,
        count,
        SEEDED_TOTAL_CENTS,
    )
    .fetch_all(&mut *tx)
    .await?;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        with lines as (
            insert into invoice_lines (invoice_id, position, description, quantity_milli,
                                       unit_amount_cents, amount_cents)
            select id, 1, 'Load', 1000, total_cents, total_cents from invoices where org_id = $1
        )
        -- The sessions the load's payment events name (the stand-in's), as if the app made them.
        insert into checkout_sessions (id, org_id, invoice_id, amount_cents, currency, livemode, url,
                                       expires_at, idempotency_key, simulated)
        select 'cs_test_sim_' || replace(id::text, '-', ''), org_id, id, total_cents, currency, false,
               '', now() + interval '1 day', 'simulated:' || id, true
        from invoices where org_id = $1
        "#,
        account.org_id as _
    )
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    sqlx::query!(
        "insert into invoice_counters (org_id, last_number) values ($1, $2)",
        account.org_id as _,
        count
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Fixture {
        org: account.org_id,
        user: account.user_id,
        email,
        password,
        api_token: key.plaintext,
        api_key_id: key.id,
        invoices: ids,
    })
}

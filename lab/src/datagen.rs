//! `lab datagen --size small|medium|large`: years of data for the read benchmarks, generated inside
//! Postgres (`insert ... select ... from generate_series`, one statement per table and org batch: no
//! row crosses the wire, which beats COPY from a client). Ids are UUIDv7 as the app mints them (the
//! row's time, then a hash of the org and the row number); tokens are hashes of the org and the row
//! number.
//!
//! Proportions per org of N invoices, spread over three years, newest last: 5 % drafts, 55 % paid,
//! 25 % open (the older ones overdue), 5 % void, 5 % uncollectible, 5 % refunded; 1–10 lines each;
//! a customer per 20 invoices; a payment per paid or refunded invoice and a refund per refunded one,
//! each with its webhook event, claim and attempt; an API or form claim and attempt per invoice; an
//! invoice email per finalized invoice and a receipt per payment in the outbox, 1 % of them dead.

use std::time::Instant;

use anyhow::Context;
use sqlx::PgPool;
use uuid::Uuid;

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// One org of 1,000 invoices.
    Small,
    /// One org of 100,000 invoices, and 1,000 orgs of 100.
    Medium,
    /// One org of 100,000 invoices, and 900 orgs of 1,000: a million invoices, 1.6 million attempts.
    Large,
    /// One org of 1,000,000 invoices (the export benchmark: a million rows from one org).
    Export,
}

impl Size {
    /// (the big org's invoices, other orgs, their invoices each).
    fn shape(self) -> (i64, i64, i64) {
        match self {
            Size::Small => (1_000, 0, 0),
            Size::Medium => (100_000, 1_000, 100),
            Size::Large => (100_000, 900, 1_000),
            Size::Export => (1_000_000, 0, 0),
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct DatagenArgs {
    #[arg(long, value_enum, default_value = "small")]
    pub size: Size,
    /// The big org's owner (the read benchmark logs in as them).
    #[arg(long, default_value = "reader@example.com")]
    pub email: String,
}

/// Generates `args.size` into the database; prints what it made and how long it took. Returns the
/// big org's id.
pub async fn run(pool: &PgPool, args: &DatagenArgs) -> anyhow::Result<Uuid> {
    let started = Instant::now();
    let (big, others, each) = args.size.shape();
    let account = invoicer_core::accounts::create_org_with_owner(
        pool,
        "Reader Ltd",
        &args.email,
        "reader password",
    )
    .await
    .context("creating the big org")?;
    skewed(pool, account.org_id, big, others, each).await?;
    let counts: Vec<(String, i64)> = sqlx::query_as(
        r#"
        select relname::text, n_live_tup from pg_stat_user_tables
        where relname in ('invoices', 'invoice_lines', 'payments', 'stripe_events', 'claims',
                          'outbox', 'attempts', 'customers')
        order by relname
        "#,
    )
    .fetch_all(pool)
    .await?;
    println!(
        "datagen {:?}: {} in {:.0} s",
        args.size,
        counts
            .iter()
            .map(|(t, n)| format!("{t} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        started.elapsed().as_secs_f64()
    );
    Ok(account.org_id.uuid())
}

/// Skewed as production is: `big` invoices in `org` (which exists), `others` orgs of `each` beside
/// it; then vacuumed, frozen and analyzed.
pub async fn skewed(
    pool: &PgPool,
    org_id: model::OrgId,
    big: i64,
    others: i64,
    each: i64,
) -> anyhow::Result<()> {
    org(pool, org_id, big).await?;
    other_orgs(pool, others, each).await?;
    // Years-old rows have long been vacuumed and frozen: their hint bits set and their pages all
    // visible, so index-only scans skip the heap. Freshly written ones are neither, and the first
    // reads would pay for that (setting hint bits, writing pages) in the measurements.
    sqlx::raw_sql("vacuum (freeze, analyze)")
        .execute(pool)
        .await?;
    Ok(())
}

/// `count` orgs of `each` invoices beside the big one. They are plain rows (nobody logs in as them):
/// their owners' password hashing would cost more than all their data.
pub async fn other_orgs(pool: &PgPool, count: i64, each: i64) -> anyhow::Result<()> {
    let started = Instant::now();
    for batch in 0..(count + 99) / 100 {
        let ids: Vec<Uuid> = (0..100.min(count - batch * 100))
            .map(|_| Uuid::now_v7())
            .collect();
        // language=PostgreSQL
        sqlx::query(
            "insert into orgs (id, name) select id, 'Org ' || id from unnest($1::uuid[]) id",
        )
        .bind(&ids)
        .execute(pool)
        .await?;
        for id in ids {
            org(pool, id.into(), each).await?;
        }
        eprintln!(
            "  {} orgs of {each} invoices, {:.0} s",
            (batch * 100 + 100).min(count),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// One org's data: `n` invoices and everything that hangs off them.
pub async fn org(pool: &PgPool, org: model::OrgId, n: i64) -> anyhow::Result<()> {
    if n == 0 {
        return Ok(());
    }
    let customers = (n / 20).max(5);
    let mut tx = pool.begin().await?;
    // Ids the app mints are UUIDv7 (time first), so an org's rows of one period sit together in
    // every index keyed by them (an invoice's lines, a page's invoices); the generated ones are
    // too: the row's time, then a hash of the org and the row.
    // language=PostgreSQL
    sqlx::query(
        r#"
        create or replace function pg_temp.v7(at timestamptz, seed text) returns uuid
        language sql immutable as $$
            select (lpad(to_hex((extract(epoch from at) * 1000)::int8), 12, '0') || '7'
                    || substr(md5(seed), 1, 3) || '8' || substr(md5(seed), 4, 15))::uuid
        $$
        "#,
    )
    .execute(&mut *tx)
    .await?;
    // The generated rows, as the statements below see them: row g of the org, its status by g % 20.
    // language=PostgreSQL
    sqlx::query(
        r#"
        create temporary table gen on commit drop as
        select g, pg_temp.v7(at, $1::text || '/i/' || g) as id, status, lines, unit, at, customer
        from (
        select g,
               case when g % 20 = 0 then 'draft' when g % 20 <= 11 then 'paid'
                    when g % 20 <= 16 then 'open' when g % 20 = 17 then 'void'
                    when g % 20 = 18 then 'uncollectible' else 'refunded' end as status,
               1 + g % 10 as lines, 1000 + (g % 97) * 100 as unit,
               now() - interval '3 years' * (1 - g::float8 / $2) as at,
               1 + g % $3 as customer
        from generate_series(1, $2::int8) g
        ) rows
        "#,
    )
    .bind(org)
    .bind(n)
    .bind(customers)
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    sqlx::query(
        r#"
        insert into customers (id, org_id, name, email, address_line1, created_at, updated_at)
        select md5($1::text || '/c/' || c)::uuid, $1, 'Customer ' || c, 'c' || c || '@example.com',
               c || ' Main Street', now() - interval '3 years', now() - interval '3 years'
        from generate_series(1, $2::int8) c
        "#,
    )
    .bind(org)
    .bind(customers)
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    sqlx::query(
        r#"
        insert into invoices (id, org_id, number, number_period, number_text, status, payment_state,
                              customer_id, customer_name, customer_email, currency, due_date,
                              subtotal_cents, total_cents, amount_paid_cents, source_key, public_token,
                              finalized_at, voided_at, created_at, updated_at)
        select id, $1, case when status <> 'draft' then g end, case when status <> 'draft' then 0 end,
               case when status <> 'draft' then 'INV-' || lpad(g::text, 7, '0') end,
               status,
               case status when 'paid' then 'paid' when 'refunded' then 'refunded' else 'unpaid' end,
               md5($1::text || '/c/' || customer)::uuid, 'Customer ' || customer,
               'c' || customer || '@example.com', 'usd', (at + interval '30 days')::date,
               lines * unit, lines * unit, case when status = 'paid' then lines * unit else 0 end,
               case when g % 3 = 0 then 'api:' || g else 'form:' || md5($1::text || '/f/' || g)::uuid end,
               case when status <> 'draft' then md5($1::text || '/t/' || g) || md5($1::text || '/u/' || g) end,
               case when status <> 'draft' then at end, case when status = 'void' then at end, at, at
        from gen
        "#,
    )
    .bind(org)
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    sqlx::query(
        r#"
        insert into invoice_lines (invoice_id, position, description, unit_amount_cents,
                                   quantity_milli, amount_cents)
        select id, p, 'Consulting, part ' || p, unit, 1000, unit
        from gen cross join lateral generate_series(1, lines) p
        "#,
    )
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    sqlx::query(
        "insert into invoice_counters (org_id, period, last_number) values ($1, 0, $2::int8::int4)",
    )
    .bind(org)
    .bind(n)
    .execute(&mut *tx)
    .await?;
    // Payments, refunds, their events and the events' claims and attempts.
    // language=PostgreSQL
    sqlx::query(
        r#"
        with paid as (
            select g, id as invoice, lines * unit as amount, at + interval '1 day' as at, status,
                   'pi_' || md5($1::text || '/p/' || g) as pi, 'evt_' || md5($1::text || '/e/' || g) as evt,
                   pg_temp.v7(at + interval '1 day', $1::text || '/pay/' || g) as payment
            from gen where status in ('paid', 'refunded')
        ), payments as (
            insert into payments (id, org_id, invoice_id, provider, provider_payment_id, amount_cents,
                                  currency, event_id, status, created_at)
            select payment, $1, invoice, 'stripe', pi, amount, 'usd', evt, 'succeeded', at from paid
        ), refunds as (
            insert into refunds (provider, provider_payment_id, amount_refunded_cents, full_refund,
                                 event_id, received_at)
            select 'stripe', pi, amount, true, evt || '_r', at + interval '1 day' from paid
            where status = 'refunded'
        ), events as (
            insert into stripe_events (account, id, type, payload, received_at, processed_at, outcome,
                                       org_id, invoice_id)
            select 'default', evt, 'checkout.session.completed',
                   '{"id":"' || evt || '","type":"checkout.session.completed"}', at, at, 'applied',
                   $1, invoice
            from paid
        ), receipts as (
            insert into outbox (id, org_id, invoice_id, kind, payload, attempts, sent_at, dead_at,
                                next_attempt_at, created_at)
            select pg_temp.v7(at, $1::text || '/r/' || g), $1, invoice, 'payment_receipt',
                   jsonb_build_object('payment_id', payment), 1,
                   case when g % 100 <> 1 then at end, case when g % 100 = 1 then at end, at, at
            from paid
        ), claims as (
            insert into claims (scope, owner, key, status, completed_at, claimed_at, created_at)
            select 'webhook', 'default', evt, 'done', at, at, at from paid
        )
        insert into attempts (org_id, surface, owner, key, outcome, invoice_id, duration_ms, created_at)
        select $1, 'webhook', 'stripe/default', evt, case when g % 7 = 0 then 'replay' else 'won' end, invoice,
               3.5, at
        from paid
        "#,
    )
    .bind(org)
    .execute(&mut *tx)
    .await?;
    // Each invoice's own claim and attempt (API or form), and its email.
    // language=PostgreSQL
    sqlx::query(
        r#"
        with made as (
            select g, id, status, at, g % 3 = 0 as api,
                   case when g % 3 = 0 then 'k' || g else md5($1::text || '/f/' || g)::uuid::text end as key
            from gen
        ), claims as (
            insert into claims (scope, owner, key, status, result_id, response_status, completed_at,
                                claimed_at, created_at)
            select case when api then 'api' else 'form' end,
                   case when api then $1::text || '/api-key' else $1::text || '/create_invoice' end,
                   key, 'done', id, case when api then 201 end, at, at, at
            from made
        ), emails as (
            insert into outbox (id, org_id, invoice_id, kind, payload, attempts, sent_at, dead_at,
                                next_attempt_at, created_at)
            select pg_temp.v7(at, $1::text || '/m/' || g), $1, id, 'invoice_email',
                   jsonb_build_object('invoice_id', id), 1,
                   case when g % 100 <> 2 then at end, case when g % 100 = 2 then at end, at, at
            from made where status <> 'draft'
        )
        insert into attempts (org_id, surface, owner, key, outcome, invoice_id, duration_ms, created_at)
        select $1, case when api then 'api' else 'form' end,
               case when api then $1::text || '/api-key' else $1::text || '/create_invoice' end,
               key, 'won', id, 4.2, at
        from made
        "#,
    )
    .bind(org)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

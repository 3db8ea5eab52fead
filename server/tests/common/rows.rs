//! Reading and seeding rows the way many tests do: one value from a query, the audit count of an
//! action, the token an email carries, an invoice made with the domain code.

use sqlx::{Decode, Encode, PgPool, Postgres, Type};
use uuid::Uuid;

/// What a one-column query can decode into.
pub trait Column: for<'r> Decode<'r, Postgres> + Type<Postgres> + Send + Unpin {}
impl<T: for<'r> Decode<'r, Postgres> + Type<Postgres> + Send + Unpin> Column for T {}

/// What a query can bind as `$1`.
pub trait Arg<'q>: 'q + Send + Encode<'q, Postgres> + Type<Postgres> {}
impl<'q, A: 'q + Send + Encode<'q, Postgres> + Type<Postgres>> Arg<'q> for A {}

/// The one value `sql` (no parameters) selects.
pub async fn scalar<T: Column>(pool: &PgPool, sql: &str) -> T {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

/// The one value `sql` selects with `$1` bound to `arg`.
pub async fn scalar_for<'q, T: Column>(pool: &PgPool, sql: &'q str, arg: impl Arg<'q>) -> T {
    sqlx::query_scalar(sql)
        .bind(arg)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Every value `sql` selects with `$1` bound to `arg`.
pub async fn scalars_for<'q, T: Column>(pool: &PgPool, sql: &'q str, arg: impl Arg<'q>) -> Vec<T> {
    sqlx::query_scalar(sql)
        .bind(arg)
        .fetch_all(pool)
        .await
        .unwrap()
}

/// Runs `sql` (no parameters, no rows wanted).
pub async fn execute(pool: &PgPool, sql: &str) {
    sqlx::query(sql).execute(pool).await.unwrap();
}

/// How many audit events of `action` the org `org` has.
pub async fn audit_count(pool: &PgPool, org: model::OrgId, action: &str) -> i64 {
    sqlx::query_scalar("select count(*) from audit_events where org_id = $1 and action = $2")
        .bind(org)
        .bind(action)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The token an email carries, read from its outbox row as the inbox would.
pub async fn emailed_token(pool: &PgPool, kind: &str, to: &str) -> String {
    sqlx::query_scalar(
        "select payload->>'token' from outbox where kind = $1 and lower(payload->>'to') = lower($2) \
         order by created_at desc, id desc limit 1",
    )
    .bind(kind)
    .bind(to)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// The customer's link token of `invoice`.
pub async fn public_token(pool: &PgPool, invoice: Uuid) -> String {
    scalar_for(
        pool,
        "select public_token from invoices where id = $1",
        invoice,
    )
    .await
}

/// An invoice to Ada with one line "Work" of `cents`, due on `due` (YYYY-MM-DD).
pub fn one_line_input(currency: &str, due: &str, cents: i64, draft: bool) -> model::InvoiceInput {
    model::InvoiceInput {
        customer_name: "Ada".into(),
        customer_email: "ada@example.com".into(),
        currency: currency.into(),
        due_date: Some(due.parse().unwrap()),
        lines: vec![model::LineInput {
            description: "Work".into(),
            quantity: model::Thousandths::whole(1),
            unit_amount_cents: cents,
            tax_rate_id: None,
        }],
        draft,
        customer_id: None,
        ..Default::default()
    }
}

/// `input` stored for `org` with the same domain code the surfaces use, in its own transaction.
pub async fn insert_invoice(pool: &PgPool, org: model::OrgId, input: &model::InvoiceInput) -> Uuid {
    let mut tx = pool.begin().await.unwrap();
    let invoice = invoicer_core::invoicing::invoices::create(
        &mut tx,
        invoicer_core::invoicing::invoices::NewInvoice::new(
            model::InvoiceId::from(Uuid::new_v4()),
            org,
        ),
        input,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    invoice.id
}

/// Every value `sql` (no parameters) selects.
pub async fn scalars<T: Column>(pool: &PgPool, sql: &str) -> Vec<T> {
    sqlx::query_scalar(sql).fetch_all(pool).await.unwrap()
}

/// A new org named `org_name` whose owner has a fresh address and the tests' password ("correct
/// horse"); (the owner's address, the account).
pub async fn new_owner(
    pool: &PgPool,
    org_name: &str,
) -> (String, invoicer_core::accounts::NewAccount) {
    let email = format!("{}@example.com", Uuid::new_v4().simple());
    let account =
        invoicer_core::accounts::create_org_with_owner(pool, org_name, &email, "correct horse")
            .await
            .unwrap();
    (email, account)
}

/// A new API key of `account`'s owner in its org: the bearer token.
pub async fn owners_key(pool: &PgPool, account: &invoicer_core::accounts::NewAccount) -> String {
    invoicer_core::accounts::api_keys::create_for_user(pool, account.org_id, account.user_id, "t")
        .await
        .unwrap()
        .plaintext
}

/// Deletes `payment` of `invoice` as the operator, in a transaction of its own (committed if it
/// went through).
pub async fn delete_payment(
    pool: &PgPool,
    org: model::OrgId,
    invoice: Uuid,
    payment: Uuid,
) -> Result<(), invoicer_core::payments::manual::PaymentError> {
    let mut tx = pool.begin().await.unwrap();
    let actor = invoicer_core::accounts::audit::Actor::operator();
    let invoice = model::InvoiceId::from(invoice);
    invoicer_core::payments::manual::delete(&mut tx, org, invoice, payment, &actor).await?;
    tx.commit().await.unwrap();
    Ok(())
}

/// How many `rows` there are: `rows` is what follows `select count(*) from`, with `$1` bound to `arg`.
pub async fn count_rows(pool: &PgPool, rows: &str, arg: impl Into<Uuid>) -> i64 {
    let sql = format!("select count(*) from {rows}");
    sqlx::query_scalar(&sql)
        .bind(arg.into())
        .fetch_one(pool)
        .await
        .unwrap()
}

//! A team to test with: an org and its owner, users of any role in it, invitations, a member's
//! browser and the server functions it posts; and the rows of an org that the refusal tests name,
//! with the snapshot that shows a refusal changed nothing.

use invoicer_core::accounts::audit::Actor;
use invoicer_core::accounts::{self, invitations};
use model::Role;
use sqlx::PgPool;
use uuid::Uuid;

use super::pages;
use super::rows::scalar_for;
use super::served::TestApp;
use super::{client, login};

/// The password of every user made here.
pub const PASSWORD: &str = "correct horse";

/// An org and its owner.
pub struct Org {
    pub id: model::OrgId,
    pub owner: Uuid,
    pub owner_email: String,
}

/// A new org and its owner (verified, password `PASSWORD`).
pub async fn org(pool: &PgPool) -> Org {
    let owner_email = format!("owner-{}@example.com", Uuid::new_v4().simple());
    let account = accounts::create_org_with_owner(pool, "Team Co", &owner_email, PASSWORD)
        .await
        .unwrap();
    Org {
        id: account.org_id,
        owner: account.user_id,
        owner_email,
    }
}

/// A user whose only membership is `org`, with `role` (verified, password `PASSWORD`).
pub async fn add_user(pool: &PgPool, org: model::OrgId, role: Role) -> (Uuid, String) {
    let email = format!("{}-{}@example.com", role.as_str(), Uuid::new_v4().simple());
    let account = accounts::create_org_with_owner(pool, "Own", &email, PASSWORD)
        .await
        .unwrap();
    sqlx::query("update memberships set org_id = $2, role = $3 where user_id = $1")
        .bind(account.user_id)
        .bind(org)
        .bind(role.as_str())
        .execute(pool)
        .await
        .unwrap();
    (account.user_id, email)
}

/// Invites `email` to `org` as `role`, from its owner; the invitation's id.
pub async fn invite(pool: &PgPool, org: &Org, email: &str, role: Role) -> Uuid {
    let mut tx = pool.begin().await.unwrap();
    let id = invitations::invite(
        &mut tx,
        org.id,
        &Actor::user(org.owner, &org.owner_email),
        email,
        role,
        &format!("form:{}", Uuid::now_v7()),
        super::member_gate(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    id
}

/// Logs a fresh browser in as `email`.
pub async fn browser(app: &TestApp, email: &str) -> reqwest::Client {
    let http = client();
    login(&http, &app.base, email, PASSWORD).await;
    http
}

/// POSTs a server function's form the way the hydrated app does (no `Accept: text/html`, so a
/// refusal answers with its status): the status.
pub async fn rpc(
    http: &reqwest::Client,
    app: &TestApp,
    endpoint: &str,
    form: &[(String, String)],
) -> u16 {
    pages::post_form(http, format!("{}/rpc/{endpoint}", app.base), form)
        .await
        .status()
        .as_u16()
}

/// A form's fields from (name, value) pairs.
pub fn form(pairs: &[(&str, String)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// Rows of the owner's org that the refused requests name.
pub struct Ids {
    pub owner: Uuid,
    pub invoice: Uuid,
    pub draft: Uuid,
    pub api_key: Uuid,
    pub tax_rate: Uuid,
    pub email: Uuid,
    pub invitation: Uuid,
    pub payment: Uuid,
}

/// An org with a sent invoice, a draft, an API key, a tax rate, a dead email, an open invitation
/// and a cash payment: the rows the refused requests name.
pub async fn seed_org_rows(app: &TestApp) -> (Org, Ids) {
    let org = org(&app.pool).await;
    let org_id = org.id;
    let make = |draft: bool| {
        let pool = app.pool.clone();
        async move {
            let input = model::InvoiceInput {
                customer_name: "Ada".into(),
                customer_email: "ada@example.com".into(),
                currency: "usd".into(),
                due_date: Some("2030-01-31".parse().unwrap()),
                lines: vec![model::LineInput {
                    description: "Work".into(),
                    quantity: model::Thousandths::whole(1),
                    unit_amount_cents: 1000,
                    tax_rate_id: None,
                }],
                draft,
                customer_id: None,
                ..Default::default()
            };
            super::rows::insert_invoice(&pool, org_id, &input).await
        }
    };
    let invoice = make(false).await;
    let draft = make(true).await;
    let key =
        invoicer_core::accounts::api_keys::create_for_user(&app.pool, org.id, org.owner, "owner's")
            .await
            .unwrap();
    let tax_rate: Uuid = scalar_for(&app.pool, "insert into tax_rates (id, org_id, name, percent_milli) values (gen_random_uuid(), $1, 'VAT', 20000) returning id", org.id).await;
    let email: Uuid = sqlx::query_scalar(
        "insert into outbox (id, org_id, invoice_id, kind, payload, dead_at) \
         values (gen_random_uuid(), $1, $2, 'invoice_email', '{}', now()) returning id",
    )
    .bind(org.id)
    .bind(invoice)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let invitation = invite(&app.pool, &org, "invited@example.com", Role::Member).await;
    let payment = Uuid::now_v7();
    let mut tx = app.pool.begin().await.unwrap();
    let cash = model::PaymentInput {
        amount_cents: 100,
        method: model::PaymentMethod::Cash,
        paid_on: "2026-12-01".parse().unwrap(),
        reference: String::new(),
    };
    invoicer_core::payments::manual::record(
        &mut tx,
        org.id,
        model::InvoiceId::from(invoice),
        payment,
        "seed",
        &cash,
        None,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let ids = Ids {
        owner: org.owner,
        invoice,
        draft,
        api_key: key.id,
        tax_rate,
        email,
        invitation,
        payment,
    };
    (org, ids)
}

/// What the org looks like, to show that refused requests changed nothing.
pub async fn snapshot(pool: &PgPool, org: model::OrgId) -> Vec<i64> {
    let sql = "select array[\
        (select count(*) from invoices where org_id = $1), \
        (select count(*) from invoices where org_id = $1 and status = 'void'), \
        (select count(*) from api_keys where org_id = $1 and revoked_at is null), \
        (select count(*) from tax_rates where org_id = $1 and archived_at is null), \
        (select count(*) from customers where org_id = $1), \
        (select count(*) from outbox where org_id = $1), \
        (select count(*) from invitations where org_id = $1 and revoked_at is null), \
        (select count(*) from memberships where org_id = $1), \
        (select count(*) from memberships where org_id = $1 and role = 'owner'), \
        (select count(*) from audit_events where org_id = $1), \
        (select count(*) from payments where org_id = $1), \
        (select count(*) from quotes where org_id = $1), \
        (select count(*) from orgs where id = $1 and (accent_color is not null or footer_text <> ''))]";
    sqlx::query_scalar(sql)
        .bind(org)
        .fetch_one(pool)
        .await
        .unwrap()
}

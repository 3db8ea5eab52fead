//! A demo org for a newcomer (`scripts/dev --demo`): customers, and invoices in every lifecycle and
//! payment state. Idempotent: an existing demo owner means it was seeded already.

use chrono::{Duration, Utc};
use model::OrgId;
use sqlx::PgPool;
use uuid::Uuid;

use crate::invoicing::lifecycle::{self, Action};
use crate::payments::{self, RefundFact, SessionFact};
use crate::{accounts, customers, invoicing::invoices, invoicing::tax_rates};
use model::PaymentStatus;
use model::{Address, CustomerInput, Discount, InvoiceInput, LineInput, TaxRateInput, Thousandths};

pub const EMAIL: &str = "demo@example.com";
pub const PASSWORD: &str = "demo password";

/// Seeds the demo org unless its owner exists; returns the org id when it seeded.
pub async fn seed(pool: &PgPool) -> Result<Option<OrgId>, model::error::AppError> {
    // language=PostgreSQL
    let exists = sqlx::query_scalar!(
        r#"select true as "found!" from users where lower(email) = lower($1)"#,
        EMAIL
    )
    .fetch_optional(pool)
    .await?;
    if exists.is_some() {
        return Ok(None);
    }
    let org = accounts::create_org_with_owner(pool, "Demo Studio", EMAIL, PASSWORD)
        .await
        .map_err(|e| model::error::AppError::internal("creating the demo org", e))?
        .org_id;
    // language=PostgreSQL
    sqlx::query!(
        "update orgs set number_format = 'INV-{YYYY}-{seq:4}', number_reset = 'yearly' where id = $1",
        org as _,
    )
    .execute(pool)
    .await?;
    let details = model::OrgDetails {
        legal_name: "Demo Studio SARL".into(),
        address: Address {
            line1: "12 Rue des Lilas".into(),
            city: "Lyon".into(),
            postal_code: "69001".into(),
            country: "FR".into(),
            ..Address::default()
        },
        vat_id: "FR40303265045".into(),
        email: EMAIL.into(),
        ..Default::default()
    };
    let mut tx = pool.begin().await?;
    let operator = crate::accounts::audit::Actor::operator();
    crate::accounts::orgs::save_details(&mut tx, org, &operator, &details).await?;
    tx.commit().await?;

    let mut tx = pool.begin().await?;
    let mut people = Vec::new();
    for (name, email, (line1, postal_code, city, country), vat_id) in [
        (
            "Zoë Müller GmbH",
            "ap@mueller.example",
            ("Hauptstraße 5", "10115", "Berlin", "DE"),
            Some("DE123456789"),
        ),
        (
            "Ada Analytics Ltd",
            "billing@ada.example",
            ("1 Engine Row", "N1 7AA", "London", "GB"),
            Some("GB999888777"),
        ),
        (
            "Grace & Co",
            "grace@grace.example",
            ("42 Compiler Ave", "22201", "Arlington, VA", "US"),
            None,
        ),
        (
            "Łukasz Nowak",
            "lukasz@nowak.example",
            ("ul. Długa 7", "00-238", "Warszawa", "PL"),
            None,
        ),
        (
            "Hopper Logistics",
            "finance@hopper.example",
            ("9 Harbour Road", "3011 AA", "Rotterdam", "NL"),
            Some("NL001122334B01"),
        ),
    ] {
        let input = CustomerInput {
            name: name.into(),
            email: email.into(),
            address: Address {
                line1: line1.into(),
                postal_code: postal_code.into(),
                city: city.into(),
                country: country.into(),
                ..Address::default()
            },
            vat_id: vat_id.map(Into::into),
            ..Default::default()
        };
        let customer = customers::create(
            &mut tx,
            model::CustomerId::from(Uuid::now_v7()),
            org,
            None,
            &input,
        )
        .await?;
        people.push(customer);
    }
    let vat = TaxRateInput {
        name: "VAT".into(),
        percent: Thousandths::whole(21),
        category: None,
        exemption_reason: String::new(),
    };
    let vat = tax_rates::add(&mut tx, Uuid::now_v7(), org, "demo:vat", &vat).await?;
    let today = Utc::now().date_naive();
    let invoice = |who: usize, lines: &[(&str, i64, i64)], due_in: i64, draft: bool| InvoiceInput {
        customer_name: people[who].name.clone(),
        customer_email: people[who].email.clone(),
        currency: if who == 1 { "gbp" } else { "eur" }.into(),
        due_date: Some(today + Duration::days(due_in)),
        lines: lines
            .iter()
            .map(|(description, quantity, cents)| LineInput {
                description: (*description).into(),
                quantity: Thousandths::whole(*quantity),
                unit_amount_cents: *cents,
                // Euro invoices carry VAT; the others are untaxed.
                tax_rate_id: (who != 1).then_some(vat.id),
            })
            .collect(),
        customer_id: Some(people[who].id),
        draft,
        discount: (who == 4).then_some(Discount::Percent(Thousandths::whole(5))),
        notes: "Thank you for your business.".into(),
        ..InvoiceInput::default()
    };
    let mut made = Vec::new();
    for (who, lines, due_in, draft) in [
        (
            0,
            &[
                ("Website redesign: discovery", 1, 240_000),
                ("Hosting (monthly)", 12, 2_500),
            ][..],
            30,
            false,
        ),
        (1, &[("Data audit", 3, 95_000)][..], -12, false),
        (2, &[("Support retainer", 1, 150_000)][..], 15, false),
        (3, &[("Translation, 40 pages", 40, 3_500)][..], 30, false),
        (
            4,
            &[("Route optimisation study", 1, 480_000)][..],
            30,
            false,
        ),
        (0, &[("Maintenance", 6, 12_000)][..], 30, false),
        (1, &[("Workshop", 2, 60_000)][..], -40, false),
        (2, &[("Consulting", 10, 15_000)][..], 20, false),
        (3, &[("Proofreading", 1, 30_000)][..], 14, true),
        (
            4,
            &[
                ("Fleet dashboard, phase 2", 1, 320_000),
                ("Training day", 1, 90_000),
            ][..],
            30,
            true,
        ),
    ] {
        let input = invoice(who, lines, due_in, draft);
        let inv = invoices::create(
            &mut tx,
            invoices::NewInvoice::new(model::InvoiceId::from(Uuid::now_v7()), org),
            &input,
        )
        .await?;
        made.push(inv);
    }
    // Money and lifecycle, as Stripe's events and the owner's buttons would leave them.
    let pay = async |tx: &mut sqlx::PgConnection, i: usize, amount: i64, status: PaymentStatus| {
        let inv = &made[i];
        let pi = format!("pi_demo_{}", inv.id.simple());
        let event = format!("evt_demo_{}_{}", inv.id.simple(), status as u8);
        let reference = inv.id.to_string();
        let session = crate::payments::stripe::standin::open_simulated_session(
            &mut *tx,
            model::InvoiceId::from(inv.id),
        )
        .await?;
        payments::record_session(
            tx,
            &SessionFact {
                provider: "stripe",
                session_id: Some(&session),
                livemode: false,
                payment_intent: &pi,
                invoice_ref: Some(&reference),
                amount,
                currency: &inv.currency,
                status,
                failure: None,
                event_id: &event,
            },
        )
        .await
        .map(|_| pi)
    };
    pay(&mut tx, 2, made[2].total_cents, PaymentStatus::Succeeded).await?;
    pay(
        &mut tx,
        3,
        made[3].total_cents / 2,
        PaymentStatus::Succeeded,
    )
    .await?;
    pay(&mut tx, 4, made[4].total_cents, PaymentStatus::Pending).await?;
    let refunded = pay(&mut tx, 5, made[5].total_cents, PaymentStatus::Succeeded).await?;
    payments::record_refund(
        &mut tx,
        &RefundFact {
            provider: "stripe",
            payment_intent: &refunded,
            amount_refunded: made[5].total_cents,
            full: true,
            currency: &made[5].currency,
            event_id: "evt_demo_refund",
        },
    )
    .await?;
    lifecycle::apply(
        &mut tx,
        org,
        model::InvoiceId::from(made[6].id),
        Action::MarkUncollectible,
    )
    .await?;
    lifecycle::apply(
        &mut tx,
        org,
        model::InvoiceId::from(made[7].id),
        Action::Void,
    )
    .await?;
    tx.commit().await?;
    Ok(Some(org))
}

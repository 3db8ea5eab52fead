//! Late fees: an org charges none, a fixed amount or a percent of what is due, once an invoice is
//! overdue by each of up to three steps (`after_days`). Each step is a job run named by the
//! invoice and the step, claimed as `(job, late_fee:<invoice>, <step>)` in the transaction that
//! issues the fee as an invoice of its own (kind `late_fee`, referencing the overdue one: BG-3 in
//! its e-invoice) under the business key `late_fee:<invoice>:<step>` (and `UNIQUE (fee_for,
//! fee_step)`), and queues its email. Never for a paid, void or disputed invoice; a step whose day
//! is long past when fees are first set (more than [`CATCH_UP_DAYS`]) is not charged.

use chrono::{DateTime, Utc};
use model::collection::LateFees;
use model::{InvoiceId, InvoiceInput, LineInput, OrgId, RunAction, Thousandths};
use sqlx::PgPool;
use uuid::Uuid;

use crate::claim::{ClaimKey, Outcome, Terms};
use crate::observe::{self, Concerns, Surface};
use crate::surfaces::{once_in, Once};

/// A step whose day passed more than this long ago is skipped, not charged late.
pub const CATCH_UP_DAYS: i32 = 7;

/// Issues up to `batch` late fees due at `now`; returns how many.
pub async fn run_due(
    pool: &PgPool,
    now: DateTime<Utc>,
    batch: usize,
    public_base: &str,
    allowance: crate::mail::gate::Allowance,
) -> sqlx::Result<usize> {
    let mut issued = 0;
    for _ in 0..batch {
        if !run_one(pool, now, public_base, allowance).await? {
            break;
        }
        issued += 1;
    }
    Ok(issued)
}

/// One due step of one invoice, in one transaction: false when none is due.
async fn run_one(
    pool: &PgPool,
    now: DateTime<Utc>,
    public_base: &str,
    allowance: crate::mail::gate::Allowance,
) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    // The invoice is locked (others skip it): its fee and what is due are read together.
    // language=PostgreSQL
    let due = sqlx::query!(
        r#"
        select i.id, i.org_id, s.step as "step!: i16",
               i.total_cents - i.amount_credited_cents - i.amount_paid_cents as "due!",
               i.currency, i.customer_id, i.customer_name, i.customer_email, i.number_text,
               o.late_fees
        from orgs o
        join invoices i on i.org_id = o.id
        cross join lateral (
            select d.ord::int2 as step
            from jsonb_array_elements_text(o.late_fees -> 'after_days') with ordinality d (days, ord)
            where i.due_date + d.days::int <= ($1::timestamptz at time zone o.time_zone)::date
              and i.due_date + d.days::int >= ($1::timestamptz at time zone o.time_zone)::date - $2::int
              and not exists (select from invoices f where f.fee_for = i.id and f.fee_step = d.ord)
            order by d.ord
            limit 1
        ) s
        where o.late_fees ->> 'kind' <> 'none'
          and i.kind = 'standard' and i.status in ('open', 'uncollectible')
          and i.payment_state in ('unpaid', 'partially_paid')
          and i.total_cents - i.amount_credited_cents - i.amount_paid_cents > 0
          and not exists (
              select from payments p
              join disputes d on d.provider = p.provider and d.provider_payment_id = p.provider_payment_id
              where p.invoice_id = i.id and d.status in ('open', 'lost'))
        order by i.due_date, i.id
        limit 1
        for update of i skip locked
        "#,
        now,
        CATCH_UP_DAYS
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(due) = due else {
        return Ok(false);
    };
    let fees: LateFees = serde_json::from_value(due.late_fees).unwrap_or_default();
    // A percent of a few cents may round to nothing: a fee is at least one minor unit.
    let fee = fees.fee_cents(due.due).max(1);
    let org = OrgId::from(due.org_id);
    let step = due.step.to_string();
    let key = ClaimKey::job(&format!("late_fee:{}", due.id), &step);
    let attempt = observe::Attempt::new(Surface::Job, step.clone(), None);
    attempt.identify(format!("late_fee:{}", due.id), Some(org));
    let number = due.number_text.unwrap_or_default();
    let input = InvoiceInput {
        customer_name: due.customer_name,
        customer_email: due.customer_email,
        customer_id: due.customer_id,
        currency: due.currency,
        payment_terms_days: Some(0),
        lines: vec![LineInput {
            description: format!("Late fee for invoice {number} (step {})", due.step),
            quantity: Thousandths::whole(1),
            unit_amount_cents: fee,
            tax_rate_id: fees.tax_rate_id,
        }],
        ..InvoiceInput::default()
    };
    let invoice = due.id;
    let ran = once_in(&mut tx, &attempt, &key, &Terms::default(), async |tx| {
        let id = InvoiceId::from(Uuid::now_v7());
        let source_key = format!("late_fee:{invoice}:{}", due.step);
        let (made, _) = crate::invoicing::invoices::issue_keyed(
            tx,
            org,
            id,
            &source_key,
            &input,
            RunAction::Send,
            public_base,
            allowance,
        )
        .await?;
        // language=PostgreSQL
        sqlx::query!(
            r#"
            update invoices set kind = 'late_fee', fee_for = $2, fee_step = $3
            where id = $1 and kind = 'standard'
            "#,
            made,
            invoice,
            due.step
        )
        .execute(&mut *tx)
        .await?;
        Ok::<_, sqlx::Error>((
            made,
            Outcome::result(made),
            Concerns {
                org: Some(org),
                invoice: Some(invoice),
            },
        ))
    })
    .await?;
    match ran {
        Once::Ran(made) => {
            tx.commit().await?;
            tracing::info!(%invoice, step = due.step, fee, %made, "late fee issued");
        }
        // Issued before (its claim is done): nothing again. The row's fee exists, so the scan
        // moves on.
        _ => tx.rollback().await?,
    }
    Ok(true)
}

//! Payment reminders: an org's steps relative to the due date, each sent at most once per invoice.
//! A worker finds one invoice with a step due (`FOR UPDATE SKIP LOCKED` on the invoice) and, in one
//! transaction, claims `(job, reminder:<invoice>, <step>)`, writes the reminder's row and queues its
//! email. Holding the invoice's row lock while it reads the invoice's state, it cannot interleave
//! with a payment (which takes the same lock): either the payment commits first and nothing is
//! sent, or the reminder commits first and its email was queued before the payment. Only the latest
//! due step is sent; earlier ones still unsent are recorded as skipped. Nothing is sent before 09:00
//! in the org's zone, nor a step that fell due more than [`CATCH_UP_DAYS`] ago. Each email passes
//! the mail gate as the org's own: beyond the hourly allowance it waits for its slot, and an org
//! with no verified owner sends none.

use chrono::{DateTime, Utc};
use model::CustomerId;
use model::InvoiceId;
use model::OrgId;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::claim::{ClaimKey, Outcome, Surface, Terms};
use crate::mail::gate::{Allowance, Gate, Sender};
use crate::observe::{self, AttemptOutcome, Concerns};
use crate::outbox;
use crate::surfaces::{once_in, Once};

/// The local hour from which reminders go out.
pub const FROM_HOUR: i32 = 9;

/// How late a step is still sent: a step that fell due longer ago than this (downtime, the org
/// over its allowance, or steps saved after the fact) is not sent, nor the invoice looked at again.
pub const CATCH_UP_DAYS: i32 = 30;

pub use model::{check_reminder_steps as check, ReminderStep as Step};

/// Whether reminders are off for `org`'s invoice or customer `id`.
pub async fn off(pool: &PgPool, org: OrgId, id: Uuid, customer: bool) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let off = sqlx::query_scalar!(
        r#"
        select coalesce((select reminders_off from invoices where id = $1 and org_id = $2 and not $3),
                        (select reminders_off from customers where id = $1 and org_id = $2 and $3),
                        false) as "off!"
        "#,
        id,
        org as _,
        customer as _
    )
    .fetch_one(pool)
    .await?;
    Ok(off)
}

/// `org`'s steps, earliest first.
pub async fn steps(conn: &mut PgConnection, org: OrgId) -> sqlx::Result<Vec<Step>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        "select offset_days, message from reminder_steps where org_id = $1 order by offset_days",
        org as _
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Step {
            offset_days: r.offset_days,
            message: r.message,
        })
        .collect())
}

/// Replaces `org`'s steps (checked by [`check`] first).
pub async fn save_steps(tx: &mut PgConnection, org: OrgId, steps: &[Step]) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!("delete from reminder_steps where org_id = $1", org as _)
        .execute(&mut *tx)
        .await?;
    let offsets: Vec<i32> = steps.iter().map(|s| s.offset_days).collect();
    let messages: Vec<String> = steps.iter().map(|s| s.message.trim().to_owned()).collect();
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into reminder_steps (org_id, offset_days, message)
        select $1, o, m from unnest($2::int[], $3::text[]) as s (o, m)
        "#,
        org as _,
        &offsets,
        &messages,
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Sends (queues) up to `limit` due reminders at `now`, each in its own transaction, through the
/// mail gate under `allowance`; returns how many.
pub async fn run_due(
    pool: &PgPool,
    now: DateTime<Utc>,
    limit: usize,
    allowance: Allowance,
) -> sqlx::Result<usize> {
    let (mut sent, mut passed) = (0, Vec::new());
    while sent < limit {
        match run_one(pool, now, allowance, &mut passed).await? {
            Some(true) => sent += 1,
            // The org may send nothing (no verified owner): its reminders wait, the others go on.
            Some(false) => {}
            None => break,
        }
    }
    Ok(sent)
}

/// Handles the next due reminder of an org not in `passed` (orgs found unable to send this round):
/// Some(true) when it was queued (or found done), Some(false) when its org may send nothing, None
/// when none is due.
async fn run_one(
    pool: &PgPool,
    now: DateTime<Utc>,
    allowance: Allowance,
    passed: &mut Vec<Uuid>,
) -> sqlx::Result<Option<bool>> {
    let mut tx = pool.begin().await?;
    // Per org with steps (and past its local hour), the open invoices whose due date lies in its
    // steps' window (from the last step plus the catch-up days to the first), from an index; the
    // latest step each has reached decides.
    // language=PostgreSQL
    let due = sqlx::query!(
        r#"
        select i.id, i.org_id, i.customer_email, s.offset_days as "offset_days!",
               s.message as "message!"
        from (select org_id, min(offset_days) as first, max(offset_days) as last
              from reminder_steps group by org_id) p
        join orgs o on o.id = p.org_id
        join invoices i on i.org_id = p.org_id
        join lateral (
            select st.offset_days, st.message from reminder_steps st
            where st.org_id = i.org_id
              and i.due_date + st.offset_days <= ($1::timestamptz at time zone o.time_zone)::date
            order by st.offset_days desc
            limit 1
        ) s on true
        -- Not while it is collected automatically: its retries come first, then it is sent.
        where i.status = 'open' and not i.reminders_off and i.collection_method = 'send_invoice'
          and i.due_date <= ($1::timestamptz at time zone o.time_zone)::date - p.first
          and i.due_date >= ($1::timestamptz at time zone o.time_zone)::date - p.last - $4::int
          and i.payment_state in ('unpaid', 'partially_paid')
          and i.amount_paid_cents < i.total_cents - i.amount_credited_cents
          and extract(hour from $1::timestamptz at time zone o.time_zone)::int >= $2
          and not exists (select 1 from customers c where c.id = i.customer_id and c.reminders_off)
          and not exists (select 1 from reminders r where r.invoice_id = i.id and r.offset_days = s.offset_days)
          and p.org_id <> all($3)
        order by i.due_date, i.id
        limit 1
        for update of i skip locked
        "#,
        now as _,
        FROM_HOUR,
        passed.as_slice(),
        CATCH_UP_DAYS,
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(due) = due else {
        return Ok(None);
    };
    let step = due.offset_days.to_string();
    let key = ClaimKey::job(&format!("reminder:{}", due.id), &step);
    let attempt = observe::Attempt::new(Surface::Job, step.clone(), None);
    attempt.identify(format!("reminder:{}", due.id), Some(due.org_id.into()));
    let gate = Gate::new(allowance, Sender::Automatic);
    let ran = once_in(&mut tx, &attempt, &key, &Terms::default(), async |tx| {
        crate::failpoint::hit("reminder.after_claim");
        let permit = match gate
            .permit(&mut *tx, due.org_id.into(), &due.customer_email)
            .await?
        {
            Ok(permit) => permit,
            // Nothing sent: the caller rolls the claim back with the rest.
            Err(refused) => return Ok((Err(refused), Outcome::default(), Concerns::default())),
        };
        let email = outbox::enqueue_email(
            &mut *tx,
            permit,
            Some(due.id),
            outbox::MailKind::Reminder,
            serde_json::json!({
                "invoice_id": due.id,
                "offset_days": due.offset_days,
                "message": due.message,
                "dedupe": format!("reminder/{}/{}", due.id, due.offset_days),
            }),
        )
        .await?;
        record(
            tx,
            InvoiceId::from(due.id),
            due.org_id.into(),
            due.offset_days,
            email,
        )
        .await?;
        // The earlier steps never sent are passed over: one reminder, the latest.
        // language=PostgreSQL
        sqlx::query!(
            r#"
            insert into reminders (invoice_id, offset_days, org_id, outcome)
            select $1, st.offset_days, $2, 'skipped' from reminder_steps st
            where st.org_id = $2 and st.offset_days < $3
            on conflict (invoice_id, offset_days) do nothing
            "#,
            due.id,
            due.org_id as _,
            due.offset_days,
        )
        .execute(&mut *tx)
        .await?;
        let concerns = Concerns {
            org: Some(due.org_id.into()),
            invoice: Some(due.id),
        };
        let outcome = Outcome {
            result_id: email,
            response: None,
        };
        Ok::<_, sqlx::Error>((Ok(()), outcome, concerns))
    })
    .await?;
    match ran {
        Once::Ran(Ok(())) => {}
        Once::Ran(Err(refused)) => {
            tracing::warn!(org = %due.org_id, %refused, "reminders: the org may send none");
            tx.rollback().await?;
            passed.push(due.org_id);
            return Ok(Some(false));
        }
        Once::Done(_) | Once::Mismatch | Once::Busy { .. } => {
            // A lost reminder row with its claim left: write the row so the step is not found again.
            record(
                &mut tx,
                InvoiceId::from(due.id),
                due.org_id.into(),
                due.offset_days,
                None,
            )
            .await?;
            tx.commit().await?;
            observe::log_and_count(&attempt, AttemptOutcome::Replay);
            return Ok(Some(true));
        }
    }
    tx.commit().await?;
    attempt.mark_stored();
    observe::log_and_count(&attempt, AttemptOutcome::Won);
    metrics::counter!("invoicer_reminders_sent_total").increment(1);
    Ok(Some(true))
}

async fn record(
    tx: &mut PgConnection,
    invoice: InvoiceId,
    org: OrgId,
    offset_days: i32,
    email: Option<Uuid>,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into reminders (invoice_id, offset_days, org_id, outcome, outbox_id)
        values ($1, $2, $3, $4, $5)
        on conflict (invoice_id, offset_days) do nothing
        "#,
        invoice as _,
        offset_days,
        org as _,
        if email.is_some() { "sent" } else { "skipped" },
        email,
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Turns reminders off (or on) for `org`'s `invoice`; false for an unknown invoice.
pub async fn set_invoice_off(
    tx: &mut PgConnection,
    org: OrgId,
    invoice: InvoiceId,
    off: bool,
) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "update invoices set reminders_off = $3 where id = $1 and org_id = $2",
        invoice as _,
        org as _,
        off
    )
    .execute(&mut *tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Turns reminders off (or on) for all of `org`'s `customer`'s invoices; false for an unknown one.
pub async fn set_customer_off(
    tx: &mut PgConnection,
    org: OrgId,
    customer: CustomerId,
    off: bool,
) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "update customers set reminders_off = $3 where id = $1 and org_id = $2",
        customer as _,
        org as _,
        off
    )
    .execute(&mut *tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Reminders due and not queued at `now` (up to 1,000: the cost of a scrape stays bounded), for
/// the metrics.
pub async fn backlog(pool: &PgPool, now: DateTime<Utc>) -> sqlx::Result<i64> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"
        select count(*) as "due!" from (
            select 1
            from (select org_id, min(offset_days) as first, max(offset_days) as last
                  from reminder_steps group by org_id) p
            join orgs o on o.id = p.org_id
            join invoices i on i.org_id = p.org_id
            join lateral (
                select st.offset_days from reminder_steps st
                where st.org_id = i.org_id
                  and i.due_date + st.offset_days <= ($1::timestamptz at time zone o.time_zone)::date
                order by st.offset_days desc
                limit 1
            ) s on true
        -- Not while it is collected automatically: its retries come first, then it is sent.
        where i.status = 'open' and not i.reminders_off and i.collection_method = 'send_invoice'
              and i.due_date <= ($1::timestamptz at time zone o.time_zone)::date - p.first
              and i.due_date >= ($1::timestamptz at time zone o.time_zone)::date - p.last - $3::int
              and i.payment_state in ('unpaid', 'partially_paid')
              and i.amount_paid_cents < i.total_cents - i.amount_credited_cents
              and extract(hour from $1::timestamptz at time zone o.time_zone)::int >= $2
              and not exists (select 1 from customers c where c.id = i.customer_id and c.reminders_off)
              and not exists (select 1 from reminders r where r.invoice_id = i.id and r.offset_days = s.offset_days)
            limit 1000
        ) due
        "#,
        now as _,
        FROM_HOUR,
        CATCH_UP_DAYS,
    )
    .fetch_one(pool)
    .await
}

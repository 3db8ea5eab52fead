//! The scheduler: workers (any number) find a due schedule with `FOR UPDATE SKIP LOCKED` and handle
//! its next period in one transaction: the claim `(job, schedule:<id>, <period>)`, the invoice
//! (`source_key` `schedule:<id>:<period>`, unique per org), its email when the schedule sends, the
//! run's row and the schedule's next date commit together or not at all. The run's name is its
//! period, never the clock time of the attempt: a crash anywhere before the commit leaves the period
//! due, and a second worker, or a retry, finds it done. After downtime each missed period is handled
//! in order, one per transaction (`missed: each`), or only the latest (`latest`: the others are
//! recorded as skipped). A period is due once the org's local date reaches it.

use model::OrgId;
use std::time::Instant;

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::claim::{ClaimKey, Outcome, Surface, Terms};
use crate::invoicing::invoices;
use crate::mail::gate::Allowance;
use crate::observe::{self, AttemptOutcome, Concerns};
use crate::surfaces::{once_in, Once};
use model::{InvoiceInput, RunAction};

/// Handles up to `limit` due periods at `now` (the clock; in dev, plus its offset), each in its own
/// transaction; the emails of schedules that send pass the mail gate under `allowance`. Returns
/// how many it handled.
pub async fn run_due(
    pool: &PgPool,
    now: DateTime<Utc>,
    limit: usize,
    public_base: &str,
    allowance: Allowance,
) -> sqlx::Result<usize> {
    let mut handled = 0;
    while handled < limit && run_one(pool, now, public_base, allowance).await? {
        handled += 1;
    }
    Ok(handled)
}

/// The owner of a schedule's run claims.
pub fn queue(schedule: Uuid) -> String {
    format!("schedule:{schedule}")
}

/// Handles the next due period of one schedule nobody else holds; false when none is due.
async fn run_one(
    pool: &PgPool,
    now: DateTime<Utc>,
    public_base: &str,
    allowance: Allowance,
) -> sqlx::Result<bool> {
    let started = Instant::now();
    let mut tx = pool.begin().await?;
    // The index narrows to dates up to tomorrow in UTC (no zone is further ahead), then each org's
    // own date decides.
    // language=PostgreSQL
    let due = sqlx::query!(
        r#"
        select s.id, s.org_id, ($1::timestamptz at time zone o.time_zone)::date as "today!: NaiveDate"
        from schedules s join orgs o on o.id = s.org_id
        where s.paused_at is null and s.next_run_on is not null
          and s.next_run_on <= ($1::timestamptz at time zone 'UTC')::date + 1
          and s.next_run_on <= ($1::timestamptz at time zone o.time_zone)::date
        order by s.next_run_on, s.id
        limit 1
        for update of s skip locked
        "#,
        now as _,
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(due) = due else {
        return Ok(false);
    };
    let (org, id) = (OrgId::from(due.org_id), due.id);
    let row = super::row(&mut tx, org, id)
        .await?
        .ok_or_else(|| sqlx::Error::Protocol("a locked schedule vanished".into()))?;
    let (cadence, end) = (row.cadence(), row.end());
    let mut index = row.next_index as u32;
    let Some(mut period) = row.next_run_on else {
        return Ok(false);
    };
    if row.missed == "latest" {
        // Every due period but the latest is recorded as skipped.
        while let Some(next) = cadence
            .run(index + 1)
            .filter(|d| *d <= due.today && end.allows(index + 1, *d))
        {
            record_run(&mut tx, id, period, index, None).await?;
            index += 1;
            period = next;
        }
    }
    let key = ClaimKey::job(&queue(id), &period.to_string());
    let attempt = observe::Attempt::new(Surface::Job, period.to_string(), None);
    attempt.identify(queue(id), Some(org));
    let ran = once_in(&mut tx, &attempt, &key, &Terms::default(), async |tx| {
        // A crash here, claimed and not committed, leaves the period due (the fault tests).
        crate::failpoint::hit("schedule.after_claim");
        let (template, action) = (&row.template, &row.action);
        // A clock moved ahead (dev, tests): the invoice falls due by that clock's date.
        let ahead = (now - chrono::Utc::now()).num_minutes().abs() > 1;
        let issued = issue(
            &mut *tx,
            org,
            id,
            template,
            action,
            (period, ahead.then_some(due.today)),
            public_base,
            allowance,
        );
        let invoice = issued.await?;
        record_run(tx, id, period, index, Some(invoice)).await?;
        let concerns = Concerns {
            org: Some(org),
            invoice: Some(invoice),
        };
        Ok::<_, sqlx::Error>((invoice, Outcome::result(invoice), concerns))
    })
    .await?;
    // Handled before (its run row says how): only the schedule's next date is left to move.
    let outcome = match ran {
        Once::Ran(_) => AttemptOutcome::Won,
        Once::Done(_) | Once::Mismatch | Once::Busy { .. } => AttemptOutcome::Replay,
    };
    let next = index + 1;
    let next_date = cadence.run(next).filter(|d| end.allows(next, *d));
    // language=PostgreSQL
    sqlx::query!(
        "update schedules set next_index = $2, next_run_on = $3, updated_at = now() where id = $1",
        id,
        next as i32,
        next_date as _,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    if outcome == AttemptOutcome::Won {
        attempt.mark_stored();
    }
    observe::log_and_count(&attempt, outcome);
    metrics::counter!("invoicer_schedule_runs_total", "outcome" => outcome.as_str()).increment(1);
    metrics::histogram!("invoicer_schedule_run_seconds").record(started.elapsed().as_secs_f64());
    Ok(true)
}

/// Issues the invoice of schedule `id`'s `period` from its template, as the schedule says. Its
/// business key is the period's. With `clock_today` (the scheduler's clock runs ahead of the real
/// one: dev and tests only), payment terms count from the clock's date, not the real one, so its
/// reminders fall due by the same clock.
#[allow(clippy::too_many_arguments)]
async fn issue(
    tx: &mut PgConnection,
    org: OrgId,
    id: Uuid,
    template: &serde_json::Value,
    action: &str,
    (period, clock_today): (NaiveDate, Option<NaiveDate>),
    public_base: &str,
    allowance: Allowance,
) -> sqlx::Result<Uuid> {
    let source_key = format!("schedule:{id}:{period}");
    let action = RunAction::parse(action).unwrap_or_default();
    let mut input: InvoiceInput =
        serde_json::from_value(template.clone()).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
    if let Some(today) = clock_today.filter(|_| input.due_date.is_none()) {
        if let Some(terms) = input.payment_terms_days.take() {
            input.due_date = Some(today + chrono::Days::new(u64::from(terms)));
        }
    }
    let invoice = Uuid::now_v7();
    let (invoice, _) = invoices::issue_keyed(
        tx,
        org,
        model::InvoiceId::from(invoice),
        &source_key,
        &input,
        action,
        public_base,
        allowance,
    )
    .await?;
    Ok(invoice)
}

async fn record_run(
    tx: &mut PgConnection,
    schedule: Uuid,
    period: NaiveDate,
    index: u32,
    invoice: Option<Uuid>,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into schedule_runs (schedule_id, period, run_index, invoice_id, outcome)
        values ($1, $2, $3, $4, $5)
        on conflict (schedule_id, period) do nothing
        "#,
        schedule,
        period as _,
        index as i32,
        invoice as _,
        if invoice.is_some() {
            "issued"
        } else {
            "skipped"
        },
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// What is due and not run at `now`: (periods, age in seconds of the oldest), for the metrics.
pub async fn backlog(pool: &PgPool, now: DateTime<Utc>) -> sqlx::Result<(i64, f64)> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select count(*) as "due!",
               coalesce(extract(epoch from $1::timestamptz - min(s.next_run_on::timestamp at time zone o.time_zone)), 0)::float8
               as "age!"
        from schedules s join orgs o on o.id = s.org_id
        where s.paused_at is null and s.next_run_on is not null
          and s.next_run_on <= ($1::timestamptz at time zone 'UTC')::date + 1
          and s.next_run_on <= ($1::timestamptz at time zone o.time_zone)::date
        "#,
        now as _,
    )
    .fetch_one(pool)
    .await?;
    Ok((row.due, row.age.max(0.0)))
}

//! The fault run's schedules phase: hundreds of weekly schedules and the org's reminder steps fall
//! due while the dev clock runs fast (moved ahead every phase) and the server is crashed, killed
//! and cut off from Postgres. Once the clock stops, the workers catch up; then every period up to
//! the clock's date has exactly one invoice (none missing), every (invoice, step) at most one
//! reminder row and email, and every open invoice its latest due step's reminder.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use sqlx::PgPool;
use uuid::Uuid;

/// How far the clock moves each phase.
pub(crate) const STEP_SECS: i64 = 2 * 86_400;

/// What the schedules phase found.
#[derive(Debug, Default)]
pub(crate) struct ScheduleReport {
    pub periods_due: i64,
    pub invoices: i64,
    /// Periods with no invoice, and periods with more than one.
    pub missing: i64,
    pub doubled: i64,
    pub reminders: i64,
    /// (invoice, step) with more than one email row, or whose latest due step has no reminder.
    pub doubled_reminders: i64,
    pub missing_reminders: i64,
    /// Reminder emails the SMTP sink never received.
    pub unsent_reminders: i64,
}

impl ScheduleReport {
    pub fn ok(&self) -> bool {
        self.missing == 0
            && self.doubled == 0
            && self.doubled_reminders == 0
            && self.missing_reminders == 0
            && self.unsent_reminders == 0
            && self.periods_due > 0
    }
}

/// Seeds the schedules (starting `days_ago` days before today, as if made then: their missed periods
/// are due at once; issuing invoices due on their run date, half of them emailed) and, with
/// `reminders`, the reminder steps in `org`.
pub(crate) async fn seed(
    pool: &PgPool,
    org: Uuid,
    schedules: usize,
    days_ago: i64,
    reminders: bool,
) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    let today = app::ssr::schedules::org_today(&mut tx, org, chrono::Utc::now()).await?
        - chrono::Days::new(days_ago.unsigned_abs());
    for i in 0..schedules {
        let body = serde_json::json!({
            "customer_name": format!("Subscriber {i}"),
            "customer_email": format!("subscriber-{i}@example.com"),
            "currency": "usd",
            "payment_terms_days": 0,
            "lines": [{"description": "Weekly plan", "quantity": 1, "unit_amount_cents": 1_000 + i}],
            "interval": "week",
            "start_date": today,
            "action": if i % 2 == 0 { "send" } else { "finalize" },
        });
        let input = app::model::ScheduleInput::from_json(&body).map_err(anyhow::Error::msg)?;
        let id = Uuid::now_v7();
        app::ssr::schedules::create(&mut tx, org, id, &format!("faults:{i}"), &input, today)
            .await
            .map_err(|e| anyhow::anyhow!("seeding schedule {i}: {e:?}"))?;
    }
    let steps = [
        (0, "Due today."),
        (3, "Three days late."),
        (7, "A week late."),
    ]
    .map(|(offset_days, message)| app::model::ReminderStep {
        offset_days,
        message: message.to_owned(),
    });
    if reminders {
        app::ssr::reminders::save_steps(&mut tx, org, &steps).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Moves the scheduler's clock `secs` ahead.
pub(crate) async fn advance(pool: &PgPool, secs: i64) -> sqlx::Result<i64> {
    app::ssr::worker::advance_dev_clock(pool, secs).await
}

/// What the workers have still to do at the clock's time: (schedule periods, reminders).
async fn backlog(pool: &PgPool, org: Uuid) -> sqlx::Result<(i64, i64)> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        with clock as (
            select now() + make_interval(secs => coalesce((select offset_secs from dev_clock), 0)) as now
        ), local as (
            select (clock.now at time zone o.time_zone)::date as today,
                   extract(hour from clock.now at time zone o.time_zone)::int as hour
            from clock, orgs o where o.id = $1
        )
        select
            (select count(*) from schedules s, local
             where s.org_id = $1 and s.next_run_on <= local.today and s.paused_at is null) as "periods!",
            (select count(*) from invoices i, local
             where i.org_id = $1 and i.status = 'open' and i.source_key like 'schedule:%'
               and local.hour >= 9
               and exists (select 1 from reminder_steps st
                           where st.org_id = $1 and i.due_date + st.offset_days <= local.today
                             and not exists (select 1 from reminders r
                                             where r.invoice_id = i.id and r.offset_days = st.offset_days))) as "reminders!"
        "#,
        org
    )
    .fetch_one(pool)
    .await?;
    Ok((row.periods, row.reminders))
}

/// Waits until nothing the clock made due is left undone (or `within` passed).
pub(crate) async fn settle(pool: &PgPool, org: Uuid, within: Duration) -> sqlx::Result<(i64, i64)> {
    let deadline = Instant::now() + within;
    loop {
        let left = backlog(pool, org).await?;
        if left == (0, 0) || Instant::now() >= deadline {
            return Ok(left);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The checks, against the database and the SMTP sink's messages.
pub(crate) async fn check(pool: &PgPool, org: Uuid, sink: &Path) -> anyhow::Result<ScheduleReport> {
    // Every period from each schedule's start up to its next date is due by the clock: one invoice
    // each, named by the period.
    // language=PostgreSQL
    let periods = sqlx::query!(
        r#"
        select s.id, s.next_index,
               (select count(*) from schedule_runs r where r.schedule_id = s.id and r.outcome = 'issued') as "runs!",
               (select count(*) from invoices i
                where i.org_id = s.org_id and i.source_key like 'schedule:' || s.id::text || ':%') as "invoices!",
               (select count(distinct i.source_key) from invoices i
                where i.org_id = s.org_id and i.source_key like 'schedule:' || s.id::text || ':%') as "distinct!"
        from schedules s where s.org_id = $1
        "#,
        org
    )
    .fetch_all(pool)
    .await?;
    let mut r = ScheduleReport::default();
    for p in &periods {
        let due = i64::from(p.next_index);
        r.periods_due += due;
        r.invoices += p.invoices;
        r.missing += (due - p.distinct).max(0) + (due - p.runs).max(0);
        r.doubled += (p.invoices - p.distinct) + (p.runs - due).max(0);
    }
    // language=PostgreSQL
    let doubled = sqlx::query_scalar!(
        r#"
        select count(*) as "n!" from (
            select payload ->> 'dedupe' from outbox where org_id = $1 and kind = 'reminder'
            group by payload ->> 'dedupe' having count(*) > 1
        ) d
        "#,
        org
    )
    .fetch_one(pool)
    .await?;
    r.doubled_reminders = doubled;
    // Each open schedule invoice has its latest due step's reminder.
    // language=PostgreSQL
    let missing = sqlx::query_scalar!(
        r#"
        with today as (
            select ((now() + make_interval(secs => coalesce((select offset_secs from dev_clock), 0)))
                    at time zone o.time_zone)::date as d
            from orgs o where o.id = $1
        )
        select count(*) as "n!" from invoices i, today
        where i.org_id = $1 and i.status = 'open' and i.source_key like 'schedule:%'
          and not exists (
              select 1 from reminders r
              where r.invoice_id = i.id and r.outcome = 'sent'
                and r.offset_days = (select max(st.offset_days) from reminder_steps st
                                     where st.org_id = $1 and i.due_date + st.offset_days <= today.d))
          and exists (select 1 from reminder_steps st where st.org_id = $1 and i.due_date + st.offset_days <= today.d)
        "#,
        org
    )
    .fetch_one(pool)
    .await?;
    r.missing_reminders = missing;
    // Every reminder row's email reached the sink (its Message-ID is the outbox row's id).
    // language=PostgreSQL
    let rows = sqlx::query_scalar!(
        "select id from outbox where org_id = $1 and kind = 'reminder'",
        org
    )
    .fetch_all(pool)
    .await?;
    r.reminders = rows.len() as i64;
    let received = message_ids(sink)?;
    r.unsent_reminders = rows
        .iter()
        .filter(|id| !received.contains(&id.to_string()))
        .count() as i64;
    Ok(r)
}

/// The Message-IDs (`<id@invoicer>` → id) of the messages in the sink's folder.
fn message_ids(sink: &Path) -> anyhow::Result<HashSet<String>> {
    let mut ids = HashSet::new();
    for entry in std::fs::read_dir(sink)? {
        let path = entry?.path();
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if let Some(id) = text
            .lines()
            .find_map(|l| l.strip_prefix("Message-ID: <"))
            .and_then(|l| l.split('@').next())
        {
            ids.insert(id.to_owned());
        }
    }
    Ok(ids)
}

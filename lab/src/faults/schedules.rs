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
    /// What the workers left undone by the clock's time once it stopped: (periods, reminders).
    pub behind: (i64, i64),
}

impl ScheduleReport {
    pub fn ok(&self) -> bool {
        self.missing == 0
            && self.doubled == 0
            && self.doubled_reminders == 0
            && self.missing_reminders == 0
            && self.unsent_reminders == 0
            && self.behind == (0, 0)
            && self.periods_due > 0
    }
}

/// Seeds the schedules (starting `days_ago` days before today, as if made then: their missed periods
/// are due at once; issuing invoices due on their run date, half of them emailed) and, with
/// `reminders`, the reminder steps in `org`.
pub(crate) async fn seed(
    pool: &PgPool,
    org: model::OrgId,
    schedules: usize,
    days_ago: i64,
    reminders: bool,
) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    let today = invoicer_core::jobs::schedules::org_today(&mut tx, org, chrono::Utc::now()).await?
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
        let input = model::ScheduleInput::from_json(&body).map_err(anyhow::Error::msg)?;
        let id = Uuid::now_v7();
        invoicer_core::jobs::schedules::create(
            &mut tx,
            org,
            id,
            &format!("faults:{i}"),
            &input,
            today,
        )
        .await
        .map_err(|e| anyhow::anyhow!("seeding schedule {i}: {e:?}"))?;
    }
    let steps = [
        (0, "Due today."),
        (3, "Three days late."),
        (7, "A week late."),
    ]
    .map(|(offset_days, message)| model::ReminderStep {
        offset_days,
        message: message.to_owned(),
    });
    if reminders {
        invoicer_core::jobs::reminders::save_steps(&mut tx, org, &steps).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Moves the scheduler's clock `secs` ahead.
pub(crate) async fn advance(pool: &PgPool, secs: i64) -> sqlx::Result<i64> {
    invoicer_core::worker::advance_dev_clock(pool, secs).await
}

/// What the workers have still to do at the clock's time: (schedule periods, reminders).
async fn backlog(pool: &PgPool, org: model::OrgId) -> sqlx::Result<(i64, i64)> {
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
        org as _
    )
    .fetch_one(pool)
    .await?;
    Ok((row.periods, row.reminders))
}

/// Waits until nothing the clock made due is left undone (or `within` passed).
pub(crate) async fn settle(
    pool: &PgPool,
    org: model::OrgId,
    within: Duration,
) -> sqlx::Result<(i64, i64)> {
    let deadline = Instant::now() + within;
    loop {
        let left = backlog(pool, org).await?;
        if left == (0, 0) || Instant::now() >= deadline {
            return Ok(left);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The periods due by `today` of a schedule that starts on `start` and runs every `weeks` weeks:
/// counted here from the start and the clock, not read from what the server wrote.
pub(crate) fn weekly_periods_due(
    start: chrono::NaiveDate,
    weeks: i64,
    today: chrono::NaiveDate,
) -> Vec<chrono::NaiveDate> {
    (0..)
        .map(|k| start + chrono::Duration::weeks(k * weeks))
        .take_while(|p| *p <= today)
        .collect()
}

/// The checks, against the database and the SMTP sink's messages. `behind` is what the workers
/// left undone by the clock's time once it stopped: anything but none is a failure.
pub(crate) async fn check(
    pool: &PgPool,
    org: model::OrgId,
    sink: &Path,
    behind: (i64, i64),
) -> anyhow::Result<ScheduleReport> {
    // Every period from each schedule's start up to the clock's date is due (weekly, as seeded):
    // one invoice each, named by the period, and one issued run.
    // language=PostgreSQL
    let schedules = sqlx::query!(
        r#"
        select s.id, s.start_date, s.interval, s.interval_count,
               ((now() + make_interval(secs => coalesce((select offset_secs from dev_clock), 0)))
                at time zone o.time_zone)::date as "today!"
        from schedules s join orgs o on o.id = s.org_id where s.org_id = $1
        "#,
        org as _
    )
    .fetch_all(pool)
    .await?;
    // language=PostgreSQL
    let issued = sqlx::query!(
        r#"
        select substr(i.source_key, 10, 36)::uuid as "schedule!",
               split_part(substr(i.source_key, 47), ':', 1)::date as "period!", count(*) as "n!"
        from invoices i where i.org_id = $1 and i.source_key like 'schedule:%'
        group by 1, 2
        "#,
        org as _
    )
    .fetch_all(pool)
    .await?;
    // language=PostgreSQL
    let runs = sqlx::query!(
        r#"
        select r.schedule_id, r.period, count(*) as "n!"
        from schedule_runs r join schedules s on s.id = r.schedule_id
        where s.org_id = $1 and r.outcome = 'issued'
        group by 1, 2
        "#,
        org as _
    )
    .fetch_all(pool)
    .await?;
    let invoices: std::collections::HashMap<_, i64> = issued
        .iter()
        .map(|r| ((r.schedule, r.period), r.n))
        .collect();
    let issued_runs: std::collections::HashMap<_, i64> = runs
        .iter()
        .map(|r| ((r.schedule_id, r.period), r.n))
        .collect();
    let mut r = ScheduleReport::default();
    let mut expected = HashSet::new();
    for s in &schedules {
        anyhow::ensure!(
            s.interval == "week",
            "the fault run seeds weekly schedules only, found {}",
            s.interval
        );
        for period in weekly_periods_due(s.start_date, i64::from(s.interval_count), s.today) {
            expected.insert((s.id, period));
            r.periods_due += 1;
            let made = invoices.get(&(s.id, period)).copied().unwrap_or(0);
            let ran = issued_runs.get(&(s.id, period)).copied().unwrap_or(0);
            r.missing += i64::from(made == 0) + i64::from(ran == 0);
            r.doubled += (made - 1).max(0) + (ran - 1).max(0);
        }
    }
    r.invoices = invoices.values().sum();
    // An invoice for a period not due yet is work done twice over (or out of order).
    r.doubled += invoices
        .iter()
        .filter(|(key, _)| !expected.contains(key))
        .map(|(_, n)| n)
        .sum::<i64>();
    r.behind = behind;
    // language=PostgreSQL
    let doubled = sqlx::query_scalar!(
        r#"
        select count(*) as "n!" from (
            select payload ->> 'dedupe' from outbox where org_id = $1 and kind = 'reminder'
            group by payload ->> 'dedupe' having count(*) > 1
        ) d
        "#,
        org as _
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
        org as _
    )
    .fetch_one(pool)
    .await?;
    r.missing_reminders = missing;
    // Every reminder row's email reached the sink (its Message-ID is the outbox row's id).
    // language=PostgreSQL
    let rows = sqlx::query_scalar!(
        "select id from outbox where org_id = $1 and kind = 'reminder'",
        org as _
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

#[cfg(test)]
mod tests {
    use super::weekly_periods_due;
    use chrono::NaiveDate;

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn the_periods_due_are_counted_from_the_start_and_the_clock() {
        assert_eq!(
            weekly_periods_due(day("2027-01-04"), 1, day("2027-01-24")),
            [day("2027-01-04"), day("2027-01-11"), day("2027-01-18")]
        );
        assert_eq!(
            weekly_periods_due(day("2027-01-04"), 2, day("2027-01-18")),
            [day("2027-01-04"), day("2027-01-18")]
        );
        assert!(weekly_periods_due(day("2027-01-04"), 1, day("2027-01-03")).is_empty());
    }
}

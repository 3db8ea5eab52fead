//! Recurring invoices: a schedule holds an invoice template and a cadence; [`run`] issues its
//! invoices when their dates come, once per period. Here: creating one (named by the attempt that
//! created it), reading one with its next dates and runs, pausing, resuming and editing.

use chrono::{DateTime, NaiveDate, Utc};
use model::OrgId;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::invoicing::input::{settle_template, InvoiceError};
use model::error::FieldErrors;
use model::schedule::{preview, Cadence, DayOfMonth, End, Interval};
use model::{DayField, InvoiceInput, Missed, RunAction, Schedule, ScheduleInput, ScheduleRun};

pub mod run;

#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("no such schedule")]
    NotFound,
    #[error("invalid schedule")]
    Invalid(FieldErrors),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

impl From<InvoiceError> for ScheduleError {
    fn from(e: InvoiceError) -> Self {
        e.fields_of("template")
            .map_or_else(ScheduleError::Db, ScheduleError::Invalid)
    }
}

/// A schedule's row as read back.
struct Row {
    id: Uuid,
    template: serde_json::Value,
    interval: String,
    interval_count: i32,
    start_date: NaiveDate,
    day_of_month: Option<i16>,
    end_after_count: Option<i32>,
    end_date: Option<NaiveDate>,
    action: String,
    missed: String,
    next_index: i32,
    next_run_on: Option<NaiveDate>,
    paused: bool,
    created_at: DateTime<Utc>,
}

impl Row {
    fn cadence(&self) -> Cadence {
        Cadence {
            interval: Interval::parse(&self.interval).unwrap_or(Interval::Month),
            count: self.interval_count as u32,
            start: self.start_date,
            day: self.day_of_month.and_then(DayOfMonth::from_db),
        }
    }

    fn end(&self) -> End {
        End {
            after_count: self.end_after_count.map(|c| c as u32),
            on: self.end_date,
        }
    }
}

/// The org's date today, at `now`.
pub async fn org_today(
    conn: &mut PgConnection,
    org: OrgId,
    now: DateTime<Utc>,
) -> sqlx::Result<NaiveDate> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"select ($2::timestamptz at time zone time_zone)::date as "today!: NaiveDate" from orgs where id = $1"#,
        org as _,
        now as _,
    )
    .fetch_one(&mut *conn)
    .await
}

/// The command that creates a schedule, whichever surface asks: schedule `id` of `org` from
/// `input`, named by the attempt `source_key` (a repeat of the attempt returns the schedule it
/// created); the cadence's and the template's rules are checked here, in the caller's claimed
/// transaction.
pub async fn create(
    tx: &mut PgConnection,
    org: OrgId,
    id: Uuid,
    source_key: &str,
    input: &ScheduleInput,
    today: NaiveDate,
) -> Result<Schedule, ScheduleError> {
    // language=PostgreSQL
    let existing = sqlx::query_scalar!(
        "select id from schedules where org_id = $1 and source_key = $2",
        org as _,
        source_key
    )
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(existing) = existing {
        return get(tx, org, existing).await?.ok_or(ScheduleError::NotFound);
    }
    let mut input = input.clone();
    let mut errors = input.check_template().err().unwrap_or_default();
    if let Err(more) = input.schedule.check(today) {
        errors.extend(more);
    }
    settle_template(tx, org, &mut input.invoice, errors).await?;
    let s = &input.schedule;
    let (cadence, end) = (s.cadence(), s.end());
    let first = cadence.run(0).filter(|d| end.allows(0, *d));
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into schedules (id, org_id, template, interval, interval_count, start_date, day_of_month,
                               end_after_count, end_date, action, missed, next_index, next_run_on,
                               source_key)
        values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, $12, $13)
        "#,
        id,
        org as _,
        serde_json::to_value(&input.invoice).expect("an input serialises"),
        s.interval.as_str(),
        s.interval_count as i32,
        s.start_date as _,
        cadence.day.map(DayOfMonth::to_db),
        s.end_after_count.map(|c| c as i32),
        s.end_date as _,
        s.action.as_str(),
        s.missed.as_str(),
        first as _,
        source_key,
    )
    .execute(&mut *tx)
    .await?;
    get(tx, org, id).await?.ok_or(ScheduleError::NotFound)
}

/// `org`'s schedule `id` with its next five dates and its runs (newest first, at most 100).
pub async fn get(conn: &mut PgConnection, org: OrgId, id: Uuid) -> sqlx::Result<Option<Schedule>> {
    let Some(row) = row(conn, org, id).await? else {
        return Ok(None);
    };
    // language=PostgreSQL
    let runs = sqlx::query!(
        r#"
        select period as "period: NaiveDate", invoice_id, outcome, ran_at as "ran_at: DateTime<Utc>"
        from schedule_runs where schedule_id = $1
        order by period desc
        limit 100
        "#,
        id
    )
    .fetch_all(&mut *conn)
    .await?;
    let runs = runs
        .into_iter()
        .map(|r| ScheduleRun {
            period: r.period,
            invoice_id: r.invoice_id,
            outcome: r.outcome,
            ran_at: r.ran_at,
        })
        .collect();
    Ok(Some(shown(row, runs)))
}

/// `org`'s schedules, newest first (without their runs).
pub async fn list(conn: &mut PgConnection, org: OrgId) -> sqlx::Result<Vec<Schedule>> {
    // language=PostgreSQL
    let ids = sqlx::query_scalar!(
        "select id from schedules where org_id = $1 order by created_at desc, id desc limit 200",
        org as _
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(row) = row(conn, org, id).await? {
            out.push(shown(row, Vec::new()));
        }
    }
    Ok(out)
}

async fn row(conn: &mut PgConnection, org: OrgId, id: Uuid) -> sqlx::Result<Option<Row>> {
    // language=PostgreSQL
    let r = sqlx::query!(
        r#"
        select id, template, interval, interval_count, start_date as "start_date: NaiveDate",
               day_of_month, end_after_count, end_date as "end_date: NaiveDate", action, missed,
               next_index, next_run_on as "next_run_on: NaiveDate", paused_at is not null as "paused!",
               created_at as "created_at: DateTime<Utc>"
        from schedules where id = $1 and org_id = $2
        "#,
        id,
        org as _
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(r.map(|r| Row {
        id: r.id,
        template: r.template,
        interval: r.interval,
        interval_count: r.interval_count,
        start_date: r.start_date,
        day_of_month: r.day_of_month,
        end_after_count: r.end_after_count,
        end_date: r.end_date,
        action: r.action,
        missed: r.missed,
        next_index: r.next_index,
        next_run_on: r.next_run_on,
        paused: r.paused,
        created_at: r.created_at,
    }))
}

fn shown(row: Row, runs: Vec<ScheduleRun>) -> Schedule {
    let (cadence, end) = (row.cadence(), row.end());
    let next_runs = match row.next_run_on {
        Some(_) => preview(&cadence, &end, row.next_index as u32, 5),
        None => Vec::new(),
    };
    Schedule {
        id: row.id,
        status: match (row.next_run_on, row.paused) {
            (None, _) => "ended",
            (Some(_), true) => "paused",
            (Some(_), false) => "active",
        }
        .to_owned(),
        interval: cadence.interval,
        interval_count: cadence.count,
        start_date: cadence.start,
        day_of_month: cadence.day.map(DayField::of),
        end_after_count: end.after_count,
        end_date: end.on,
        action: RunAction::parse(&row.action).unwrap_or_default(),
        missed: if row.missed == "latest" {
            Missed::Latest
        } else {
            Missed::Each
        },
        next_run_on: row.next_run_on,
        next_runs,
        runs,
        template: serde_json::from_value::<InvoiceInput>(row.template)
            .expect("a stored template reads back"),
        created_at: row.created_at,
    }
}

/// Pauses (`paused`) or resumes `org`'s schedule `id`. A resumed schedule goes on from its first
/// date on or after `today`: the dates that passed while it was paused are not issued. Returns the
/// schedule; pausing a paused one (or resuming an active one) changes nothing.
pub async fn set_paused(
    tx: &mut PgConnection,
    org: OrgId,
    id: Uuid,
    paused: bool,
    today: NaiveDate,
) -> Result<Schedule, ScheduleError> {
    let row = locked(tx, org, id).await?;
    if paused && !row.paused {
        // language=PostgreSQL
        sqlx::query!(
            "update schedules set paused_at = now(), updated_at = now() where id = $1",
            id
        )
        .execute(&mut *tx)
        .await?;
    } else if !paused && row.paused {
        let (cadence, end) = (row.cadence(), row.end());
        let next = match row.next_run_on {
            Some(due) if due < today => cadence.first_on_or_after(today),
            Some(due) => Some((row.next_index as u32, due)),
            None => None,
        }
        .filter(|(n, d)| end.allows(*n, *d));
        // language=PostgreSQL
        sqlx::query!(
            r#"
            update schedules
            set paused_at = null, next_index = coalesce($2, next_index), next_run_on = $3,
                updated_at = now()
            where id = $1
            "#,
            id,
            next.map(|(n, _)| n as i32),
            next.map(|(_, d)| d) as _,
        )
        .execute(&mut *tx)
        .await?;
    }
    get(tx, org, id).await?.ok_or(ScheduleError::NotFound)
}

/// The command that edits a schedule's template: replaces the invoice template of `org`'s schedule
/// `id` (checked here, as at creation): later runs issue the new one, the invoices already issued
/// keep theirs.
pub async fn edit_template(
    tx: &mut PgConnection,
    org: OrgId,
    id: Uuid,
    template: &InvoiceInput,
) -> Result<Schedule, ScheduleError> {
    locked(tx, org, id).await?;
    let mut template = template.clone();
    let fields = ScheduleInput::template_errors(&template)
        .err()
        .unwrap_or_default();
    settle_template(tx, org, &mut template, fields).await?;
    // language=PostgreSQL
    sqlx::query!(
        "update schedules set template = $2, updated_at = now() where id = $1",
        id,
        serde_json::to_value(&template).expect("an input serialises"),
    )
    .execute(&mut *tx)
    .await?;
    get(tx, org, id).await?.ok_or(ScheduleError::NotFound)
}

/// The schedule's row, locked until the transaction ends (a run of it waits, or skips it).
async fn locked(tx: &mut PgConnection, org: OrgId, id: Uuid) -> Result<Row, ScheduleError> {
    // language=PostgreSQL
    sqlx::query!(
        "select 1 as \"one!\" from schedules where id = $1 and org_id = $2 for update",
        id,
        org as _
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(ScheduleError::NotFound)?;
    row(tx, org, id).await?.ok_or(ScheduleError::NotFound)
}

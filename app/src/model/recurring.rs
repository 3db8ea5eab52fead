//! Recurring invoices as clients send and read them: `POST /api/v1/schedules` takes the invoice
//! input plus the cadence fields, and a schedule reads back with its next dates and its runs.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::schedule::{check, Cadence, DayOfMonth, End, Interval};
use super::InvoiceInput;
use crate::error::FieldErrors;

/// What each run does with its invoice.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunAction {
    /// Leave a draft for the owner to finalize.
    Draft,
    /// Finalize it (numbered, its customer page live).
    #[default]
    Finalize,
    /// Finalize it and email it to the customer.
    Send,
}

impl RunAction {
    pub fn as_str(self) -> &'static str {
        match self {
            RunAction::Draft => "draft",
            RunAction::Finalize => "finalize",
            RunAction::Send => "send",
        }
    }

    pub fn parse(text: &str) -> Option<RunAction> {
        match text {
            "draft" => Some(RunAction::Draft),
            "finalize" => Some(RunAction::Finalize),
            "send" => Some(RunAction::Send),
            _ => None,
        }
    }
}

/// After downtime: issue each missed period, in order, or only the latest (the others are
/// recorded as skipped).
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Missed {
    #[default]
    Each,
    Latest,
}

impl Missed {
    pub fn as_str(self) -> &'static str {
        match self {
            Missed::Each => "each",
            Missed::Latest => "latest",
        }
    }
}

/// `day_of_month`: 1 to 31, or `"last"`.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DayField {
    Day(u32),
    Last(LastDay),
}

#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LastDay {
    Last,
}

impl DayField {
    pub fn to_day(self) -> Option<DayOfMonth> {
        match self {
            DayField::Day(d @ 1..=31) => Some(DayOfMonth::Day(d)),
            DayField::Day(_) => None,
            DayField::Last(_) => Some(DayOfMonth::Last),
        }
    }

    pub fn of(day: DayOfMonth) -> DayField {
        match day {
            DayOfMonth::Day(d) => DayField::Day(d),
            DayOfMonth::Last => DayField::Last(LastDay::Last),
        }
    }
}

/// The cadence fields of `POST /api/v1/schedules` (beside the invoice input's).
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleFields {
    pub interval: Interval,
    /// Every N weeks (1 to 52), months (1 to 24) or years (1 to 5).
    #[serde(default = "one")]
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 52))]
    pub interval_count: u32,
    /// The first run: today or later, in the org's time zone.
    pub start_date: NaiveDate,
    /// Monthly and yearly: the day (in a shorter month, its last day) or `"last"`; left out: the
    /// start's day.
    #[serde(default)]
    pub day_of_month: Option<DayField>,
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 1000))]
    pub end_after_count: Option<u32>,
    #[serde(default)]
    pub end_date: Option<NaiveDate>,
    #[serde(default)]
    pub action: RunAction,
    #[serde(default)]
    pub missed: Missed,
}

fn one() -> u32 {
    1
}

/// The field names of [`ScheduleFields`]: what a schedule's body has beside the invoice input.
pub const SCHEDULE_FIELDS: [&str; 8] = [
    "interval",
    "interval_count",
    "start_date",
    "day_of_month",
    "end_after_count",
    "end_date",
    "action",
    "missed",
];

impl ScheduleFields {
    pub fn cadence(&self) -> Cadence {
        Cadence {
            interval: self.interval,
            count: self.interval_count,
            start: self.start_date,
            day: self.day_of_month.and_then(DayField::to_day),
        }
    }

    pub fn end(&self) -> End {
        End {
            after_count: self.end_after_count,
            on: self.end_date,
        }
    }

    /// The rules that need no database but the org's `today`.
    pub fn check(&self, today: NaiveDate) -> Result<(), FieldErrors> {
        let mut out = check(&self.cadence(), &self.end())
            .err()
            .unwrap_or_default();
        if self.day_of_month.is_some_and(|d| d.to_day().is_none()) {
            out.insert(
                "day_of_month".into(),
                "A day from 1 to 31, or \"last\".".into(),
            );
        }
        if self.start_date < today {
            out.insert(
                "start_date".into(),
                "The first run is today or later.".into(),
            );
        }
        if out.is_empty() {
            Ok(())
        } else {
            Err(out)
        }
    }
}

/// A schedule's body: the invoice every run issues (`payment_terms_days` sets each one's due date;
/// a fixed `due_date`, `draft` and `save_customer` are refused) and its cadence.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScheduleInput {
    #[serde(flatten)]
    pub invoice: InvoiceInput,
    #[serde(flatten)]
    pub schedule: ScheduleFields,
}

/// The invoice input's field names (a schedule's body is strict: any other name is an error).
const INVOICE_FIELDS: [&str; 11] = [
    "customer_name",
    "customer_email",
    "currency",
    "due_date",
    "payment_terms_days",
    "lines",
    "customer_id",
    "save_customer",
    "draft",
    "discount",
    "notes",
];

impl ScheduleInput {
    /// Splits a JSON body into the invoice input and the cadence fields, each read strictly (an
    /// unknown field is an error naming it).
    pub fn from_json(value: &serde_json::Value) -> Result<ScheduleInput, String> {
        let Some(object) = value.as_object() else {
            return Err("the body is not a JSON object".into());
        };
        let (mut invoice, mut schedule) = (serde_json::Map::new(), serde_json::Map::new());
        for (k, v) in object {
            if SCHEDULE_FIELDS.contains(&k.as_str()) {
                schedule.insert(k.clone(), v.clone());
            } else if INVOICE_FIELDS.contains(&k.as_str()) {
                invoice.insert(k.clone(), v.clone());
            } else {
                return Err(format!("unknown field `{k:.40}`"));
            }
        }
        let invoice = serde_json::from_value(serde_json::Value::Object(invoice))
            .map_err(|e| e.to_string())?;
        let schedule = serde_json::from_value(serde_json::Value::Object(schedule))
            .map_err(|e| e.to_string())?;
        Ok(ScheduleInput { invoice, schedule })
    }

    /// The rules of a schedule's invoice template beside [`InvoiceInput::check`] (which the
    /// caller runs, with the customer filled in).
    pub fn check_template(&self) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        if self.invoice.payment_terms_days.is_none() {
            out.insert(
                "payment_terms_days".into(),
                "A recurring invoice is due some days after each run: give payment terms.".into(),
            );
        }
        if self.invoice.due_date.is_some() {
            out.insert(
                "due_date".into(),
                "Each run has its own due date: give payment terms instead.".into(),
            );
        }
        if self.invoice.draft {
            out.insert(
                "draft".into(),
                "Say what each run does with `action` instead.".into(),
            );
        }
        if self.invoice.save_customer {
            out.insert(
                "save_customer".into(),
                "Save the customer first and name it with customer_id.".into(),
            );
        }
        if out.is_empty() {
            Ok(())
        } else {
            Err(out)
        }
    }
}

/// One period a schedule handled.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleRun {
    /// The run's date (the period that names it).
    pub period: NaiveDate,
    /// The invoice it issued (none when skipped, or the invoice was deleted since).
    pub invoice_id: Option<Uuid>,
    /// `issued` or `skipped` (missed: latest).
    pub outcome: String,
    pub ran_at: DateTime<Utc>,
}

/// A schedule as the API and the pages show it.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    pub id: Uuid,
    /// `active`, `paused` or `ended`.
    pub status: String,
    pub interval: Interval,
    pub interval_count: u32,
    pub start_date: NaiveDate,
    pub day_of_month: Option<DayField>,
    pub end_after_count: Option<u32>,
    pub end_date: Option<NaiveDate>,
    pub action: RunAction,
    pub missed: Missed,
    /// The next run's date; none once the schedule has ended.
    pub next_run_on: Option<NaiveDate>,
    /// The next five run dates.
    pub next_runs: Vec<NaiveDate>,
    /// Newest first.
    pub runs: Vec<ScheduleRun>,
    /// The invoice each run issues.
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub template: InvoiceInput,
    pub created_at: DateTime<Utc>,
}

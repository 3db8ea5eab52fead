//! Recurring invoices as clients send and read them: `POST /api/v1/schedules` takes the invoice
//! input plus the cadence fields, and a schedule reads back with its next dates and its runs.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::schedule::{check, Cadence, DayOfMonth, End, Interval};
use super::InvoiceInput;
use crate::error::FieldErrors;

/// What each run does with its invoice.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DayField {
    Day(u32),
    Last(LastDay),
}

#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
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
/// Read strictly: [`ScheduleInput::from_json`] refuses any name that is neither the invoice input's
/// nor one of these.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleFields {
    pub interval: Interval,
    /// Every N weeks (1 to 52), months (1 to 24) or years (1 to 5).
    #[serde(default = "one")]
    #[cfg_attr(feature = "server", schema(minimum = 1, maximum = 52))]
    pub interval_count: u32,
    /// The first run: today or later, in the org's time zone.
    pub start_date: NaiveDate,
    /// Monthly and yearly: the day (in a shorter month, its last day) or `"last"`; left out: the
    /// start's day.
    #[serde(default)]
    pub day_of_month: Option<DayField>,
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(minimum = 1, maximum = 1000))]
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
        crate::error::fields_ok(out)
    }
}

/// A schedule's body: the invoice every run issues (`payment_terms_days` sets each one's due date;
/// a fixed `due_date`, `draft` and `save_customer` are refused) and its cadence.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScheduleInput {
    #[serde(flatten)]
    pub invoice: InvoiceInput,
    #[serde(flatten)]
    pub schedule: ScheduleFields,
}

/// The invoice input's field names (a schedule's body is strict: any other name is an error).
pub const INVOICE_FIELDS: [&str; 12] = [
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
    "collection_method",
];

/// Why a JSON body did not read: the field at fault when one value is (`interval`,
/// `lines[2].quantity`), and serde's reason; no field when it concerns the whole body (an unknown
/// field, a body that is not an object).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{reason}", .field.as_deref().map(|f| format!("{f}: ")).unwrap_or_default())]
pub struct Unreadable {
    pub field: Option<String>,
    pub reason: String,
}

impl Unreadable {
    fn whole(reason: String) -> Self {
        Unreadable {
            field: None,
            reason,
        }
    }
}

/// `object` as a `T`, or why not, naming the field that does not read.
fn read<T: serde::de::DeserializeOwned>(
    object: serde_json::Map<String, serde_json::Value>,
) -> Result<T, Unreadable> {
    serde_path_to_error::deserialize(serde_json::Value::Object(object)).map_err(|e| {
        let field = e.path().to_string();
        Unreadable {
            field: (field != ".").then_some(field),
            reason: e.inner().to_string(),
        }
    })
}

/// A body that is the invoice input plus `extra` fields (a schedule's cadence, a quote's expiry),
/// read strictly: any other name is an error naming it. Returns the invoice input and the extra
/// fields as `T`.
pub fn split_body<T: serde::de::DeserializeOwned>(
    value: &serde_json::Value,
    extra: &[&str],
) -> Result<(InvoiceInput, T), Unreadable> {
    let Some(object) = value.as_object() else {
        return Err(Unreadable::whole("the body is not a JSON object".into()));
    };
    let (mut invoice, mut rest) = (serde_json::Map::new(), serde_json::Map::new());
    for (k, v) in object {
        if extra.contains(&k.as_str()) {
            rest.insert(k.clone(), v.clone());
        } else if INVOICE_FIELDS.contains(&k.as_str()) {
            invoice.insert(k.clone(), v.clone());
        } else {
            return Err(Unreadable::whole(format!("unknown field `{k:.40}`")));
        }
    }
    Ok((read(invoice)?, read(rest)?))
}

impl ScheduleInput {
    /// Splits a JSON body into the invoice input and the cadence fields, each read strictly (an
    /// unknown field is an error naming it).
    pub fn from_json(value: &serde_json::Value) -> Result<ScheduleInput, Unreadable> {
        let (invoice, schedule) = split_body(value, &SCHEDULE_FIELDS)?;
        Ok(ScheduleInput { invoice, schedule })
    }

    /// The rules of a schedule's invoice template beside [`InvoiceInput::check`] (which the
    /// caller runs, with the customer filled in).
    pub fn check_template(&self) -> Result<(), FieldErrors> {
        Self::template_errors(&self.invoice)
    }

    /// [`Self::check_template`] of a template alone (an edit keeps the schedule's cadence).
    pub fn template_errors(invoice: &InvoiceInput) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        if invoice.payment_terms_days.is_none() {
            out.insert(
                "payment_terms_days".into(),
                "A recurring invoice is due some days after each run: give payment terms.".into(),
            );
        }
        if invoice.due_date.is_some() {
            out.insert(
                "due_date".into(),
                "Each run has its own due date: give payment terms instead.".into(),
            );
        }
        if invoice.draft {
            out.insert(
                "draft".into(),
                "Say what each run does with `action` instead.".into(),
            );
        }
        if invoice.save_customer {
            out.insert(
                "save_customer".into(),
                "Save the customer first and name it with customer_id.".into(),
            );
        }
        crate::error::fields_ok(out)
    }
}

/// One period a schedule handled.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
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
    #[cfg_attr(feature = "server", schema(value_type = Object))]
    pub template: InvoiceInput,
    pub created_at: DateTime<Utc>,
}

/// The schedule fields as the HTML form posts them (everything as typed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduleForm {
    #[serde(default)]
    pub interval: String,
    #[serde(default)]
    pub interval_count: String,
    #[serde(default)]
    pub start_date: String,
    /// Empty (the start's day), 1 to 31, or `last`.
    #[serde(default)]
    pub day_of_month: String,
    #[serde(default)]
    pub end_after_count: String,
    #[serde(default)]
    pub end_date: String,
    #[serde(default)]
    pub action: String,
    #[serde(default)]
    pub missed: String,
}

impl ScheduleForm {
    /// The fields, or what is wrong with them as typed (the rules follow in [`ScheduleFields::check`]).
    pub fn parse(&self) -> Result<ScheduleFields, FieldErrors> {
        let mut out = FieldErrors::new();
        let mut bad = |field: &str, message: &str| {
            out.insert(field.to_owned(), message.to_owned());
        };
        let interval = Interval::parse(self.interval.trim());
        if interval.is_none() {
            bad("interval", "Choose weeks, months or years.");
        }
        let number = |text: &str| -> Result<Option<u32>, ()> {
            match text.trim() {
                "" => Ok(None),
                t => t.parse().map(Some).map_err(|_| ()),
            }
        };
        let date = |text: &str| -> Result<Option<NaiveDate>, ()> {
            match text.trim() {
                "" => Ok(None),
                t => NaiveDate::parse_from_str(t, "%Y-%m-%d")
                    .map(Some)
                    .map_err(|_| ()),
            }
        };
        let interval_count = number(&self.interval_count).unwrap_or_else(|()| {
            bad("interval_count", "Enter a whole number.");
            None
        });
        let start_date = date(&self.start_date).unwrap_or_else(|()| {
            bad("start_date", "Enter a date as YYYY-MM-DD.");
            None
        });
        if start_date.is_none() && self.start_date.trim().is_empty() {
            bad("start_date", "Enter the first run's date.");
        }
        let day_of_month = match self.day_of_month.trim() {
            "" => None,
            "last" => Some(DayField::Last(LastDay::Last)),
            t => match t.parse() {
                Ok(d) => Some(DayField::Day(d)),
                Err(_) => {
                    bad("day_of_month", "A day from 1 to 31, or last.");
                    None
                }
            },
        };
        let end_after_count = number(&self.end_after_count).unwrap_or_else(|()| {
            bad("end_after_count", "Enter a whole number.");
            None
        });
        let end_date = date(&self.end_date).unwrap_or_else(|()| {
            bad("end_date", "Enter a date as YYYY-MM-DD.");
            None
        });
        let action = RunAction::parse(self.action.trim()).unwrap_or_default();
        let missed = if self.missed.trim() == "latest" {
            Missed::Latest
        } else {
            Missed::Each
        };
        match (interval, start_date) {
            (Some(interval), Some(start_date)) if out.is_empty() => Ok(ScheduleFields {
                interval,
                interval_count: interval_count.unwrap_or(1),
                start_date,
                day_of_month,
                end_after_count,
                end_date,
                action,
                missed,
            }),
            _ => Err(out),
        }
    }
}

/// The schedule page: the schedule and the keys of this rendering's buttons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchedulePage {
    pub schedule: Schedule,
    /// Pause or resume, whichever the page shows.
    pub toggle_key: Uuid,
    /// The invoices' numbers by id, for the runs' links.
    pub numbers: Vec<(Uuid, String)>,
    pub can_edit: bool,
}

/// The new-schedule form's rendering: its key, the customers to pick from, the org's today.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewSchedulePage {
    pub key: Uuid,
    pub customers: Vec<(Uuid, String)>,
    pub today: NaiveDate,
}

/// A schedule's template edit form: the schedule, the form's key, the template as the form shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleEdit {
    pub id: Uuid,
    pub key: Uuid,
    pub form: crate::InvoiceForm,
}

/// A step of an org's reminder policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReminderStep {
    /// Days after the due date (negative: before it).
    pub offset_days: i32,
    pub message: String,
}

/// `steps` checked: at most 10, offsets from -60 to 365 and different, messages 1 to 2000
/// characters.
pub fn check_reminder_steps(steps: &[ReminderStep]) -> Result<(), FieldErrors> {
    let mut out = FieldErrors::new();
    if steps.len() > 10 {
        out.insert("steps".into(), "At most 10 reminders.".into());
    }
    let mut seen = std::collections::HashSet::new();
    for (i, s) in steps.iter().enumerate() {
        if !(-60..=365).contains(&s.offset_days) || !seen.insert(s.offset_days) {
            out.insert(
                format!("steps[{i}].offset_days"),
                "Days from -60 to 365, each once.".into(),
            );
        }
        let len = s.message.trim().chars().count();
        if len == 0 || len > 2000 {
            out.insert(
                format!("steps[{i}].message"),
                "A message of 1 to 2000 characters.".into(),
            );
        }
        super::text::refuse_control_chars(&mut out, &format!("steps[{i}].message"), &s.message);
    }
    crate::error::fields_ok(out)
}

/// The reminders form: a row per step as typed (rows with no days are left out).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReminderStepForm {
    #[serde(default)]
    pub offset_days: String,
    #[serde(default)]
    pub message: String,
}

impl ReminderStepForm {
    pub fn parse(rows: &[ReminderStepForm]) -> Result<Vec<ReminderStep>, FieldErrors> {
        let mut out = Vec::new();
        let mut errors = FieldErrors::new();
        for (i, row) in rows.iter().take(11).enumerate() {
            let days = row.offset_days.trim();
            if days.is_empty() && row.message.trim().is_empty() {
                continue;
            }
            match days.trim_start_matches('+').parse::<i32>() {
                Ok(offset_days) => out.push(ReminderStep {
                    offset_days,
                    message: row.message.trim().to_owned(),
                }),
                Err(_) => {
                    errors.insert(
                        format!("steps[{i}].offset_days"),
                        "Days from -60 to 365 (negative: before the due date).".into(),
                    );
                }
            }
        }
        if errors.is_empty() {
            check_reminder_steps(&out).map(|()| out)
        } else {
            Err(errors)
        }
    }
}

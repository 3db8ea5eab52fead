//! Recurring invoices: when a schedule runs. A schedule's runs are dates in the org's time zone,
//! each named by its date (the run's period): the n-th run is computed from the start each time,
//! never from the previous run, so a month end never drifts (Jan 31 → Feb 28 → Mar 31) and a
//! time-zone or DST change cannot skip or double one.

use chrono::{Datelike, Days, Months, NaiveDate};
use serde::{Deserialize, Serialize};

use crate::error::FieldErrors;

/// How often a schedule runs.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Interval {
    Week,
    Month,
    Year,
}

impl Interval {
    pub fn as_str(self) -> &'static str {
        match self {
            Interval::Week => "week",
            Interval::Month => "month",
            Interval::Year => "year",
        }
    }

    pub fn parse(text: &str) -> Option<Interval> {
        match text {
            "week" => Some(Interval::Week),
            "month" => Some(Interval::Month),
            "year" => Some(Interval::Year),
            _ => None,
        }
    }
}

/// The day of the month a monthly or yearly schedule runs on: a day (1 to 31: in a shorter month,
/// its last day) or the last day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayOfMonth {
    Day(u32),
    Last,
}

impl DayOfMonth {
    /// As stored: 1 to 31, or 0 for the last day.
    pub fn to_db(self) -> i16 {
        match self {
            DayOfMonth::Day(d) => d as i16,
            DayOfMonth::Last => 0,
        }
    }

    pub fn from_db(v: i16) -> Option<DayOfMonth> {
        match v {
            0 => Some(DayOfMonth::Last),
            1..=31 => Some(DayOfMonth::Day(v as u32)),
            _ => None,
        }
    }
}

/// When a schedule runs: every `count` weeks, months or years from `start`, monthly and yearly
/// ones on `day` (default: the start's day).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cadence {
    pub interval: Interval,
    pub count: u32,
    pub start: NaiveDate,
    pub day: Option<DayOfMonth>,
}

/// The last day of `year`-`month`.
fn last_day(year: i32, month: u32) -> u32 {
    let first = NaiveDate::from_ymd_opt(year, month, 1).expect("a month's first day");
    let next = first + Months::new(1);
    (next - Days::new(1)).day()
}

impl Cadence {
    /// The date `k` intervals after the start's week, month or year (before skipping dates that
    /// fall before the start).
    fn step(&self, k: u32) -> Option<NaiveDate> {
        match self.interval {
            Interval::Week => self
                .start
                .checked_add_days(Days::new(7 * u64::from(self.count) * u64::from(k))),
            Interval::Month | Interval::Year => {
                let months = self
                    .count
                    .checked_mul(k)?
                    .checked_mul(match self.interval {
                        Interval::Year => 12,
                        _ => 1,
                    })?;
                let first = NaiveDate::from_ymd_opt(self.start.year(), self.start.month(), 1)?
                    .checked_add_months(Months::new(months))?;
                let last = last_day(first.year(), first.month());
                let day = match self.day {
                    None => self.start.day().min(last),
                    Some(DayOfMonth::Day(d)) => d.min(last),
                    Some(DayOfMonth::Last) => last,
                };
                first.with_day(day)
            }
        }
    }

    /// The date of run `n` (0: the first): the runs are every step on or after the start.
    pub fn run(&self, n: u32) -> Option<NaiveDate> {
        let skip = u32::from(self.step(0)? < self.start);
        self.step(n.checked_add(skip)?)
    }

    /// The first run on or after `date`, as (its index, its date).
    pub fn first_on_or_after(&self, date: NaiveDate) -> Option<(u32, NaiveDate)> {
        if date <= self.start {
            return self.run(0).map(|d| (0, d));
        }
        // An estimate from the average length of a step, then corrected by a few steps.
        let days = (date - self.start).num_days();
        let step_days: i64 = match self.interval {
            Interval::Week => 7,
            Interval::Month => 28,
            Interval::Year => 365,
        } * i64::from(self.count);
        let mut n = u32::try_from((days / step_days - 2).max(0)).ok()?;
        while n > 0 && self.run(n)? >= date {
            n -= 1;
        }
        loop {
            let d = self.run(n)?;
            if d >= date {
                return Some((n, d));
            }
            n += 1;
        }
    }
}

/// How a schedule ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct End {
    /// After this many invoices.
    pub after_count: Option<u32>,
    /// No run after this date.
    pub on: Option<NaiveDate>,
}

impl End {
    /// Whether run `n` on `date` is within the schedule's end.
    pub fn allows(&self, n: u32, date: NaiveDate) -> bool {
        self.after_count.is_none_or(|c| n < c) && self.on.is_none_or(|d| date <= d)
    }
}

/// The next `k` run dates from run `n`, within `end`.
pub fn preview(cadence: &Cadence, end: &End, n: u32, k: usize) -> Vec<NaiveDate> {
    (n..)
        .map_while(|i| cadence.run(i).filter(|d| end.allows(i, *d)))
        .take(k)
        .collect()
}

/// The checks of a cadence that need no database.
pub fn check(cadence: &Cadence, end: &End) -> Result<(), FieldErrors> {
    let mut out = FieldErrors::new();
    let most = match cadence.interval {
        Interval::Week => 52,
        Interval::Month => 24,
        Interval::Year => 5,
    };
    if !(1..=most).contains(&cadence.count) {
        out.insert(
            "interval_count".into(),
            format!("Every 1 to {most} {}s.", cadence.interval.as_str()),
        );
    }
    if cadence.interval == Interval::Week && cadence.day.is_some() {
        out.insert(
            "day_of_month".into(),
            "A weekly schedule runs on the start's weekday: leave the day of the month out.".into(),
        );
    }
    if end.after_count.is_some_and(|c| !(1..=1000).contains(&c)) {
        out.insert(
            "end_after_count".into(),
            "End after 1 to 1000 invoices.".into(),
        );
    }
    if end.on.is_some_and(|d| d < cadence.start) {
        out.insert(
            "end_date".into(),
            "The end date is before the start.".into(),
        );
    }
    crate::error::fields_ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn runs(c: &Cadence, n: u32) -> Vec<String> {
        (0..n).map(|i| c.run(i).unwrap().to_string()).collect()
    }

    fn monthly(start: &str, count: u32, day: Option<DayOfMonth>) -> Cadence {
        Cadence {
            interval: Interval::Month,
            count,
            start: d(start),
            day,
        }
    }

    #[test]
    fn month_ends_follow_the_start_not_the_previous_run() {
        assert_eq!(
            runs(&monthly("2027-01-31", 1, None), 4),
            ["2027-01-31", "2027-02-28", "2027-03-31", "2027-04-30"]
        );
        // Leap years.
        assert_eq!(
            runs(&monthly("2028-01-31", 1, None), 3),
            ["2028-01-31", "2028-02-29", "2028-03-31"]
        );
        assert_eq!(
            runs(&monthly("2027-01-10", 1, Some(DayOfMonth::Last)), 3),
            ["2027-01-31", "2027-02-28", "2027-03-31"]
        );
        // On the 30th from a start after it: the first run is next month's.
        assert_eq!(
            runs(&monthly("2027-01-31", 1, Some(DayOfMonth::Day(30))), 3),
            ["2027-02-28", "2027-03-30", "2027-04-30"]
        );
        assert_eq!(
            runs(&monthly("2027-11-15", 3, None), 3),
            ["2027-11-15", "2028-02-15", "2028-05-15"]
        );
        let yearly = Cadence {
            interval: Interval::Year,
            count: 1,
            start: d("2028-02-29"),
            day: None,
        };
        assert_eq!(runs(&yearly, 3), ["2028-02-29", "2029-02-28", "2030-02-28"]);
    }

    #[test]
    fn weeks_run_across_years() {
        let every_two = Cadence {
            interval: Interval::Week,
            count: 2,
            start: d("2027-12-20"),
            day: None,
        };
        assert_eq!(
            runs(&every_two, 3),
            ["2027-12-20", "2028-01-03", "2028-01-17"]
        );
    }

    #[test]
    fn the_first_run_on_or_after_a_date_is_found_far_out() {
        let c = monthly("2027-01-31", 1, None);
        assert_eq!(
            c.first_on_or_after(d("2027-03-01")),
            Some((2, d("2027-03-31")))
        );
        assert_eq!(
            c.first_on_or_after(d("2027-01-01")),
            Some((0, d("2027-01-31")))
        );
        assert_eq!(
            c.first_on_or_after(d("2047-02-01")).unwrap().1,
            d("2047-02-28")
        );
        let w = Cadence {
            interval: Interval::Week,
            count: 1,
            start: d("2027-01-04"),
            day: None,
        };
        assert_eq!(
            w.first_on_or_after(d("2027-01-05")),
            Some((1, d("2027-01-11")))
        );
    }

    #[test]
    fn an_end_bounds_the_preview() {
        let c = monthly("2027-01-31", 1, None);
        let end = End {
            after_count: Some(3),
            on: None,
        };
        assert_eq!(preview(&c, &end, 1, 5).len(), 2);
        let end = End {
            after_count: None,
            on: Some(d("2027-03-31")),
        };
        assert_eq!(preview(&c, &end, 0, 5).len(), 3);
        assert!(check(&Cadence { count: 0, ..c }, &End::default()).is_err());
    }
}

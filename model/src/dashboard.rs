//! The dashboard: who owes what and since when, what came in, what was invoiced month by month.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What is owed in one currency, and how late.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owed {
    pub currency: String,
    /// Everything still to pay on open and uncollectible invoices.
    pub outstanding_cents: i64,
    /// The part past its due date.
    pub overdue_cents: i64,
    /// Not yet due, 1–30, 31–60, 61–90 and over 90 days past due.
    pub aging_cents: [i64; 5],
}

/// Money received in one currency.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Received {
    pub currency: String,
    pub this_month_cents: i64,
    pub this_quarter_cents: i64,
}

/// One month's invoicing in one currency: finalized invoices' totals less credit notes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonthRevenue {
    /// The month's first day.
    pub month: NaiveDate,
    pub currency: String,
    pub invoiced_cents: i64,
    pub credited_cents: i64,
}

/// A customer and what it owes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Debtor {
    pub customer_id: Option<Uuid>,
    pub name: String,
    pub currency: String,
    pub owed_cents: i64,
    pub overdue_cents: i64,
    /// Its oldest unpaid due date.
    pub oldest_due: NaiveDate,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dashboard {
    /// The org's date.
    pub today: NaiveDate,
    pub owed: Vec<Owed>,
    pub received: Vec<Received>,
    /// The last twelve months, oldest first, per currency.
    pub revenue: Vec<MonthRevenue>,
    /// Who owes the most (at most five).
    pub debtors: Vec<Debtor>,
    /// How many open invoices the figures sum.
    pub owed_invoices: i64,
    /// When these figures were read: a big org's dashboard is served from a cache for a few
    /// seconds (the page says how old it is).
    pub as_of: chrono::DateTime<chrono::Utc>,
}

/// The aging buckets' names.
pub const AGING: [&str; 5] = [
    "Current",
    "1–30 days",
    "31–60 days",
    "61–90 days",
    "Over 90 days",
];

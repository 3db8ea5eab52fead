//! The scheduled jobs: recurring invoices (one claim per period), payment reminders and retention.

pub mod charges;
pub mod late_fees;
pub mod reminders;
pub mod retention;
pub mod schedules;

//! Reports an accountant asks for: who owes what and for how long (aging by customer).

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One customer's open amounts in one currency, by how late.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgingRow {
    /// The saved customer, when the invoices name one (typed customers are told apart by email).
    pub customer_id: Option<Uuid>,
    pub name: String,
    pub email: String,
    pub currency: String,
    /// Not yet due.
    pub current_cents: i64,
    pub days_1_30_cents: i64,
    pub days_31_60_cents: i64,
    pub days_61_90_cents: i64,
    pub over_90_cents: i64,
    pub total_cents: i64,
    /// How many open invoices.
    pub invoices: i64,
    /// The oldest due date among them.
    pub oldest_due: NaiveDate,
}

/// The aging report on the org's `today`, biggest debts first.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgingReport {
    pub today: NaiveDate,
    pub data: Vec<AgingRow>,
}

//! Reports an accountant asks for: who owes what and for how long (aging by customer).

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One customer's open amounts in one currency, by how late.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgingReport {
    pub today: NaiveDate,
    pub data: Vec<AgingRow>,
}

/// Which documents a tax row sums.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaxDocuments {
    Invoices,
    CreditNotes,
}

/// One VAT rate's taxable base and tax in one currency, from the invoices issued or the credit
/// notes issued in the period.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaxRow {
    pub currency: String,
    pub documents: TaxDocuments,
    /// The EN 16931 VAT category (`S`, `Z`, `E`, `AE`, `K`, `G`, `O`); null for lines billed
    /// without a tax rate.
    pub category: Option<String>,
    /// Thousandths of a percent: 19 % is 19000.
    pub percent_milli: i64,
    /// The names the rate had on the documents, in order.
    pub names: Vec<String>,
    /// Net of tax, after discounts.
    pub taxable_cents: i64,
    pub tax_cents: i64,
    /// How many invoices (or credit notes) have something at this rate.
    pub count: i64,
}

/// What is left per currency when the credit notes are taken from the invoices.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaxNet {
    pub currency: String,
    pub taxable_cents: i64,
    pub tax_cents: i64,
}

/// The tax summary of a period (`from`..=`to`, the org's dates): invoices by the day they were
/// finalized (void ones left out), credit notes by the day they were issued.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaxReport {
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub data: Vec<TaxRow>,
    pub net: Vec<TaxNet>,
}

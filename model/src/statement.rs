//! A customer's statement: what they were invoiced, paid, credited and refunded in a period, per
//! currency, with the balance running from what they owed when the period began.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// The longest period a statement covers (its cost is bounded by it and by [`MAX_ENTRIES`]).
pub const MAX_DAYS: i64 = 3660;
/// The most entries a statement lists; beyond them it says it was cut short.
pub const MAX_ENTRIES: usize = 2000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    pub org_name: String,
    pub customer_name: String,
    pub from: NaiveDate,
    pub to: NaiveDate,
    /// One per currency the customer has entries or a balance in.
    pub sections: Vec<StatementSection>,
    /// More than [`MAX_ENTRIES`] entries in the period: the first ones are listed.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementSection {
    pub currency: String,
    /// What the customer owed when the period began (negative: their credit).
    pub opening_cents: i64,
    pub entries: Vec<StatementEntry>,
    /// What they owe at the period's end.
    pub closing_cents: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementEntry {
    pub day: NaiveDate,
    /// `invoice`, `payment`, `credit_note`, `refund` or `dispute_lost`.
    pub kind: String,
    /// The invoice's number (the credit note's, for a credit note).
    pub reference: String,
    /// What the entry is, in words: "Payment, bank transfer (REF-1)".
    pub description: String,
    /// What it adds to what the customer owes.
    pub debit_cents: i64,
    /// What it takes off.
    pub credit_cents: i64,
    /// What the customer owes after it.
    pub balance_cents: i64,
}

/// The words for an entry of `kind` with the database's `detail` and `note`.
pub fn describe(kind: &str, detail: &str, note: &str) -> String {
    let method = match detail {
        "stripe" => "card (Stripe)",
        "bank_transfer" => "bank transfer",
        "cash" => "cash",
        "cheque" => "cheque",
        "card" => "card",
        _ => "other",
    };
    let with_note = |text: String| {
        if note.is_empty() {
            text
        } else {
            format!("{text} ({note})")
        }
    };
    match kind {
        "invoice" => "Invoice".to_owned(),
        "payment" => with_note(format!("Payment, {method}")),
        "credit_note" => with_note(format!("Credit note on {detail}")),
        "refund" if detail == "manual" => with_note("Refund, outside the app".to_owned()),
        "refund" => "Refund, card (Stripe)".to_owned(),
        "dispute_lost" => "Dispute lost, card (Stripe)".to_owned(),
        other => other.to_owned(),
    }
}

/// The owner's page of a customer's statement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementPage {
    pub customer_id: uuid::Uuid,
    pub statement: Statement,
    /// The customer's page of the same statement (`/s/{token}?from=..&to=..`); none while the
    /// customer has no link (archived, or no new one made since).
    pub public_url: Option<String>,
}

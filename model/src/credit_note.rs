//! Credit notes: what a client sends to issue one, and what it is.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::FieldErrors;
use crate::Thousandths;

/// What happens to money already paid beyond what the invoice asks for once credited.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreditRefund {
    /// Kept: the customer's credit (shown as paid beyond what is due).
    #[default]
    None,
    /// Paid back outside the app (recorded as a refund).
    Manual,
    /// Paid back through Stripe, from the invoice's card payments (by a worker, shortly after).
    Stripe,
}

impl CreditRefund {
    pub fn as_str(self) -> &'static str {
        match self {
            CreditRefund::None => "none",
            CreditRefund::Manual => "manual",
            CreditRefund::Stripe => "stripe",
        }
    }
}

/// What a client sends to credit an invoice: `POST /api/v1/invoices/{id}/credit_notes`.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreditNoteInput {
    /// In the invoice's currency's minor units, at most what is left to credit; left out: all of
    /// it.
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(minimum = 1))]
    pub amount_cents: Option<i64>,
    /// Lines of the invoice to credit instead of an amount: how much of each line's quantity. Each
    /// is credited with its share of the invoice's discount and its tax, rounded half up.
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_items = 100, min_items = 1))]
    pub lines: Option<Vec<CreditLineInput>>,
    /// Why (printed on the credit note), 1 to 500 characters.
    #[cfg_attr(feature = "server", schema(min_length = 1, max_length = 500))]
    pub reason: String,
    #[serde(default)]
    pub refund: CreditRefund,
}

impl CreditNoteInput {
    /// The rules that need no invoice, as `field → message`.
    pub fn check(&self) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        if self.amount_cents.is_some_and(|a| a < 1) {
            out.insert("amount_cents".into(), "Enter an amount above zero.".into());
        }
        if let Some(lines) = &self.lines {
            if self.amount_cents.is_some() {
                out.insert(
                    "lines".into(),
                    "Credit an amount or lines, not both.".into(),
                );
            }
            let mut seen = std::collections::HashSet::new();
            let bad = lines.is_empty()
                || lines.len() > 100
                || lines.iter().any(|l| {
                    !(1..=100).contains(&l.line_id)
                        || l.quantity.0 < 1
                        || l.quantity.0 > 1_000_000_000
                        || !seen.insert(l.line_id)
                });
            if bad {
                out.insert(
                    "lines".into(),
                    "Name 1 to 100 different lines of the invoice (line_id 1 to 100), each with a \
                     quantity above zero."
                        .into(),
                );
            }
        }
        let reason = self.reason.trim();
        if reason.is_empty() || reason.chars().count() > 500 {
            out.insert("reason".into(), "Say why in 1 to 500 characters.".into());
        }
        super::text::refuse_control_chars(&mut out, "reason", reason);
        crate::error::fields_ok(out)
    }
}

/// A line of the invoice to credit, and how much of its quantity.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreditLineInput {
    /// The invoice line's `line_id`.
    #[cfg_attr(feature = "server", schema(minimum = 1, maximum = 100))]
    pub line_id: i16,
    /// At most what is left uncredited of the line's quantity; up to 3 decimals.
    #[cfg_attr(
        feature = "server",
        schema(value_type = f64, minimum = 0.001, maximum = 1_000_000)
    )]
    pub quantity: Thousandths,
}

/// A line of the "Credit" form: the invoice line and the quantity typed (blank: none of it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CreditLineForm {
    #[serde(default)]
    pub line_id: String,
    #[serde(default)]
    pub quantity: String,
}

impl CreditLineForm {
    /// The lines with a quantity, or None when every quantity is blank (the form credits an
    /// amount).
    pub fn parse(lines: &[CreditLineForm]) -> Result<Option<Vec<CreditLineInput>>, FieldErrors> {
        let mut out = Vec::new();
        for line in lines.iter().take(101) {
            let text = line.quantity.trim();
            if text.is_empty() {
                continue;
            }
            let (Ok(line_id), Some(quantity)) =
                (line.line_id.trim().parse::<i16>(), Thousandths::parse(text))
            else {
                return Err(FieldErrors::from([(
                    "lines".to_owned(),
                    "Enter each quantity to credit as a number, like 1 or 2.5.".to_owned(),
                )]));
            };
            out.push(CreditLineInput { line_id, quantity });
        }
        Ok((!out.is_empty()).then_some(out))
    }
}

/// A credited line on a credit note.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreditNoteLine {
    pub line_id: i16,
    pub description: String,
    #[cfg_attr(feature = "server", schema(value_type = f64))]
    pub quantity: Thousandths,
    /// What this part of the line is worth, its discount and tax included.
    pub amount_cents: i64,
}

/// A credit note as the API and the pages show it.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreditNote {
    pub id: Uuid,
    /// Its own gapless series per org (the org's credit-note format, e.g. `CN-000001`).
    pub number: String,
    pub invoice_id: Uuid,
    /// The credited invoice's number.
    pub invoice_number: String,
    pub currency: String,
    pub total_cents: i64,
    pub reason: String,
    pub refund: CreditRefund,
    /// `none` while nothing was paid back, `pending` while a refund through Stripe is under way,
    /// `refunded` once it was paid back (`refund: manual`: recorded when the credit note was
    /// issued), `failed` when Stripe refused (the money stays the customer's credit).
    pub refund_state: String,
    /// What the credit note paid back of money already paid (at most its total).
    pub refunded_cents: i64,
    /// The lines it credits (empty when it credits an amount).
    pub lines: Vec<CreditNoteLine>,
    /// The customer's page of the credit note.
    pub public_url: String,
    pub created_at: DateTime<Utc>,
}

/// What a client sends to apply the customer's credit balance to an invoice:
/// `POST /api/v1/invoices/{id}/apply_credit`.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplyCreditInput {
    /// In the invoice's currency's minor units; left out: as much as is due and available.
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(minimum = 1))]
    pub amount_cents: Option<i64>,
}

impl ApplyCreditInput {
    pub fn check(&self) -> Result<(), FieldErrors> {
        if self.amount_cents.is_some_and(|a| a < 1) {
            return Err(FieldErrors::from([(
                "amount_cents".to_owned(),
                "Enter an amount above zero.".to_owned(),
            )]));
        }
        Ok(())
    }
}

//! Credit notes: what a client sends to issue one, and what it is.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::FieldErrors;

/// What happens to money already paid beyond what the invoice asks for once credited.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreditRefund {
    /// Kept: the customer's credit (shown as paid beyond what is due).
    #[default]
    None,
    /// Paid back outside the app (recorded as a refund).
    Manual,
    /// Paid back through Stripe.
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
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreditNoteInput {
    /// In the invoice's currency's minor units, at most what is left to credit; left out: all of
    /// it.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(minimum = 1))]
    pub amount_cents: Option<i64>,
    /// Why (printed on the credit note), 1 to 500 characters.
    #[cfg_attr(feature = "ssr", schema(min_length = 1, max_length = 500))]
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
        let reason = self.reason.trim();
        if reason.is_empty() || reason.chars().count() > 500 || reason.contains('\0') {
            out.insert("reason".into(), "Say why in 1 to 500 characters.".into());
        }
        if self.refund == CreditRefund::Stripe {
            out.insert(
                "refund".into(),
                "Refunds through Stripe from a credit note are not available yet: use \"manual\" \
                 (paid back outside the app) or \"none\" (kept as the customer's credit)."
                    .into(),
            );
        }
        if out.is_empty() {
            Ok(())
        } else {
            Err(out)
        }
    }
}

/// A credit note as the API and the pages show it.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
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
    /// `none` while nothing was paid back, `refunded` once it was (`refund: manual`: recorded when
    /// the credit note was issued).
    pub refund_state: String,
    /// What the credit note paid back of money already paid (at most its total).
    pub refunded_cents: i64,
    /// The customer's page of the credit note.
    pub public_url: String,
    pub created_at: DateTime<Utc>,
}

//! Payments as the owner and the API see them, and a payment recorded by hand: money that did not
//! come through Stripe (a bank transfer, cash, a cheque, a card taken elsewhere).

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use validator::Validate;

use super::text::no_control_chars;
use super::PaymentStatus;
use crate::error::FieldErrors;

/// The largest payment recorded by hand, in minor units (ten billion in a two-decimal currency).
pub const MAX_PAYMENT_CENTS: i64 = 1_000_000_000_000;

/// How money recorded by hand arrived.
#[cfg_attr(feature = "server", derive(sqlx::Type, utoipa::ToSchema))]
#[cfg_attr(
    feature = "server",
    sqlx(type_name = "text", rename_all = "snake_case")
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaymentMethod {
    BankTransfer,
    Cash,
    Cheque,
    /// A card taken outside Stripe (a terminal, another processor).
    Card,
    Other,
}

impl PaymentMethod {
    pub const ALL: [PaymentMethod; 5] = [
        PaymentMethod::BankTransfer,
        PaymentMethod::Cash,
        PaymentMethod::Cheque,
        PaymentMethod::Card,
        PaymentMethod::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PaymentMethod::BankTransfer => "bank_transfer",
            PaymentMethod::Cash => "cash",
            PaymentMethod::Cheque => "cheque",
            PaymentMethod::Card => "card",
            PaymentMethod::Other => "other",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            PaymentMethod::BankTransfer => "Bank transfer",
            PaymentMethod::Cash => "Cash",
            PaymentMethod::Cheque => "Cheque",
            PaymentMethod::Card => "Card (outside Stripe)",
            PaymentMethod::Other => "Other",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == text)
    }
}

/// Where a payment came from.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaymentSource {
    /// A Stripe payment intent, recorded from its events.
    Stripe,
    /// Recorded by hand, on the invoice's page or through the API.
    Manual,
    /// A credit on the org's bank statement, matched to the invoice (its reference is the bank's).
    Bank,
}

/// What a client sends to record a payment: `POST /api/v1/invoices/{id}/payments`.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct PaymentInput {
    /// In the invoice's currency's minor units; more than is due is recorded and flagged as an
    /// overpayment.
    #[validate(range(
        min = 1,
        max = 1_000_000_000_000_i64,
        message = "Enter an amount above zero and at most 10,000,000,000."
    ))]
    #[cfg_attr(
        feature = "server",
        schema(minimum = 1, maximum = 1_000_000_000_000_i64)
    )]
    pub amount_cents: i64,
    pub method: PaymentMethod,
    /// The day the money arrived (2000-01-01 up to today).
    pub paid_on: NaiveDate,
    /// The bank's or the customer's reference, a cheque number, a receipt number.
    #[serde(default)]
    #[validate(
        length(max = 200, message = "Enter at most 200 characters."),
        custom(function = "no_control_chars")
    )]
    #[cfg_attr(
        feature = "server",
        schema(
            max_length = 200,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*$"
        )
    )]
    pub reference: String,
}

impl PaymentInput {
    /// The rules as `field → message`, `today` being the org's date now (a payment does not arrive
    /// in the future).
    pub fn check(&self, today: NaiveDate) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        if let Err(errors) = self.validate() {
            super::input::flatten_errors("", &errors, &mut out);
        }
        let earliest = NaiveDate::from_ymd_opt(2000, 1, 1).expect("a date");
        if self.paid_on < earliest || self.paid_on > today {
            out.insert(
                "paid_on".into(),
                format!("Enter a date from 2000-01-01 to today ({today})."),
            );
        }
        crate::error::fields_ok(out)
    }
}

/// The record-a-payment form as typed: the amount in the invoice's currency (`"12.50"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaymentForm {
    pub amount: String,
    pub method: String,
    pub paid_on: String,
    #[serde(default)]
    pub reference: String,
}

impl PaymentForm {
    /// The input it names in `currency`, or the fields' errors.
    pub fn parse(&self, currency: &str) -> Result<PaymentInput, FieldErrors> {
        let mut errors = FieldErrors::new();
        let amount = super::parse_amount(&self.amount, currency)
            .map_err(|e| errors.insert("amount_cents".into(), e))
            .ok();
        let method = PaymentMethod::parse(self.method.trim());
        if method.is_none() {
            errors.insert("method".into(), "Choose how the money arrived.".into());
        }
        let paid_on = NaiveDate::parse_from_str(self.paid_on.trim(), "%Y-%m-%d").ok();
        if paid_on.is_none() {
            errors.insert("paid_on".into(), "Enter a date such as 2026-12-31.".into());
        }
        match (amount, method, paid_on) {
            (Some(amount_cents), Some(method), Some(paid_on)) if errors.is_empty() => {
                Ok(PaymentInput {
                    amount_cents,
                    method,
                    paid_on,
                    reference: self.reference.trim().to_owned(),
                })
            }
            _ => Err(errors),
        }
    }
}

/// One payment of an invoice, Stripe's and those recorded by hand alike.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Payment {
    pub id: Uuid,
    pub invoice_id: Uuid,
    pub source: PaymentSource,
    pub amount_cents: i64,
    pub currency: String,
    /// How it arrived (recorded by hand); null for Stripe's.
    pub method: Option<PaymentMethod>,
    /// The day the money arrived (for Stripe's, the day it was recorded, UTC).
    pub paid_on: NaiveDate,
    /// The reference recorded with it; Stripe's payment intent id for Stripe's.
    pub reference: String,
    #[cfg_attr(feature = "server", schema(value_type = String))]
    pub status: PaymentStatus,
    /// What went back to the customer (refunds) or was lost to a dispute.
    pub refunded_cents: i64,
    pub created_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 12, 5).unwrap()
    }

    fn form(amount: &str, method: &str, paid_on: &str) -> PaymentForm {
        PaymentForm {
            amount: amount.into(),
            method: method.into(),
            paid_on: paid_on.into(),
            reference: " SEPA 42 ".into(),
        }
    }

    #[test]
    fn a_good_form_is_an_input_in_minor_units() {
        let input = form("120.50", "bank_transfer", "2026-12-01")
            .parse("eur")
            .unwrap();
        assert_eq!(input.amount_cents, 12050);
        assert_eq!(input.method, PaymentMethod::BankTransfer);
        assert_eq!(input.reference, "SEPA 42");
        assert_eq!(input.check(today()), Ok(()));
        let yen = form("1200", "cash", "2026-12-01").parse("jpy").unwrap();
        assert_eq!(yen.amount_cents, 1200);
    }

    #[test]
    fn each_bad_field_says_why() {
        let errors = form("-3", "gold", "yesterday").parse("eur").unwrap_err();
        assert_eq!(
            errors.keys().collect::<Vec<_>>(),
            ["amount_cents", "method", "paid_on"]
        );
        let zero = form("0", "cash", "2026-12-01").parse("eur").unwrap();
        assert!(zero
            .check(today())
            .unwrap_err()
            .contains_key("amount_cents"));
        let future = form("1", "cash", "2026-12-06").parse("eur").unwrap();
        assert!(future.check(today()).unwrap_err().contains_key("paid_on"));
        let ancient = form("1", "cash", "1999-12-31").parse("eur").unwrap();
        assert!(ancient.check(today()).unwrap_err().contains_key("paid_on"));
        let mut long = form("1", "cash", "2026-12-01").parse("eur").unwrap();
        long.reference = "x".repeat(201);
        assert!(long.check(today()).unwrap_err().contains_key("reference"));
        long.reference = "a\0b".into();
        assert!(long.check(today()).unwrap_err().contains_key("reference"));
    }

    #[test]
    fn methods_read_back_from_their_names() {
        for m in PaymentMethod::ALL {
            assert_eq!(PaymentMethod::parse(m.as_str()), Some(m));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.as_str()));
        }
        assert_eq!(PaymentMethod::parse("card_outside_stripe"), None);
    }
}

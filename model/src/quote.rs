//! Quotes (estimates): an invoice proposed to a customer, accepted or declined on its public page,
//! becoming an invoice once when accepted.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::FieldErrors;
use crate::{Invoice, InvoiceInput, RunAction};

/// Where a quote is. `Expired` is never stored: an open quote past its `expires_on` (in the org's
/// time zone) is expired.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuoteStatus {
    Draft,
    Open,
    Accepted,
    Declined,
    Expired,
}

impl QuoteStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            QuoteStatus::Draft => "draft",
            QuoteStatus::Open => "open",
            QuoteStatus::Accepted => "accepted",
            QuoteStatus::Declined => "declined",
            QuoteStatus::Expired => "expired",
        }
    }

    /// The stored status, seen on `today` (the org's date).
    pub fn of(stored: &str, expires_on: NaiveDate, today: NaiveDate) -> QuoteStatus {
        match stored {
            "draft" => QuoteStatus::Draft,
            "accepted" => QuoteStatus::Accepted,
            "declined" => QuoteStatus::Declined,
            _ if expires_on < today => QuoteStatus::Expired,
            _ => QuoteStatus::Open,
        }
    }
}

/// The quote fields beside the invoice input.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuoteFields {
    /// The last day it can be accepted (in the org's time zone).
    pub expires_on: NaiveDate,
    /// What accepting does with the invoice: `draft`, `finalize` (default) or `send`.
    #[serde(default)]
    pub on_accept: RunAction,
}

/// The quote fields' names (a quote's body is strict: any other name is an error).
pub const QUOTE_FIELDS: [&str; 2] = ["expires_on", "on_accept"];

/// A quote's body: the invoice it proposes (`draft: true` keeps the quote a draft; without it the
/// quote is open at once, numbered, with its customer page) and when it expires.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuoteInput {
    #[serde(flatten)]
    pub invoice: InvoiceInput,
    #[serde(flatten)]
    pub quote: QuoteFields,
}

impl QuoteInput {
    /// Splits a JSON body into the invoice input and the quote fields, each read strictly.
    pub fn from_json(value: &serde_json::Value) -> Result<QuoteInput, super::Unreadable> {
        let (invoice, quote) = super::recurring::split_body(value, &QUOTE_FIELDS)?;
        Ok(QuoteInput { invoice, quote })
    }

    /// The rules beside [`InvoiceInput::check`] that need only the org's `today`.
    pub fn check(&self, today: NaiveDate) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        if self.quote.expires_on < today {
            out.insert(
                "expires_on".into(),
                "A quote expires today or later.".into(),
            );
        } else if self.quote.expires_on > today + chrono::Days::new(366) {
            out.insert("expires_on".into(), "A quote expires within a year.".into());
        }
        if self.invoice.save_customer {
            out.insert(
                "save_customer".into(),
                "Save the customer first and name it with customer_id.".into(),
            );
        }
        crate::error::fields_ok(out)
    }
}

/// A quote as the API and the pages show it.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quote {
    pub id: Uuid,
    /// Assigned when it opens; a draft has none.
    pub number: Option<String>,
    pub status: QuoteStatus,
    /// The customer's page, with Accept and Decline (none for a draft).
    pub public_url: Option<String>,
    /// The invoice accepting it made (none before, or once that invoice was deleted).
    pub invoice_id: Option<Uuid>,
    pub customer_name: String,
    pub customer_email: String,
    pub currency: String,
    pub total_cents: i64,
    pub expires_on: NaiveDate,
    pub on_accept: RunAction,
    /// The invoice it proposes.
    #[cfg_attr(feature = "server", schema(value_type = Object))]
    pub template: InvoiceInput,
    pub decided_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// The quote fields as the HTML form posts them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QuoteForm {
    #[serde(default)]
    pub expires_on: String,
    #[serde(default)]
    pub on_accept: String,
}

impl QuoteForm {
    pub fn parse(&self) -> Result<QuoteFields, FieldErrors> {
        let expires_on =
            NaiveDate::parse_from_str(self.expires_on.trim(), "%Y-%m-%d").map_err(|_| {
                FieldErrors::from([("expires_on".to_owned(), "Pick a date.".to_owned())])
            })?;
        let on_accept = match self.on_accept.trim() {
            "" => RunAction::Finalize,
            text => RunAction::parse(text).ok_or_else(|| {
                FieldErrors::from([(
                    "on_accept".to_owned(),
                    "Pick what accepting does.".to_owned(),
                )])
            })?,
        };
        Ok(QuoteFields {
            expires_on,
            on_accept,
        })
    }
}

/// The new-quote form's rendering: its key and the org's today (the expiry's default is 30 days on).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewQuotePage {
    pub key: Uuid,
    pub today: NaiveDate,
}

/// A quote's page for its owner: the quote, the invoice it proposes as it would be issued, and the
/// key of its Send button.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotePage {
    pub quote: Quote,
    pub preview: Invoice,
    pub send_key: Uuid,
    pub invoice_number: Option<String>,
    pub can_edit: bool,
}

/// A draft quote's edit form: the quote, the form's key, its values as the form shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuoteEdit {
    pub id: Uuid,
    pub key: Uuid,
    pub form: crate::InvoiceForm,
    pub quote: QuoteForm,
    pub today: NaiveDate,
}

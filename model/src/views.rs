//! What pages and the API show: invoices, their emails and history, activity, keys, the viewer.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// An invoice's status; stored as text (the column's check lists the same words).
#[cfg_attr(feature = "server", derive(utoipa::ToSchema, sqlx::Type))]
#[cfg_attr(feature = "server", sqlx(type_name = "text", rename_all = "lowercase"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InvoiceStatus {
    Draft,
    Open,
    Paid,
    Void,
    Uncollectible,
    Refunded,
}

impl InvoiceStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            InvoiceStatus::Draft => "draft",
            InvoiceStatus::Open => "open",
            InvoiceStatus::Paid => "paid",
            InvoiceStatus::Void => "void",
            InvoiceStatus::Uncollectible => "uncollectible",
            InvoiceStatus::Refunded => "refunded",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "draft" => Some(InvoiceStatus::Draft),
            "open" => Some(InvoiceStatus::Open),
            "paid" => Some(InvoiceStatus::Paid),
            "void" => Some(InvoiceStatus::Void),
            "uncollectible" => Some(InvoiceStatus::Uncollectible),
            "refunded" => Some(InvoiceStatus::Refunded),
            _ => None,
        }
    }
}

/// Where an invoice's money stands, derived from its payments, refunds and disputes.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema, sqlx::Type))]
#[cfg_attr(
    feature = "server",
    sqlx(type_name = "text", rename_all = "snake_case")
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaymentState {
    Unpaid,
    Processing,
    PartiallyPaid,
    Paid,
    PartiallyRefunded,
    Refunded,
    Disputed,
}

impl PaymentState {
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentState::Unpaid => "unpaid",
            PaymentState::Processing => "processing",
            PaymentState::PartiallyPaid => "partially_paid",
            PaymentState::Paid => "paid",
            PaymentState::PartiallyRefunded => "partially_refunded",
            PaymentState::Refunded => "refunded",
            PaymentState::Disputed => "disputed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "unpaid" => PaymentState::Unpaid,
            "processing" => PaymentState::Processing,
            "partially_paid" => PaymentState::PartiallyPaid,
            "paid" => PaymentState::Paid,
            "partially_refunded" => PaymentState::PartiallyRefunded,
            "refunded" => PaymentState::Refunded,
            "disputed" => PaymentState::Disputed,
            _ => return None,
        })
    }

    /// What the pages say.
    pub fn label(self) -> &'static str {
        match self {
            PaymentState::Unpaid => "unpaid",
            PaymentState::Processing => "payment processing",
            PaymentState::PartiallyPaid => "partially paid",
            PaymentState::Paid => "paid",
            PaymentState::PartiallyRefunded => "partially refunded",
            PaymentState::Refunded => "refunded",
            PaymentState::Disputed => "disputed",
        }
    }
}

/// Where one payment stands, as its provider reports it.
#[cfg_attr(feature = "server", derive(sqlx::Type))]
#[cfg_attr(feature = "server", sqlx(type_name = "text", rename_all = "lowercase"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PaymentStatus {
    /// A delayed method (a debit) is under way: no money yet.
    Pending,
    Failed,
    Succeeded,
}

impl PaymentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentStatus::Pending => "pending",
            PaymentStatus::Succeeded => "succeeded",
            PaymentStatus::Failed => "failed",
        }
    }
}

/// Where a dispute of a payment stands: open < won < lost (a closed dispute outranks an open one).
#[cfg_attr(feature = "server", derive(sqlx::Type))]
#[cfg_attr(feature = "server", sqlx(type_name = "text", rename_all = "lowercase"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DisputeStatus {
    Open,
    Won,
    Lost,
}

impl DisputeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DisputeStatus::Open => "open",
            DisputeStatus::Won => "won",
            DisputeStatus::Lost => "lost",
        }
    }
}

/// The stored word, as `{}` prints it (messages and logs).
macro_rules! shown_as_stored {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
shown_as_stored!(
    InvoiceStatus,
    PaymentState,
    PaymentStatus,
    DisputeStatus,
    EmailStatus
);

/// One payment of an invoice, as its owner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaymentRow {
    pub id: Uuid,
    /// Stripe's, recorded by hand, or a credit on the org's bank statement.
    pub source: super::PaymentSource,
    /// How a payment recorded by hand arrived; None for Stripe's.
    pub manual: Option<ManualDetail>,
    /// Stripe's payment intent, or the attempt that recorded it by hand.
    pub payment_intent: String,
    pub amount_cents: i64,
    pub status: PaymentStatus,
    pub failure: Option<String>,
    pub refunded_cents: i64,
    /// The state of its latest dispute.
    pub dispute: Option<DisputeStatus>,
}

/// What was recorded with a payment taken by hand, or read from the bank's statement (the booking
/// date and the bank's reference).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManualDetail {
    pub method: super::PaymentMethod,
    pub paid_on: NaiveDate,
    pub reference: String,
}

/// The invoice as CONTRACT.md shows it.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invoice {
    pub id: Uuid,
    /// Assigned at finalization; a draft has none.
    pub number: Option<String>,
    pub status: InvoiceStatus,
    /// Drafts: what `If-Match` names when editing (also the `ETag`). Bumped by every edit.
    pub version: i32,
    pub customer_id: Option<Uuid>,
    pub customer_name: String,
    pub customer_email: String,
    /// The customer's billing address and tax id, copied from the customer at finalization.
    pub customer_address: String,
    pub customer_tax_id: Option<String>,
    pub currency: String,
    /// For a draft with payment terms: the due date if it were finalized today.
    pub due_date: NaiveDate,
    /// Net N: due N days after issue; null when a date was given.
    pub payment_terms_days: Option<u16>,
    pub lines: Vec<InvoiceLine>,
    /// The lines' amounts before discount and tax.
    pub subtotal_cents: i64,
    /// As sent: `{"percent": 10}` or `{"amount_cents": 500}`.
    pub discount: Option<super::Discount>,
    /// The discount in minor units.
    pub discount_cents: i64,
    /// Tax per rate, each the sum of its lines' taxes (rounded per line).
    pub taxes: Vec<super::TaxTotal>,
    pub tax_cents: i64,
    /// subtotal − discount + tax.
    pub total_cents: i64,
    pub notes: String,
    /// What its payments brought in and was kept (refunds and lost disputes taken off).
    pub amount_paid_cents: i64,
    /// What its credit notes took off the total.
    pub amount_credited_cents: i64,
    /// What is still asked for: total − credited − paid, at least 0.
    pub amount_due_cents: i64,
    /// Its credit notes, oldest first.
    pub credit_notes: Vec<Uuid>,
    pub payment_state: PaymentState,
    /// Open or uncollectible, not fully paid, and past its due date in the org's time zone.
    pub overdue: bool,
    /// The customer's page (no login), once finalized; gone when voided.
    pub public_url: Option<String>,
    pub finalized_at: Option<DateTime<Utc>>,
    /// When the customer first opened the public page.
    pub viewed_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub collection_method: crate::collection::CollectionMethod,
    /// Each try to charge it automatically, first first.
    #[serde(default)]
    pub charge_attempts: Vec<crate::collection::ChargeAttempt>,
    /// Each transmission of it (and of its credit notes) over Peppol, oldest first.
    #[serde(default)]
    pub transmissions: Vec<crate::peppol::Transmission>,
    /// `standard`, or `late_fee` for a fee charged on an overdue invoice (`fee_for`).
    #[serde(default = "standard_kind")]
    pub kind: String,
    /// The overdue invoice a late fee is charged on.
    #[serde(default)]
    pub fee_for: Option<Uuid>,
    /// Its ISO 11649 creditor reference (`RF` + check digits + the number's letters and digits),
    /// once finalized: what a transfer quotes, and what a bank statement's entries are matched by.
    #[serde(default)]
    pub payment_reference: Option<String>,
}

fn standard_kind() -> String {
    "standard".to_owned()
}
impl Invoice {
    /// What the invoice must say for its lines' VAT categories (reverse charge, exemption, ...),
    /// each once, in the order the lines first name them.
    pub fn tax_mentions(&self, w: &dyn super::Words) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for line in &self.lines {
            let Some(category) = line.tax_category else {
                continue;
            };
            let Some((english, _)) = category.mention() else {
                continue;
            };
            let text = w.label(category.mention_id(), english);
            let said = if category == super::TaxCategory::E && !line.exemption_reason.is_empty() {
                format!("{text}: {}", line.exemption_reason)
            } else {
                text
            };
            if !out.contains(&said) {
                out.push(said);
            }
        }
        out
    }
}

#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvoiceLine {
    /// The line's place on the invoice (1, 2, ...): what a credit note names to credit the line.
    pub line_id: i16,
    pub description: String,
    #[cfg_attr(feature = "server", schema(value_type = f64))]
    pub quantity: super::Thousandths,
    pub unit_amount_cents: i64,
    /// quantity × unit price, rounded half up to the currency's chargeable unit.
    pub amount_cents: i64,
    pub tax_rate_id: Option<Uuid>,
    /// The rate's name and percent when the line was saved.
    pub tax_name: Option<String>,
    #[cfg_attr(feature = "server", schema(value_type = Option<f64>))]
    pub tax_percent: Option<super::Thousandths>,
    /// The rate's VAT category (EN 16931), and why an exempt rate is exempt.
    pub tax_category: Option<super::TaxCategory>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub exemption_reason: String,
    /// This line's share of the invoice's discount.
    pub discount_cents: i64,
    pub tax_cents: i64,
}

/// One of an org's tax rates. Its percent never changes (as at Stripe): archive it and add another.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaxRate {
    pub id: Uuid,
    pub name: String,
    #[cfg_attr(feature = "server", schema(value_type = f64))]
    pub percent: super::Thousandths,
    pub category: super::TaxCategory,
    pub exemption_reason: String,
    pub archived: bool,
    pub created_at: DateTime<Utc>,
}

/// What the invoice page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvoicePage {
    pub invoice: Invoice,
    /// Development mode: offer "Simulate payment".
    pub simulate_payments: bool,
    /// Names the "Send invoice" attempt of this rendering of the page.
    pub send_key: Uuid,
    /// Names the lifecycle buttons' attempts of this rendering (each button claims it in its own
    /// namespace: finalize, void, ...).
    pub action_key: Uuid,
    pub emails: Vec<EmailRow>,
    pub payments: Vec<PaymentRow>,
    /// Stripe events about this invoice that need the owner's eye (money for a void invoice, an
    /// overpayment, a wrong currency or mode).
    pub anomalies: Vec<String>,
    /// The attempts that concerned this invoice: its creation, replays, payments, refunds.
    pub history: Vec<ActivityRow>,
    /// The session's role may change it (its buttons are shown).
    pub can_edit: bool,
    /// The org may take card payments (an org that signed itself up waits for the operator).
    /// The org issues e-invoices: the page links the invoice's XML.
    pub einvoicing: bool,
    pub payments_enabled: bool,
    /// The "Record a payment" form and the payments' "Delete" buttons of this rendering.
    pub payment_forms: PaymentForms,
}

/// What the invoice page's payment forms are rendered with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaymentForms {
    /// Names this rendering's "Record a payment" attempt.
    pub key: Uuid,
    /// The org's date today: the form's default, and the latest date it takes.
    pub today: NaiveDate,
    /// One key per payment (same order as `payments`) for its "Delete" button.
    pub delete_keys: Vec<Uuid>,
    /// The session's role may delete payments recorded by hand.
    pub can_delete: bool,
    /// Names this rendering's "Credit" attempt.
    pub credit_key: Uuid,
    /// The invoice's credit notes, oldest first.
    pub credit_notes: Vec<super::CreditNote>,
    /// Names this rendering's "Apply credit" attempt.
    pub apply_key: Uuid,
    /// What the customer's credit balance could pay of this invoice now (0: no form).
    pub credit_available: i64,
    /// Payment reminders are off for this invoice, and the key of its toggle.
    pub reminders_off: bool,
    pub reminders_key: Uuid,
}

/// A customer's page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomerPage {
    pub customer: super::Customer,
    /// Names this rendering's save.
    pub key: Uuid,
    /// The credit notes of the customer's invoices, oldest first.
    pub credit_notes: Vec<super::CreditNote>,
    /// What the customer's invoices kept beyond what they ask for, per currency: (currency,
    /// amount), applied to their next invoice from its page.
    pub credit_balance: Vec<(String, i64)>,
    /// Payment reminders are off for the customer's invoices, and the key of its toggle.
    pub reminders_off: bool,
    pub reminders_key: Uuid,
    /// The customer's page of their statement (`/s/{token}`); none while archived, or after
    /// unarchiving until a new link is made.
    pub statement_url: Option<String>,
    /// When the customer was archived.
    pub archived_at: Option<DateTime<Utc>>,
    /// Names this rendering's buttons (new statement link, archive, unarchive).
    pub action_key: Uuid,
    /// The session's role may press them.
    pub can_edit: bool,
    /// The payment methods the customer saved, and the key of the button that emails them a link
    /// to save one.
    #[serde(default)]
    pub payment_methods: Vec<crate::collection::SavedMethod>,
    #[serde(default)]
    pub link_key: Uuid,
}

/// One page of the invoice list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvoiceListPage {
    pub rows: Vec<InvoiceSummary>,
    /// Where the next (older) page starts, when there is one.
    pub next_cursor: Option<String>,
}

/// A draft's edit page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DraftEdit {
    pub id: Uuid,
    /// The version this rendering edits; a save from an older one is refused.
    pub version: i32,
    /// Names this rendering's save (a double click saves once).
    pub key: Uuid,
    pub form: super::InvoiceForm,
}

/// Where an outbox email stands (derived from its row: sent, dead, attempted or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmailStatus {
    Queued,
    /// Taken by a worker, no attempt failed yet (the first attempt is under way).
    Sending,
    /// An attempt failed; another comes after its backoff.
    Retrying,
    Sent,
    Dead,
}

impl EmailStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            EmailStatus::Queued => "queued",
            EmailStatus::Sending => "sending",
            EmailStatus::Retrying => "retrying",
            EmailStatus::Sent => "sent",
            EmailStatus::Dead => "dead",
        }
    }
}

/// One outbox email of an invoice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmailRow {
    pub id: Uuid,
    pub kind: String,
    pub status: EmailStatus,
    pub attempts: i32,
    pub last_error: Option<String>,
}

/// One row of the invoice list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvoiceSummary {
    pub id: Uuid,
    pub number: Option<String>,
    pub status: InvoiceStatus,
    pub customer_name: String,
    pub currency: String,
    pub due_date: NaiveDate,
    pub total_cents: i64,
    pub amount_paid_cents: i64,
    pub payment_state: PaymentState,
    pub overdue: bool,
    pub created_at: DateTime<Utc>,
}

/// One attempt on the activity page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivityRow {
    pub created_at: DateTime<Utc>,
    /// form | webhook | api
    pub surface: String,
    /// The form UUID, Stripe event id or Idempotency-Key.
    pub key: String,
    /// won | replay | in_flight | mismatch | rejected | failed
    pub outcome: String,
    pub invoice_id: Option<Uuid>,
    pub invoice_number: Option<String>,
    pub duration_ms: f64,
    pub request_id: Option<String>,
    /// The stored webhook payload or API response.
    pub detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivityCount {
    pub surface: String,
    pub outcome: String,
    pub count: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivityPage {
    pub rows: Vec<ActivityRow>,
    /// The last 24 hours, by surface and outcome.
    pub counts: Vec<ActivityCount>,
    /// Where the next (older) page starts, when there is one.
    pub next_cursor: Option<String>,
}

/// An API key as the settings page lists it (never the key itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKeySummary {
    pub id: Uuid,
    pub name: String,
    pub prefix: String,
    pub role: crate::Role,
    pub created_by: Option<Uuid>,
    pub creator_email: Option<String>,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// The API keys page: the org's keys and the key of its rendered creation form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKeysView {
    pub keys: Vec<ApiKeySummary>,
    pub form_key: Uuid,
}

/// What a creation form gets back: the key itself only from the submit that made it; a repeat of
/// that submit names the same key without it (it is stored hashed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatedApiKey {
    pub id: Uuid,
    pub prefix: String,
    pub plaintext: Option<String>,
}

/// Who is logged in, as pages see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Viewer {
    pub email: String,
    pub org_name: String,
    pub role: crate::Role,
    pub verified: bool,
}

//! Types both sides compile: what a user types, what the server checks, what pages show.

pub mod collection;
pub mod error;

mod bank;
mod credit_note;
mod customer;
pub mod dashboard;
mod decimal;
pub mod epc_qr;
mod form;
mod form_key;
mod ids;
pub mod imports;
mod input;
mod locale;
mod money;
mod org;
mod party;
mod payment;
pub mod payment_reference;
pub mod peppol;
mod quote;
mod recurring;
pub mod reports;
mod roles;
pub mod schedule;
pub mod statement;
mod tax_rate;
mod team;
mod text;
pub mod totals;
mod views;
pub mod webhooks;

pub use bank::{
    check_bank_accounts, BankDetails, BankEntry, BankImportSummary, BankPage, BankSuggestion,
    UnmatchedEntry,
};
pub use credit_note::{
    ApplyCreditInput, CreditLineForm, CreditLineInput, CreditNote, CreditNoteInput, CreditNoteLine,
    CreditRefund,
};
pub use customer::{Customer, CustomerInput};
pub use decimal::Thousandths;
pub use form::{CurrencyDefaults, InvoiceForm, InvoiceFormOptions, LineForm, PAYMENT_TERMS};
pub use form_key::{form_key, form_key_fits};
pub use ids::{CustomerId, InvoiceId, OrgId};
pub use input::{InvoiceInput, LineInput, MAX_LINES, QUANTITY_RANGE};
pub use locale::{fill, English, Locale, Words};
pub use money::{
    country_currency, currency, currency_exponent, format_money, parse_amount, plain_amount,
    Currency, COMMON_CURRENCIES, CURRENCIES,
};
pub use org::{
    Branding, BrandingForm, Logo, OrgDetails, OrgSettings, OrgSettingsPage,
    DEFAULT_CREDIT_NOTE_FORMAT,
};
pub use party::{check_vat_id, is_country, normalize_vat_id, Address};
pub use payment::{
    Payment, PaymentForm, PaymentInput, PaymentMethod, PaymentSource, MAX_PAYMENT_CENTS,
};
pub use quote::{
    NewQuotePage, Quote, QuoteEdit, QuoteFields, QuoteForm, QuoteInput, QuotePage, QuoteStatus,
    QUOTE_FIELDS,
};
pub use recurring::{
    check_reminder_steps, ReminderStep, ReminderStepForm, Unreadable, INVOICE_FIELDS,
};
pub use recurring::{
    DayField, LastDay, Missed, NewSchedulePage, RunAction, Schedule, ScheduleEdit, ScheduleFields,
    ScheduleForm, ScheduleInput, SchedulePage, ScheduleRun,
};
pub use roles::{Action, Role};
pub use statement::{describe, Statement, StatementEntry, StatementSection};
pub use tax_rate::{TaxCategory, TaxRateInput};
pub use team::{
    AccountView, AuditEntry, InvitationState, InvitationSummary, InvitationView, Member,
    MembersPage, OrgChoice, OwnApiKey, SessionSummary,
};
pub use text::{has_control_char, no_control_chars, refuse_control_chars, CONTROL_CHARACTER};
pub use totals::{
    compute as compute_totals, line_amount, AppliedTax, Discount, LineAmounts, TaxTotal, Totals,
};
pub use views::*;

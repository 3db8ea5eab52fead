//! What is rendered for a customer: e-invoices (EN 16931, CII and UBL), the org's branding and the
//! customer's language.

pub mod branding;
pub mod einvoice;
pub mod i18n;

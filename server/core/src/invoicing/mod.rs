//! Invoicing: invoices (their writes, reads and lifecycle), quotes, credit notes, tax rates, the
//! customer's page of an invoice and the tokens in customers' links.

pub mod credit_notes;
pub mod error;
pub mod input;
pub mod invoices;
pub mod lifecycle;
pub mod link_token;
pub mod public;
pub mod quotes;
pub mod tax_rates;

//! Types both sides compile: what a user types, what the server checks, what pages show.

mod customer;
mod form;
mod input;
mod money;
mod views;

pub use customer::{Customer, CustomerInput};
pub use form::{InvoiceForm, LineForm};
pub use input::{InvoiceInput, LineInput, MAX_LINES};
pub use money::{
    currency, currency_exponent, format_money, parse_amount, Currency, COMMON_CURRENCIES,
    CURRENCIES,
};
pub use views::*;

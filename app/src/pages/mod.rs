pub mod activity;
pub mod auth;
pub mod customers;
pub mod invoices;
pub mod layout;
pub mod settings;
pub mod team;

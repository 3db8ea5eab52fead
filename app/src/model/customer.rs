//! A customer of an org, as the API and the pages take and show it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use validator::Validate;

use super::input::{no_nul, not_blank};

use crate::error::FieldErrors;

/// What a client sends to create a customer.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
pub struct CustomerInput {
    #[validate(
        length(min = 1, max = 200, message = "Enter 1 to 200 characters."),
        custom(function = "not_blank")
    )]
    #[cfg_attr(
        feature = "ssr",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
        )
    )]
    pub name: String,
    #[validate(
        length(max = 254, message = "Enter at most 254 characters."),
        email(message = "Enter a valid email address.")
    )]
    #[cfg_attr(feature = "ssr", schema(format = Email, max_length = 254))]
    pub email: String,
    #[serde(default)]
    #[validate(
        length(max = 1000, message = "Enter at most 1000 characters."),
        custom(function = "no_nul")
    )]
    #[cfg_attr(feature = "ssr", schema(max_length = 1000, pattern = r"^[^\u0000]*$"))]
    pub billing_address: String,
    #[serde(default)]
    #[validate(
        length(max = 50, message = "Enter at most 50 characters."),
        custom(function = "no_nul")
    )]
    #[cfg_attr(feature = "ssr", schema(max_length = 50, pattern = r"^[^\u0000]*$"))]
    pub tax_id: Option<String>,
    #[serde(default)]
    #[validate(
        length(max = 2000, message = "Enter at most 2000 characters."),
        custom(function = "no_nul")
    )]
    #[cfg_attr(feature = "ssr", schema(max_length = 2000, pattern = r"^[^\u0000]*$"))]
    pub notes: String,
}

/// A customer as stored.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Customer {
    pub id: Uuid,
    pub name: String,
    pub email: String,
    pub billing_address: String,
    pub tax_id: Option<String>,
    pub notes: String,
    pub created_at: DateTime<Utc>,
}

impl CustomerInput {
    /// The validator rules as `field → message`.
    pub fn check(&self) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        if let Err(errors) = self.validate() {
            super::input::flatten_errors("", &errors, &mut out);
        }
        if out.is_empty() {
            Ok(())
        } else {
            Err(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ada() -> CustomerInput {
        CustomerInput {
            name: "Ada Lovelace".into(),
            email: "ada@example.com".into(),
            billing_address: "12 Analytical Row, London".into(),
            tax_id: Some("GB123".into()),
            notes: String::new(),
        }
    }

    #[test]
    fn customers_are_checked() {
        ada().check().unwrap();
        let mut bad = ada();
        bad.name = "  ".into();
        bad.email = "nope".into();
        bad.tax_id = Some("x".repeat(51));
        bad.notes = "a\0b".into();
        let errors = bad.check().unwrap_err();
        for field in ["name", "email", "tax_id", "notes"] {
            assert!(errors.contains_key(field), "{field}: {errors:?}");
        }
    }
}

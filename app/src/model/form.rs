//! What the HTML form posts: everything as typed, parsed into an `InvoiceInput` or field errors.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use validator::Validate;

use super::input::{flatten_errors, InvoiceInput, LineInput};
use super::money::parse_amount;
use crate::error::FieldErrors;

/// What the HTML form posts: everything as typed, so a bad number becomes a message next to its
/// field instead of a failure to read the request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InvoiceForm {
    #[serde(default)]
    pub customer_name: String,
    #[serde(default)]
    pub customer_email: String,
    #[serde(default)]
    pub currency: String,
    #[serde(default)]
    pub due_date: String,
    #[serde(default)]
    pub lines: Vec<LineForm>,
    /// Set by the "Save draft" button (its name and value travel with the submit).
    #[serde(default)]
    pub draft: Option<String>,
    /// One of the org's customers, picked from the list (empty: none).
    #[serde(default)]
    pub customer_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LineForm {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub quantity: String,
    /// In major units as a person writes it: `12.50`.
    #[serde(default)]
    pub unit_amount: String,
}

impl LineForm {
    fn is_blank(&self) -> bool {
        self.description.trim().is_empty()
            && self.quantity.trim().is_empty()
            && self.unit_amount.trim().is_empty()
    }
}

impl InvoiceForm {
    /// The form filled with an invoice's content, as its edit page shows it.
    pub fn from_invoice(invoice: &super::Invoice) -> InvoiceForm {
        InvoiceForm {
            customer_name: invoice.customer_name.clone(),
            customer_email: invoice.customer_email.clone(),
            currency: invoice.currency.clone(),
            due_date: invoice.due_date.to_string(),
            lines: invoice
                .lines
                .iter()
                .map(|l| LineForm {
                    description: l.description.clone(),
                    quantity: l.quantity.to_string(),
                    unit_amount: super::money::plain_amount(l.unit_amount_cents, &invoice.currency),
                })
                .collect(),
            draft: None,
            customer_id: invoice.customer_id.map(|id| id.to_string()),
        }
    }

    /// Parses and validates. Wholly empty line rows are ignored (the form always offers spare rows).
    /// Errors name the same paths the form's inputs use, e.g. `lines[1].unit_amount_cents`.
    pub fn parse(&self) -> Result<InvoiceInput, FieldErrors> {
        let mut errors = FieldErrors::new();
        let currency = self.currency.trim().to_ascii_lowercase();
        let due_date = match NaiveDate::parse_from_str(self.due_date.trim(), "%Y-%m-%d") {
            Ok(date) => Some(date),
            Err(_) => {
                errors.insert("due_date".into(), "Enter a date as YYYY-MM-DD.".into());
                None
            }
        };
        // Errors carry the row's position in the form (blank rows included), so they land next to
        // the right inputs.
        let mut lines = Vec::with_capacity(self.lines.len());
        for (index, row) in self.lines.iter().enumerate().filter(|(_, l)| !l.is_blank()) {
            let quantity = match row.quantity.trim().replace(',', "").parse::<i64>() {
                Ok(q) => q,
                Err(_) => {
                    errors.insert(
                        format!("lines[{index}].quantity"),
                        "Enter a whole number from 1 to 1,000,000.".into(),
                    );
                    1
                }
            };
            let unit_amount_cents = match parse_amount(&row.unit_amount, &currency) {
                Ok(cents) => cents,
                Err(message) => {
                    errors.insert(format!("lines[{index}].unit_amount_cents"), message);
                    0
                }
            };
            let line = LineInput {
                description: row.description.trim().to_owned(),
                quantity,
                unit_amount_cents,
            };
            if let Err(line_errors) = line.validate() {
                flatten_errors(&format!("lines[{index}]"), &line_errors, &mut errors);
            }
            lines.push(line);
        }
        let customer_id = match self.customer_id.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) => match uuid::Uuid::try_parse(text) {
                Ok(id) => Some(id),
                Err(_) => {
                    errors.insert("customer_id".into(), "Choose one of your customers.".into());
                    None
                }
            },
        };
        let input = InvoiceInput {
            customer_name: self.customer_name.trim().to_owned(),
            customer_email: self.customer_email.trim().to_owned(),
            currency,
            due_date: due_date.unwrap_or_default(),
            lines,
            draft: self.draft.as_deref().is_some_and(|d| d == "true"),
            customer_id,
        };
        if let Err(more) = input.check() {
            // Line errors were reported above, by form row.
            for (field, message) in more.into_iter().filter(|(f, _)| !f.starts_with("lines[")) {
                errors.entry(field).or_insert(message);
            }
        }
        if errors.is_empty() {
            Ok(input)
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A valid form, for tests to spoil.
    pub(in crate::model) fn form() -> InvoiceForm {
        InvoiceForm {
            customer_name: "Ada".into(),
            customer_email: "ada@example.com".into(),
            currency: "usd".into(),
            due_date: "2027-01-31".into(),
            lines: vec![LineForm {
                description: "Consulting".into(),
                quantity: "3".into(),
                unit_amount: "12.50".into(),
            }],
            draft: None,
            customer_id: None,
        }
    }

    #[test]
    fn a_good_form_parses_to_cents() {
        let input = form().parse().unwrap();
        assert_eq!(input.lines[0].unit_amount_cents, 1250);
        assert_eq!(input.total_cents(), 3750);
    }

    #[test]
    fn bad_fields_are_named() {
        let mut f = form();
        f.customer_name = "   ".into();
        f.customer_email = "nope".into();
        f.currency = "xyz".into();
        f.due_date = "31/01/2027".into();
        f.lines[0].quantity = "0".into();
        f.lines[0].unit_amount = "-1".into();
        let errors = f.parse().unwrap_err();
        let keys: Vec<&str> = errors.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "currency",
                "customer_email",
                "customer_name",
                "due_date",
                "lines[0].quantity",
                "lines[0].unit_amount_cents"
            ]
        );
        assert_eq!(
            errors["lines[0].unit_amount_cents"],
            "The amount can't be negative."
        );
    }

    #[test]
    fn line_count_is_bounded() {
        let mut f = form();
        f.lines.clear();
        assert!(f.parse().unwrap_err().contains_key("lines"));
        f.lines = vec![form().lines[0].clone(); 101];
        assert_eq!(
            f.parse().unwrap_err()["lines"],
            "An invoice has 1 to 100 lines."
        );
        f.lines.truncate(100);
        assert!(f.parse().is_ok());
    }

    #[test]
    fn oversized_text_is_refused() {
        let mut f = form();
        f.customer_name = "x".repeat(201);
        f.lines[0].description = "y".repeat(501);
        let errors = f.parse().unwrap_err();
        assert!(errors.contains_key("customer_name"));
        assert!(errors.contains_key("lines[0].description"));
        f.customer_name = "é".repeat(200); // characters, not bytes
        f.lines[0].description = "y".repeat(500);
        assert!(f.parse().is_ok());
    }

    #[test]
    fn blank_rows_are_ignored_and_errors_keep_the_row_position() {
        let mut f = form();
        f.lines.insert(0, LineForm::default());
        assert_eq!(f.parse().unwrap().lines.len(), 1);
        f.lines[1].quantity = "many".into();
        assert!(f.parse().unwrap_err().contains_key("lines[1].quantity"));
    }
}

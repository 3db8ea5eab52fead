//! What the HTML form posts: everything as typed, parsed into an `InvoiceInput` or field errors.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use validator::Validate;

use super::decimal::Thousandths;
use super::input::{flatten_errors, InvoiceInput, LineInput};
use super::money::parse_amount;
use super::totals::Discount;
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
    /// "Save as a new customer" (create-invoice form only): the typed name and email become a
    /// customer of the org, in the same transaction as the invoice.
    #[serde(default)]
    pub save_customer: Option<String>,
    /// Net N days, or empty for "on the due date".
    #[serde(default)]
    pub payment_terms_days: String,
    /// `percent` or `amount`.
    #[serde(default)]
    pub discount_kind: String,
    /// As typed: `10` (percent) or `25.00` (amount); empty for none.
    #[serde(default)]
    pub discount: String,
    #[serde(default)]
    pub notes: String,
    /// `send_invoice` (empty) or `charge_automatically`.
    #[serde(default)]
    pub collection_method: String,
}

/// The currency a new invoice's form starts with: the org's (from its country), or, once a
/// customer is picked, the currency of that customer's latest invoice.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CurrencyDefaults {
    /// The org's currency, lower case.
    pub org: String,
    /// (customer id, the currency of their latest invoice), for the customers the form offers.
    pub by_customer: Vec<(String, String)>,
}

impl CurrencyDefaults {
    /// The currency for a form with this customer picked (an empty id for none).
    pub fn for_customer(&self, customer: &str) -> &str {
        (self.by_customer.iter())
            .find(|(id, _)| id == customer)
            .map_or(self.org.as_str(), |(_, currency)| currency.as_str())
    }
}

/// What the invoice, quote and schedule forms offer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InvoiceFormOptions {
    /// The org's newest customers, to pick from.
    pub customers: Vec<crate::Customer>,
    /// Archived rates too: a draft saved with one keeps it; new picks see only the active ones.
    pub tax_rates: Vec<crate::TaxRate>,
    pub currencies: CurrencyDefaults,
}

/// The payment terms the form offers (days; 0 is "due on receipt").
pub const PAYMENT_TERMS: &[u16] = &[0, 7, 14, 15, 30, 45, 60, 90];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LineForm {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub quantity: String,
    /// In major units as a person writes it: `12.50`.
    #[serde(default)]
    pub unit_amount: String,
    /// One of the org's tax rates, or empty.
    #[serde(default)]
    pub tax_rate_id: String,
}

impl LineForm {
    fn of(
        description: &str,
        quantity: Thousandths,
        unit_amount_cents: i64,
        tax_rate_id: Option<uuid::Uuid>,
        currency: &str,
    ) -> LineForm {
        LineForm {
            description: description.to_owned(),
            quantity: quantity.to_string(),
            unit_amount: super::money::plain_amount(unit_amount_cents, currency),
            tax_rate_id: tax_rate_id.map(|id| id.to_string()).unwrap_or_default(),
        }
    }

    fn is_blank(&self) -> bool {
        self.description.trim().is_empty()
            && self.quantity.trim().is_empty()
            && self.unit_amount.trim().is_empty()
    }
}

impl InvoiceForm {
    /// The form filled with an invoice's content, as its edit page shows it.
    pub fn from_invoice(invoice: &super::Invoice) -> InvoiceForm {
        let currency = &invoice.currency;
        InvoiceForm {
            due_date: invoice.due_date.to_string(),
            lines: invoice
                .lines
                .iter()
                .map(|l| {
                    LineForm::of(
                        &l.description,
                        l.quantity,
                        l.unit_amount_cents,
                        l.tax_rate_id,
                        currency,
                    )
                })
                .collect(),
            customer_id: invoice.customer_id.map(|id| id.to_string()),
            collection_method: invoice.collection_method.as_str().to_owned(),
            ..InvoiceForm::of(
                &invoice.customer_name,
                &invoice.customer_email,
                currency,
                invoice.payment_terms_days,
                invoice.discount,
                &invoice.notes,
            )
        }
    }

    /// The form filled with an invoice input (a schedule's template), as its edit page shows it.
    pub fn from_input(input: &InvoiceInput) -> InvoiceForm {
        let currency = &input.currency;
        InvoiceForm {
            due_date: input.due_date.map(|d| d.to_string()).unwrap_or_default(),
            lines: input
                .lines
                .iter()
                .map(|l| {
                    LineForm::of(
                        &l.description,
                        l.quantity,
                        l.unit_amount_cents,
                        l.tax_rate_id,
                        currency,
                    )
                })
                .collect(),
            customer_id: input.customer_id.map(|id| id.to_string()),
            collection_method: input.collection_method.as_str().to_owned(),
            ..InvoiceForm::of(
                &input.customer_name,
                &input.customer_email,
                currency,
                input.payment_terms_days,
                input.discount,
                &input.notes,
            )
        }
    }

    fn of(
        name: &str,
        email: &str,
        currency: &str,
        terms: Option<u16>,
        discount: Option<Discount>,
        notes: &str,
    ) -> InvoiceForm {
        InvoiceForm {
            customer_name: name.to_owned(),
            customer_email: email.to_owned(),
            currency: currency.to_owned(),
            payment_terms_days: terms.map(|d| d.to_string()).unwrap_or_default(),
            discount_kind: match discount {
                Some(Discount::AmountCents(_)) => "amount".into(),
                _ => "percent".into(),
            },
            discount: match discount {
                None => String::new(),
                Some(Discount::Percent(p)) => p.to_string(),
                Some(Discount::AmountCents(a)) => super::money::plain_amount(a, currency),
            },
            notes: notes.to_owned(),
            ..InvoiceForm::default()
        }
    }

    /// What the form's lines, discount and currency come to, by the rule the server stores them with
    /// (the same code, compiled into the browser too): the form shows it as the user types. `rates`
    /// are the org's tax rates. None while a line, the currency or the discount does not parse.
    pub fn preview(&self, rates: &[super::TaxRate]) -> Option<super::Totals> {
        let form = InvoiceForm {
            customer_name: "preview".into(),
            customer_email: "preview@example.com".into(),
            customer_id: None,
            save_customer: None,
            due_date: String::new(),
            payment_terms_days: "0".into(),
            draft: None,
            notes: String::new(),
            ..self.clone()
        };
        let input = form.parse().ok()?;
        let taxes: Vec<Option<super::AppliedTax>> = input
            .lines
            .iter()
            .map(|l| {
                let rate = rates.iter().find(|r| Some(r.id) == l.tax_rate_id)?;
                Some(super::AppliedTax {
                    rate_id: rate.id,
                    name: rate.name.clone(),
                    percent: rate.percent,
                    category: rate.category,
                    exemption_reason: rate.exemption_reason.clone(),
                })
            })
            .collect();
        if taxes
            .iter()
            .zip(&input.lines)
            .any(|(t, l)| t.is_none() && l.tax_rate_id.is_some())
        {
            return None;
        }
        Some(input.totals(&taxes))
    }

    /// Parses and validates. Wholly empty line rows are ignored (the form always offers spare rows).
    /// Errors name the same paths the form's inputs use, e.g. `lines[1].unit_amount_cents`.
    pub fn parse(&self) -> Result<InvoiceInput, FieldErrors> {
        let mut errors = FieldErrors::new();
        let currency = self.currency.trim().to_ascii_lowercase();
        let payment_terms_days = match self.payment_terms_days.trim() {
            "" => None,
            text => match text.parse::<u16>() {
                Ok(days) => Some(days),
                Err(_) => {
                    errors.insert(
                        "payment_terms_days".into(),
                        "Choose payment terms from the list.".into(),
                    );
                    None
                }
            },
        };
        // Terms set the due date; the date field is read only without them.
        let due_date = match self.due_date.trim() {
            "" => None,
            _ if payment_terms_days.is_some() => None,
            text => match NaiveDate::parse_from_str(text, "%Y-%m-%d") {
                Ok(date) => Some(date),
                Err(_) => {
                    errors.insert("due_date".into(), "Enter a date as YYYY-MM-DD.".into());
                    None
                }
            },
        };
        let discount = match (self.discount_kind.as_str(), self.discount.trim()) {
            (_, "") => None,
            ("amount", text) => match parse_amount(text, &currency) {
                Ok(cents) => Some(Discount::AmountCents(cents)),
                Err(message) => {
                    errors.insert("discount".into(), message);
                    None
                }
            },
            (_, text) => match Thousandths::parse(text.trim_end_matches('%')) {
                Some(p) => Some(Discount::Percent(p)),
                None => {
                    errors.insert(
                        "discount".into(),
                        "Enter a percentage such as 10 or 12.5.".into(),
                    );
                    None
                }
            },
        };
        // Errors carry the row's position in the form (blank rows included), so they land next to
        // the right inputs.
        let mut lines = Vec::with_capacity(self.lines.len());
        for (index, row) in self.lines.iter().enumerate().filter(|(_, l)| !l.is_blank()) {
            let quantity = match Thousandths::parse(&row.quantity) {
                Some(q) => q,
                None => {
                    errors.insert(
                        format!("lines[{index}].quantity"),
                        "Enter a quantity such as 2 or 1.5 (up to 3 decimals).".into(),
                    );
                    Thousandths::whole(1)
                }
            };
            let tax_rate_id = match row.tax_rate_id.trim() {
                "" => None,
                text => match uuid::Uuid::try_parse(text) {
                    Ok(id) => Some(id),
                    Err(_) => {
                        errors.insert(
                            format!("lines[{index}].tax_rate_id"),
                            "Choose one of your tax rates.".into(),
                        );
                        None
                    }
                },
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
                tax_rate_id,
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
        let collection_method = match self.collection_method.trim() {
            "" => crate::collection::CollectionMethod::SendInvoice,
            text => crate::collection::CollectionMethod::parse(text).unwrap_or_else(|| {
                errors.insert(
                    "collection_method".into(),
                    "Choose how the invoice is collected.".into(),
                );
                crate::collection::CollectionMethod::SendInvoice
            }),
        };
        let input = InvoiceInput {
            collection_method,
            customer_name: self.customer_name.trim().to_owned(),
            customer_email: self.customer_email.trim().to_owned(),
            currency,
            due_date,
            payment_terms_days,
            lines,
            draft: self.draft.as_deref().is_some_and(|d| d == "true"),
            customer_id,
            save_customer: self.save_customer.as_deref().is_some_and(|s| s == "true"),
            discount,
            notes: self.notes.trim().to_owned(),
        };
        if let Err(more) = input.check_as_sent() {
            // Line errors were reported above, by form row; a date error above is the clearer one.
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
    pub(crate) fn form() -> InvoiceForm {
        InvoiceForm {
            customer_name: "Ada".into(),
            customer_email: "ada@example.com".into(),
            currency: "usd".into(),
            due_date: "2027-01-31".into(),
            lines: vec![LineForm {
                description: "Consulting".into(),
                quantity: "3".into(),
                unit_amount: "12.50".into(),
                tax_rate_id: String::new(),
            }],
            draft: None,
            customer_id: None,
            ..InvoiceForm::default()
        }
    }

    #[test]
    fn a_good_form_parses_to_cents() {
        let input = form().parse().unwrap();
        assert_eq!(input.lines[0].unit_amount_cents, 1250);
        assert_eq!(input.subtotal_cents(), 3750);
    }

    #[test]
    fn decimals_terms_discount_and_notes_are_read() {
        let mut f = form();
        f.lines[0].quantity = "1.5".into();
        f.payment_terms_days = "30".into();
        f.due_date = "not a date, and ignored: terms set the due date".into();
        f.discount_kind = "amount".into();
        f.discount = "5".into();
        f.notes = "  Thanks!  ".into();
        let input = f.parse().unwrap();
        assert_eq!(input.lines[0].quantity, Thousandths(1500));
        assert_eq!((input.payment_terms_days, input.due_date), (Some(30), None));
        assert_eq!(input.discount, Some(Discount::AmountCents(500)));
        assert_eq!(input.notes, "Thanks!");
        f.discount_kind = "percent".into();
        f.discount = "12.5%".into();
        assert_eq!(
            f.parse().unwrap().discount,
            Some(Discount::Percent(Thousandths(12_500)))
        );
        f.discount = "lots".into();
        f.lines[0].quantity = "1.2345".into();
        f.lines[0].tax_rate_id = "vat".into();
        let errors = f.parse().unwrap_err();
        for field in ["discount", "lines[0].quantity", "lines[0].tax_rate_id"] {
            assert!(errors.contains_key(field), "{field}: {errors:?}");
        }
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

//! What an API client sends for an invoice, and the checks every surface applies to it.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use validator::{Validate, ValidationError, ValidationErrors, ValidationErrorsKind};

use super::decimal::Thousandths;
use super::money::currency_exponent;
use super::text::no_control_chars;
use super::totals::{self, Discount, LineBasis};
use crate::collection::CollectionMethod;
use crate::error::FieldErrors;

pub const MAX_LINES: usize = 100;

/// The invoice shape of CONTRACT.md, as the API receives it and as the form becomes once parsed.
/// The `schema(...)` attributes repeat the validator rules for the OpenAPI document.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Validate)]
pub struct InvoiceInput {
    /// May be left out when `customer_id` is given: the customer's is used.
    #[serde(default, deserialize_with = "not_empty_if_sent")]
    #[validate(
        length(min = 1, max = 200, message = "Enter 1 to 200 characters."),
        custom(function = "not_blank")
    )]
    #[cfg_attr(
        feature = "server",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*[^\s\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff][^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*$"
        )
    )]
    pub customer_name: String,
    // The address's form is checked on the server: in the browser this input is only parsed for
    // the totals preview, and the e-mail rules would bring the regex engine into its bundle.
    #[cfg_attr(
        feature = "server",
        validate(
            length(max = 254, message = "Enter at most 254 characters."),
            email(message = "Enter a valid email address.")
        )
    )]
    #[cfg_attr(
        not(feature = "server"),
        validate(length(max = 254, message = "Enter at most 254 characters."))
    )]
    /// May be left out when `customer_id` is given: the customer's is used.
    #[serde(default, deserialize_with = "not_empty_if_sent")]
    #[cfg_attr(feature = "server", schema(format = Email, max_length = 254))]
    pub customer_email: String,
    /// ISO 4217, lower case.
    #[validate(custom(function = "known_currency"))]
    #[cfg_attr(
        feature = "server",
        schema(
            pattern = "^(aed|afn|all|amd|ang|aoa|ars|aud|awg|azn|bam|bbd|bdt|bgn|bhd|bif|bmd|bnd|bob|brl|bsd|bwp|byn|bzd|cad|cdf|chf|clp|cny|cop|crc|cve|czk|djf|dkk|dop|dzd|egp|etb|eur|fjd|fkp|gbp|gel|gip|gmd|gnf|gtq|gyd|hkd|hnl|htg|huf|idr|ils|inr|isk|jmd|jod|jpy|kes|kgs|khr|kmf|krw|kwd|kyd|kzt|lak|lbp|lkr|lrd|lsl|mad|mdl|mga|mkd|mmk|mnt|mop|mur|mvr|mwk|mxn|myr|mzn|nad|ngn|nio|nok|npr|nzd|omr|pab|pen|pgk|php|pkr|pln|pyg|qar|ron|rsd|rub|rwf|sar|sbd|scr|sek|sgd|shp|sle|sos|srd|szl|thb|tjs|tnd|top|try|ttd|twd|tzs|uah|ugx|usd|uyu|uzs|vnd|vuv|wst|xaf|xcd|xof|xpf|yer|zar|zmw)$",
            example = "usd"
        )
    )]
    pub currency: String,
    /// From 2000-01-01 to 2199-12-31. May be left out when `payment_terms_days` is given, which
    /// wins when both are.
    #[serde(default)]
    #[validate(custom(function = "sane_due_date"))]
    pub due_date: Option<NaiveDate>,
    /// Net N: due N days after the invoice is issued (finalized), in the org's time zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(range(max = 365, message = "Payment terms are 0 to 365 days."))]
    #[cfg_attr(feature = "server", schema(minimum = 0, maximum = 365))]
    pub payment_terms_days: Option<u16>,
    /// Each line is checked by `check`, which reports errors as `lines[i].field`.
    #[validate(length(min = 1, max = 100, message = "An invoice has 1 to 100 lines."))]
    #[cfg_attr(feature = "server", schema(min_items = 1, max_items = 100))]
    pub lines: Vec<LineInput>,
    /// One of the org's customers: the invoice takes their name, email, billing address and tax id
    /// (copied again at finalization, then never changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer_id: Option<uuid::Uuid>,
    /// On creation: save the customer name and email as a new customer of the org, in the same
    /// transaction as the invoice, and link the invoice to it. Not with `customer_id`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub save_customer: bool,
    /// Save as a draft (no number, editable, not sent) instead of finalizing at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub draft: bool,
    /// Off the subtotal, before tax; shared among the lines in proportion to their amounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discount: Option<Discount>,
    /// Shown on the invoice, its page and its PDF.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[validate(
        length(max = 2000, message = "Enter at most 2000 characters."),
        custom(function = "no_control_chars")
    )]
    #[cfg_attr(
        feature = "server",
        schema(
            max_length = 2000,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*$"
        )
    )]
    pub notes: String,
    /// `send_invoice` (the customer pays it) or `charge_automatically` (charged to the customer's
    /// default saved method when it is finalized).
    #[serde(default, skip_serializing_if = "CollectionMethod::is_default")]
    pub collection_method: CollectionMethod,
}

#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Validate)]
pub struct LineInput {
    #[validate(
        length(min = 1, max = 500, message = "Enter 1 to 500 characters."),
        custom(function = "not_blank")
    )]
    #[cfg_attr(
        feature = "server",
        schema(
            min_length = 1,
            max_length = 500,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*[^\s\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff][^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*$"
        )
    )]
    pub description: String,
    /// Up to 3 decimals: 1.5 (hours).
    #[validate(custom(function = "sane_quantity"))]
    #[cfg_attr(
        feature = "server",
        schema(value_type = f64, minimum = 0.001, maximum = 1_000_000)
    )]
    pub quantity: Thousandths,
    #[validate(range(
        min = 0,
        max = 100_000_000,
        message = "Enter an amount from 0 to 1,000,000.00."
    ))]
    #[cfg_attr(feature = "server", schema(minimum = 0, maximum = 100_000_000))]
    #[serde(deserialize_with = "whole_number")]
    pub unit_amount_cents: i64,
    /// One of the org's tax rates (`GET /api/v1/tax_rates`); none: untaxed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tax_rate_id: Option<uuid::Uuid>,
}

/// Quantities run from 0.001 to 1,000,000.
pub const QUANTITY_RANGE: (Thousandths, Thousandths) =
    (Thousandths(1), Thousandths::whole(1_000_000));

fn sane_quantity(value: &Thousandths) -> Result<(), ValidationError> {
    if *value < QUANTITY_RANGE.0 || *value > QUANTITY_RANGE.1 {
        return Err(ValidationError::new("quantity_range")
            .with_message("Enter a quantity from 0.001 to 1,000,000 (up to 3 decimals).".into()));
    }
    Ok(())
}

/// A field that may be left out (then empty) but, when sent, is not empty: "" is refused as sent,
/// as the schema's `minLength` says, not taken for "left out".
fn not_empty_if_sent<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let text = String::deserialize(d)?;
    if text.is_empty() {
        return Err(serde::de::Error::custom(
            "an empty string; leave the field out to use the customer's",
        ));
    }
    Ok(text)
}

/// JSON has one number type: `3.0` is the integer 3 (as JSON Schema says), `3.5` is not.
fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    use serde::de::Error;
    let n = serde_json::Number::deserialize(d)?;
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(f as i64),
        _ => Err(D::Error::custom(format!(
            "expected a whole number, got {n}"
        ))),
    }
}

pub(super) fn not_blank(value: &str) -> Result<(), ValidationError> {
    if value.trim().is_empty() {
        return Err(ValidationError::new("blank").with_message("This can't be blank.".into()));
    }
    no_control_chars(value)
}

/// The due dates an invoice may have. Anything else is a typo or a probe (`-5000-01-01` parses as a
/// date but Postgres cannot store it): refused with a message, never a database error.
pub const DUE_DATE_RANGE: (NaiveDate, NaiveDate) = (
    NaiveDate::from_ymd_opt(2000, 1, 1).expect("a date"),
    NaiveDate::from_ymd_opt(2199, 12, 31).expect("a date"),
);

fn sane_due_date(value: &NaiveDate) -> Result<(), ValidationError> {
    let (first, last) = DUE_DATE_RANGE;
    if *value < first || *value > last {
        return Err(ValidationError::new("due_date_range")
            .with_message("Enter a due date between 2000-01-01 and 2199-12-31.".into()));
    }
    Ok(())
}

fn known_currency(value: &str) -> Result<(), ValidationError> {
    if currency_exponent(value).is_none() {
        return Err(ValidationError::new("currency")
            .with_message("Choose a currency (ISO 4217 code in lower case, e.g. usd).".into()));
    }
    Ok(())
}

impl InvoiceInput {
    /// What `invoice` was made from: its content as input (a draft's, to edit it).
    pub fn of(invoice: &super::Invoice) -> InvoiceInput {
        InvoiceInput {
            customer_name: invoice.customer_name.clone(),
            customer_email: invoice.customer_email.clone(),
            currency: invoice.currency.clone(),
            due_date: Some(invoice.due_date),
            payment_terms_days: invoice.payment_terms_days,
            lines: invoice
                .lines
                .iter()
                .map(|l| LineInput {
                    description: l.description.clone(),
                    quantity: l.quantity,
                    unit_amount_cents: l.unit_amount_cents,
                    tax_rate_id: l.tax_rate_id,
                })
                .collect(),
            customer_id: invoice.customer_id,
            save_customer: false,
            draft: invoice.status == super::InvoiceStatus::Draft,
            discount: invoice.discount,
            notes: invoice.notes.clone(),
            collection_method: invoice.collection_method,
        }
    }

    /// [`check`](Self::check) on the input as a surface received it, before anything is claimed:
    /// with a picked customer a blank name and email may be left out (the customer's replace them in
    /// the write), but one that was sent must be valid.
    pub fn check_as_sent(&self) -> Result<(), FieldErrors> {
        let Err(mut fields) = self.check() else {
            return Ok(());
        };
        if self.customer_id.is_some() {
            if self.customer_name.is_empty() {
                fields.remove("customer_name");
            }
            if self.customer_email.is_empty() {
                fields.remove("customer_email");
            }
        }
        crate::error::fields_ok(fields)
    }

    /// Runs the validator rules and flattens them to `field path → message`.
    pub fn check(&self) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        if let Err(errors) = self.validate() {
            flatten_errors("", &errors, &mut out);
        }
        let currency = super::money::currency(&self.currency);
        for (index, line) in self.lines.iter().enumerate() {
            if let Err(errors) = line.validate() {
                flatten_errors(&format!("lines[{index}]"), &errors, &mut out);
            }
            // Stripe charges the three-decimal dinars only in tens of their minor unit.
            if let Some(c) = currency.filter(|c| !c.chargeable(line.unit_amount_cents)) {
                out.entry(format!("lines[{index}].unit_amount_cents"))
                    .or_insert_with(|| {
                        format!(
                            "{} amounts must have 0 as their last decimal.",
                            c.code.to_ascii_uppercase()
                        )
                    });
            }
        }
        if self.save_customer && self.customer_id.is_some() {
            out.entry("save_customer".into()).or_insert_with(|| {
                "The picked customer is saved already: pick none to save a new one.".into()
            });
        }
        if self.due_date.is_none() && self.payment_terms_days.is_none() {
            out.entry("due_date".into())
                .or_insert_with(|| "Enter a due date or choose payment terms.".into());
        }
        let step = currency.map_or(1, |c| c.step);
        match self.discount {
            Some(Discount::Percent(p)) if !(0..=100_000).contains(&p.0) => {
                out.insert("discount".into(), "A discount is 0 to 100 percent.".into());
            }
            Some(Discount::AmountCents(a)) if a < 0 || a % step != 0 => {
                out.insert(
                    "discount".into(),
                    "Enter a discount amount of 0 or more, in the currency's chargeable units."
                        .into(),
                );
            }
            Some(Discount::AmountCents(a)) if a > self.subtotal_cents() => {
                out.insert(
                    "discount".into(),
                    "The discount can't be more than the subtotal.".into(),
                );
            }
            _ => {}
        }
        crate::error::fields_ok(out)
    }

    /// The sum of the lines before discount and tax.
    pub fn subtotal_cents(&self) -> i64 {
        let step = super::money::currency(&self.currency).map_or(1, |c| c.step);
        self.lines
            .iter()
            .map(|l| totals::line_amount(l.quantity, l.unit_amount_cents, step))
            .sum()
    }

    /// The totals by the rule in [`totals`], `taxes[i]` being line `i`'s tax.
    pub fn totals(&self, taxes: &[Option<totals::AppliedTax>]) -> totals::Totals {
        let step = super::money::currency(&self.currency).map_or(1, |c| c.step);
        let lines: Vec<LineBasis> = self
            .lines
            .iter()
            .enumerate()
            .map(|(i, l)| LineBasis {
                quantity: l.quantity,
                unit_amount_cents: l.unit_amount_cents,
                tax: taxes.get(i).cloned().flatten(),
            })
            .collect();
        totals::compute(&lines, self.discount, step)
    }
}

pub(super) fn flatten_errors(prefix: &str, errors: &ValidationErrors, out: &mut FieldErrors) {
    for (field, kind) in errors.errors() {
        let path = if prefix.is_empty() {
            field.to_string()
        } else {
            format!("{prefix}.{field}")
        };
        match kind {
            ValidationErrorsKind::Field(list) => {
                if let Some(first) = list.first() {
                    let message = first
                        .message
                        .as_ref()
                        .map(|m| m.to_string())
                        .unwrap_or_else(|| "This value is not valid.".to_owned());
                    out.entry(path).or_insert(message);
                }
            }
            ValidationErrorsKind::Struct(inner) => flatten_errors(&path, inner, out),
            ValidationErrorsKind::List(items) => {
                for (index, inner) in items {
                    flatten_errors(&format!("{path}[{index}]"), inner, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::form::tests::form;

    #[test]
    fn control_characters_are_refused_not_stored() {
        use crate::text::CONTROL_CHARACTER;
        let mut f = form();
        f.customer_name = "Ada\0".into();
        f.lines[0].description = "x\u{1}y".into();
        f.notes = "paid\u{7f}".into();
        let errors = f.parse().unwrap_err();
        assert_eq!(errors["customer_name"], CONTROL_CHARACTER);
        assert_eq!(errors["lines[0].description"], CONTROL_CHARACTER);
        assert_eq!(errors["notes"], CONTROL_CHARACTER);
        // Tabs and line breaks are text.
        let mut f = form();
        f.lines[0].description = "Design\tphase 1\r\nand 2".into();
        f.notes = "Thanks!\n\nBank: see below".into();
        f.parse().unwrap();
    }

    #[cfg(feature = "server")]
    #[test]
    fn the_schema_pattern_lists_exactly_the_accepted_currencies() {
        // The pattern in the OpenAPI document must list exactly what `currency_exponent` accepts.
        let schema =
            serde_json::to_value(<InvoiceInput as utoipa::PartialSchema>::schema()).unwrap();
        let pattern = schema["properties"]["currency"]["pattern"]
            .as_str()
            .unwrap()
            .to_owned();
        let listed: Vec<&str> = pattern
            .trim_start_matches("^(")
            .trim_end_matches(")$")
            .split('|')
            .collect();
        let mut accepted = 0;
        for a in b'a'..=b'z' {
            for b in b'a'..=b'z' {
                for c in b'a'..=b'z' {
                    let code = String::from_utf8(vec![a, b, c]).unwrap();
                    if currency_exponent(&code).is_some() {
                        accepted += 1;
                        assert!(
                            listed.contains(&code.as_str()),
                            "{code} missing from the pattern"
                        );
                    }
                }
            }
        }
        assert_eq!(
            accepted,
            listed.len(),
            "the pattern lists only accepted codes"
        );
    }

    #[test]
    fn quantities_take_up_to_three_decimals() {
        let read = |q: &str| {
            serde_json::from_str::<LineInput>(&format!(
                r#"{{"description":"x","quantity":{q},"unit_amount_cents":1803}}"#
            ))
            .map(|l| l.quantity)
        };
        assert_eq!(read("3").unwrap(), Thousandths(3000));
        assert_eq!(read("3.0").unwrap(), Thousandths(3000));
        assert_eq!(read("1.5").unwrap(), Thousandths(1500));
        assert_eq!(read("0.125").unwrap(), Thousandths(125));
        assert!(read("0.0005").is_err());
        assert!(read("\"2\"").is_err());
    }

    #[test]
    fn due_date_or_terms_and_a_sane_discount() {
        let mut input = form().parse().unwrap();
        input.due_date = None;
        assert_eq!(
            input.check().unwrap_err()["due_date"],
            "Enter a due date or choose payment terms."
        );
        input.payment_terms_days = Some(30);
        input.check().unwrap();
        input.payment_terms_days = Some(366);
        assert!(input
            .check()
            .unwrap_err()
            .contains_key("payment_terms_days"));
        input.payment_terms_days = Some(30);
        // The form's line is 3 × 12.50 = 37.50.
        input.discount = Some(Discount::AmountCents(3751));
        assert_eq!(
            input.check().unwrap_err()["discount"],
            "The discount can't be more than the subtotal."
        );
        input.discount = Some(Discount::AmountCents(3750));
        input.check().unwrap();
        input.discount = Some(Discount::Percent(Thousandths(100_001)));
        assert!(input.check().unwrap_err().contains_key("discount"));
        input.discount = Some(Discount::Percent(Thousandths(12_500)));
        input.check().unwrap();
        let json = serde_json::to_value(&input).unwrap();
        assert_eq!(json["discount"], serde_json::json!({"percent": 12.5}));
    }

    #[test]
    fn api_input_rejects_out_of_range_numbers() {
        let mut input = form().parse().unwrap();
        input.lines[0].quantity = Thousandths(1_000_000_001);
        input.lines[0].unit_amount_cents = -1;
        let errors = input.check().unwrap_err();
        assert!(errors.contains_key("lines[0].quantity"));
        assert!(errors.contains_key("lines[0].unit_amount_cents"));
    }

    #[test]
    fn due_dates_outside_the_range_are_refused_with_a_message() {
        for bad in ["-5000-01-01", "1999-12-31", "2200-01-01"] {
            let json = format!(
                r#"{{"customer_name":"A","customer_email":"a@example.com","currency":"usd","due_date":"{bad}","lines":[{{"description":"x","quantity":1,"unit_amount_cents":1}}]}}"#
            );
            let input: InvoiceInput = serde_json::from_str(&json).unwrap();
            let errors = input.check().unwrap_err();
            assert_eq!(
                errors["due_date"], "Enter a due date between 2000-01-01 and 2199-12-31.",
                "{bad}"
            );
        }
        let mut fine = form().parse().unwrap();
        fine.due_date = Some(DUE_DATE_RANGE.1);
        fine.check().unwrap();
    }

    #[test]
    fn three_decimal_amounts_must_end_in_zero() {
        let mut input = form().parse().unwrap();
        input.currency = "kwd".into();
        input.lines[0].unit_amount_cents = 5_124;
        let errors = input.check().unwrap_err();
        assert!(errors["lines[0].unit_amount_cents"].contains("KWD"));
        input.lines[0].unit_amount_cents = 5_120;
        input.check().unwrap();
    }
}

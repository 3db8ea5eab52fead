//! The characters no text field takes: control characters (Unicode's Cc, U+0000 to U+001F and
//! U+007F to U+009F) other than tab, CR and LF, and the noncharacters U+FFFE and U+FFFF. What people
//! type is printed into XML e-invoices, PDFs and CSV files: XML 1.0 cannot carry the C0 controls nor
//! U+FFFE and U+FFFF (and discourages the others), Postgres text cannot hold NUL. So they are refused
//! where text is checked, the error named by its field like any other.
//!
//! The OpenAPI document states it in each text field's pattern:
//! `^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*$`, or its not-blank form.

use validator::ValidationError;

use crate::error::FieldErrors;

/// What a field holding a refused character says.
pub const CONTROL_CHARACTER: &str =
    "This contains a control character: remove it (tabs and line breaks are fine).";

/// Whether `c` may be typed in a text field.
pub fn allowed_char(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' => true,
        '\u{FFFE}' | '\u{FFFF}' => false,
        c => !c.is_control(),
    }
}

/// Whether `text` holds a character no text field takes.
pub fn has_control_char(text: &str) -> bool {
    !text.chars().all(allowed_char)
}

/// The rule for `validator` derives: `#[validate(custom(function = "no_control_chars"))]`.
pub fn no_control_chars(value: &str) -> Result<(), ValidationError> {
    if has_control_char(value) {
        return Err(
            ValidationError::new("control_character").with_message(CONTROL_CHARACTER.into())
        );
    }
    Ok(())
}

/// The rule for hand-written checks: `field`'s error is the refused character when `value` holds
/// one (it replaces a length message, which would not say what to fix).
pub fn refuse_control_chars(out: &mut FieldErrors, field: &str, value: &str) {
    if has_control_char(value) {
        out.insert(field.to_owned(), CONTROL_CHARACTER.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// XML 1.0's `Char` production.
    fn xml_char(c: char) -> bool {
        let c = u32::from(c);
        matches!(c, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
    }

    #[test]
    fn every_control_character_but_tab_and_line_breaks_is_refused() {
        for c in ('\u{0}'..='\u{1F}').chain('\u{7F}'..='\u{9F}') {
            let refused = !matches!(c, '\t' | '\n' | '\r');
            assert_eq!(has_control_char(&format!("a{c}b")), refused, "{:?}", c);
        }
        for c in ['\u{FFFE}', '\u{FFFF}'] {
            assert!(has_control_char(&c.to_string()), "{c:?}");
        }
        for fine in [
            "",
            "Ada Lovelace",
            "line one\r\nline two\n\tindented",
            "Müller & Söhne — 東京 ½ € 🧾",
            "\u{A0}non-breaking\u{200B}zero-width\u{FFFD}",
        ] {
            assert!(!has_control_char(fine), "{fine:?}");
            assert!(no_control_chars(fine).is_ok(), "{fine:?}");
        }
        let error = no_control_chars("x\u{1}y").unwrap_err();
        assert_eq!(error.code, "control_character");
        assert_eq!(error.message.as_deref(), Some(CONTROL_CHARACTER));
        let mut out =
            FieldErrors::from([("name".to_owned(), "Enter at most 5 characters.".to_owned())]);
        refuse_control_chars(&mut out, "name", "a\u{b}b");
        refuse_control_chars(&mut out, "notes", "fine\n");
        assert_eq!(
            out,
            FieldErrors::from([("name".to_owned(), CONTROL_CHARACTER.to_owned())])
        );
    }

    #[test]
    fn whatever_is_allowed_is_a_character_xml_can_carry() {
        for c in (0..=0x10FFFF_u32).filter_map(char::from_u32) {
            if allowed_char(c) {
                assert!(xml_char(c), "U+{:04X} is allowed but not XML", c as u32);
            }
        }
    }

    /// Each input's check names the field that holds one; a field without one passes.
    #[test]
    fn every_inputs_check_names_its_field() {
        use crate::*;
        let bad = "a\u{1}b";
        let named = |errors: FieldErrors, fields: &[&str]| {
            for field in fields {
                assert_eq!(
                    errors.get(*field).map(String::as_str),
                    Some(CONTROL_CHARACTER),
                    "{field}: {errors:?}"
                );
            }
        };

        let mut out = FieldErrors::new();
        let address = Address {
            line1: bad.into(),
            line2: bad.into(),
            city: bad.into(),
            postal_code: bad.into(),
            region: bad.into(),
            country: String::new(),
        };
        address.check("address", &mut out);
        named(
            out,
            &[
                "address.line1",
                "address.line2",
                "address.city",
                "address.postal_code",
                "address.region",
            ],
        );

        let customer = CustomerInput {
            name: bad.into(),
            email: "ada@example.com".into(),
            billing_address: bad.into(),
            buyer_reference: bad.into(),
            notes: bad.into(),
            ..CustomerInput::default()
        };
        let fields = ["name", "billing_address", "buyer_reference", "notes"];
        named(customer.check().unwrap_err(), &fields);

        let details = OrgDetails {
            legal_name: bad.into(),
            tax_registration_id: bad.into(),
            phone: bad.into(),
            ..OrgDetails::default()
        };
        let fields = ["legal_name", "tax_registration_id", "phone"];
        named(details.check().unwrap_err(), &fields);

        let settings = OrgSettings {
            time_zone: "UTC".into(),
            number_format: "INV-{seq}\u{7f}".into(),
            number_reset: "never".into(),
            credit_note_format: "CN-\u{0}{seq}".into(),
        };
        let fields = ["number_format", "credit_note_format"];
        named(settings.check().unwrap_err(), &fields);

        let branding = BrandingForm {
            accent_color: String::new(),
            footer_text: bad.into(),
        };
        named(branding.parse().unwrap_err(), &["footer_text"]);

        let bank = BankDetails {
            holder: bad.into(),
            other: bad.into(),
            reference: "{number}\u{1b}".into(),
            ..BankDetails::default()
        };
        named(bank.check().unwrap_err(), &["holder", "other", "reference"]);

        let credit = CreditNoteInput {
            amount_cents: None,
            lines: None,
            reason: bad.into(),
            refund: CreditRefund::None,
        };
        named(credit.check().unwrap_err(), &["reason"]);

        let rate = TaxRateInput::parse(bad, "0", "E", bad);
        named(rate.unwrap_err(), &["name", "exemption_reason"]);

        let steps = [ReminderStep {
            offset_days: 3,
            message: bad.into(),
        }];
        named(
            check_reminder_steps(&steps).unwrap_err(),
            &["steps[0].message"],
        );

        let endpoint = webhooks::WebhookEndpointInput {
            url: "https://example.com/\u{1}".into(),
            events: vec!["invoice.paid".into()],
            description: bad.into(),
        };
        named(endpoint.check().unwrap_err(), &["url", "description"]);

        let today = chrono::NaiveDate::from_ymd_opt(2026, 12, 5).unwrap();
        let payment = PaymentInput {
            amount_cents: 100,
            method: PaymentMethod::Cash,
            paid_on: today,
            reference: bad.into(),
        };
        named(payment.check(today).unwrap_err(), &["reference"]);

        let mut invoice = crate::form::tests::form().parse().unwrap();
        invoice.customer_name = bad.into();
        invoice.notes = bad.into();
        invoice.lines[0].description = bad.into();
        let fields = ["customer_name", "notes", "lines[0].description"];
        named(invoice.check().unwrap_err(), &fields);

        // Tabs and line breaks are fine wherever text goes.
        let fine = "a\tb\r\nc\n";
        let customer = CustomerInput {
            name: fine.into(),
            email: "ada@example.com".into(),
            notes: fine.into(),
            ..CustomerInput::default()
        };
        customer.check().unwrap();
        let mut invoice = crate::form::tests::form().parse().unwrap();
        invoice.notes = fine.into();
        invoice.lines[0].description = fine.into();
        invoice.check().unwrap();
    }

    /// The OpenAPI document states the rule wherever it gives a text field a pattern.
    #[cfg(feature = "server")]
    #[test]
    fn the_schema_patterns_state_the_rule() {
        use utoipa::PartialSchema;
        const CLASS: &str = r"\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff";
        fn patterns(value: &serde_json::Value, out: &mut Vec<String>) {
            match value {
                serde_json::Value::Object(map) => {
                    for (key, inner) in map {
                        match (key.as_str(), inner) {
                            ("pattern", serde_json::Value::String(p)) => out.push(p.clone()),
                            _ => patterns(inner, out),
                        }
                    }
                }
                serde_json::Value::Array(items) => items.iter().for_each(|i| patterns(i, out)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        for schema in [
            crate::InvoiceInput::schema(),
            crate::LineInput::schema(),
            crate::CustomerInput::schema(),
            crate::TaxRateInput::schema(),
            crate::PaymentInput::schema(),
        ] {
            patterns(&serde_json::to_value(schema).unwrap(), &mut found);
        }
        let text: Vec<&String> = found.iter().filter(|p| p.contains(r"\u0000")).collect();
        assert!(text.len() >= 10, "{found:?}");
        for pattern in text {
            assert!(
                pattern.starts_with(&format!("^[^{CLASS}]*")) && pattern.ends_with("]*$"),
                "{pattern}"
            );
            let classes = pattern.matches('[').count();
            assert_eq!(pattern.matches(CLASS).count(), classes, "{pattern}");
        }
    }
}

//! An org's tax rate, as the API and the settings page take it.

use serde::{Deserialize, Serialize};
use validator::Validate;

use super::decimal::Thousandths;
use super::input::not_blank;
use super::text::no_control_chars;
use crate::error::FieldErrors;

/// What a client sends to add a tax rate.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
pub struct TaxRateInput {
    /// As shown on invoices: "VAT", "NY sales tax".
    #[validate(
        length(min = 1, max = 100, message = "Enter 1 to 100 characters."),
        custom(function = "not_blank")
    )]
    #[cfg_attr(
        feature = "server",
        schema(
            min_length = 1,
            max_length = 100,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*[^\s\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff][^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*$"
        )
    )]
    pub name: String,
    /// 0 to 100, up to 3 decimals: 8.875.
    #[cfg_attr(
        feature = "server",
        schema(value_type = f64, minimum = 0, maximum = 100)
    )]
    pub percent: Thousandths,
    /// The EN 16931 VAT category; default `S` above 0 %, `Z` at 0 %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<TaxCategory>,
    /// Why the supply is exempt: required for `E`, printed on the invoice.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[validate(
        length(max = 300, message = "Enter at most 300 characters."),
        custom(function = "no_control_chars")
    )]
    #[cfg_attr(
        feature = "server",
        schema(
            max_length = 300,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*$"
        )
    )]
    pub exemption_reason: String,
}

/// The VAT categories of EN 16931 (UNTDID 5305): what kind of supply a tax rate is for.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub enum TaxCategory {
    /// Standard rate.
    #[default]
    S,
    /// Zero rated.
    Z,
    /// Exempt from VAT (with a reason).
    E,
    /// Reverse charge: the customer accounts for the VAT.
    AE,
    /// Intra-community supply (VAT exempt within the EU).
    K,
    /// Export outside the EU.
    G,
    /// Not subject to VAT.
    O,
}

impl TaxCategory {
    pub const ALL: [TaxCategory; 7] = [
        TaxCategory::S,
        TaxCategory::Z,
        TaxCategory::E,
        TaxCategory::AE,
        TaxCategory::K,
        TaxCategory::G,
        TaxCategory::O,
    ];

    pub fn code(self) -> &'static str {
        match self {
            TaxCategory::S => "S",
            TaxCategory::Z => "Z",
            TaxCategory::E => "E",
            TaxCategory::AE => "AE",
            TaxCategory::K => "K",
            TaxCategory::G => "G",
            TaxCategory::O => "O",
        }
    }

    pub fn parse(code: &str) -> Option<TaxCategory> {
        TaxCategory::ALL.into_iter().find(|c| c.code() == code)
    }

    pub fn label(self) -> &'static str {
        match self {
            TaxCategory::S => "Standard rate",
            TaxCategory::Z => "Zero rated",
            TaxCategory::E => "Exempt",
            TaxCategory::AE => "Reverse charge",
            TaxCategory::K => "Intra-community supply",
            TaxCategory::G => "Export outside the EU",
            TaxCategory::O => "Not subject to VAT",
        }
    }

    /// What the invoice must say for it (none for the standard and zero rates), and the VATEX
    /// code e-invoices give it. An exempt rate's own reason is said instead of the generic one.
    pub fn mention(self) -> Option<(&'static str, &'static str)> {
        match self {
            TaxCategory::S | TaxCategory::Z => None,
            TaxCategory::E => Some(("VAT exempt", "")),
            TaxCategory::AE => Some((
                "Reverse charge: VAT to be accounted for by the customer (Article 196, Directive 2006/112/EC)",
                "VATEX-EU-AE",
            )),
            TaxCategory::K => Some((
                "Intra-community supply, exempt from VAT (Article 138, Directive 2006/112/EC)",
                "VATEX-EU-IC",
            )),
            TaxCategory::G => Some((
                "Export outside the EU, exempt from VAT (Article 146, Directive 2006/112/EC)",
                "VATEX-EU-G",
            )),
            TaxCategory::O => Some(("Not subject to VAT", "VATEX-EU-O")),
        }
    }

    /// The message id of [`Self::mention`]'s text, in the customer's language.
    pub fn mention_id(self) -> &'static str {
        match self {
            TaxCategory::S | TaxCategory::Z => "",
            TaxCategory::E => "mention-exempt",
            TaxCategory::AE => "mention-reverse-charge",
            TaxCategory::K => "mention-intra-community",
            TaxCategory::G => "mention-export",
            TaxCategory::O => "mention-not-subject",
        }
    }

    /// Only the standard rate is above 0 %.
    pub fn allows(self, percent: Thousandths) -> bool {
        (self == TaxCategory::S) == (percent.0 > 0)
    }
}

impl TaxRateInput {
    /// The rules as `field → message`.
    pub fn check(&self) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        if let Err(errors) = self.validate() {
            super::input::flatten_errors("", &errors, &mut out);
        }
        if !(0..=100_000).contains(&self.percent.0) {
            out.insert(
                "percent".into(),
                "Enter a percent from 0 to 100 (up to 3 decimals).".into(),
            );
        }
        let category = self.category();
        if !category.allows(self.percent) {
            let message = if category == TaxCategory::S {
                "A standard rate is above 0 %."
            } else {
                "Only a standard rate is above 0 %: this category is 0 %."
            };
            out.insert("category".into(), message.into());
        }
        if category == TaxCategory::E && self.exemption_reason.trim().is_empty() {
            out.insert(
                "exemption_reason".into(),
                "Say why the supply is exempt: it is printed on the invoice.".into(),
            );
        }
        crate::error::fields_ok(out)
    }

    /// The category given, or the one its percent implies.
    pub fn category(&self) -> TaxCategory {
        self.category.unwrap_or(if self.percent.0 > 0 {
            TaxCategory::S
        } else {
            TaxCategory::Z
        })
    }

    /// From the settings form's text fields.
    pub fn parse(
        name: &str,
        percent: &str,
        category: &str,
        exemption_reason: &str,
    ) -> Result<TaxRateInput, FieldErrors> {
        let Some(percent) = Thousandths::parse(percent.trim().trim_end_matches('%').trim()) else {
            return Err(FieldErrors::from([(
                "percent".to_owned(),
                "Enter a percent from 0 to 100 (up to 3 decimals).".to_owned(),
            )]));
        };
        let input = TaxRateInput {
            name: name.trim().to_owned(),
            percent,
            category: TaxCategory::parse(category.trim()),
            exemption_reason: exemption_reason.trim().to_owned(),
        };
        input.check().map(|()| input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percents_are_0_to_100_with_three_decimals() {
        assert_eq!(
            TaxRateInput::parse("NY", "8.875", "", "").unwrap().percent,
            Thousandths(8875)
        );
        assert_eq!(
            TaxRateInput::parse("VAT", "20 %", "", "").unwrap().percent,
            Thousandths(20_000)
        );
        assert!(TaxRateInput::parse("VAT", "100.001", "", "").is_err());
        assert!(TaxRateInput::parse("VAT", "-1", "", "").is_err());
        assert!(TaxRateInput::parse("VAT", "1.0005", "", "").is_err());
        assert!(TaxRateInput::parse(" ", "5", "", "")
            .unwrap_err()
            .contains_key("name"));
    }

    #[test]
    fn categories_agree_with_the_percent_and_exempt_ones_say_why() {
        assert_eq!(
            TaxRateInput::parse("VAT", "19", "", "").unwrap().category(),
            TaxCategory::S
        );
        assert_eq!(
            TaxRateInput::parse("Zero", "0", "", "").unwrap().category(),
            TaxCategory::Z
        );
        TaxRateInput::parse("RC", "0", "AE", "").unwrap();
        assert!(TaxRateInput::parse("RC", "19", "AE", "")
            .unwrap_err()
            .contains_key("category"));
        assert!(TaxRateInput::parse("S", "0", "S", "")
            .unwrap_err()
            .contains_key("category"));
        assert!(TaxRateInput::parse("Ex", "0", "E", " ")
            .unwrap_err()
            .contains_key("exemption_reason"));
        TaxRateInput::parse("Ex", "0", "E", "Article 132 (medical care)").unwrap();
    }
}

//! An org's tax rate, as the API and the settings page take it.

use serde::{Deserialize, Serialize};
use validator::Validate;

use super::decimal::Thousandths;
use super::input::not_blank;
use crate::error::FieldErrors;

/// What a client sends to add a tax rate.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
pub struct TaxRateInput {
    /// As shown on invoices: "VAT", "NY sales tax".
    #[validate(
        length(min = 1, max = 100, message = "Enter 1 to 100 characters."),
        custom(function = "not_blank")
    )]
    #[cfg_attr(
        feature = "ssr",
        schema(
            min_length = 1,
            max_length = 100,
            pattern = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
        )
    )]
    pub name: String,
    /// 0 to 100, up to 3 decimals: 8.875.
    #[cfg_attr(
        feature = "ssr",
        schema(value_type = f64, minimum = 0, maximum = 100)
    )]
    pub percent: Thousandths,
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
        if out.is_empty() {
            Ok(())
        } else {
            Err(out)
        }
    }

    /// From the settings form's text fields.
    pub fn parse(name: &str, percent: &str) -> Result<TaxRateInput, FieldErrors> {
        let Some(percent) = Thousandths::parse(percent.trim().trim_end_matches('%').trim()) else {
            return Err(FieldErrors::from([(
                "percent".to_owned(),
                "Enter a percent from 0 to 100 (up to 3 decimals).".to_owned(),
            )]));
        };
        let input = TaxRateInput {
            name: name.trim().to_owned(),
            percent,
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
            TaxRateInput::parse("NY", "8.875").unwrap().percent,
            Thousandths(8875)
        );
        assert_eq!(
            TaxRateInput::parse("VAT", "20 %").unwrap().percent,
            Thousandths(20_000)
        );
        assert!(TaxRateInput::parse("VAT", "100.001").is_err());
        assert!(TaxRateInput::parse("VAT", "-1").is_err());
        assert!(TaxRateInput::parse("VAT", "1.0005").is_err());
        assert!(TaxRateInput::parse(" ", "5")
            .unwrap_err()
            .contains_key("name"));
    }
}

//! The parties of an invoice as EN 16931 names them: a postal address with an ISO 3166 country,
//! and VAT identifiers checked against each country's format.

use serde::{Deserialize, Serialize};

use crate::error::FieldErrors;

/// A postal address. `country` is an ISO 3166-1 alpha-2 code ("DE"), or empty when unknown.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Address {
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_length = 200))]
    pub line1: String,
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_length = 200))]
    pub line2: String,
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_length = 100))]
    pub city: String,
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_length = 20))]
    pub postal_code: String,
    /// A state, province or county.
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_length = 100))]
    pub region: String,
    /// ISO 3166-1 alpha-2, upper case; empty: not given.
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(pattern = "^([A-Z]{2})?$", example = "DE"))]
    pub country: String,
}

impl Address {
    /// Trimmed, the country in upper case.
    pub fn normalized(&self) -> Address {
        Address {
            line1: self.line1.trim().to_owned(),
            line2: self.line2.trim().to_owned(),
            city: self.city.trim().to_owned(),
            postal_code: self.postal_code.trim().to_owned(),
            region: self.region.trim().to_owned(),
            country: self.country.trim().to_ascii_uppercase(),
        }
    }

    /// Lengths, no control characters, a known country; errors named `<prefix>.<field>`.
    pub fn check(&self, prefix: &str, out: &mut FieldErrors) {
        let fields = [
            ("line1", &self.line1, 200),
            ("line2", &self.line2, 200),
            ("city", &self.city, 100),
            ("postal_code", &self.postal_code, 20),
            ("region", &self.region, 100),
        ];
        for (name, value, max) in fields {
            if value.chars().count() > max {
                out.insert(
                    format!("{prefix}.{name}"),
                    format!("Enter at most {max} characters."),
                );
            }
            super::text::refuse_control_chars(out, &format!("{prefix}.{name}"), value);
        }
        if !self.country.is_empty() && !is_country(&self.country) {
            out.insert(
                format!("{prefix}.country"),
                "Enter a country as its two-letter ISO code, such as DE or FR.".into(),
            );
        }
    }

    /// The lines it is printed as: line 1, line 2, "postal code city", region, country.
    pub fn lines(&self) -> Vec<String> {
        let place = format!("{} {}", self.postal_code, self.city)
            .trim()
            .to_owned();
        [
            self.line1.clone(),
            self.line2.clone(),
            place,
            self.region.clone(),
            self.country.clone(),
        ]
        .into_iter()
        .filter(|l| !l.is_empty())
        .collect()
    }

    /// Nothing given.
    pub fn is_empty(&self) -> bool {
        self.lines().is_empty()
    }
}

/// An ISO 3166-1 alpha-2 code of a country (in the browser, two capital letters: the server's
/// check decides).
pub fn is_country(code: &str) -> bool {
    code.len() == 2 && code.bytes().all(|b| b.is_ascii_uppercase()) && known_country(code)
}

#[cfg(feature = "server")]
fn known_country(code: &str) -> bool {
    celes::Country::from_alpha2(code).is_ok()
}

#[cfg(not(feature = "server"))]
fn known_country(_: &str) -> bool {
    true
}

/// A VAT identifier as stored: upper case, without spaces, dots or dashes.
pub fn normalize_vat_id(id: &str) -> String {
    id.chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '.' | '-'))
        .flat_map(char::to_uppercase)
        .collect()
}

/// Each country's VAT identifier after its prefix, as the EU's VIES and the national registers
/// publish them: `9` a digit, `A` a letter, `X` a letter or digit.
const VAT_FORMATS: &[(&str, &[&str])] = &[
    ("AT", &["U99999999"]),
    ("BE", &["9999999999"]),
    ("BG", &["999999999", "9999999999"]),
    (
        "CH",
        &[
            "E999999999",
            "E999999999MWST",
            "E999999999TVA",
            "E999999999IVA",
        ],
    ),
    ("CY", &["99999999A"]),
    ("CZ", &["99999999", "999999999", "9999999999"]),
    ("DE", &["999999999"]),
    ("DK", &["99999999"]),
    ("EE", &["999999999"]),
    ("EL", &["999999999"]),
    ("ES", &["X9999999X"]),
    ("FI", &["99999999"]),
    ("FR", &["XX999999999"]),
    // Greek VAT numbers begin with EL, never GR.
    ("GR", &[]),
    ("GB", &["999999999", "999999999999", "GD999", "HA999"]),
    ("HR", &["99999999999"]),
    ("HU", &["99999999"]),
    ("IE", &["9999999A", "9999999AA", "9X99999A"]),
    ("IT", &["99999999999"]),
    ("LT", &["999999999", "999999999999"]),
    ("LU", &["99999999"]),
    ("LV", &["99999999999"]),
    ("MT", &["99999999"]),
    ("NL", &["999999999B99"]),
    ("NO", &["999999999MVA"]),
    ("PL", &["9999999999"]),
    ("PT", &["999999999"]),
    (
        "RO",
        &[
            "99",
            "999",
            "9999",
            "99999",
            "999999",
            "9999999",
            "99999999",
            "999999999",
            "9999999999",
        ],
    ),
    ("SE", &["999999999999"]),
    ("SI", &["99999999"]),
    ("SK", &["9999999999"]),
    ("XI", &["999999999", "999999999999", "GD999", "HA999"]),
];

fn fits(body: &str, format: &str) -> bool {
    body.len() == format.len()
        && body.bytes().zip(format.bytes()).all(|(b, f)| match f {
            b'9' => b.is_ascii_digit(),
            b'A' => b.is_ascii_uppercase(),
            b'X' => b.is_ascii_uppercase() || b.is_ascii_digit(),
            literal => b == literal,
        })
}

/// A normalized VAT identifier ([`normalize_vat_id`]): its two-letter prefix (a country, or EL for
/// Greece, XI for Northern Ireland) and the rest in that country's format; other countries' 2 to
/// 20 letters or digits.
pub fn check_vat_id(id: &str) -> Result<(), String> {
    let wrong = || {
        format!(
            "\"{id}\" is not a VAT number: start with the country code (DE, FR, ...) and give the \
             digits and letters that country uses."
        )
    };
    if id.len() < 4 || !id.is_ascii() {
        return Err(wrong());
    }
    let (prefix, body) = id.split_at(2);
    match VAT_FORMATS.iter().find(|(p, _)| *p == prefix) {
        Some((_, formats)) if formats.iter().any(|f| fits(body, f)) => Ok(()),
        Some(_) => Err(wrong()),
        None if is_country(prefix)
            && (2..=20).contains(&body.len())
            && body
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()) =>
        {
            Ok(())
        }
        None => Err(wrong()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vat_ids_follow_their_countrys_format() {
        for good in [
            "DE123456789",
            "FR40303265045",
            "NL123456789B01",
            "ATU12345678",
            "ESX1234567X",
            "BE0123456789",
            "EL123456789",
            "GB123456789",
            "CHE123456789MWST",
            "US123456789",
            "IE1234567WA",
        ] {
            assert_eq!(check_vat_id(good), Ok(()), "{good}");
        }
        for bad in [
            "DE12345678",
            "DE1234567890",
            "NL123456789",
            "FR4030326504",
            "GR123456789",
            "123456789",
            "ZZ123",
            "DE",
            "AT12345678",
        ] {
            assert!(check_vat_id(bad).is_err(), "{bad}");
        }
        assert_eq!(normalize_vat_id(" de 123.456-789 "), "DE123456789");
    }

    #[test]
    fn addresses_are_checked_and_printed_in_lines() {
        let a = Address {
            line1: "Hauptstr. 1".into(),
            city: "Berlin".into(),
            postal_code: "10115".into(),
            country: "de".into(),
            ..Address::default()
        }
        .normalized();
        let mut errors = FieldErrors::new();
        a.check("address", &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(a.lines(), ["Hauptstr. 1", "10115 Berlin", "DE"]);
        let mut bad = a.clone();
        bad.country = "XX".into();
        bad.city = "x".repeat(101);
        bad.check("address", &mut errors);
        assert!(errors.contains_key("address.country") && errors.contains_key("address.city"));
        assert!(Address::default().is_empty());
    }
}

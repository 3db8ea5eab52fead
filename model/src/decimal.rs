//! Decimals with up to three places (quantities such as 1.5 hours, percentages such as 8.875 %),
//! held as an integer count of thousandths so that no arithmetic on them is ever inexact.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A non-negative decimal with at most three places: `1.5` is `Thousandths(1500)`. In JSON it is a
/// number (`3` when whole, so clients that read integers keep working; else `1.5`); in forms it is
/// typed as text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Thousandths(pub i64);

impl Thousandths {
    pub const fn whole(n: i64) -> Self {
        Thousandths(n * 1000)
    }

    /// `"1.5"`, `"1,000.25"`, `" 3 "` → thousandths; `None` for negatives, more than three decimals,
    /// exponents or junk.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().replace(',', "");
        let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if (whole.is_empty() && fraction.is_empty())
            || !digits(whole)
            || !digits(fraction)
            || fraction.len() > 3
            || whole.len() > 12
        {
            return None;
        }
        let whole: i64 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        let fraction: i64 = format!("{fraction:0<3}").parse().ok()?;
        Some(Thousandths(whole * 1000 + fraction))
    }

    /// A JSON number as thousandths, if it has at most three decimals. JSON numbers arrive as
    /// binary floats: `0.1` is read as the nearest double, so "at most three decimals" means
    /// "within a rounding error of a multiple of 0.001".
    fn from_json(n: &serde_json::Number) -> Option<Self> {
        if let Some(i) = n.as_i64() {
            return i.checked_mul(1000).map(Thousandths);
        }
        let f = n.as_f64()?;
        if !f.is_finite() || f.abs() > 1.0e12 {
            return None;
        }
        // A thousandth within a few units of the last place: `1.636`, and a client's float noise
        // such as `0.1 + 0.2` = `0.30000000000000004`; never `1.6360001` or `1.0005`.
        let rounded = (f * 1000.0).round();
        let off = (rounded / 1000.0 - f).abs();
        (off <= 4.0 * f64::EPSILON * f.abs().max(1.0e-3)).then_some(Thousandths(rounded as i64))
    }
}

impl fmt::Display for Thousandths {
    /// `1500` → `1.5`, `3000` → `3`, `8875` → `8.875`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let (whole, fraction) = (self.0.unsigned_abs() / 1000, self.0.unsigned_abs() % 1000);
        if fraction == 0 {
            write!(f, "{sign}{whole}")
        } else {
            let digits = format!("{fraction:03}");
            write!(f, "{sign}{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

impl Serialize for Thousandths {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0 % 1000 == 0 {
            s.serialize_i64(self.0 / 1000)
        } else {
            // The shortest double that reads back as this value: `1.5`, `8.875`.
            s.serialize_f64(self.0 as f64 / 1000.0)
        }
    }
}

impl<'de> Deserialize<'de> for Thousandths {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = serde_json::Number::deserialize(d)?;
        Thousandths::from_json(&n).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "expected a number with at most 3 decimals, got {n}"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        for (text, milli) in [
            ("1.5", 1500),
            ("3", 3000),
            ("0.001", 1),
            ("8.875", 8875),
            ("1,000.25", 1_000_250),
            (".5", 500),
        ] {
            assert_eq!(Thousandths::parse(text), Some(Thousandths(milli)), "{text}");
        }
        assert_eq!(Thousandths(8875).to_string(), "8.875");
        assert_eq!(Thousandths(1500).to_string(), "1.5");
        assert_eq!(Thousandths(20_000).to_string(), "20");
        for bad in ["", "-1", "1.0005", "1e3", "abc", "1.2.3", "."] {
            assert_eq!(Thousandths::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn json_numbers_with_three_decimals_at_most() {
        let read = |s: &str| serde_json::from_str::<Thousandths>(s).ok();
        assert_eq!(read("3"), Some(Thousandths(3000)));
        assert_eq!(read("3.0"), Some(Thousandths(3000)));
        assert_eq!(read("1.5"), Some(Thousandths(1500)));
        assert_eq!(read("0.1"), Some(Thousandths(100)));
        assert_eq!(read("999999.999"), Some(Thousandths(999_999_999)));
        assert_eq!(read("0.30000000000000004"), Some(Thousandths(300)));
        assert_eq!(read("1.0005"), None);
        assert_eq!(read("1.6360001"), None, "a seventh decimal is not noise");
        assert_eq!(read("8.8750000001"), None);
        assert_eq!(
            read("1.6360000000000001"),
            Some(Thousandths(1636)),
            "the same double"
        );
        assert_eq!(read("\"1.5\""), None);
        assert_eq!(serde_json::to_string(&Thousandths(3000)).unwrap(), "3");
        assert_eq!(serde_json::to_string(&Thousandths(1500)).unwrap(), "1.5");
        assert_eq!(serde_json::to_string(&Thousandths(8875)).unwrap(), "8.875");
        for milli in [1, 7, 999, 123_456_789, 999_999_999] {
            let json = serde_json::to_string(&Thousandths(milli)).unwrap();
            assert_eq!(read(&json), Some(Thousandths(milli)), "{json}");
        }
    }
}

//! Types both sides compile: what a user types, what the server checks, what pages show.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use validator::{Validate, ValidationError, ValidationErrors, ValidationErrorsKind};

use crate::error::FieldErrors;

pub const MAX_LINES: usize = 100;

/// The invoice shape of CONTRACT.md, as the API receives it and as the form becomes once parsed.
/// The `schema(...)` attributes repeat the validator rules for the OpenAPI document.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
pub struct InvoiceInput {
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
    pub customer_name: String,
    #[validate(
        length(max = 254, message = "Enter at most 254 characters."),
        email(message = "Enter a valid email address.")
    )]
    #[cfg_attr(feature = "ssr", schema(format = Email, max_length = 254))]
    pub customer_email: String,
    /// ISO 4217, lower case.
    #[validate(custom(function = "known_currency"))]
    #[cfg_attr(
        feature = "ssr",
        schema(
            pattern = "^(aed|afn|all|amd|ang|aoa|ars|aud|awg|azn|bam|bbd|bdt|bgn|bhd|bif|bmd|bnd|bob|brl|bsd|btn|bwp|byn|bzd|cad|cdf|chf|clp|cny|cop|crc|cup|cve|czk|djf|dkk|dop|dzd|egp|ern|etb|eur|fjd|fkp|gbp|gel|ghs|gip|gmd|gnf|gtq|gyd|hkd|hnl|htg|huf|idr|ils|inr|iqd|irr|isk|jmd|jod|jpy|kes|kgs|khr|kmf|kpw|krw|kwd|kyd|kzt|lak|lbp|lkr|lrd|lsl|lyd|mad|mdl|mga|mkd|mmk|mnt|mop|mru|mur|mvr|mwk|mxn|myr|mzn|nad|ngn|nio|nok|npr|nzd|omr|pab|pen|pgk|php|pkr|pln|pyg|qar|ron|rsd|rub|rwf|sar|sbd|scr|sdg|sek|sgd|shp|sle|sos|srd|ssp|stn|svc|syp|szl|thb|tjs|tmt|tnd|top|try|ttd|twd|tzs|uah|ugx|usd|uyi|uyu|uzs|ves|vnd|vuv|wst|xaf|xcd|xof|xpf|yer|zar|zmw|zwl)$",
            example = "usd"
        )
    )]
    pub currency: String,
    pub due_date: NaiveDate,
    /// Each line is checked by `check`, which reports errors as `lines[i].field`.
    #[validate(length(min = 1, max = 100, message = "An invoice has 1 to 100 lines."))]
    #[cfg_attr(feature = "ssr", schema(min_items = 1, max_items = 100))]
    pub lines: Vec<LineInput>,
}

#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
pub struct LineInput {
    #[validate(
        length(min = 1, max = 500, message = "Enter 1 to 500 characters."),
        custom(function = "not_blank")
    )]
    #[cfg_attr(
        feature = "ssr",
        schema(
            min_length = 1,
            max_length = 500,
            pattern = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
        )
    )]
    pub description: String,
    #[validate(range(
        min = 1,
        max = 1_000_000,
        message = "Enter a whole number from 1 to 1,000,000."
    ))]
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 1_000_000))]
    #[serde(deserialize_with = "whole_number")]
    pub quantity: i64,
    #[validate(range(
        min = 0,
        max = 100_000_000,
        message = "Enter an amount from 0 to 1,000,000.00."
    ))]
    #[cfg_attr(feature = "ssr", schema(minimum = 0, maximum = 100_000_000))]
    #[serde(deserialize_with = "whole_number")]
    pub unit_amount_cents: i64,
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

fn not_blank(value: &str) -> Result<(), ValidationError> {
    if value.trim().is_empty() {
        return Err(ValidationError::new("blank").with_message("This can't be blank.".into()));
    }
    // Postgres text cannot hold NUL; refuse it here with a message instead of failing later.
    if value.contains('\0') {
        return Err(
            ValidationError::new("nul").with_message("This can't contain NUL characters.".into())
        );
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
    /// Runs the validator rules and flattens them to `field path → message`.
    pub fn check(&self) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        if let Err(errors) = self.validate() {
            flatten_errors("", &errors, &mut out);
        }
        for (index, line) in self.lines.iter().enumerate() {
            if let Err(errors) = line.validate() {
                flatten_errors(&format!("lines[{index}]"), &errors, &mut out);
            }
        }
        if out.is_empty() {
            Ok(())
        } else {
            Err(out)
        }
    }

    pub fn total_cents(&self) -> i64 {
        self.lines
            .iter()
            .map(|l| l.quantity * l.unit_amount_cents)
            .sum()
    }
}

fn flatten_errors(prefix: &str, errors: &ValidationErrors, out: &mut FieldErrors) {
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
        let input = InvoiceInput {
            customer_name: self.customer_name.trim().to_owned(),
            customer_email: self.customer_email.trim().to_owned(),
            currency,
            due_date: due_date.unwrap_or_default(),
            lines,
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

/// `"12.5"` in usd → 1250. Refuses negatives, more decimals than the currency has, and junk.
pub fn parse_amount(text: &str, currency: &str) -> Result<i64, String> {
    let text = text.trim().replace(',', "");
    let exponent = currency_exponent(currency).unwrap_or(2);
    if text.starts_with('-') {
        return Err("The amount can't be negative.".into());
    }
    let (whole, fraction) = match text.split_once('.') {
        Some((w, f)) => (w, f),
        None => (text.as_str(), ""),
    };
    let digits_only = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits_only(whole) || !digits_only(fraction) {
        return Err("Enter an amount such as 12.50.".into());
    }
    if fraction.len() > exponent as usize {
        return Err(format!("Use at most {exponent} decimal places."));
    }
    if whole.len() > 12 {
        return Err("Enter an amount from 0 to 1,000,000.00.".into());
    }
    let whole: i64 = if whole.is_empty() {
        0
    } else {
        whole
            .parse()
            .map_err(|_| "Enter an amount such as 12.50.")?
    };
    let mut cents = whole * 10_i64.pow(exponent);
    if !fraction.is_empty() {
        let padded = format!("{fraction:0<width$}", width = exponent as usize);
        cents += padded
            .parse::<i64>()
            .map_err(|_| "Enter an amount such as 12.50.")?;
    }
    Ok(cents)
}

/// Minor-unit exponent of the ISO 4217 currencies we accept (lower case), or None if unknown.
pub fn currency_exponent(code: &str) -> Option<u32> {
    const ZERO: &[&str] = &[
        "bif", "clp", "djf", "gnf", "isk", "jpy", "kmf", "krw", "pyg", "rwf", "ugx", "uyi", "vnd",
        "vuv", "xaf", "xof", "xpf",
    ];
    const THREE: &[&str] = &["bhd", "iqd", "jod", "kwd", "lyd", "omr", "tnd"];
    const TWO: &[&str] = &[
        "aed", "afn", "all", "amd", "ang", "aoa", "ars", "aud", "awg", "azn", "bam", "bbd", "bdt",
        "bgn", "bmd", "bnd", "bob", "brl", "bsd", "btn", "bwp", "byn", "bzd", "cad", "cdf", "chf",
        "cny", "cop", "crc", "cup", "cve", "czk", "dkk", "dop", "dzd", "egp", "ern", "etb", "eur",
        "fjd", "fkp", "gbp", "gel", "ghs", "gip", "gmd", "gtq", "gyd", "hkd", "hnl", "htg", "huf",
        "idr", "ils", "inr", "irr", "jmd", "kes", "kgs", "khr", "kpw", "kyd", "kzt", "lak", "lbp",
        "lkr", "lrd", "lsl", "mad", "mdl", "mga", "mkd", "mmk", "mnt", "mop", "mru", "mur", "mvr",
        "mwk", "mxn", "myr", "mzn", "nad", "ngn", "nio", "nok", "npr", "nzd", "pab", "pen", "pgk",
        "php", "pkr", "pln", "qar", "ron", "rsd", "rub", "sar", "sbd", "scr", "sdg", "sek", "sgd",
        "shp", "sle", "sos", "srd", "ssp", "stn", "svc", "syp", "szl", "thb", "tjs", "tmt", "top",
        "try", "ttd", "twd", "tzs", "uah", "usd", "uyu", "uzs", "ves", "wst", "xcd", "yer", "zar",
        "zmw", "zwl",
    ];
    if TWO.contains(&code) {
        Some(2)
    } else if ZERO.contains(&code) {
        Some(0)
    } else if THREE.contains(&code) {
        Some(3)
    } else {
        None
    }
}

/// Currencies offered first in the form's picker.
pub const COMMON_CURRENCIES: &[&str] = &["usd", "eur", "gbp", "cad", "aud", "chf", "jpy", "sek"];

/// `1234567, "usd"` → `$12,345.67`; unknown symbols print the code: `12,345.67 CHF`.
pub fn format_money(minor: i64, currency: &str) -> String {
    let exponent = currency_exponent(currency).unwrap_or(2);
    let negative = minor < 0;
    let minor = minor.unsigned_abs();
    let scale = 10_u64.pow(exponent);
    let whole = (minor / scale).to_string();
    let mut grouped = String::new();
    for (i, ch) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let number = if exponent == 0 {
        grouped
    } else {
        format!(
            "{grouped}.{:0width$}",
            minor % scale,
            width = exponent as usize
        )
    };
    let sign = if negative { "-" } else { "" };
    match currency {
        "usd" => format!("{sign}${number}"),
        "eur" => format!("{sign}€{number}"),
        "gbp" => format!("{sign}£{number}"),
        "jpy" => format!("{sign}¥{number}"),
        other => format!("{sign}{number} {}", other.to_ascii_uppercase()),
    }
}

#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InvoiceStatus {
    Open,
    Paid,
    Void,
    Refunded,
}

impl InvoiceStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            InvoiceStatus::Open => "open",
            InvoiceStatus::Paid => "paid",
            InvoiceStatus::Void => "void",
            InvoiceStatus::Refunded => "refunded",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "open" => Some(InvoiceStatus::Open),
            "paid" => Some(InvoiceStatus::Paid),
            "void" => Some(InvoiceStatus::Void),
            "refunded" => Some(InvoiceStatus::Refunded),
            _ => None,
        }
    }
}

/// The invoice as CONTRACT.md shows it.
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invoice {
    pub id: Uuid,
    pub number: String,
    pub status: InvoiceStatus,
    pub customer_name: String,
    pub customer_email: String,
    pub currency: String,
    pub due_date: NaiveDate,
    pub lines: Vec<InvoiceLine>,
    pub total_cents: i64,
    pub amount_paid_cents: i64,
    pub created_at: DateTime<Utc>,
}

#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvoiceLine {
    pub description: String,
    pub quantity: i64,
    pub unit_amount_cents: i64,
    pub amount_cents: i64,
}

/// What the invoice page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvoicePage {
    pub invoice: Invoice,
    /// Development mode: offer "Simulate payment".
    pub simulate_payments: bool,
    /// Names the "Send invoice" attempt of this rendering of the page.
    pub send_key: Uuid,
    pub emails: Vec<EmailRow>,
    /// The attempts that concerned this invoice: its creation, replays, payments, refunds.
    pub history: Vec<ActivityRow>,
}

/// One outbox email of an invoice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmailRow {
    pub id: Uuid,
    pub kind: String,
    /// queued | retrying | sent | dead
    pub status: String,
    pub attempts: i32,
    pub last_error: Option<String>,
}

/// One row of the invoice list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvoiceSummary {
    pub id: Uuid,
    pub number: String,
    pub status: InvoiceStatus,
    pub customer_name: String,
    pub currency: String,
    pub due_date: NaiveDate,
    pub total_cents: i64,
    pub amount_paid_cents: i64,
    pub created_at: DateTime<Utc>,
}

pub fn invoice_number(n: i32) -> String {
    format!("INV-{n:06}")
}

/// One attempt on the activity page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivityRow {
    pub created_at: DateTime<Utc>,
    /// form | webhook | api
    pub surface: String,
    /// The form UUID, Stripe event id or Idempotency-Key.
    pub key: String,
    /// won | replay | in_flight | mismatch | rejected | failed
    pub outcome: String,
    pub invoice_id: Option<Uuid>,
    pub invoice_number: Option<String>,
    pub duration_ms: f64,
    pub request_id: Option<String>,
    /// The stored webhook payload or API response.
    pub detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivityCount {
    pub surface: String,
    pub outcome: String,
    pub count: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivityPage {
    pub rows: Vec<ActivityRow>,
    /// The last 24 hours, by surface and outcome.
    pub counts: Vec<ActivityCount>,
    pub page: u32,
    pub has_more: bool,
}

/// An API key as the settings page lists it (never the key itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKeySummary {
    pub id: Uuid,
    pub name: String,
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// Who is logged in, as pages see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Viewer {
    pub email: String,
    pub org_name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> InvoiceForm {
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
    fn nul_characters_are_refused_not_stored() {
        let mut f = form();
        f.customer_name = "Ada\0".into();
        f.lines[0].description = "x\0y".into();
        let errors = f.parse().unwrap_err();
        assert_eq!(
            errors["customer_name"],
            "This can't contain NUL characters."
        );
        assert!(errors.contains_key("lines[0].description"));
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

    #[test]
    fn amounts_follow_the_currency() {
        assert_eq!(parse_amount("12", "usd"), Ok(1200));
        assert_eq!(parse_amount("1,000.5", "usd"), Ok(100_050));
        assert_eq!(parse_amount(".5", "eur"), Ok(50));
        assert_eq!(parse_amount("500", "jpy"), Ok(500));
        assert!(parse_amount("5.5", "jpy").is_err());
        assert_eq!(parse_amount("1.234", "kwd"), Ok(1234));
        assert!(parse_amount("1.234", "usd").is_err());
        assert!(parse_amount("abc", "usd").is_err());
        assert!(parse_amount("", "usd").is_err());
        assert!(parse_amount("-3", "usd").is_err());
    }

    #[cfg(feature = "ssr")]
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
    fn whole_floats_are_integers() {
        let line: LineInput =
            serde_json::from_str(r#"{"description":"x","quantity":3.0,"unit_amount_cents":1803}"#)
                .unwrap();
        assert_eq!(line.quantity, 3);
        let half = r#"{"description":"x","quantity":3.5,"unit_amount_cents":1}"#;
        assert!(serde_json::from_str::<LineInput>(half).is_err());
    }

    #[test]
    fn money_is_formatted_per_currency() {
        assert_eq!(format_money(123_456_789, "usd"), "$1,234,567.89");
        assert_eq!(format_money(5, "eur"), "€0.05");
        assert_eq!(format_money(1000, "jpy"), "¥1,000");
        assert_eq!(format_money(1234, "kwd"), "1.234 KWD");
        assert_eq!(format_money(0, "chf"), "0.00 CHF");
    }

    #[test]
    fn api_input_rejects_out_of_range_numbers() {
        let mut input = form().parse().unwrap();
        input.lines[0].quantity = 1_000_001;
        input.lines[0].unit_amount_cents = -1;
        let errors = input.check().unwrap_err();
        assert!(errors.contains_key("lines[0].quantity"));
        assert!(errors.contains_key("lines[0].unit_amount_cents"));
    }
}

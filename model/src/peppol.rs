//! Peppol participant identifiers: an electronic address scheme (EAS, an ISO 6523 ICD or a
//! Peppol-assigned code) and a value, written `scheme:value` ("0208:0123456789"). Each scheme's
//! value is checked by its own format and, where the scheme defines one, its check digits.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The electronic address schemes Peppol BIS Billing 3.0 accepts (its code list, rules 3.0.19).
pub const SCHEMES: &[&str] = &[
    "0002", "0007", "0009", "0037", "0060", "0088", "0096", "0097", "0106", "0130", "0135", "0142",
    "0147", "0151", "0154", "0158", "0170", "0177", "0183", "0184", "0188", "0190", "0191", "0192",
    "0193", "0194", "0195", "0196", "0198", "0199", "0200", "0201", "0202", "0203", "0204", "0205",
    "0208", "0209", "0210", "0211", "0212", "0213", "0215", "0216", "0217", "0218", "0221", "0225",
    "0230", "0235", "0240", "9910", "9913", "9914", "9915", "9918", "9919", "9920", "9922", "9923",
    "9924", "9925", "9926", "9927", "9928", "9929", "9930", "9931", "9932", "9933", "9934", "9935",
    "9936", "9937", "9938", "9939", "9940", "9941", "9942", "9943", "9944", "9945", "9946", "9947",
    "9948", "9949", "9950", "9951", "9952", "9953", "9957", "9959",
];

/// How a customer receives its e-invoices.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EinvoiceChannel {
    /// The invoice email (and its Factur-X PDF), as without Peppol.
    #[default]
    Email,
    /// A Peppol document through the org's access point, sent when the invoice is finalized.
    Peppol,
}

impl EinvoiceChannel {
    pub fn as_str(self) -> &'static str {
        match self {
            EinvoiceChannel::Email => "email",
            EinvoiceChannel::Peppol => "peppol",
        }
    }

    pub fn parse(text: &str) -> Option<EinvoiceChannel> {
        match text {
            "email" => Some(EinvoiceChannel::Email),
            "peppol" => Some(EinvoiceChannel::Peppol),
            _ => None,
        }
    }
}

/// One transmission of an invoice (or of a credit note of it) over an e-invoicing network.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transmission {
    /// `peppol`.
    pub network: String,
    /// `queued`, `sent`, `delivered` or `failed`.
    pub state: String,
    /// The SBDH instance id: the same for every try of one document version.
    pub instance_id: uuid::Uuid,
    /// Why it failed (the network's words), or what the last try met.
    pub reason: Option<String>,
    /// `invoice` or `credit_note`.
    pub document: String,
    /// `peppol` (BIS Billing 3.0) or `xrechnung`.
    pub profile: String,
    pub at: chrono::DateTime<chrono::Utc>,
}

/// One line (BG-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReceivedLine {
    pub id: String,
    pub name: String,
    pub quantity: String,
    pub unit_price: String,
    /// BT-131, in minor units.
    pub net_cents: i64,
    pub category: String,
    pub percent: String,
}

/// One VAT breakdown (BG-23).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReceivedTax {
    pub category: String,
    pub percent: String,
    pub taxable_cents: i64,
    pub tax_cents: i64,
}

/// A received document's business terms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Received {
    /// `ubl` or `cii`.
    pub syntax: String,
    /// BT-24.
    pub customization: String,
    /// BT-23.
    pub profile: String,
    /// BT-3: 380, 381, ...
    pub type_code: String,
    pub credit_note: bool,
    /// BT-1.
    pub number: String,
    /// BT-2 and BT-9, ISO dates when readable.
    pub issue_date: String,
    pub due_date: String,
    /// BT-5.
    pub currency: String,
    /// BT-10, BT-13.
    pub buyer_reference: String,
    pub order_reference: String,
    /// BT-27, BT-31, BT-34 (`scheme:value`), BT-40.
    pub seller_name: String,
    pub seller_vat_id: String,
    pub seller_endpoint: String,
    pub seller_country: String,
    pub seller_city: String,
    /// BT-44, BT-49, BT-55.
    pub buyer_name: String,
    pub buyer_endpoint: String,
    pub buyer_country: String,
    pub lines: Vec<ReceivedLine>,
    pub taxes: Vec<ReceivedTax>,
    /// BT-106, BT-107, BT-108, BT-109, BT-110, BT-112, BT-113, BT-115 in minor units.
    pub line_total_cents: i64,
    pub allowance_total_cents: i64,
    pub charge_total_cents: i64,
    pub tax_exclusive_cents: i64,
    pub tax_total_cents: i64,
    pub total_cents: i64,
    pub prepaid_cents: i64,
    pub due_cents: i64,
    /// BT-84 (an IBAN), BT-86, BT-83.
    pub iban: String,
    pub bic: String,
    pub payment_reference: String,
    /// BT-20.
    pub terms: String,
    /// Amounts that did not read as decimals (named by their business term).
    pub unreadable: Vec<String>,
}

/// A failed rule as the API shows it.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedRule {
    pub rule: String,
    pub text: String,
}

/// A received document as the API and the inbox show it.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReceivedDocument {
    pub id: Uuid,
    /// `upload` or `peppol`.
    pub source: String,
    /// `ubl` or `cii`; `original_type` `xml` or `pdf`.
    pub syntax: String,
    pub original_type: String,
    /// BT-27.
    pub seller_name: String,
    /// BT-34 (`scheme:value`) or BT-31.
    pub seller_id: String,
    /// BT-1.
    pub number: String,
    pub issue_date: Option<NaiveDate>,
    pub due_date: Option<NaiveDate>,
    pub currency: String,
    /// BT-112 and BT-115, in minor units.
    pub total_cents: i64,
    pub due_cents: i64,
    /// No rule of its rule set failed.
    pub valid: bool,
    /// `cen`, `peppol` or `xrechnung`: the rules it was checked against.
    pub rule_set: String,
    pub failed_rules: Vec<FailedRule>,
    /// The first document of the same seller and number, when this one's bytes differ from it.
    pub duplicate_of: Option<Uuid>,
    pub paid_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// A received document with what it says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReceivedDetail {
    pub document: ReceivedDocument,
    pub content: Received,
}

/// A checked participant identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParticipantId {
    pub scheme: String,
    pub value: String,
}

impl std::fmt::Display for ParticipantId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.scheme, self.value)
    }
}

/// Trimmed, spaces dropped, letters upper case (the schemes with letters write them so).
pub fn normalize_participant_id(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_uppercase()
}

fn digits(value: &str, n: usize) -> bool {
    value.len() == n && value.bytes().all(|b| b.is_ascii_digit())
}

fn numbers(value: &str) -> Vec<u32> {
    value.bytes().map(|b| u32::from(b - b'0')).collect()
}

/// The Luhn check (ISO/IEC 7812): Swedish organisation numbers, SIREN and SIRET.
fn luhn(value: &str) -> bool {
    let sum: u32 = numbers(value)
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            if i % 2 == 1 {
                let twice = d * 2;
                twice / 10 + twice % 10
            } else {
                *d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// GS1's check digit (weights 3 and 1 from the right): GLN.
fn gs1(value: &str) -> bool {
    let n = numbers(value);
    let (body, check) = n.split_at(n.len() - 1);
    let sum: u32 = body
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| if i % 2 == 0 { d * 3 } else { *d })
        .sum();
    (10 - sum % 10) % 10 == check[0]
}

/// Belgian enterprise numbers: the last two digits are 97 minus the first eight modulo 97.
fn belgian(value: &str) -> bool {
    let (body, check) = value.split_at(8);
    let body: u64 = body.parse().unwrap_or(0);
    let check: u64 = check.parse().unwrap_or(100);
    97 - body % 97 == check
}

/// Norwegian organisation numbers: modulus 11 with weights 3 2 7 6 5 4 3 2.
fn norwegian(value: &str) -> bool {
    let n = numbers(value);
    let sum: u32 = [3, 2, 7, 6, 5, 4, 3, 2]
        .iter()
        .zip(&n)
        .map(|(w, d)| w * d)
        .sum();
    match 11 - sum % 11 {
        11 => n[8] == 0,
        10 => false,
        check => n[8] == check,
    }
}

/// Australian Business Numbers: the first digit less one, weighted, modulo 89.
fn abn(value: &str) -> bool {
    let mut n = numbers(value);
    if n[0] == 0 {
        return false;
    }
    n[0] -= 1;
    let sum: u32 = [10, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19]
        .iter()
        .zip(&n)
        .map(|(w, d)| w * d)
        .sum();
    sum.is_multiple_of(89)
}

/// German VAT numbers' check digit: ISO/IEC 7064 MOD 11,10 over the first eight digits.
fn german_vat(value: &str) -> bool {
    let n = numbers(value);
    let mut product = 10;
    for d in &n[..8] {
        let mut sum = (d + product) % 10;
        if sum == 0 {
            sum = 10;
        }
        product = (2 * sum) % 11;
    }
    let check = (11 - product) % 10;
    check == n[8]
}

/// ISO/IEC 7064 MOD 97-10 (letters count 10 to 35): the Leitweg-ID's check digits.
fn mod97_10(text: &str) -> bool {
    let mut rest: u64 = 0;
    for c in text.chars() {
        let n = match c.to_digit(36) {
            Some(n) => n as u64,
            None => return false,
        };
        rest = if n >= 10 {
            (rest * 100 + n) % 97
        } else {
            (rest * 10 + n) % 97
        };
    }
    rest == 1
}

/// A Leitweg-ID: a coarse address of 2 to 12 digits, an optional fine address of up to 30 letters
/// and digits, and two check digits, joined by hyphens.
fn leitweg(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let (coarse, fine, check) = match parts.as_slice() {
        [coarse, check] => (*coarse, "", *check),
        [coarse, fine, check] => (*coarse, *fine, *check),
        _ => return false,
    };
    (2..=12).contains(&coarse.len())
        && coarse.bytes().all(|b| b.is_ascii_digit())
        && fine.len() <= 30
        && fine.bytes().all(|b| b.is_ascii_alphanumeric())
        && (parts.len() == 2 || !fine.is_empty())
        && digits(check, 2)
        && mod97_10(&format!("{coarse}{fine}{check}"))
}

/// What a scheme's value must look like, in words, and whether `value` does.
fn value_fits(scheme: &str, value: &str) -> Result<(), &'static str> {
    let ok = |fits: bool, words: &'static str| if fits { Ok(()) } else { Err(words) };
    match scheme {
        "0208" => ok(
            digits(value, 10) && belgian(value),
            "a Belgian enterprise number is 10 digits whose last two are its check digits (0123456749)",
        ),
        "9925" => {
            let body = value.strip_prefix("BE").unwrap_or(value);
            ok(
                digits(body, 10) && belgian(body),
                "a Belgian VAT number is BE and 10 digits whose last two are its check digits",
            )
        }
        "0088" => ok(
            digits(value, 13) && gs1(value),
            "a GLN is 13 digits whose last is its GS1 check digit",
        ),
        "0192" => ok(
            digits(value, 9) && norwegian(value),
            "a Norwegian organisation number is 9 digits whose last is its check digit",
        ),
        "0007" => ok(
            digits(value, 10) && luhn(value),
            "a Swedish organisation number is 10 digits whose last is its check digit",
        ),
        "0009" => ok(
            digits(value, 14) && luhn(value),
            "a SIRET is 14 digits whose last is its check digit",
        ),
        "0002" => ok(
            digits(value, 9) && luhn(value),
            "a SIREN is 9 digits whose last is its check digit",
        ),
        "0106" => ok(digits(value, 8), "a KvK number is 8 digits"),
        "0190" => ok(digits(value, 20), "a Dutch OIN is 20 digits"),
        "0184" => ok(
            digits(value, 8) || value.strip_prefix("DK").is_some_and(|v| digits(v, 8)),
            "a Danish CVR number is 8 digits",
        ),
        "0151" => ok(
            digits(value, 11) && abn(value),
            "an Australian Business Number is 11 digits that pass its check",
        ),
        "9930" => ok(
            value
                .strip_prefix("DE")
                .is_some_and(|v| digits(v, 9) && german_vat(v)),
            "a German VAT number is DE and 9 digits whose last is its check digit",
        ),
        "0204" => ok(
            leitweg(value),
            "a Leitweg-ID is digits, an optional fine address and two check digits, joined by hyphens (04011000-1234512345-06)",
        ),
        _ => ok(
            (1..=50).contains(&value.len())
                && value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._/".contains(&b)),
            "a value is 1 to 50 letters, digits and - . _ /",
        ),
    }
}

/// Parses a [normalized](normalize_participant_id) `scheme:value`, checking the scheme is one
/// Peppol knows and the value fits it.
pub fn parse_participant_id(text: &str) -> Result<ParticipantId, String> {
    let Some((scheme, value)) = text.split_once(':') else {
        return Err(format!(
            "\"{text}\" is not a Peppol id: write the scheme, a colon and the value (0208:0123456749)."
        ));
    };
    if !SCHEMES.contains(&scheme) {
        return Err(format!(
            "\"{scheme}\" is not a Peppol address scheme: use its four-digit code (0208 Belgian \
             enterprise number, 0088 GLN, 9930 German VAT number, 0204 Leitweg-ID, ...)."
        ));
    }
    value_fits(scheme, value).map_err(|words| format!("Not a valid Peppol id: {words}."))?;
    Ok(ParticipantId {
        scheme: scheme.to_owned(),
        value: value.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scheme_checks_its_own_digits() {
        for good in [
            "0208:0123456749",
            "9925:BE0123456749",
            "0088:5790000435975",
            "0192:987654325",
            "0007:5560360793",
            "0009:73282932000074",
            "0002:732829320",
            "0106:12345678",
            "0190:00000001234567890000",
            "0184:DK12345678",
            "0151:51824753556",
            "9930:DE136695976",
            "0204:04011000-1234512345-06",
            "0204:991-01234-38",
            "9920:ESB12345674",
        ] {
            let normalized = normalize_participant_id(good);
            assert_eq!(
                parse_participant_id(&normalized).map(|p| p.to_string()),
                Ok(normalized.clone()),
                "{good}"
            );
        }
        for bad in [
            "0208:0123456789",
            "0208:123",
            "9925:BE0123456788",
            "0088:5790000435976",
            "0192:987654321",
            "0007:5560360794",
            "0009:73282932000075",
            "9930:DE136695977",
            "0204:04011000-1234512345-07",
            "0204:04011000",
            "1234:abc",
            "0208",
            "9920:has space!",
        ] {
            assert!(
                parse_participant_id(&normalize_participant_id(bad)).is_err(),
                "{bad}"
            );
        }
        assert_eq!(
            normalize_participant_id(" 9925 : be0123456749 "),
            "9925:BE0123456749"
        );
    }
}

/// The inbox page: the upload form's key, the received documents, the org's Peppol id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InboxPage {
    pub upload_key: Uuid,
    pub documents: Vec<ReceivedDocument>,
    /// Empty when the org has none (documents then come by upload only).
    pub peppol_id: String,
    pub can_edit: bool,
}

/// A received document's page: what it says, and the key of this rendering's "Mark paid".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReceivedPage {
    pub detail: ReceivedDetail,
    pub paid_key: Uuid,
    pub can_edit: bool,
}

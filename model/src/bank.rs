//! How to pay an org by transfer: its account's holder, IBAN and BIC, or free text for other schemes
//! (a US routing and account number, a UK sort code), and the reference the customer quotes, with
//! `{number}` standing for the invoice's number. Shown on the customer's page, the PDF and the email.

use serde::{Deserialize, Serialize};

use crate::error::FieldErrors;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BankDetails {
    #[serde(default)]
    pub holder: String,
    /// Stored compact and upper case ("NL91ABNA0417164300"); typed with spaces or without.
    #[serde(default)]
    pub iban: String,
    #[serde(default)]
    pub bic: String,
    /// Other schemes' details, as the org writes them.
    #[serde(default)]
    pub other: String,
    /// The reference to quote, `{number}` being the invoice's number.
    #[serde(default = "default_reference")]
    pub reference: String,
}

fn default_reference() -> String {
    "{number}".to_owned()
}

impl Default for BankDetails {
    fn default() -> Self {
        BankDetails {
            holder: String::new(),
            iban: String::new(),
            bic: String::new(),
            other: String::new(),
            reference: default_reference(),
        }
    }
}

/// `text` without whitespace, upper case: how IBANs and BICs are stored.
fn compact(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_uppercase)
        .collect()
}

impl BankDetails {
    /// As stored: trimmed, the IBAN and BIC compact and upper case.
    pub fn normalized(&self) -> BankDetails {
        BankDetails {
            holder: self.holder.trim().to_owned(),
            iban: compact(&self.iban),
            bic: compact(&self.bic),
            other: self.other.trim().to_owned(),
            reference: self.reference.trim().to_owned(),
        }
    }

    /// The rules, on [`Self::normalized`] details, as `field → message`. The IBAN's checksum (and its
    /// country's length and format) is checked where the `ssr` feature is on: the server.
    pub fn check(&self) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        let mut refuse = |field: &str, message: &str| {
            out.insert(field.to_owned(), message.to_owned());
        };
        if self.holder.chars().count() > 200 {
            refuse("holder", "Enter at most 200 characters.");
        }
        if !self.iban.is_empty() && !iban_ok(&self.iban) {
            refuse(
                "iban",
                "This is not a valid IBAN: check its country code, length and check digits.",
            );
        }
        let bic = self.bic.as_bytes();
        let bic_ok = matches!(bic.len(), 8 | 11)
            && bic[..6].iter().all(u8::is_ascii_uppercase)
            && bic[6..].iter().all(u8::is_ascii_alphanumeric);
        if !self.bic.is_empty() && !bic_ok {
            refuse(
                "bic",
                "A BIC has 8 or 11 letters and digits, such as ABNANL2A.",
            );
        }
        if !self.bic.is_empty() && self.iban.is_empty() {
            refuse("iban", "Enter the IBAN the BIC belongs to.");
        }
        if self.other.chars().count() > 500 {
            refuse("other", "Enter at most 500 characters.");
        }
        let reference = &self.reference;
        if reference.chars().count() > 60 || !reference.contains("{number}") {
            refuse(
                "reference",
                "Use 1 to 60 characters with {number} (the invoice's number) in them.",
            );
        }
        for (field, value) in [
            ("holder", &self.holder),
            ("other", &self.other),
            ("reference", reference),
        ] {
            super::text::refuse_control_chars(&mut out, field, value);
        }
        crate::error::fields_ok(out)
    }

    /// Whether there is anything to pay to.
    pub fn is_set(&self) -> bool {
        !self.iban.is_empty() || !self.other.is_empty()
    }

    /// The IBAN in groups of four, as it is printed: "NL91 ABNA 0417 1643 00".
    pub fn iban_printed(&self) -> String {
        let chars: Vec<char> = self.iban.chars().collect();
        chars
            .chunks(4)
            .map(|group| group.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The reference for the invoice numbered `number`.
    pub fn reference_for(&self, number: &str) -> String {
        self.reference.replace("{number}", number)
    }

    /// What the customer reads, line by line, for the invoice numbered `number` whose ISO 11649
    /// reference is `creditor_reference`: (label, value).
    pub fn lines(
        &self,
        number: &str,
        creditor_reference: Option<&str>,
        w: &dyn super::Words,
    ) -> Vec<(String, String)> {
        let mut lines = Vec::new();
        if !self.holder.is_empty() {
            lines.push((
                w.label("bank-holder", "Account holder"),
                self.holder.clone(),
            ));
        }
        if !self.iban.is_empty() {
            lines.push((w.label("bank-iban", "IBAN"), self.iban_printed()));
        }
        if !self.bic.is_empty() {
            lines.push((w.label("bank-bic", "BIC"), self.bic.clone()));
        }
        if !self.other.is_empty() {
            lines.push((w.label("bank-account", "Account"), self.other.clone()));
        }
        lines.push((
            w.label("bank-reference", "Reference"),
            self.reference_for(number),
        ));
        // The structured reference banks carry unchanged to the statement: for a SEPA transfer.
        if let (false, Some(rf)) = (self.iban.is_empty(), creditor_reference) {
            lines.push((
                w.label("bank-creditor-reference", "Structured reference"),
                crate::payment_reference::printed(rf),
            ));
        }
        lines
    }
}

/// One entry of an imported bank statement, as the API and the pages show it.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BankEntry {
    pub id: uuid::Uuid,
    pub booked_on: chrono::NaiveDate,
    /// Credits positive, debits negative, in minor units.
    pub amount_cents: i64,
    /// Upper case (ISO 4217), as the bank writes it.
    pub currency: String,
    pub counterparty: String,
    pub remittance: String,
    /// The bank's own reference, when it gives one.
    pub bank_reference: Option<String>,
    /// `unmatched`, `matched` or `ignored`.
    pub state: String,
    pub invoice_id: Option<uuid::Uuid>,
}

/// An invoice an unmatched credit may pay, and why it is suggested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BankSuggestion {
    pub invoice_id: uuid::Uuid,
    pub number: String,
    pub customer_name: String,
    /// What the invoice still asks for, in its currency's minor units.
    pub due_cents: i64,
    /// The credit is exactly what is due.
    pub same_amount: bool,
    /// The payer's name on the statement is the invoice's customer's.
    pub same_name: bool,
}

/// An unmatched entry on the owner's bank page: what the bank said, the invoices it may pay, and
/// the key its row's buttons were rendered with (the entry is decided once per rendering).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnmatchedEntry {
    pub entry: BankEntry,
    pub suggestions: Vec<BankSuggestion>,
    pub key: uuid::Uuid,
}

/// What one import of a statement did, as its page says it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BankImportSummary {
    pub id: uuid::Uuid,
    pub format: String,
    pub account_iban: String,
    pub entries: i32,
    pub new_entries: i32,
    pub matched: i32,
}

/// The owner's `/payments/bank`: the upload form's key, the import just made (when the page was
/// sent back to after one), the org's accounts and its unmatched entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BankPage {
    pub upload_key: uuid::Uuid,
    pub imported: Option<BankImportSummary>,
    pub accounts: Vec<String>,
    pub unmatched: Vec<UnmatchedEntry>,
    /// More unmatched entries than the page lists.
    pub more: bool,
    pub can_edit: bool,
}

/// The org's other accounts as typed: each a valid IBAN, stored compact and upper case, each once,
/// at most 20.
pub fn check_bank_accounts(accounts: &[String]) -> Result<Vec<String>, FieldErrors> {
    let mut out: Vec<String> = Vec::new();
    let mut errors = FieldErrors::new();
    if accounts.len() > 20 {
        errors.insert("bank_accounts".into(), "At most 20 accounts.".into());
        return Err(errors);
    }
    for (i, typed) in accounts.iter().enumerate() {
        let iban = compact(typed);
        if !iban_ok(&iban) {
            errors.insert(
                format!("bank_accounts[{i}]"),
                "This is not a valid IBAN: check its country code, length and check digits.".into(),
            );
        } else if !out.contains(&iban) {
            out.push(iban);
        }
    }
    crate::error::fields_ok(errors).map(|()| out)
}

#[cfg(feature = "server")]
fn iban_ok(iban: &str) -> bool {
    iban.parse::<iban::Iban>().is_ok()
}

#[cfg(not(feature = "server"))]
fn iban_ok(iban: &str) -> bool {
    iban.len() >= 15 && iban.len() <= 34
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bank(iban: &str, bic: &str) -> BankDetails {
        BankDetails {
            holder: "Acme B.V.".into(),
            iban: iban.into(),
            bic: bic.into(),
            ..BankDetails::default()
        }
        .normalized()
    }

    #[test]
    fn ibans_are_stored_compact_and_printed_in_fours() {
        let b = bank("nl91 abna 0417 1643 00", "abnanl2a");
        assert_eq!(b.iban, "NL91ABNA0417164300");
        assert_eq!(b.bic, "ABNANL2A");
        assert_eq!(b.iban_printed(), "NL91 ABNA 0417 1643 00");
        assert_eq!(b.reference_for("INV-0007"), "INV-0007");
        let lines = b.lines("INV-7", None, &crate::English);
        let lines: Vec<(&str, &str)> = lines
            .iter()
            .map(|(l, v)| (l.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            lines,
            [
                ("Account holder", "Acme B.V."),
                ("IBAN", "NL91 ABNA 0417 1643 00"),
                ("BIC", "ABNANL2A"),
                ("Reference", "INV-7"),
            ]
        );
    }

    #[cfg(feature = "server")]
    #[test]
    fn the_checksum_and_the_countrys_format_are_checked() {
        for good in [
            "NL91 ABNA 0417 1643 00",
            "DE89 3704 0044 0532 0130 00",
            "GB82 WEST 1234 5698 7654 32",
        ] {
            assert_eq!(bank(good, "").check(), Ok(()), "{good}");
        }
        // One digit off: the mod-97 checksum fails.
        for bad in [
            "NL91 ABNA 0417 1643 01",
            "GB82 WEST 1234 5698 7654 33",
            "DE89 3704",
            "XX00 1234 5678 9012 34",
        ] {
            assert!(
                bank(bad, "").check().unwrap_err().contains_key("iban"),
                "{bad}"
            );
        }
    }

    #[test]
    fn bics_references_and_lengths_are_checked() {
        assert!(bank("NL91ABNA0417164300", "ABNA")
            .check()
            .unwrap_err()
            .contains_key("bic"));
        assert!(bank("NL91ABNA0417164300", "1BNANL2A")
            .check()
            .unwrap_err()
            .contains_key("bic"));
        assert_eq!(bank("NL91ABNA0417164300", "ABNANL2AXXX").check(), Ok(()));
        assert!(bank("", "ABNANL2A")
            .check()
            .unwrap_err()
            .contains_key("iban"));
        let mut b = bank("", "");
        b.reference = "Invoice".into();
        assert!(b.check().unwrap_err().contains_key("reference"));
        b.reference = "Invoice {number}".into();
        b.other = "x".repeat(501);
        assert!(b.check().unwrap_err().contains_key("other"));
        b.other = "Routing 021000021, account 12345678".into();
        assert_eq!(b.check(), Ok(()));
        assert!(b.is_set());
        assert!(!BankDetails::default().is_set());
    }
}

//! The bank-transfer loop: statements in (ISO 20022 CAMT.053 / CAMT.054, SWIFT MT940), each entry
//! recorded once under its identity, credits matched to invoices by the references they carry.

pub mod camt;
pub mod entries;
pub mod import;
pub mod mt940;

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use chrono::NaiveDate;
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use crate::throttle::Bounded;

/// The most bytes a statement file may have (checked before it is read).
pub const MAX_FILE_BYTES: usize = 10 * 1024 * 1024;
/// The most entries one file may hold.
pub const MAX_ENTRIES: usize = 50_000;
/// The most characters kept of an entry's counterparty and remittance text.
pub const MAX_TEXT: usize = 1_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Camt053,
    Camt054,
    Mt940,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Camt053 => "camt.053",
            Format::Camt054 => "camt.054",
            Format::Mt940 => "mt940",
        }
    }
}

/// One booked entry of a statement, as the bank wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The account it was booked on: an IBAN, compact and upper case (or the bank's own id).
    pub account: String,
    pub booked_on: NaiveDate,
    /// Minor units of `currency`; credits positive, debits negative.
    pub amount_cents: i64,
    /// Upper case, as ISO 4217.
    pub currency: String,
    /// Who paid (a credit) or was paid (a debit), when the bank says.
    pub counterparty: String,
    /// The remittance information: free text and structured references, in the bank's order.
    pub remittance: String,
    /// The bank's own reference for the entry (CAMT `AcctSvcrRef`, MT940 `//` reference).
    pub bank_reference: Option<String>,
}

/// What a statement file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub format: Format,
    /// Every account the file reports on (one per statement), in order.
    pub accounts: Vec<String>,
    pub entries: Vec<Entry>,
}

/// Why a file was refused, with where: a line, an element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub at: String,
    pub reason: String,
}

impl ParseError {
    pub fn new(at: impl Into<String>, reason: impl Into<String>) -> Self {
        ParseError {
            at: at.into(),
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.at.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "{}: {}", self.at, self.reason)
        }
    }
}

/// The file as a statement, by its shape: XML is CAMT, text starting with MT940 fields is MT940.
pub fn parse(bytes: &[u8]) -> Result<Parsed, ParseError> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(ParseError::new("", "A statement file has at most 10 MB."));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| ParseError::new(format!("byte {}", e.valid_up_to()), "not UTF-8 text"))?;
    let start = text.trim_start_matches('\u{feff}').trim_start();
    if start.starts_with('<') {
        camt::parse(text)
    } else {
        mt940::parse(text)
    }
}

/// Statement files read at once: one per core, each on the blocking pool (a 10 MB file is a few
/// hundred milliseconds of CPU that must not stall the request workers).
static READS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    Arc::new(Semaphore::new(
        std::thread::available_parallelism().map_or(2, |n| n.get()),
    ))
});

/// How long an upload waits for a free [`READS`] slot before it is answered "busy".
pub const READ_WAIT: Duration = Duration::from_secs(5);

/// A statement file read: its parse and its SHA-256 (what an upload's claim is fingerprinted by).
pub struct Read {
    pub parsed: Result<Parsed, ParseError>,
    pub sha256: [u8; 32],
}

/// [`parse`] and the digest of `file`, off the request's thread and at most one per core at once;
/// `Busy` when no slot frees within [`READ_WAIT`].
pub async fn read(file: impl AsRef<[u8]> + Send + 'static) -> Result<Read, Bounded> {
    read_within(file, READ_WAIT).await
}

async fn read_within(
    file: impl AsRef<[u8]> + Send + 'static,
    wait: Duration,
) -> Result<Read, Bounded> {
    crate::throttle::bounded(&READS, wait, move || {
        let bytes = file.as_ref();
        Read {
            parsed: parse(bytes),
            sha256: Sha256::digest(bytes).into(),
        }
    })
    .await
}

/// `text` with its whitespace runs made single spaces, trimmed, at most [`MAX_TEXT`] characters.
pub fn tidy(text: &str) -> String {
    let mut out = String::new();
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    match out.char_indices().nth(MAX_TEXT) {
        Some((cut, _)) => out[..cut].to_owned(),
        None => out,
    }
}

/// A decimal amount (`"8.85"`, `"200000"`, `"885.00000"`; MT940's comma too) in minor units of a
/// currency with `exponent` decimals; more decimals only when they are zeros.
pub fn minor_units(text: &str, exponent: u32) -> Option<i64> {
    let text = text.trim().replace(',', ".");
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty()
        || !digits(whole)
        || !digits(fraction)
        || whole.len() > 15
    {
        return None;
    }
    let exponent = exponent as usize;
    let (kept, rest) = fraction.split_at(fraction.len().min(exponent));
    if rest.bytes().any(|b| b != b'0') {
        return None;
    }
    let whole: i64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let kept: i64 = if exponent == 0 {
        0
    } else {
        format!("{kept:0<exponent$}").parse().ok()?
    };
    whole
        .checked_mul(10_i64.pow(exponent as u32))?
        .checked_add(kept)
}

impl Entry {
    /// The entry's identity within its account: the bank's own reference where it gives one,
    /// else a digest of what the entry says plus `occurrence` (its place among the file's
    /// identical entries of that day), so that two equal payments on one day are two entries
    /// while the same entry in an overlapping statement is the same.
    pub fn key(&self, occurrence: usize) -> String {
        match &self.bank_reference {
            Some(r) if !r.is_empty() => format!("ref:{r}"),
            _ => format!("sum:{}:{occurrence}", self.digest()),
        }
    }

    fn digest(&self) -> String {
        let mut h = Sha256::new();
        for part in [
            self.booked_on.to_string(),
            self.amount_cents.to_string(),
            self.currency.clone(),
            self.counterparty.clone(),
            self.remittance.clone(),
        ] {
            h.update(part.as_bytes());
            h.update([0x1f]);
        }
        hex::encode(&h.finalize()[..16])
    }
}

/// Each entry with its key: [`Entry::key`], occurrences counted in file order.
pub fn keyed(entries: &[Entry]) -> Vec<String> {
    let mut seen: std::collections::HashMap<(String, String), usize> = Default::default();
    entries
        .iter()
        .map(|e| match &e.bank_reference {
            Some(r) if !r.is_empty() => e.key(0),
            _ => {
                let n = seen.entry((e.account.clone(), e.digest())).or_default();
                *n += 1;
                e.key(*n)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads take one slot each, one slot per core: with every slot held, a read waits, then is refused
    /// (nothing parsed); once one frees, it runs and gives the parse and the digest.
    #[tokio::test]
    async fn reads_wait_for_a_slot_and_are_busy_when_none_frees() {
        let slots = READS.available_permits() as u32;
        let held = READS.clone().acquire_many_owned(slots).await.unwrap();
        let refused = read_within(b":20:X".to_vec(), Duration::from_millis(50)).await;
        assert!(matches!(refused, Err(Bounded::Busy)));
        drop(held);
        let read = read_within(b":20:X".to_vec(), Duration::from_secs(5))
            .await
            .unwrap_or_else(|_| panic!("a free slot"));
        assert!(read.parsed.is_err(), "not a whole MT940 statement");
        assert_eq!(read.sha256, <[u8; 32]>::from(Sha256::digest(b":20:X")));
    }

    #[test]
    fn amounts_in_minor_units() {
        assert_eq!(minor_units("8.85", 2), Some(885));
        assert_eq!(minor_units("885.00000", 2), Some(88_500));
        assert_eq!(minor_units("200000", 2), Some(20_000_000));
        assert_eq!(minor_units("3.1", 2), Some(310));
        assert_eq!(minor_units("1500,00", 2), Some(150_000));
        assert_eq!(minor_units("2700", 0), Some(2700));
        assert_eq!(minor_units("1.001", 2), None);
        assert_eq!(minor_units("-5", 2), None);
        assert_eq!(minor_units("", 2), None);
        assert_eq!(minor_units("1e5", 2), None);
        assert_eq!(minor_units(&"9".repeat(30), 2), None);
    }

    fn entry(amount: i64, reference: Option<&str>) -> Entry {
        Entry {
            account: "NL91ABNA0417164300".into(),
            booked_on: "2026-12-01".parse().unwrap(),
            amount_cents: amount,
            currency: "EUR".into(),
            counterparty: "Ada".into(),
            remittance: "INV-1".into(),
            bank_reference: reference.map(Into::into),
        }
    }

    #[test]
    fn identical_entries_of_a_day_are_counted_apart_and_a_bank_reference_is_the_identity() {
        let keys = keyed(&[
            entry(100, None),
            entry(100, None),
            entry(200, None),
            entry(100, Some("X1")),
        ]);
        assert_eq!(keys[3], "ref:X1");
        assert_ne!(keys[0], keys[1]);
        assert!(keys[0].ends_with(":1") && keys[1].ends_with(":2") && keys[2].ends_with(":1"));
        // The same entries in another file (an overlapping statement) have the same keys.
        assert_eq!(
            keyed(&[entry(100, None), entry(100, None)]),
            keys[..2].to_vec()
        );
    }

    #[test]
    fn text_is_tidied_and_bounded() {
        assert_eq!(tidy("  a \n b\t c "), "a b c");
        assert_eq!(tidy(&"é".repeat(5_000)).chars().count(), MAX_TEXT);
    }
}

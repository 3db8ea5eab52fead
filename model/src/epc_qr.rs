//! The payment QR code's text: the European Payments Council's "SEPA credit transfer" QR
//! (EPC069-12, version 002): what a banking app reads to fill in a transfer.

/// The most bytes the standard allows in the whole text.
pub const MAX_BYTES: usize = 331;

/// A credit transfer to ask for: in euros only (the standard's currency).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer<'a> {
    /// Optional in version 002 inside the EEA.
    pub bic: &'a str,
    /// The account holder (at most 70 characters).
    pub name: &'a str,
    /// Compact, upper case.
    pub iban: &'a str,
    /// Euro cents, 1 to 99,999,999,999.
    pub amount_cents: i64,
    /// An ISO 11649 reference (at most 35 characters), the invoice's.
    pub reference: &'a str,
}

/// At most `n` characters of `text`, without line breaks (they separate the fields).
fn field(text: &str, n: usize) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(n)
        .collect::<String>()
        .trim()
        .to_owned()
}

impl Transfer<'_> {
    /// The QR code's text: service tag, version 002, UTF-8, "SCT", BIC, name, IBAN, "EUR" and the
    /// amount, no purpose, the structured reference, no free text; `None` when a field is out of
    /// the standard's bounds (nothing to pay, no IBAN or name).
    pub fn payload(&self) -> Option<String> {
        let amount_ok = (1..=99_999_999_999).contains(&self.amount_cents);
        let iban_ok = (15..=34).contains(&self.iban.len())
            && self.iban.bytes().all(|b| b.is_ascii_alphanumeric());
        let name = field(self.name, 70);
        if !amount_ok || !iban_ok || name.is_empty() || self.reference.len() > 35 {
            return None;
        }
        let amount = format!(
            "EUR{}.{:02}",
            self.amount_cents / 100,
            self.amount_cents % 100
        );
        let text = [
            "BCD",
            "002",
            "1",
            "SCT",
            &field(self.bic, 11),
            &name,
            self.iban,
            &amount,
            "",
            self.reference,
        ]
        .join("\n");
        (text.len() <= MAX_BYTES).then_some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transfer(amount_cents: i64) -> Transfer<'static> {
        Transfer {
            bic: "BPOTBEB1",
            name: "Red Cross of Belgium",
            iban: "BE72000000001616",
            amount_cents,
            reference: "RF18539007547034",
        }
    }

    #[test]
    fn the_fields_in_the_standards_order() {
        assert_eq!(
            transfer(100).payload().unwrap(),
            "BCD\n002\n1\nSCT\nBPOTBEB1\nRed Cross of Belgium\nBE72000000001616\nEUR1.00\n\nRF18539007547034"
        );
        assert!(transfer(1_234_567)
            .payload()
            .unwrap()
            .contains("\nEUR12345.67\n"));
        assert!(transfer(5).payload().unwrap().contains("\nEUR0.05\n"));
    }

    #[test]
    fn nothing_to_pay_or_no_account_is_no_code() {
        assert_eq!(transfer(0).payload(), None);
        assert_eq!(transfer(-1).payload(), None);
        assert_eq!(transfer(100_000_000_000).payload(), None);
        let mut t = transfer(100);
        t.iban = "";
        assert_eq!(t.payload(), None);
        let mut t = transfer(100);
        t.name = " \n ";
        assert_eq!(t.payload(), None);
        // A name with a line break cannot shift the fields after it.
        let mut t = transfer(100);
        t.name = "Acme\nBE00";
        assert_eq!(t.payload().unwrap().lines().count(), 10);
    }
}

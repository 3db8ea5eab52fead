//! ISO 11649 structured creditor references ("RF" + two check digits + up to 21 letters and
//! digits): what a finalized invoice asks its payer to quote, and what a bank entry's remittance
//! text is searched for. The check digits are ISO 7064 MOD 97-10, as in an IBAN.

/// The most characters after "RF" and the check digits.
pub const MAX_BODY: usize = 21;

/// `text`'s letters and digits, upper case: the compact form a reference is made of.
fn alphanumerics(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// MOD 97 of `text` read as digits, each letter standing for two (A = 10 … Z = 35).
fn mod97(text: &str) -> Option<u32> {
    let mut rest = 0u32;
    for c in text.chars() {
        let value = c.to_digit(36)?;
        rest = if value < 10 {
            (rest * 10 + value) % 97
        } else {
            (rest * 100 + value) % 97
        };
    }
    Some(rest)
}

/// The reference for `body` (letters and digits, 1 to 21 of them): "RF" and its check digits
/// before it. `None` for an empty, longer or non-alphanumeric body.
pub fn creditor_reference(body: &str) -> Option<String> {
    let ok = (1..=MAX_BODY).contains(&body.len())
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase());
    if !ok {
        return None;
    }
    let check = 98 - mod97(&format!("{body}RF00"))?;
    Some(format!("RF{check:02}{body}"))
}

/// The reference of an invoice numbered `number`: the number's letters and digits when they fit
/// (so that a payer who types it recognises it), else the last 21 of them (the sequence is at
/// the end of every number format).
pub fn for_invoice_number(number: &str) -> Option<String> {
    let body = alphanumerics(number);
    let start = body.len().saturating_sub(MAX_BODY);
    creditor_reference(&body[start..])
}

/// Whether `text` (compact, upper case) is a reference whose check digits hold.
pub fn is_valid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 5
        && bytes.len() <= 4 + MAX_BODY
        && text.starts_with("RF")
        && bytes[2..4].iter().all(u8::is_ascii_digit)
        && bytes[4..]
            .iter()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
        && mod97(&format!("{}{}", &text[4..], &text[..4])) == Some(1)
}

/// The reference in groups of four, as it is printed: "RF18 5390 0754 7034".
pub fn printed(reference: &str) -> String {
    let chars: Vec<char> = reference.chars().collect();
    chars
        .chunks(4)
        .map(|group| group.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The references a remittance text may carry: read without spaces or punctuation (banks wrap
/// and group them), every "RF" followed by check digits and a body that holds, longest first at
/// each place. A chance hit (one in 97 per length) is harmless: the caller looks the candidates up
/// among its own invoices' references.
pub fn candidates(remittance: &str) -> Vec<String> {
    let compact = alphanumerics(remittance);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = compact[from..].find("RF").map(|i| i + from) {
        let end = compact.len().min(at + 4 + MAX_BODY);
        for stop in (at + 5..=end).rev() {
            let text = &compact[at..stop];
            if is_valid(text) && !out.iter().any(|o: &String| o == text) {
                out.push(text.to_owned());
            }
        }
        from = at + 2;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standards_example_and_its_check_digits() {
        // ISO 11649's own example: body 539007547034 → RF18 5390 0754 7034.
        assert_eq!(
            creditor_reference("539007547034").as_deref(),
            Some("RF18539007547034")
        );
        assert!(is_valid("RF18539007547034"));
        assert!(!is_valid("RF19539007547034"));
        assert!(!is_valid("RF18539007547035"));
        assert_eq!(printed("RF18539007547034"), "RF18 5390 0754 7034");
        assert_eq!(creditor_reference(""), None);
        assert_eq!(creditor_reference(&"1".repeat(22)), None);
        assert_eq!(creditor_reference("abc"), None);
    }

    #[test]
    fn an_invoice_number_becomes_a_reference_that_holds() {
        for number in [
            "INV-2026-0001",
            "2027/17",
            "A",
            "F-2026-000000000000000000123",
        ] {
            let r = for_invoice_number(number).unwrap();
            assert!(is_valid(&r), "{number}: {r}");
            assert!(r.len() <= 25);
        }
        assert_eq!(
            &for_invoice_number("INV-2026-0001").unwrap()[4..],
            "INV20260001"
        );
        assert!(for_invoice_number("---").is_none());
        // MOD 97-10 catches every single-digit change and every swap of two neighbouring digits
        // (a letter counts as two digits, so a change to a letter may go unseen: 1 in 97).
        let r = for_invoice_number("2026-000417").unwrap();
        let chars: Vec<char> = r.chars().collect();
        for i in 2..chars.len() {
            for c in '0'..='9' {
                let mut changed = chars.clone();
                if changed[i] == c {
                    continue;
                }
                changed[i] = c;
                let changed: String = changed.into_iter().collect();
                assert!(!is_valid(&changed), "{changed}");
            }
            if i + 1 < chars.len() && chars[i] != chars[i + 1] {
                let mut swapped = chars.clone();
                swapped.swap(i, i + 1);
                let swapped: String = swapped.into_iter().collect();
                assert!(!is_valid(&swapped), "{swapped}");
            }
        }
    }

    #[test]
    fn references_are_found_in_remittance_text_however_the_bank_wrote_them() {
        let r = for_invoice_number("INV-2026-0042").unwrap();
        let grouped = printed(&r);
        for text in [
            format!("Payment {grouped} thanks"),
            format!("/ROC/{r}/"),
            grouped.to_lowercase(),
            format!("EREF+{}", r.replace("RF", "rf")),
        ] {
            assert!(
                candidates(&text).contains(&r),
                "{text}: {:?}",
                candidates(&text)
            );
        }
        assert!(candidates("rent for march").is_empty());
        assert!(candidates("RF").is_empty());
    }
}

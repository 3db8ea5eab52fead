//! SWIFT MT940 customer statements, read by the `mt940` crate (strict; a file with characters
//! outside SWIFT's set is read again through its sanitizer, which spells them in ASCII). A file
//! that still does not parse is refused with the crate's words, which name the line and column.

use mt940::{ExtDebitOrCredit, InformationToAccountOwner};

use super::{minor_units, tidy, Entry, Format, ParseError, Parsed, MAX_ENTRIES};

pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    let messages = match mt940::parse_mt940(text) {
        Ok(m) => m,
        Err(strict) => mt940::parse_mt940(&mt940::sanitizers::sanitize(text)).map_err(|_| {
            ParseError::new(
                "",
                format!("not an MT940 statement: {}", one_line(&strict.to_string())),
            )
        })?,
    };
    let mut accounts = Vec::new();
    let mut entries = Vec::new();
    for (n, message) in messages.iter().enumerate() {
        let currency = message
            .opening_balance
            .iso_currency_code
            .to_ascii_uppercase();
        let account = account_of(&message.account_id, &currency);
        if account.is_empty() {
            return Err(ParseError::new(
                format!("statement {}, :25:", n + 1),
                "no account",
            ));
        }
        accounts.push(account.clone());
        let exponent = model::currency_exponent(&currency).unwrap_or(2);
        for (i, line) in message.statement_lines.iter().enumerate() {
            if entries.len() >= MAX_ENTRIES {
                return Err(ParseError::new(
                    "",
                    format!("more than {MAX_ENTRIES} entries in one file"),
                ));
            }
            let at = || format!("statement {}, :61: line {}", n + 1, i + 1);
            let amount = line.amount.to_string();
            let cents = minor_units(&amount, exponent).ok_or_else(|| {
                ParseError::new(at(), format!("{amount} is not an amount in {currency}"))
            })?;
            let sign = match line.ext_debit_credit_indicator {
                ExtDebitOrCredit::Credit | ExtDebitOrCredit::ReverseDebit => 1,
                ExtDebitOrCredit::Debit | ExtDebitOrCredit::ReverseCredit => -1,
            };
            let (counterparty, mut remittance) = match &line.information_to_account_owner {
                Some(InformationToAccountOwner::Plain(text)) => (String::new(), vec![text.clone()]),
                Some(InformationToAccountOwner::Structured {
                    purpose,
                    additional_purpose,
                    applicant_name,
                    ..
                }) => (
                    applicant_name.clone().unwrap_or_default(),
                    [purpose, additional_purpose]
                        .into_iter()
                        .flatten()
                        .cloned()
                        .collect(),
                ),
                None => (String::new(), Vec::new()),
            };
            if line.customer_ref != "NONREF" && !line.customer_ref.is_empty() {
                remittance.insert(0, line.customer_ref.clone());
            }
            remittance.extend(line.supplementary_details.clone());
            entries.push(Entry {
                account: account.clone(),
                booked_on: line.entry_date.unwrap_or(line.value_date),
                amount_cents: sign * cents,
                currency: currency.clone(),
                counterparty: tidy(&counterparty),
                remittance: tidy(&remittance.join(" ")),
                bank_reference: line.bank_ref.as_deref().map(tidy).filter(|r| !r.is_empty()),
            });
        }
    }
    if accounts.is_empty() {
        return Err(ParseError::new("", "no statement in the file"));
    }
    Ok(Parsed {
        format: Format::Mt940,
        accounts,
        entries,
    })
}

/// Field 25 as an account: after a bank code and a slash when there is one, without spaces, upper
/// case, without a trailing currency code some banks add.
fn account_of(field: &str, currency: &str) -> String {
    let id: String = field
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_uppercase();
    match id.strip_suffix(currency) {
        Some(rest) if rest.len() >= 15 => rest.to_owned(),
        _ => id,
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATEMENT: &str = ":20:STARTUMSE
:25:ABNANL2A/NL91ABNA0417164300
:28C:00001/001
:60F:C261201EUR1000,00
:61:2612011201C125,50NTRFNONREF//BANKREF-1
:86:Payment RF18539007547034 from Ada
:61:2612021202D40,00NTRFNONREF
:86:Office rent
:62F:C261202EUR1085,50
";

    #[test]
    fn a_statement_reads_to_its_entries() {
        let p = parse(STATEMENT).unwrap();
        assert_eq!(p.accounts, ["NL91ABNA0417164300"]);
        assert_eq!(p.entries.len(), 2);
        let (a, b) = (&p.entries[0], &p.entries[1]);
        assert_eq!((a.amount_cents, a.currency.as_str()), (12_550, "EUR"));
        assert_eq!(a.booked_on.to_string(), "2026-12-01");
        assert_eq!(a.bank_reference.as_deref(), Some("BANKREF-1"));
        assert!(a.remittance.contains("RF18539007547034"));
        assert_eq!(
            (b.amount_cents, b.bank_reference.as_deref()),
            (-4_000, None)
        );
    }

    #[test]
    fn a_broken_field_is_refused_with_where() {
        let broken = STATEMENT.replace(":61:2612021202D40,00", ":61:26AB021202D40,00");
        let err = parse(&broken).unwrap_err();
        assert!(err.reason.starts_with("not an MT940 statement"), "{err}");
        assert!(
            err.reason.contains(':') && err.reason.chars().any(|c| c.is_ascii_digit()),
            "{err}"
        );
    }

    #[test]
    fn account_ids_with_bank_codes_and_currencies() {
        assert_eq!(
            account_of("ABNANL2A/NL91 ABNA 0417 1643 00", "EUR"),
            "NL91ABNA0417164300"
        );
        assert_eq!(
            account_of("NL91ABNA0417164300EUR", "EUR"),
            "NL91ABNA0417164300"
        );
        assert_eq!(account_of("123456789", "EUR"), "123456789");
    }
}

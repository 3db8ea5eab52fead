//! ISO 20022 bank-to-customer statements (CAMT.053, `BkToCstmrStmt`) and debit/credit
//! notifications (CAMT.054, `BkToCstmrDbtCdtNtfctn`), versions 001.02 on, read as a stream of
//! elements by local name (each version has its own namespace; the fields read are where every
//! version has them). A document type declaration is refused before anything else is read (no DTD,
//! no entity but XML's five and character references); nesting, entries and text are bounded.

use chrono::NaiveDate;
use quick_xml::events::Event;
use quick_xml::Reader;

use super::{minor_units, tidy, Entry, Format, ParseError, Parsed, MAX_ENTRIES};

/// The deepest nesting read (CAMT's own deepest paths are about 12).
const MAX_DEPTH: usize = 40;
/// The most characters one element's text may have.
const MAX_ELEMENT_TEXT: usize = 10_000;

/// What is being gathered for the entry being read.
#[derive(Default)]
struct Draft {
    amount: Option<(String, String)>,
    credit: Option<bool>,
    reversal: bool,
    status: String,
    booked: Option<String>,
    value_date: Option<String>,
    reference: Option<String>,
    tx_references: Vec<String>,
    debtor: Option<String>,
    creditor: Option<String>,
    remittance: Vec<String>,
}

struct Walk<'a> {
    text: &'a str,
    path: Vec<String>,
    format: Option<Format>,
    accounts: Vec<String>,
    account: Option<String>,
    entries: Vec<Entry>,
    draft: Option<Draft>,
    /// The text of the element being read, and the `Ccy` attribute of an amount.
    buffer: String,
    currency: Option<String>,
    /// Entries seen (pending ones included), for the bound and for messages.
    seen: usize,
    /// When the message and the statement were made: an entry without a booking or value date
    /// (a notification may have neither) was booked by then.
    header_date: Option<String>,
    record_date: Option<String>,
}

pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    let mut reader = Reader::from_str(text);
    reader.config_mut().trim_text(false);
    let mut walk = Walk {
        text,
        path: Vec::new(),
        format: None,
        accounts: Vec::new(),
        account: None,
        entries: Vec::new(),
        draft: None,
        buffer: String::new(),
        currency: None,
        seen: 0,
        header_date: None,
        record_date: None,
    };
    loop {
        let event = reader.read_event().map_err(|e| {
            walk.error_at(
                reader.error_position(),
                &format!("not well-formed XML ({e})"),
            )
        })?;
        match event {
            Event::DocType(_) => {
                return Err(walk.error_at(
                    reader.buffer_position(),
                    "a document type declaration (DTD) is not allowed in a statement",
                ))
            }
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                let currency = match e.try_get_attribute("Ccy") {
                    Ok(Some(a)) => Some(
                        a.unescape_value()
                            .map_err(|_| walk.error(&name, "an unreadable Ccy attribute"))?
                            .into_owned(),
                    ),
                    _ => None,
                };
                if walk.path.is_empty() {
                    walk.format = Some(root_format(&e)?);
                }
                walk.open(name, currency)?;
            }
            Event::Empty(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if walk.path.is_empty() {
                    return Err(ParseError::new(name, "an empty document"));
                }
                walk.open(name, None)?;
                walk.close()?;
            }
            Event::End(_) => walk.close()?,
            Event::Text(t) => {
                let piece = t.decode().map_err(|_| {
                    walk.error_at(reader.buffer_position(), "text that is not UTF-8")
                })?;
                walk.push_text(&piece)?;
            }
            Event::CData(t) => {
                let piece = t.decode().map_err(|_| {
                    walk.error_at(reader.buffer_position(), "text that is not UTF-8")
                })?;
                walk.push_text(&piece)?;
            }
            Event::GeneralRef(r) => {
                let resolved = crate::hostile_xml::reference(&r)
                    .map_err(|why| walk.error_at(reader.buffer_position(), &why))?;
                walk.push_text(&resolved)?;
            }
            Event::Eof => break,
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
        }
    }
    if !walk.path.is_empty() {
        return Err(ParseError::new(
            walk.path.join("/"),
            "the file ends inside this element",
        ));
    }
    let format = walk
        .format
        .ok_or_else(|| ParseError::new("", "no CAMT document in the file"))?;
    if walk.accounts.is_empty() {
        return Err(ParseError::new(
            "",
            "no statement or notification in the file",
        ));
    }
    Ok(Parsed {
        format,
        accounts: walk.accounts,
        entries: walk.entries,
    })
}

/// CAMT.053 or CAMT.054 from the root's namespace (`urn:iso:std:iso:20022:tech:xsd:camt.053.001.08`).
fn root_format(root: &quick_xml::events::BytesStart<'_>) -> Result<Format, ParseError> {
    let name = String::from_utf8_lossy(root.local_name().as_ref()).into_owned();
    if name != "Document" {
        return Err(ParseError::new(name, "a CAMT file's root is Document"));
    }
    let namespace = root
        .attributes()
        .flatten()
        .find(|a| a.key.as_ref() == b"xmlns")
        .map(|a| String::from_utf8_lossy(&a.value).into_owned())
        .unwrap_or_default();
    let message = namespace
        .strip_prefix("urn:iso:std:iso:20022:tech:xsd:")
        .unwrap_or_default();
    let (kind, version) = message.split_at(message.len().min(8));
    let version_ok = version
        .strip_prefix(".001.")
        .and_then(|v| v.parse::<u8>().ok())
        .is_some_and(|v| (2..=13).contains(&v));
    match (kind, version_ok) {
        ("camt.053", true) => Ok(Format::Camt053),
        ("camt.054", true) => Ok(Format::Camt054),
        _ => Err(ParseError::new(
            "Document",
            format!(
                "not a CAMT.053 or CAMT.054 document of version 001.02 or later (namespace {namespace:?})"
            ),
        )),
    }
}

impl Walk<'_> {
    fn here(&self) -> String {
        self.path.join("/")
    }

    fn error(&self, name: &str, reason: &str) -> ParseError {
        let mut at = self.here();
        if !name.is_empty() {
            at = format!("{at}/{name}");
        }
        if self.in_entry().is_some() {
            at = format!("{at} (entry {})", self.seen);
        }
        ParseError::new(at, reason)
    }

    /// An error at byte `position`: its line, and the element being read.
    fn error_at(&self, position: u64, reason: &str) -> ParseError {
        let end = (position as usize).min(self.text.len());
        let line = self.text.as_bytes()[..end]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        let at = match self.here() {
            e if e.is_empty() => format!("line {line}"),
            e => format!("line {line}, {e}"),
        };
        ParseError::new(at, reason)
    }

    fn is(&self, tail: &[&str]) -> bool {
        self.path.len() >= tail.len()
            && self.path[self.path.len() - tail.len()..]
                .iter()
                .zip(tail)
                .all(|(a, b)| a == b)
    }

    /// Inside an entry: the path below its `Ntry`.
    fn in_entry(&self) -> Option<&[String]> {
        let at = self.path.iter().rposition(|p| p == "Ntry")?;
        Some(&self.path[at + 1..])
    }

    fn open(&mut self, name: String, currency: Option<String>) -> Result<(), ParseError> {
        if self.path.len() >= MAX_DEPTH {
            return Err(self.error(&name, "nested deeper than a statement is"));
        }
        self.path.push(name);
        self.buffer.clear();
        self.currency = currency;
        let record = self.is(&["Stmt"]) || self.is(&["Ntfctn"]);
        if record && self.path.len() == 3 {
            self.account = None;
            self.record_date = None;
        }
        if self.is(&["Stmt", "Ntry"]) || self.is(&["Ntfctn", "Ntry"]) {
            self.seen += 1;
            if self.seen > MAX_ENTRIES {
                return Err(self.error("", &format!("more than {MAX_ENTRIES} entries in one file")));
            }
            self.draft = Some(Draft::default());
        }
        Ok(())
    }

    fn push_text(&mut self, piece: &str) -> Result<(), ParseError> {
        if self.buffer.len() + piece.len() > MAX_ELEMENT_TEXT {
            return Err(self.error("", &format!("text longer than {MAX_ELEMENT_TEXT} bytes")));
        }
        self.buffer.push_str(piece);
        Ok(())
    }

    fn close(&mut self) -> Result<(), ParseError> {
        let text = std::mem::take(&mut self.buffer).trim().to_owned();
        // The statement's account: Stmt/Acct/Id/IBAN (or another id).
        let in_account = self.path.len() >= 4
            && (self.path[2] == "Stmt" || self.path[2] == "Ntfctn")
            && self.path[3] == "Acct";
        if in_account
            && (self.is(&["Acct", "Id", "IBAN"])
                || (self.is(&["Acct", "Id", "Othr", "Id"]) && self.account.is_none()))
        {
            let id: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            self.account = Some(id.to_ascii_uppercase());
        }
        if self.path.len() == 4 && self.path[3] == "CreDtTm" {
            match self.path[2].as_str() {
                "GrpHdr" => self.header_date = Some(text.clone()),
                "Stmt" | "Ntfctn" => self.record_date = Some(text.clone()),
                _ => {}
            }
        }
        if (self.is(&["Stmt", "Acct"]) || self.is(&["Ntfctn", "Acct"])) && self.path.len() == 4 {
            let account = self
                .account
                .clone()
                .ok_or_else(|| self.error("Id", "the account has no IBAN or other id"))?;
            self.accounts.push(account);
        }
        if let Some(inner) = self.in_entry().map(|p| p.join("/")) {
            let currency = self.currency.take();
            if let Some(d) = self.draft.as_mut() {
                match inner.as_str() {
                    "Amt" => d.amount = Some((text, currency.unwrap_or_default())),
                    "CdtDbtInd" => d.credit = Some(text == "CRDT"),
                    "RvslInd" => d.reversal = text == "true",
                    "Sts" | "Sts/Cd" => d.status = text,
                    "BookgDt/Dt" | "BookgDt/DtTm" => d.booked = Some(text),
                    "ValDt/Dt" | "ValDt/DtTm" => d.value_date = Some(text),
                    "AcctSvcrRef" => d.reference = Some(text),
                    "NtryDtls/TxDtls/Refs/AcctSvcrRef" => d.tx_references.push(text),
                    "AddtlNtryInf" => d.remittance.push(text),
                    _ if inner.ends_with("/RmtInf/Ustrd")
                        || inner.ends_with("/RmtInf/Strd/CdtrRefInf/Ref")
                        || inner.ends_with("/RmtInf/Strd/AddtlRmtInf") =>
                    {
                        d.remittance.push(text)
                    }
                    _ if inner.contains("/RltdPties/Dbtr/") && inner.ends_with("/Nm") => {
                        d.debtor.get_or_insert(text);
                    }
                    _ if inner.contains("/RltdPties/Cdtr/") && inner.ends_with("/Nm") => {
                        d.creditor.get_or_insert(text);
                    }
                    _ => {}
                }
            }
        }
        if self.is(&["Stmt", "Ntry"]) || self.is(&["Ntfctn", "Ntry"]) {
            let draft = self.draft.take().expect("an entry was opened");
            if let Some(entry) = self.finish(draft)? {
                self.entries.push(entry);
            }
        }
        self.path.pop();
        Ok(())
    }

    /// A booked entry, checked; `None` for a pending or informational one.
    fn finish(&self, d: Draft) -> Result<Option<Entry>, ParseError> {
        if !d.status.is_empty() && d.status != "BOOK" {
            return Ok(None);
        }
        let (amount, currency) = d
            .amount
            .ok_or_else(|| self.error("Amt", "an entry without its amount"))?;
        if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(self.error("Amt", "an amount without its currency (Ccy)"));
        }
        let currency = currency.to_ascii_uppercase();
        let exponent = model::currency_exponent(&currency).unwrap_or(2);
        let cents = minor_units(&amount, exponent).ok_or_else(|| {
            self.error("Amt", &format!("{amount:?} is not an amount in {currency}"))
        })?;
        let credit = d
            .credit
            .ok_or_else(|| self.error("CdtDbtInd", "an entry that is neither CRDT nor DBIT"))?;
        // A reversal books the opposite of what its indicator says.
        let sign = if credit != d.reversal { 1 } else { -1 };
        let date = d
            .booked
            .or(d.value_date)
            .or_else(|| self.record_date.clone())
            .or_else(|| self.header_date.clone())
            .ok_or_else(|| self.error("BookgDt", "an entry without its booking date"))?;
        let booked_on = NaiveDate::parse_from_str(date.get(..10).unwrap_or(&date), "%Y-%m-%d")
            .map_err(|_| self.error("BookgDt", &format!("{date:?} is not a date")))?;
        let account = self
            .account
            .clone()
            .ok_or_else(|| self.error("", "an entry before its statement's account"))?;
        let reference = d
            .reference
            .filter(|r| !r.is_empty() && r != "NOTPROVIDED")
            .or_else(|| match d.tx_references.as_slice() {
                [only] if !only.is_empty() && only != "NOTPROVIDED" => Some(only.clone()),
                _ => None,
            });
        let counterparty = if credit != d.reversal {
            d.debtor
        } else {
            d.creditor
        };
        Ok(Some(Entry {
            account,
            booked_on,
            amount_cents: sign * cents,
            currency,
            counterparty: tidy(&counterparty.unwrap_or_default()),
            remittance: tidy(&d.remittance.join(" ")),
            bank_reference: reference.map(|r| tidy(&r)),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> String {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/camt/");
        std::fs::read_to_string(format!("{dir}{name}")).unwrap()
    }

    /// genkgo/camt's samples: each file's format, accounts, entry count and signed sum in minor
    /// units, as the files declare them (their JSON snapshots agree).
    #[test]
    fn the_public_samples_read_to_what_they_declare() {
        let v053 = "NL26VAYB8060476890";
        let ch = "CH2801234000123456789";
        // (file, format, accounts, entries, signed sum, currency)
        type Case<'a> = (&'a str, Format, &'a [&'a str], usize, i64, &'a str);
        let cases: &[Case] = &[
            (
                "camt053.v2.minimal.xml",
                Format::Camt053,
                &[v053],
                1,
                885,
                "EUR",
            ),
            (
                "camt053.v2.minimal.ultimate.xml",
                Format::Camt053,
                &[v053],
                1,
                885,
                "EUR",
            ),
            (
                "camt053.v2.all-balance-types.xml",
                Format::Camt053,
                &[ch],
                1,
                885,
                "EUR",
            ),
            (
                "camt053.v2.five.decimals.xml",
                Format::Camt053,
                &[v053],
                1,
                885,
                "EUR",
            ),
            (
                "camt053.v2.with-account-name.xml",
                Format::Camt053,
                &[ch],
                1,
                885,
                "EUR",
            ),
            (
                "camt053.v2.with-party-ids.xml",
                Format::Camt053,
                &[v053],
                1,
                885,
                "EUR",
            ),
            (
                "camt053.v2.multi.statement.xml",
                Format::Camt053,
                &[v053, v053],
                2,
                185,
                "EUR",
            ),
            ("camt053.v3.xml", Format::Camt053, &[v053], 1, 885, "EUR"),
            ("camt053.v4.xml", Format::Camt053, &[v053], 1, 885, "EUR"),
            ("camt053.v8.xml", Format::Camt053, &[v053], 1, 885, "EUR"),
            (
                "camt53.only-Dt-with-DtTm.xml",
                Format::Camt053,
                &["GB33BUKB20201555555555"],
                0,
                0,
                "",
            ),
        ];
        for (file, format, accounts, count, sum, currency) in cases {
            let p = parse(&sample(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(p.format, *format, "{file}");
            assert_eq!(p.accounts, *accounts, "{file}");
            assert_eq!(p.entries.len(), *count, "{file}");
            assert_eq!(
                p.entries.iter().map(|e| e.amount_cents).sum::<i64>(),
                *sum,
                "{file}"
            );
            assert!(p.entries.iter().all(|e| e.currency == *currency), "{file}");
        }
        for file in [
            "camt054.v2.xml",
            "camt054.v2.with-account-name.xml",
            "camt054.v4.xml",
            "camt054.v8.xml",
            "camt054.v8-with-UETR.xml",
            "camt054.v8-with-financial-institution.xml",
        ] {
            let p = parse(&sample(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(p.format, Format::Camt054, "{file}");
            assert_eq!(p.accounts, [ch], "{file}");
            assert_eq!(p.entries.len(), 1, "{file}");
            assert_eq!(
                (p.entries[0].amount_cents, p.entries[0].currency.as_str()),
                (-20_000_000, "SEK"),
                "{file}"
            );
        }
        let v8 = parse(&sample("camt053.v8.xml")).unwrap();
        assert_eq!(
            v8.entries[0].bank_reference.as_deref(),
            Some("AAAASESS-FP-CN_98765/01")
        );
        assert_eq!(v8.entries[0].booked_on.to_string(), "2014-12-31");
        let err = parse(&sample("camt053.v2.wrong.xml")).unwrap_err();
        assert!(err.reason.contains("no statement"), "{err}");
    }

    fn statement(entries: &str) -> String {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"><BkToCstmrStmt><Stmt>
<Acct><Id><IBAN>NL91 ABNA 0417 1643 00</IBAN></Id></Acct>{entries}</Stmt></BkToCstmrStmt></Document>"#
        )
    }

    const CREDIT: &str = "<Ntry><Amt Ccy=\"EUR\">125.50</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts>\
        <BookgDt><Dt>2026-12-01</Dt></BookgDt><NtryDtls><TxDtls><RltdPties><Dbtr><Nm>Ada &amp; Co</Nm></Dbtr></RltdPties>\
        <RmtInf><Ustrd>Invoice INV-0042</Ustrd><Strd><CdtrRefInf><Ref>RF18539007547034</Ref></CdtrRefInf></Strd></RmtInf></TxDtls></NtryDtls></Ntry>";

    #[test]
    fn an_entry_keeps_its_payer_and_remittance_and_pending_ones_are_left_out() {
        let pending = CREDIT.replace("<Sts>BOOK</Sts>", "<Sts>PDNG</Sts>");
        let p = parse(&statement(&format!("{CREDIT}{pending}"))).unwrap();
        assert_eq!(p.accounts, ["NL91ABNA0417164300"]);
        assert_eq!(p.entries.len(), 1);
        let e = &p.entries[0];
        assert_eq!(
            (e.amount_cents, e.counterparty.as_str()),
            (12_550, "Ada & Co")
        );
        assert_eq!(e.remittance, "Invoice INV-0042 RF18539007547034");
        assert_eq!(e.bank_reference, None);
    }

    #[test]
    fn hostile_and_broken_files_are_refused_saying_where() {
        let laughs = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02">&lol2;</Document>"#;
        assert!(parse(laughs).unwrap_err().reason.contains("DTD"));
        let entity = statement(&CREDIT.replace("Ada &amp; Co", "&xxe;"));
        assert!(parse(&entity).unwrap_err().reason.contains("&xxe;"));
        let whole = statement(CREDIT);
        let truncated = &whole[..whole.len() - 40];
        let err = parse(truncated).unwrap_err();
        assert!(err.at.contains("Stmt"), "{err}");
        let bad_amount = statement(&CREDIT.replace("125.50", "12x"));
        let err = parse(&bad_amount).unwrap_err();
        assert!(err.at.contains("Ntry") && err.at.contains("Amt"), "{err}");
        let deep = format!(
            "<Document xmlns=\"urn:iso:std:iso:20022:tech:xsd:camt.053.001.02\">{}{}</Document>",
            "<a>".repeat(100),
            "</a>".repeat(100)
        );
        assert!(parse(&deep).unwrap_err().reason.contains("deeper"));
        let many = statement(&CREDIT.repeat(MAX_ENTRIES + 1));
        assert!(parse(&many).unwrap_err().reason.contains("entries"));
        let other = statement(CREDIT).replace("camt.053.001.02", "pain.001.001.03");
        assert!(parse(&other).unwrap_err().reason.contains("not a CAMT"));
        let unclosed = "<Document xmlns=\"urn:iso:std:iso:20022:tech:xsd:camt.053.001.02\">\n<BkToCstmrStmt>\n<Stmt></Acct>";
        let err = parse(unclosed).unwrap_err();
        assert!(err.at.starts_with("line 3"), "{err}");
    }
}

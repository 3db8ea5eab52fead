//! CSV as accountants open it: RFC 4180 (the `csv` crate), UTF-8, and no cell a spreadsheet would
//! run as a formula: the writer passes every cell through [`cell`], whoever filled it (a document
//! number's format is owner text too), so text that begins with `=`, `+`, `-`, `@`, a tab or a
//! carriage return gets a leading `'` (OWASP's advice for CSV injection). Plain numbers are left
//! as they are (`-5.00` is an amount, not a formula).

use axum::http::header;
use axum::response::{IntoResponse, Response};

use invoicer_core::reports::exports::cell;

/// An amount of `currency`'s minor units as a plain decimal: `123456` → `1234.56`.
pub fn amount(minor: i64, currency: &str) -> String {
    model::plain_amount(minor, currency)
}

/// `records` as one CSV file (the header is the first record).
pub fn file<R, C>(records: impl IntoIterator<Item = R>) -> Result<Vec<u8>, csv::Error>
where
    R: IntoIterator<Item = C>,
    C: AsRef<str>,
{
    // RFC 4180 ends records with CRLF (the crate's default is LF).
    let mut out = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    for record in records {
        out.write_record(record.into_iter().map(|c| cell(c.as_ref()).into_owned()))?;
    }
    out.into_inner().map_err(|e| e.into_error().into())
}

/// `bytes` (a whole CSV file) as a download named `name`.
pub fn download(bytes: Vec<u8>, name: &str) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
            (header::CACHE_CONTROL, "private, no-store".to_owned()),
        ],
        bytes,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_end_with_crlf_and_quote_what_needs_it() {
        let bytes = file([["a", "b,c"], ["\"q\"", "line\nbreak"]]).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "a,\"b,c\"\r\n\"\"\"q\"\"\",\"line\nbreak\"\r\n"
        );
    }

    #[test]
    fn amounts_are_plain_decimals() {
        assert_eq!(amount(123_456, "eur"), "1234.56");
        assert_eq!(amount(-500, "usd"), "-5.00");
        assert_eq!(amount(1234, "jpy"), "1234");
    }
}

//! CSV as accountants open it: RFC 4180 (the `csv` crate), UTF-8, and no cell a spreadsheet would
//! run as a formula: text that begins with `=`, `+`, `-`, `@`, a tab or a carriage return gets a
//! leading `'` (OWASP's advice for CSV injection). Numbers the server writes itself are written as
//! they are (`-5.00` is an amount, not a formula).

use std::borrow::Cow;

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// `text` safe to open in a spreadsheet.
pub fn cell(text: &str) -> Cow<'_, str> {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        Cow::Owned(format!("'{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// An amount of `currency`'s minor units as a plain decimal: `123456` → `1234.56`.
pub fn amount(minor: i64, currency: &str) -> String {
    app::model::plain_amount(minor, currency)
}

/// `records` as one CSV file (the header is the first record).
pub fn file<R, C>(records: impl IntoIterator<Item = R>) -> Result<Vec<u8>, csv::Error>
where
    R: IntoIterator<Item = C>,
    C: AsRef<[u8]>,
{
    let mut out = csv::Writer::from_writer(Vec::new());
    for record in records {
        out.write_record(record)?;
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
    fn formulas_are_neutralised_and_the_rest_is_left_alone() {
        for bad in [
            "=1+1",
            "+1",
            "-1",
            "@SUM(A1)",
            "\tx",
            "\rx",
            "=HYPERLINK(\"http://x\")",
        ] {
            assert_eq!(cell(bad), format!("'{bad}"), "{bad:?}");
        }
        for fine in ["Acme", "1+1", "a=b", "", "'quoted"] {
            assert_eq!(cell(fine), fine);
        }
        assert_eq!(amount(123_456, "eur"), "1234.56");
        assert_eq!(amount(-500, "usd"), "-5.00");
        assert_eq!(amount(1234, "jpy"), "1234");
    }
}

//! The e-invoice XML inside a Factur-X / ZUGFeRD PDF: its embedded files' streams (a stream is never
//! inside an object stream, so each is found as `<< /Type /EmbeddedFile ... >> stream ... endstream`
//! in the file itself), inflated within limits, the first that is CII or UBL taken.

use std::io::Read;

/// How many embedded files are looked at.
pub const MAX_ATTACHMENTS: usize = 20;
/// How large an embedded file may be once inflated.
pub const MAX_XML: u64 = 5 * 1024 * 1024;

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn rfind(haystack: &[u8], needle: &[u8], before: usize) -> Option<usize> {
    haystack
        .get(..before)?
        .windows(needle.len())
        .rposition(|w| w == needle)
}

/// Whether `bytes` start like a PDF.
pub fn is_pdf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"%PDF-")
}

/// The first embedded file that reads as an e-invoice (its root CrossIndustryInvoice, Invoice or
/// CreditNote); None when the PDF carries none.
pub fn embedded_xml(pdf: &[u8]) -> Option<Vec<u8>> {
    let mut at = 0;
    let mut seen = 0;
    while let Some(found) = find(pdf, b"/EmbeddedFile", at) {
        at = found + b"/EmbeddedFile".len();
        // `/EmbeddedFiles` (the names tree) is not a file.
        if pdf.get(at).is_some_and(|b| b.is_ascii_alphanumeric()) {
            continue;
        }
        seen += 1;
        if seen > MAX_ATTACHMENTS {
            return None;
        }
        let Some(start) = rfind(pdf, b"<<", found) else {
            continue;
        };
        let Some(keyword) = find(pdf, b"stream", at) else {
            continue;
        };
        // The stream's own dictionary: no other object between it and its data.
        if keyword - start > 4096 || find(&pdf[at..keyword], b"endobj", 0).is_some() {
            continue;
        }
        let dictionary = &pdf[start..keyword];
        let mut data_start = keyword + b"stream".len();
        if pdf.get(data_start) == Some(&b'\r') {
            data_start += 1;
        }
        if pdf.get(data_start) == Some(&b'\n') {
            data_start += 1;
        }
        let Some(end) = find(pdf, b"endstream", data_start) else {
            continue;
        };
        let raw = &pdf[data_start..end];
        let data = if find(dictionary, b"/FlateDecode", 0).is_some() {
            let mut out = Vec::new();
            let inflated = flate2::read::ZlibDecoder::new(raw)
                .take(MAX_XML + 1)
                .read_to_end(&mut out);
            if inflated.is_err() || out.len() as u64 > MAX_XML {
                continue;
            }
            out
        } else if find(dictionary, b"/Filter", 0).is_some() {
            continue;
        } else {
            raw.to_vec()
        };
        let head = String::from_utf8_lossy(&data[..data.len().min(4000)]).into_owned();
        if head.contains("CrossIndustryInvoice")
            || head.contains("<Invoice")
            || head.contains(":Invoice")
            || head.contains("CreditNote")
        {
            return Some(data);
        }
    }
    None
}

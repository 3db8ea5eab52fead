//! Factur-X / ZUGFeRD: the invoice PDF as PDF/A-3b carrying its EN 16931 CII document as
//! `factur-x.xml` (relationship Alternative: the XML is the invoice the PDF shows), with the
//! Factur-X XMP properties and their PDF/A extension schema. krilla writes the PDF/A-3b (checking its
//! rules as it serialises) and the attachment; the Factur-X properties are added to its XMP
//! packet by an incremental update that replaces the metadata stream.

use krilla::configure::{Archival, ConfigurationBuilder};
use krilla::embed::{AssociationKind, EmbeddedFile, MimeType};
use krilla::metadata::DateTime;
use krilla::{Document, SerializeSettings};

/// The attachment's name, as the specification fixes it.
pub const FILE_NAME: &str = "factur-x.xml";
const NAMESPACE: &str = "urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#";

/// A document that will be PDF/A-3b.
pub fn document() -> Document {
    let configuration = ConfigurationBuilder::new()
        .with_archival_validator(Archival::A3_B)
        .finish()
        .expect("PDF/A-3b alone is a configuration");
    let settings = SerializeSettings {
        configuration,
        ..SerializeSettings::default()
    };
    Document::new_with(settings)
}

/// A krilla date from the invoice's finalization (the document's date and the attachment's).
fn date(at: chrono::DateTime<chrono::Utc>) -> DateTime {
    use chrono::{Datelike, Timelike};
    DateTime::new(at.year() as u16)
        .month(at.month() as u8)
        .day(at.day() as u8)
        .hour(at.hour() as u8)
        .minute(at.minute() as u8)
        .second(at.second() as u8)
        .utc_offset_hour(0)
        .utc_offset_minute(0)
}

/// The PDF bytes of `doc`; with `cii`, a Factur-X PDF/A-3b dated `at` (the document's finalization).
pub fn finish(
    mut doc: Document,
    title: String,
    cii: Option<Vec<u8>>,
    at: chrono::DateTime<chrono::Utc>,
) -> Vec<u8> {
    let Some(cii) = cii else {
        return doc
            .finish()
            .expect("a PDF of text and rules always serialises");
    };
    // PDF/A dates the document; the attachment is dated with it.
    let at = date(at);
    doc.set_metadata(
        krilla::metadata::Metadata::new()
            .title(title)
            .creator("invoicer".to_owned())
            .creation_date(at),
    );
    attach(&mut doc, cii, at);
    let pdf = doc
        .finish()
        .expect("a PDF/A-3b of text and rules always serialises");
    with_xmp(pdf)
}

/// Attaches the CII document.
fn attach(doc: &mut Document, xml: Vec<u8>, at: DateTime) {
    let file = EmbeddedFile {
        path: FILE_NAME.to_owned(),
        mime_type: MimeType::new("text/xml"),
        description: Some("Factur-X invoice (EN 16931)".to_owned()),
        association_kind: AssociationKind::Alternative,
        data: xml.into(),
        modification_date: Some(at),
        compress: Some(true),
        location: None,
    };
    doc.embed_file(file).expect("one attachment, named once");
}

/// The Factur-X properties and the PDF/A extension schema that declares them.
fn facturx_xmp() -> String {
    let property = |name: &str, description: &str| {
        format!(
            "<rdf:li rdf:parseType=\"Resource\"><pdfaProperty:name>{name}</pdfaProperty:name>\
             <pdfaProperty:valueType>Text</pdfaProperty:valueType>\
             <pdfaProperty:category>external</pdfaProperty:category>\
             <pdfaProperty:description>{description}</pdfaProperty:description></rdf:li>"
        )
    };
    format!(
        "<rdf:Description rdf:about=\"\" xmlns:fx=\"{NAMESPACE}\">\
         <fx:DocumentType>INVOICE</fx:DocumentType>\
         <fx:DocumentFileName>{FILE_NAME}</fx:DocumentFileName>\
         <fx:Version>1.0</fx:Version>\
         <fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>\
         </rdf:Description>\
         <rdf:Description rdf:about=\"\" \
         xmlns:pdfaExtension=\"http://www.aiim.org/pdfa/ns/extension/\" \
         xmlns:pdfaSchema=\"http://www.aiim.org/pdfa/ns/schema#\" \
         xmlns:pdfaProperty=\"http://www.aiim.org/pdfa/ns/property#\">\
         <pdfaExtension:schemas><rdf:Bag><rdf:li rdf:parseType=\"Resource\">\
         <pdfaSchema:schema>Factur-X PDFA Extension Schema</pdfaSchema:schema>\
         <pdfaSchema:namespaceURI>{NAMESPACE}</pdfaSchema:namespaceURI>\
         <pdfaSchema:prefix>fx</pdfaSchema:prefix>\
         <pdfaSchema:property><rdf:Seq>{}{}{}{}</rdf:Seq></pdfaSchema:property>\
         </rdf:li></rdf:Bag></pdfaExtension:schemas></rdf:Description>",
        property(
            "DocumentFileName",
            "The name of the embedded XML invoice file"
        ),
        property("DocumentType", "INVOICE"),
        property("Version", "The version of the Factur-X XML schema"),
        property(
            "ConformanceLevel",
            "The conformance level of the embedded Factur-X data"
        ),
    )
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

/// `pdf` (as krilla wrote it: a classic cross-reference table, the XMP packet uncompressed) with
/// the Factur-X properties in its XMP: the metadata object is written again after the end, with a
/// cross-reference section and a trailer that points back to the first (`/Prev`).
fn with_xmp(mut pdf: Vec<u8>) -> Vec<u8> {
    let broken = "krilla's PDF has the shape this code reads";
    // The catalog's `/Metadata N 0 R`.
    let at = find(&pdf, b"/Metadata ").expect(broken) + b"/Metadata ".len();
    let digits: String = pdf[at..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .map(|&b| b as char)
        .collect();
    let object: u32 = digits.parse().expect(broken);
    // The XMP packet, with our descriptions before the end of its RDF.
    let start = find(&pdf, b"<?xpacket begin").expect(broken);
    let end = start + find(&pdf[start..], b"<?xpacket end").expect(broken);
    let end = end + find(&pdf[end..], b"?>").expect(broken) + 2;
    let packet = String::from_utf8(pdf[start..end].to_vec()).expect(broken);
    let close = packet.rfind("</rdf:RDF>").expect(broken);
    let packet = format!("{}{}{}", &packet[..close], facturx_xmp(), &packet[close..]);
    // The trailer's entries, and where the previous cross-reference section starts.
    let trailer = rfind(&pdf, b"trailer").expect(broken);
    let startxref = rfind(&pdf, b"startxref").expect(broken);
    let dict = String::from_utf8_lossy(&pdf[trailer + b"trailer".len()..startxref])
        .trim()
        .to_owned();
    let inner = dict
        .strip_prefix("<<")
        .and_then(|d| d.strip_suffix(">>"))
        .expect(broken)
        .to_owned();
    let previous: String = String::from_utf8_lossy(&pdf[startxref + b"startxref".len()..])
        .split_whitespace()
        .next()
        .expect(broken)
        .to_owned();
    if !pdf.ends_with(b"\n") {
        pdf.push(b'\n');
    }
    let offset = pdf.len();
    pdf.extend_from_slice(
        format!(
            "{object} 0 obj\n<< /Type /Metadata /Subtype /XML /Length {} >>\nstream\n",
            packet.len()
        )
        .as_bytes(),
    );
    pdf.extend_from_slice(packet.as_bytes());
    pdf.extend_from_slice(b"\nendstream\nendobj\n");
    let xref = pdf.len();
    pdf.extend_from_slice(
        format!(
            "xref\n{object} 1\n{offset:010} 00000 n \ntrailer\n<<{inner} /Prev {previous} >>\nstartxref\n{xref}\n%%EOF\n"
        )
        .as_bytes(),
    );
    pdf
}

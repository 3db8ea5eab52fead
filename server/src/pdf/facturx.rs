//! Factur-X / ZUGFeRD: the invoice PDF as PDF/A-3b carrying its EN 16931 CII document as
//! `factur-x.xml` (relationship Alternative: the XML is the invoice the PDF shows), with the
//! Factur-X XMP properties and their PDF/A extension schema. krilla writes the PDF/A-3b (checking its
//! rules as it serialises) and the attachment; the Factur-X properties are added to its XMP
//! packet by an incremental update that replaces the metadata stream, found by reading the file's
//! structure (krilla 0.8's metadata has no way to add XMP properties).

use krilla::configure::{Archival, ConfigurationBuilder};
use krilla::embed::{AssociationKind, EmbeddedFile, MimeType};
use krilla::metadata::DateTime;
use krilla::{Document, SerializeSettings};

use reader::Parsed;

mod reader;

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
    doc: Document,
    title: String,
    cii: Option<Vec<u8>>,
    at: chrono::DateTime<chrono::Utc>,
) -> Vec<u8> {
    let Some(cii) = cii else {
        return doc
            .finish()
            .expect("a PDF of text and rules always serialises");
    };
    with_xmp(archived(doc, title, cii, at))
}

/// The PDF/A-3b as krilla writes it, titled `title`, `cii` attached: all but the Factur-X XMP.
fn archived(
    mut doc: Document,
    title: String,
    cii: Vec<u8>,
    at: chrono::DateTime<chrono::Utc>,
) -> Vec<u8> {
    // PDF/A dates the document; the attachment is dated with it.
    let at = date(at);
    doc.set_metadata(
        krilla::metadata::Metadata::new()
            .title(title)
            .creator("invoicer".to_owned())
            .creation_date(at),
    );
    attach(&mut doc, cii, at);
    doc.finish()
        .expect("a PDF/A-3b of text and rules always serialises")
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

/// `pdf` (as krilla wrote it: a classic cross-reference table, the XMP packet an uncompressed
/// stream) with the Factur-X properties in its XMP. The metadata object is found through the file's
/// structure (`startxref`, the cross-reference table, the trailer's `/Root`, the catalog's
/// `/Metadata`), never by searching the bytes: they hold what users typed (the title is the org's
/// name and the invoice's number). It is written again after the end, with a cross-reference
/// section and a trailer that points back to the first (`/Prev`).
fn with_xmp(mut pdf: Vec<u8>) -> Vec<u8> {
    let broken = "krilla's PDF has the shape this code reads";
    let file = Parsed::read(&pdf).expect(broken);
    assert!(file.get(b"Prev").is_none(), "{broken}: one revision");
    let (object, generation) = file.metadata().expect(broken);
    let packet = file.metadata_stream(object, generation).expect(broken);
    let packet = std::str::from_utf8(packet).expect(broken);
    // Text in the packet is escaped XML: its one `</rdf:RDF>` is the element's end.
    let close = packet.rfind("</rdf:RDF>").expect(broken);
    let packet = format!("{}{}{}", &packet[..close], facturx_xmp(), &packet[close..]);
    let entries = file.trailer_entries.to_vec();
    let previous = file.xref;
    if !pdf.ends_with(b"\n") {
        pdf.push(b'\n');
    }
    let offset = pdf.len();
    pdf.extend_from_slice(
        format!(
            "{object} {generation} obj\n<< /Type /Metadata /Subtype /XML /Length {} >>\nstream\n",
            packet.len()
        )
        .as_bytes(),
    );
    pdf.extend_from_slice(packet.as_bytes());
    pdf.extend_from_slice(b"\nendstream\nendobj\n");
    let xref = pdf.len();
    pdf.extend_from_slice(
        format!("xref\n{object} 1\n{offset:010} {generation:05} n \ntrailer\n<<").as_bytes(),
    );
    pdf.extend_from_slice(&entries);
    pdf.extend_from_slice(format!(" /Prev {previous} >>\nstartxref\n{xref}\n%%EOF\n").as_bytes());
    pdf
}

#[cfg(test)]
mod tests {
    use super::reader::Object;
    use super::*;

    /// What the patch once searched for, and the trailer's words: a title holding them is written
    /// (in the document information dictionary) before the catalog and the XMP packet.
    const MARKERS: &str =
        "/Metadata 1 0 R <?xpacket begin=\"\" id=\"x\"?> </rdf:RDF> (trailer) \\ startxref %%EOF";

    fn finalized() -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("a date")
    }

    #[test]
    fn the_metadata_object_is_found_by_the_structure_whatever_the_title_holds() {
        let title = format!("Invoice INV-000001 from Acme {MARKERS}");
        let mut doc = document();
        doc.start_page().finish();
        let raw = archived(doc, title, b"<Invoice/>".to_vec(), finalized());
        let before = Parsed::read(&raw).unwrap();
        let (object, generation) = before.metadata().unwrap();
        let Some(&Object::Ref(root, _)) = before.get(b"Root") else {
            panic!("a catalog");
        };
        let catalog = before.offsets[&root].unwrap().0;
        let first = raw.windows(10).position(|w| w == b"/Metadata ").unwrap();
        assert!(first < catalog, "the title's bytes come first");

        let pdf = with_xmp(raw.clone());
        // An incremental update: krilla's file untouched, then one section for the metadata.
        assert!(pdf.starts_with(&raw));
        let after = Parsed::read(&pdf).unwrap();
        assert_eq!(after.metadata(), Some((object, generation)));
        assert!(pdf[after.xref..].starts_with(format!("xref\n{object} 1\n").as_bytes()));
        assert_eq!(
            after.offsets[&1_u32], before.offsets[&1_u32],
            "object 1 is left alone"
        );
        assert_eq!(after.get(b"Info"), before.get(b"Info"));
        let packet =
            std::str::from_utf8(after.metadata_stream(object, generation).unwrap()).unwrap();
        for needle in [
            "<fx:DocumentFileName>factur-x.xml</fx:DocumentFileName>",
            "<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>",
            "<pdfaid:part>3</pdfaid:part>",
            "Invoice INV-000001 from Acme /Metadata 1 0 R",
        ] {
            assert!(packet.contains(needle), "{needle} in {packet}");
        }
        assert_eq!(packet.matches("<?xpacket begin").count(), 1, "{packet}");
        assert_eq!(packet.matches("</rdf:RDF>").count(), 1, "{packet}");
    }

    #[test]
    fn strings_comments_and_arrays_do_not_mislead_the_reader() {
        let xmp: &[u8] = b"<?xpacket begin=\"\"?><x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF \
            xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\"></rdf:RDF></x:xmpmeta>\
            <?xpacket end=\"r\"?>";
        let bodies: [Vec<u8>; 4] = [
            // An escaped parenthesis keeps a string open; a hex string spells `/Meta`.
            b"<</Title(/Metadata 1 0 R \\) /Metadata 2 0 R)/Author<2F4D657461>>>".to_vec(),
            [
                format!(
                    "<</Length {}/Type/Metadata/Subtype/XML>>\nstream\n",
                    xmp.len()
                )
                .as_bytes(),
                xmp,
                &b"\nendstream"[..],
            ]
            .concat(),
            // Only the last `/Metadata` is a key: the others are in strings and a comment.
            b"<</Type/Catalog/Lang(en \\) /Metadata 1 0 R)/Subject<2F4D657461> % /Metadata 1 0 R\n\
              /Names<</Dests[(a(b)c)1 0 R 2.5 true null]>>/Metadata 2 0 R/Pages 4 0 R>>"
                .to_vec(),
            b"<</Type/Pages/Kids[]/Count 0>>".to_vec(),
        ];
        let mut pdf = b"%PDF-1.7\n%\x80\x80\x80\x80\n".to_vec();
        let mut offsets = Vec::new();
        for (i, body) in bodies.iter().enumerate() {
            offsets.push(pdf.len());
            pdf.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
            pdf.extend_from_slice(body);
            pdf.extend_from_slice(b"\nendobj\n");
        }
        let xref = pdf.len();
        pdf.extend_from_slice(b"xref\n0 5\n0000000000 65535 f\r\n");
        for offset in offsets {
            pdf.extend_from_slice(format!("{offset:010} 00000 n\r\n").as_bytes());
        }
        pdf.extend_from_slice(
            format!(
                "trailer\n<</Size 5/Root 3 0 R/Info 1 0 R/ID[(a)(b)]>>\nstartxref\n{xref}\n%%EOF"
            )
            .as_bytes(),
        );
        let file = Parsed::read(&pdf).unwrap();
        assert_eq!(file.metadata(), Some((2, 0)));
        assert_eq!(file.metadata_stream(2, 0), Some(xmp));

        let patched = with_xmp(pdf.clone());
        let again = Parsed::read(&patched).unwrap();
        assert_eq!(again.metadata(), Some((2, 0)));
        assert_eq!(again.offsets[&1_u32], file.offsets[&1_u32]);
        assert_eq!(again.get(b"Size"), Some(&Object::Int(5)));
        assert_eq!(again.get(b"Prev"), Some(&Object::Int(xref as i64)));
        let packet = std::str::from_utf8(again.metadata_stream(2, 0).unwrap()).unwrap();
        assert!(
            packet.contains("<fx:Version>1.0</fx:Version>")
                && packet.ends_with("<?xpacket end=\"r\"?>"),
            "{packet}"
        );
        // What is not the shape krilla writes is refused, never patched by guess.
        assert!(Parsed::read(b"%PDF-1.7\n1 0 obj\n<<>>\nendobj\n%%EOF").is_none());
        let mut compressed = pdf.clone();
        let at = compressed
            .windows(12)
            .position(|w| w == b"/Subtype/XML")
            .unwrap();
        compressed[at..at + 12].copy_from_slice(b"/Filter/Flat");
        let compressed = Parsed::read(&compressed).unwrap();
        assert_eq!(compressed.metadata(), Some((2, 0)));
        assert_eq!(compressed.metadata_stream(2, 0), None);
    }
}

//! A small layer over quick-xml's writer: elements opened and closed by name, leaves with escaped
//! text, optional leaves left out when empty. Writing to memory cannot fail.

use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::Writer;

pub struct Xml(Writer<Vec<u8>>);

impl Xml {
    pub fn new() -> Xml {
        let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
        w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
            .expect("writing to memory");
        Xml(w)
    }

    pub fn open(&mut self, name: &str, attributes: &[(&str, &str)]) -> &mut Xml {
        let start = BytesStart::new(name).with_attributes(attributes.iter().copied());
        self.0
            .write_event(Event::Start(start))
            .expect("writing to memory");
        self
    }

    pub fn close(&mut self, name: &str) -> &mut Xml {
        self.0
            .write_event(Event::End(BytesEnd::new(name)))
            .expect("writing to memory");
        self
    }

    /// `<name attributes>text</name>`.
    pub fn leaf(&mut self, name: &str, attributes: &[(&str, &str)], text: &str) -> &mut Xml {
        self.open(name, attributes);
        self.0
            .write_event(Event::Text(BytesText::new(text)))
            .expect("writing to memory");
        self.close(name)
    }

    /// [`Self::leaf`] without attributes, left out when `text` is empty.
    pub fn text(&mut self, name: &str, text: &str) -> &mut Xml {
        if !text.is_empty() {
            self.leaf(name, &[], text);
        }
        self
    }

    pub fn finish(self) -> Vec<u8> {
        let mut out = self.0.into_inner();
        out.push(b'\n');
        out
    }
}

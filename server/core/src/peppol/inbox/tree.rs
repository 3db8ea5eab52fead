//! Hostile XML read into a small tree, within limits: no document type declaration (so no entity
//! of any kind but XML's five, no external entity, no billion laughs), a bounded depth, element
//! count and text size. Elements are named by their local names; paths look children up by them.

use quick_xml::events::Event;
use quick_xml::Reader;

/// How deep elements may nest (UBL and CII need fewer than 15).
pub const MAX_DEPTH: usize = 40;
/// How many elements a document may have.
pub const MAX_ELEMENTS: usize = 200_000;
/// How long one element's text may be.
pub const MAX_TEXT: usize = 100_000;

#[derive(Debug, Default, Clone)]
pub struct Element {
    pub name: String,
    pub attributes: Vec<(String, String)>,
    pub text: String,
    pub children: Vec<Element>,
}

impl Element {
    /// The first child named `name`.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The element at `path` (local names separated by `/`).
    pub fn at(&self, path: &str) -> Option<&Element> {
        path.split('/')
            .filter(|p| !p.is_empty())
            .try_fold(self, |e, name| e.child(name))
    }

    /// The trimmed text at `path`, or empty.
    pub fn text_at(&self, path: &str) -> String {
        self.at(path)
            .map(|e| e.text.trim().to_owned())
            .unwrap_or_default()
    }

    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why XML was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(pub String);

fn refuse<T>(why: impl Into<String>) -> Result<T, Unreadable> {
    Err(Unreadable(why.into()))
}

/// Reads `bytes` (UTF-8 XML) into its root element.
pub fn parse(bytes: &[u8]) -> Result<Element, Unreadable> {
    let mut reader = Reader::from_reader(bytes);
    reader.config_mut().trim_text(false);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let mut count = 0usize;
    let mut buf = Vec::new();
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| Unreadable(format!("not well-formed XML: {e}")))?;
        match event {
            Event::DocType(_) => {
                return refuse("a document type declaration (DTD) is not allowed in an e-invoice")
            }
            Event::Start(e) | Event::Empty(e) if root.is_some() => {
                let _ = e;
                return refuse("content after the root element");
            }
            Event::Start(ref e) | Event::Empty(ref e) => {
                count += 1;
                if count > MAX_ELEMENTS {
                    return refuse(format!("more than {MAX_ELEMENTS} elements"));
                }
                if stack.len() >= MAX_DEPTH {
                    return refuse(format!("elements nested deeper than {MAX_DEPTH}"));
                }
                let mut element = Element {
                    name: String::from_utf8_lossy(e.local_name().as_ref()).into_owned(),
                    ..Element::default()
                };
                for a in e.attributes() {
                    let a = a.map_err(|_| Unreadable("an unreadable attribute".into()))?;
                    let value = a
                        .unescape_value()
                        .map_err(|_| Unreadable("an attribute with an unknown entity".into()))?;
                    element.attributes.push((
                        String::from_utf8_lossy(a.key.local_name().as_ref()).into_owned(),
                        value.into_owned(),
                    ));
                }
                if matches!(event, Event::Empty(_)) {
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(element),
                        None => root = Some(element),
                    }
                } else {
                    stack.push(element);
                }
            }
            Event::End(_) => {
                let Some(done) = stack.pop() else {
                    return refuse("an end tag without its start");
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(done),
                    None => root = Some(done),
                }
            }
            Event::Text(t) => {
                let piece = t
                    .decode()
                    .map_err(|_| Unreadable("text that is not UTF-8".into()))?;
                push_text(&mut stack, &piece)?;
            }
            Event::CData(t) => {
                let piece = t
                    .decode()
                    .map_err(|_| Unreadable("text that is not UTF-8".into()))?;
                push_text(&mut stack, &piece)?;
            }
            Event::GeneralRef(r) => {
                let resolved = crate::hostile_xml::reference(&r).map_err(Unreadable)?;
                push_text(&mut stack, &resolved)?;
            }
            Event::Eof => break,
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
        }
        buf.clear();
    }
    if !stack.is_empty() {
        return refuse("the file ends inside an element");
    }
    root.ok_or_else(|| Unreadable("no XML element in the file".into()))
}

fn push_text(stack: &mut [Element], piece: &str) -> Result<(), Unreadable> {
    let Some(top) = stack.last_mut() else {
        return if piece.trim().is_empty() {
            Ok(())
        } else {
            refuse("text outside the root element")
        };
    };
    if top.text.len() + piece.len() > MAX_TEXT {
        return refuse(format!("an element's text is longer than {MAX_TEXT} bytes"));
    }
    top.text.push_str(piece);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dtd_deep_nesting_and_unknown_entities_are_refused() {
        let laughs = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<Invoice>&lol2;</Invoice>"#;
        assert!(parse(laughs.as_bytes()).unwrap_err().0.contains("DTD"));
        let deep = format!("{}{}", "<a>".repeat(100), "</a>".repeat(100));
        assert!(parse(deep.as_bytes()).unwrap_err().0.contains("deeper"));
        assert!(parse(b"<a>&ext;</a>").unwrap_err().0.contains("&ext;"));
        let ok = parse(b"<r xmlns:c='x'><c:A k='v'>1 &amp; 2</c:A><B/></r>").unwrap();
        assert_eq!(ok.text_at("A"), "1 & 2");
        assert_eq!(ok.at("A").unwrap().attribute("k"), Some("v"));
        assert!(ok.at("B").is_some());
    }
}

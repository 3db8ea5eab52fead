//! What the readers of uploaded XML (bank statements, received e-invoices) share: a reference in
//! text resolved as XML's own, and nothing else (no DTD is read, so no other entity exists).

use quick_xml::events::BytesRef;

/// `&#…;` as its character, `&amp;` and XML's four others as theirs; any other entity is refused
/// with the reason.
pub fn reference(r: &BytesRef<'_>) -> Result<String, String> {
    match r.resolve_char_ref() {
        Ok(Some(c)) => Ok(c.to_string()),
        Ok(None) => {
            let name = String::from_utf8_lossy(r).into_owned();
            quick_xml::escape::resolve_predefined_entity(&name)
                .map(str::to_owned)
                .ok_or_else(|| format!("the entity &{name}; is not allowed (only XML's five)"))
        }
        Err(_) => Err("a bad character reference".to_owned()),
    }
}

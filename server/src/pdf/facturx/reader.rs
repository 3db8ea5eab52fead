//! Reads what the Factur-X XMP update needs of a PDF's structure: the cross-reference sections
//! (newest first, back along `/Prev`), the newest trailer, an object's dictionary and an
//! uncompressed metadata stream, with a lexer for PDF's tokens and objects that strings, comments
//! and arrays do not mislead.

use std::collections::HashMap;

/// What this module reads of a PDF: where each object is, and the newest trailer.
pub(super) struct Parsed<'a> {
    pdf: &'a [u8],
    /// Object number → its offset and generation; `None`: freed. The newest section's entry wins.
    pub(super) offsets: HashMap<u32, Option<(usize, u16)>>,
    /// Where the newest cross-reference section starts.
    pub(super) xref: usize,
    /// The newest trailer's entries, as written between its `<<` and `>>`.
    pub(super) trailer_entries: &'a [u8],
    trailer: Dict<'a>,
}

/// A dictionary's entries, in their order.
type Dict<'a> = Vec<(&'a [u8], Object<'a>)>;

/// A PDF object, as far as this module needs to tell them apart.
#[derive(Debug, PartialEq)]
pub(super) enum Object<'a> {
    Int(i64),
    Name(&'a [u8]),
    /// An indirect reference: object number and generation.
    Ref(u32, u16),
    Dict(Dict<'a>),
    /// A string, an array, a real, a boolean or null.
    Other,
}

fn lookup<'d, 'a>(dict: &'d [(&'a [u8], Object<'a>)], key: &[u8]) -> Option<&'d Object<'a>> {
    dict.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

fn is_name<'a>(dict: &[(&'a [u8], Object<'a>)], key: &[u8], name: &[u8]) -> bool {
    matches!(lookup(dict, key), Some(Object::Name(n)) if *n == name)
}

/// Where the newest cross-reference section starts: the file ends `startxref`, that offset, `%%EOF`.
fn startxref(pdf: &[u8]) -> Option<usize> {
    let end = pdf
        .trim_ascii_end()
        .strip_suffix(b"%%EOF")?
        .trim_ascii_end();
    let digits = end.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let (rest, number) = end.split_at(end.len() - digits);
    rest.trim_ascii_end().strip_suffix(b"startxref")?;
    std::str::from_utf8(number).ok()?.parse().ok()
}

impl<'a> Parsed<'a> {
    /// Reads the cross-reference sections from the newest back along `/Prev`, and the newest trailer.
    pub(super) fn read(pdf: &'a [u8]) -> Option<Parsed<'a>> {
        let xref = startxref(pdf)?;
        let mut offsets = HashMap::new();
        let mut newest = None;
        let mut section = Some(xref);
        // A file's own sections; more is a loop of `/Prev`.
        for _ in 0..64 {
            let Some(at) = section else { break };
            let mut lex = Lexer { pdf, at };
            lex.keyword(b"xref")?;
            loop {
                match lex.token()? {
                    Token::Word(b"trailer") => break,
                    Token::Word(first) => {
                        let first = u32::try_from(integer(first)?).ok()?;
                        let count = u32::try_from(lex.int()?).ok()?;
                        for number in first..first.checked_add(count)? {
                            let offset = usize::try_from(lex.int()?).ok()?;
                            let generation = u16::try_from(lex.int()?).ok()?;
                            let entry = match lex.token()? {
                                Token::Word(b"n") => Some((offset, generation)),
                                Token::Word(b"f") => None,
                                _ => return None,
                            };
                            offsets.entry(number).or_insert(entry);
                        }
                    }
                    _ => return None,
                }
            }
            lex.skip_space();
            let start = lex.at;
            let Object::Dict(trailer) = lex.object()? else {
                return None;
            };
            let entries = pdf.get(start + 2..lex.at - 2)?;
            section = match lookup(&trailer, b"Prev") {
                None => None,
                Some(Object::Int(prev)) => Some(usize::try_from(*prev).ok()?),
                Some(_) => return None,
            };
            if newest.is_none() {
                newest = Some((entries, trailer));
            }
        }
        if section.is_some() {
            return None;
        }
        let (trailer_entries, trailer) = newest?;
        Some(Parsed {
            pdf,
            offsets,
            xref,
            trailer_entries,
            trailer,
        })
    }

    /// The newest trailer's entry `key`.
    pub(super) fn get(&self, key: &[u8]) -> Option<&Object<'a>> {
        lookup(&self.trailer, key)
    }

    /// The dictionary of object `number` (of `generation`), and a lexer just after it.
    fn object(&self, number: u32, generation: u16) -> Option<(Dict<'a>, Lexer<'a>)> {
        let (offset, stored) = (*self.offsets.get(&number)?)?;
        let mut lex = Lexer {
            pdf: self.pdf,
            at: offset,
        };
        let header = (lex.int()?, lex.int()?);
        if stored != generation || header != (i64::from(number), i64::from(generation)) {
            return None;
        }
        lex.keyword(b"obj")?;
        let Object::Dict(dict) = lex.object()? else {
            return None;
        };
        Some((dict, lex))
    }

    /// The catalog's `/Metadata`: its object number and generation.
    pub(super) fn metadata(&self) -> Option<(u32, u16)> {
        let Some(Object::Ref(root, generation)) = self.get(b"Root") else {
            return None;
        };
        let (catalog, _) = self.object(*root, *generation)?;
        if !is_name(&catalog, b"Type", b"Catalog") {
            return None;
        }
        match lookup(&catalog, b"Metadata")? {
            Object::Ref(number, generation) => Some((*number, *generation)),
            _ => None,
        }
    }

    /// The data of object `number`, an uncompressed XML metadata stream.
    pub(super) fn metadata_stream(&self, number: u32, generation: u16) -> Option<&'a [u8]> {
        let (dict, mut lex) = self.object(number, generation)?;
        if !is_name(&dict, b"Type", b"Metadata")
            || !is_name(&dict, b"Subtype", b"XML")
            || lookup(&dict, b"Filter").is_some()
        {
            return None;
        }
        let Some(Object::Int(length)) = lookup(&dict, b"Length") else {
            return None;
        };
        let length = usize::try_from(*length).ok()?;
        lex.keyword(b"stream")?;
        // The data starts after the keyword's end of line: CR LF or LF.
        let mut start = lex.at;
        if self.pdf.get(start) == Some(&b'\r') {
            start += 1;
        }
        if self.pdf.get(start) != Some(&b'\n') {
            return None;
        }
        start += 1;
        let end = start.checked_add(length)?;
        let data = self.pdf.get(start..end)?;
        let mut after = Lexer {
            pdf: self.pdf,
            at: end,
        };
        after.keyword(b"endstream")?;
        Some(data)
    }
}

#[derive(Debug, PartialEq)]
enum Token<'a> {
    DictStart,
    DictEnd,
    ArrayStart,
    ArrayEnd,
    Name(&'a [u8]),
    Str,
    /// A number or a keyword.
    Word(&'a [u8]),
}

/// PDF's tokens (ISO 32000-1, 7.2 and 7.3) from `at` on.
struct Lexer<'a> {
    pdf: &'a [u8],
    at: usize,
}

fn is_white(b: u8) -> bool {
    matches!(b, b'\0' | b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

fn is_delimiter(b: u8) -> bool {
    matches!(
        b,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

fn integer(word: &[u8]) -> Option<i64> {
    std::str::from_utf8(word).ok()?.parse().ok()
}

impl<'a> Lexer<'a> {
    fn peek(&self) -> Option<u8> {
        self.pdf.get(self.at).copied()
    }

    /// Past white space and comments.
    fn skip_space(&mut self) {
        while let Some(b) = self.peek() {
            if is_white(b) {
                self.at += 1;
            } else if b == b'%' {
                while self.peek().is_some_and(|b| b != b'\n' && b != b'\r') {
                    self.at += 1;
                }
            } else {
                break;
            }
        }
    }

    /// The regular characters from here on: a name's, a number's or a keyword's.
    fn regular(&mut self) -> &'a [u8] {
        let (pdf, start) = (self.pdf, self.at);
        while self
            .peek()
            .is_some_and(|b| !is_white(b) && !is_delimiter(b))
        {
            self.at += 1;
        }
        &pdf[start..self.at]
    }

    fn token(&mut self) -> Option<Token<'a>> {
        self.skip_space();
        let next = self.pdf.get(self.at + 1).copied();
        let token = match self.peek()? {
            b'<' if next == Some(b'<') => {
                self.at += 2;
                Token::DictStart
            }
            b'>' if next == Some(b'>') => {
                self.at += 2;
                Token::DictEnd
            }
            b'[' => {
                self.at += 1;
                Token::ArrayStart
            }
            b']' => {
                self.at += 1;
                Token::ArrayEnd
            }
            b'/' => {
                self.at += 1;
                Token::Name(self.regular())
            }
            b'(' => {
                self.literal_string()?;
                Token::Str
            }
            b'<' => {
                self.hex_string()?;
                Token::Str
            }
            _ => match self.regular() {
                [] => return None,
                word => Token::Word(word),
            },
        };
        Some(token)
    }

    /// Past a literal string: balanced parentheses, a backslash escaping the next byte.
    fn literal_string(&mut self) -> Option<()> {
        self.at += 1;
        let mut depth = 1_u32;
        loop {
            match *self.pdf.get(self.at)? {
                b'\\' => self.at += 2,
                b'(' => {
                    depth += 1;
                    self.at += 1;
                }
                b')' => {
                    depth -= 1;
                    self.at += 1;
                    if depth == 0 {
                        return Some(());
                    }
                }
                _ => self.at += 1,
            }
        }
    }

    /// Past a hexadecimal string.
    fn hex_string(&mut self) -> Option<()> {
        self.at += 1;
        loop {
            let b = *self.pdf.get(self.at)?;
            self.at += 1;
            match b {
                b'>' => return Some(()),
                b if b.is_ascii_hexdigit() || is_white(b) => {}
                _ => return None,
            }
        }
    }

    fn int(&mut self) -> Option<i64> {
        match self.token()? {
            Token::Word(word) => integer(word),
            _ => None,
        }
    }

    fn keyword(&mut self, keyword: &[u8]) -> Option<()> {
        match self.token()? {
            Token::Word(word) if word == keyword => Some(()),
            _ => None,
        }
    }

    /// The object from here on; `N G R` is one object, a reference.
    fn object(&mut self) -> Option<Object<'a>> {
        match self.token()? {
            Token::DictStart => {
                let mut entries = Vec::new();
                loop {
                    match self.token()? {
                        Token::DictEnd => return Some(Object::Dict(entries)),
                        Token::Name(key) => {
                            let value = self.object()?;
                            entries.push((key, value));
                        }
                        _ => return None,
                    }
                }
            }
            Token::ArrayStart => loop {
                self.skip_space();
                if self.peek()? == b']' {
                    self.at += 1;
                    return Some(Object::Other);
                }
                self.object()?;
            },
            Token::Name(name) => Some(Object::Name(name)),
            Token::Str => Some(Object::Other),
            Token::Word(word) => {
                let Some(number) = integer(word) else {
                    return Some(Object::Other);
                };
                let back = self.at;
                let reference = match (self.token(), self.token()) {
                    (Some(Token::Word(generation)), Some(Token::Word(b"R"))) => {
                        let generation = integer(generation).and_then(|g| u16::try_from(g).ok());
                        generation.zip(u32::try_from(number).ok())
                    }
                    _ => None,
                };
                match reference {
                    Some((generation, number)) => Some(Object::Ref(number, generation)),
                    None => {
                        self.at = back;
                        Some(Object::Int(number))
                    }
                }
            }
            Token::DictEnd | Token::ArrayEnd => None,
        }
    }
}

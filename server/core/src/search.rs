//! Searching text by its start: the byte range a `text_pattern_ops` index reads, and the `like`
//! pattern of a literal prefix.

/// The values that start with `prefix`, as the byte-wise range a `text_pattern_ops` index reads:
/// `from <= value < to` with the operators `~>=~` and `~<~`. `to` is `prefix` with its last
/// character replaced by the next one: UTF-8 orders bytes as it orders characters, so a value in the
/// range starts with `prefix` and every value that starts with it is in the range. A range and not
/// `like 'prefix%'`, because a prepared statement's generic plan (planned without its values) can
/// bound an index scan by `$n ~>=~`, never by a pattern it cannot see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixRange {
    pub from: String,
    /// `None` when `prefix` is only `char::MAX`s: nothing follows them, so only `from` bounds.
    pub to: Option<String>,
}

impl PrefixRange {
    pub fn new(prefix: &str) -> PrefixRange {
        let mut chars: Vec<char> = prefix.chars().collect();
        while let Some(last) = chars.pop() {
            // The next character, past the surrogates (no `char` is one).
            if let Some(next) =
                (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32)
            {
                chars.push(next);
                return PrefixRange {
                    from: prefix.to_owned(),
                    to: Some(chars.into_iter().collect()),
                };
            }
        }
        PrefixRange {
            from: prefix.to_owned(),
            to: None,
        }
    }

    /// Pushes `(expr ~>=~ $from and expr ~<~ $to)` onto `q`.
    pub fn push_bounds(&self, q: &mut sqlx::QueryBuilder<'_, sqlx::Postgres>, expr: &str) {
        q.push("(")
            .push(expr)
            .push(" ~>=~ ")
            .push_bind(self.from.clone());
        if let Some(to) = &self.to {
            q.push(" and ")
                .push(expr)
                .push(" ~<~ ")
                .push_bind(to.clone());
        }
        q.push(")");
    }
}

/// A `like` pattern matching values that start with `text`, taken literally: `%`, `_` and the
/// backslash are escaped (Postgres' default escape character is the backslash).
pub fn like_prefix(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("{escaped}%")
}

#[cfg(test)]
mod tests {
    use super::PrefixRange;

    #[test]
    fn a_prefix_range_holds_exactly_the_values_that_start_with_it() {
        let range = |p: &str| PrefixRange::new(p).to;
        assert_eq!(range("inv-0052").as_deref(), Some("inv-0053"));
        assert_eq!(range("ab%").as_deref(), Some("ab&"));
        assert_eq!(range("caf\u{e9}").as_deref(), Some("caf\u{ea}"));
        // Past the surrogates, and past the last character by its predecessor.
        assert_eq!(range("a\u{d7ff}").as_deref(), Some("a\u{e000}"));
        assert_eq!(range("a\u{10ffff}").as_deref(), Some("b"));
        assert_eq!(range("\u{10ffff}"), None);
        // Byte-wise, as `text_pattern_ops` compares: inside exactly when the value starts with it.
        let values = [
            "",
            "a",
            "ab",
            "ab%",
            "ab&",
            "abc",
            "ac",
            "b",
            "caf",
            "caf\u{e9}",
            "caf\u{e9}s",
            "caf\u{ea}",
            "caf\u{10ffff}",
            "a\u{d7ff}",
            "a\u{d7ff}z",
            "a\u{e000}",
            "a\u{10ffff}",
            "a\u{10ffff}\u{10ffff}",
            "b\u{0}",
        ];
        for prefix in [
            "a",
            "ab",
            "ab%",
            "caf\u{e9}",
            "a\u{d7ff}",
            "a\u{10ffff}",
            "\u{10ffff}",
        ] {
            let r = PrefixRange::new(prefix);
            for value in values {
                let inside = value.as_bytes() >= r.from.as_bytes()
                    && r.to
                        .as_ref()
                        .is_none_or(|to| value.as_bytes() < to.as_bytes());
                assert_eq!(
                    inside,
                    value.starts_with(prefix),
                    "{prefix:?} and {value:?}"
                );
            }
        }
    }
}

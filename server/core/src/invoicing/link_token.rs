//! The tokens in the links customers get (an invoice's, a quote's, a credit note's, a statement's,
//! a logo's): minted here, and checked for their shape before any query reads one.

use uuid::Uuid;

/// A fresh token, 64 hex characters: a time-ordered UUIDv7 (74 random bits after its millisecond)
/// then a random v4 (122 bits), 196 random bits in all. The time first makes each new token land on
/// the right-most leaf of its unique index, as the ids do: fully random tokens landed on a random
/// leaf of an index larger than `shared_buffers` at a million invoices, read from disk and written
/// whole to the WAL while the org's invoice counter was held (docs/performance.md).
pub fn mint() -> String {
    format!("{}{}", Uuid::now_v7().simple(), Uuid::new_v4().simple())
}

/// A token as minted: 64 lowercase hex characters. Anything else is refused before any query.
pub fn well_formed(token: &str) -> bool {
    token.len() == 64
        && token
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::{mint, well_formed};

    #[test]
    fn public_tokens_are_random_and_ordered_by_time() {
        // `Uuid::now_v7` orders every id one process mints, within a millisecond too.
        let tokens: Vec<String> = (0..100).map(|_| mint()).collect();
        for token in &tokens {
            assert_eq!(token.len(), 64);
            assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
        }
        // Each token sorts after the one before: it goes to the right-most leaf of the index.
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
        // The second halves are random.
        let halves: std::collections::HashSet<&str> = tokens.iter().map(|t| &t[32..]).collect();
        assert_eq!(halves.len(), tokens.len());
        // What is minted is well formed; anything else is not.
        assert!(tokens.iter().all(|t| well_formed(t)));
        for bad in [
            "",
            &tokens[0][..63],
            &tokens[0].to_uppercase(),
            &format!("{}g", &tokens[0][..63]),
        ] {
            assert!(!well_formed(bad), "{bad:?}");
        }
    }
}

//! Stripe webhook signatures: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=...][,v0=...]`, where each v1 is
//! HMAC-SHA256 over `"{t}.{raw body}"` keyed with the whole `whsec_...` secret. Any v1 under any
//! configured secret matches (secret rotation); other schemes are ignored. Pure: no clock, no I/O.
//!
//! The header comes from anyone on the internet and the MAC covers up to a mebibyte of body, so the
//! cheap checks come first (length, shape, timestamp) and a refusal of any shape costs at most one MAC
//! per configured secret, however many candidates the header lists.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

/// Longest header considered. Stripe sends one `t`, one `v1` per active secret and maybe a `v0`:
/// about 150 bytes per secret.
pub const MAX_HEADER_LEN: usize = 1024;
/// Most `v1` entries considered (one per secret Stripe is signing with during a rotation).
pub const MAX_V1: usize = 4;

/// Why a delivery was refused. The text is safe to send back: it names no secret and no internals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("missing Stripe-Signature header")]
    Missing,
    #[error("malformed Stripe-Signature header")]
    Malformed,
    #[error("Stripe-Signature header too long or with too many v1 entries")]
    TooLarge,
    #[error("no v1 signature in Stripe-Signature header")]
    NoV1,
    #[error("no signature matches the payload")]
    Mismatch,
    #[error("timestamp outside the tolerance")]
    Stale,
}

impl SignatureError {
    /// A short label for logs and metrics.
    pub fn reason(self) -> &'static str {
        match self {
            SignatureError::Missing => "missing",
            SignatureError::Malformed => "malformed",
            SignatureError::TooLarge => "too_large",
            SignatureError::NoV1 => "no_v1",
            SignatureError::Mismatch => "mismatch",
            SignatureError::Stale => "stale",
        }
    }
}

/// Checks `header` against `body`. `now` and `tolerance_secs` are unix seconds; returns the signed
/// timestamp on success.
pub fn verify(
    header: Option<&str>,
    body: &[u8],
    secrets: &[impl AsRef<str>],
    now: i64,
    tolerance_secs: i64,
) -> Result<i64, SignatureError> {
    verify_with(header, body, secrets, now, tolerance_secs, mac)
}

/// [`verify`] with the MAC function passed in, so that tests (and the metrics) can count MACs.
pub fn verify_with(
    header: Option<&str>,
    body: &[u8],
    secrets: &[impl AsRef<str>],
    now: i64,
    tolerance_secs: i64,
    mut mac: impl FnMut(&str, i64, &[u8]) -> [u8; 32],
) -> Result<i64, SignatureError> {
    let header = header
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .ok_or(SignatureError::Missing)?;
    if header.len() > MAX_HEADER_LEN {
        return Err(SignatureError::TooLarge);
    }
    let mut timestamp = None;
    let mut candidates: Vec<[u8; 32]> = Vec::new();
    let mut v1_entries = 0;
    for part in header.split(',') {
        let (scheme, value) = part
            .trim()
            .split_once('=')
            .ok_or(SignatureError::Malformed)?;
        match scheme {
            "t" => {
                timestamp = Some(
                    value
                        .parse::<i64>()
                        .map_err(|_| SignatureError::Malformed)?,
                )
            }
            "v1" => {
                v1_entries += 1;
                if v1_entries > MAX_V1 {
                    return Err(SignatureError::TooLarge);
                }
                // Anything but 64 hex digits can never match: it is not worth a MAC.
                let mut candidate = [0u8; 32];
                if hex::decode_to_slice(value, &mut candidate).is_ok() {
                    candidates.push(candidate);
                }
            }
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if v1_entries == 0 {
        return Err(SignatureError::NoV1);
    }
    // A stale or far-future timestamp is refused before any MAC is spent on it. (The order tells a
    // sender without the secret only that its timestamp is stale, which it already knows.)
    if now.abs_diff(timestamp) > tolerance_secs.max(0).unsigned_abs() {
        return Err(SignatureError::Stale);
    }
    if candidates.is_empty() {
        return Err(SignatureError::Mismatch);
    }
    for secret in secrets {
        let expected = mac(secret.as_ref(), timestamp, body);
        let mut matched = subtle::Choice::from(0);
        for candidate in &candidates {
            matched |= expected.ct_eq(candidate);
        }
        if bool::from(matched) {
            return Ok(timestamp);
        }
    }
    Err(SignatureError::Mismatch)
}

/// HMAC-SHA256 of `"{timestamp}.{body}"` under `secret`, the way Stripe signs.
pub fn mac(secret: &str, timestamp: i64, body: &[u8]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    mac.finalize().into_bytes().into()
}

/// The hex v1 signature of `body` at `timestamp`, as Stripe computes it.
pub fn v1(secret: &str, timestamp: i64, body: &[u8]) -> String {
    hex::encode(mac(secret, timestamp, body))
}

/// A complete `Stripe-Signature` header value.
pub fn header(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", v1(secret, timestamp, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test_secret";
    const T: i64 = 1_492_774_577;
    const BODY: &[u8] = br#"{"id":"evt_test_webhook","object":"event"}"#;
    const KNOWN: &str = "88a022085c6bdb887b02cb26ff76dd681234d9675c0f22844059f55552a8883a";
    const TOL: i64 = 300;

    fn secrets() -> Vec<String> {
        vec![SECRET.to_owned()]
    }

    fn check(header: &str) -> Result<i64, SignatureError> {
        verify(Some(header), BODY, &secrets(), T, TOL)
    }

    #[test]
    fn known_answer_vector() {
        assert_eq!(v1(SECRET, T, BODY), KNOWN);
        assert_eq!(check(&format!("t={T},v1={KNOWN}")), Ok(T));
    }

    #[test]
    fn missing_or_empty_header() {
        assert_eq!(
            verify(None, BODY, &secrets(), T, TOL),
            Err(SignatureError::Missing)
        );
        assert_eq!(check(""), Err(SignatureError::Missing));
        assert_eq!(check("   "), Err(SignatureError::Missing));
    }

    #[test]
    fn garbage_header() {
        assert_eq!(check("garbage"), Err(SignatureError::Malformed));
        assert_eq!(check("t=abc,v1=00"), Err(SignatureError::Malformed));
        assert_eq!(
            check(&format!("v1={KNOWN}")),
            Err(SignatureError::Malformed),
            "no timestamp"
        );
    }

    #[test]
    fn only_v0_is_not_enough() {
        assert_eq!(
            check(&format!("t={T},v0={KNOWN}")),
            Err(SignatureError::NoV1)
        );
    }

    #[test]
    fn bad_v1_alone_fails_but_beside_a_good_one_is_ignored() {
        assert_eq!(
            check(&format!("t={T},v1=bad")),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(check(&format!("t={T},v1={KNOWN},v1=bad")), Ok(T));
        assert_eq!(
            check(&format!("t={T},v1=bad,v1={}", "0".repeat(64))),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn a_valid_signature_in_any_position() {
        let wrong = v1("whsec_other", T, BODY);
        assert_eq!(check(&format!("t={T},v1={KNOWN},v1={wrong}")), Ok(T));
        assert_eq!(check(&format!("t={T},v1={wrong},v1={KNOWN}")), Ok(T));
        assert_eq!(
            check(&format!("v0=abc,v1={wrong},t={T},v1={KNOWN},x9=1")),
            Ok(T)
        );
    }

    #[test]
    fn wrong_secret_and_rotation() {
        let other = vec!["whsec_other".to_owned()];
        assert_eq!(
            verify(Some(&format!("t={T},v1={KNOWN}")), BODY, &other, T, TOL),
            Err(SignatureError::Mismatch)
        );
        let rotation = vec!["whsec_new".to_owned(), SECRET.to_owned()];
        assert_eq!(
            verify(Some(&format!("t={T},v1={KNOWN}")), BODY, &rotation, T, TOL),
            Ok(T)
        );
    }

    #[test]
    fn tampered_body() {
        let tampered = br#"{"id":"evt_test_webhook","object":"evil"}"#;
        assert_eq!(
            verify(
                Some(&format!("t={T},v1={KNOWN}")),
                tampered,
                &secrets(),
                T,
                TOL
            ),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn timestamp_tolerance() {
        let at = |now: i64| {
            verify(
                Some(&format!("t={T},v1={KNOWN}")),
                BODY,
                &secrets(),
                now,
                TOL,
            )
        };
        assert_eq!(at(T + 301), Err(SignatureError::Stale), "301 s old");
        assert_eq!(
            at(T - 301),
            Err(SignatureError::Stale),
            "301 s in the future"
        );
        assert_eq!(at(T + 299), Ok(T));
        assert_eq!(at(T - 299), Ok(T));
    }

    #[test]
    fn header_round_trips() {
        let h = header(SECRET, T, BODY);
        assert_eq!(h, format!("t={T},v1={KNOWN}"));
        assert_eq!(check(&h), Ok(T));
    }
    /// `verify` with a MAC counter.
    fn counted(header: &str, secrets: &[String], now: i64) -> (Result<i64, SignatureError>, usize) {
        let mut macs = 0;
        let result = verify_with(Some(header), BODY, secrets, now, TOL, |s, t, b| {
            macs += 1;
            mac(s, t, b)
        });
        (result, macs)
    }

    #[test]
    fn a_refusal_costs_at_most_one_mac_per_secret() {
        let two = vec!["whsec_a".to_owned(), "whsec_b".to_owned()];
        let wrong = "0".repeat(64);
        // Many well-formed candidates: one MAC per secret, not one per candidate.
        let four = format!("t={T},v1={wrong},v1={wrong},v1={wrong},v1={wrong}");
        assert_eq!(counted(&four, &two, T), (Err(SignatureError::Mismatch), 2));
        // Empty and non-hex candidates cost nothing.
        assert_eq!(
            counted(&format!("t={T},v1=,v1=zz,v1={}", "a".repeat(63)), &two, T),
            (Err(SignatureError::Mismatch), 0)
        );
        // A stale timestamp is refused before any MAC.
        assert_eq!(
            counted(&format!("t={T},v1={KNOWN}"), &secrets(), T + 10_000),
            (Err(SignatureError::Stale), 0)
        );
        // The attack as seen: tens of thousands of empty v1 entries.
        let spam = format!("t={T}{}", ",v1=".repeat(40_000));
        assert_eq!(counted(&spam, &two, T), (Err(SignatureError::TooLarge), 0));
        // A match costs one MAC per secret tried before the right one.
        let rotation = vec!["whsec_new".to_owned(), SECRET.to_owned()];
        assert_eq!(
            counted(&format!("t={T},v1={KNOWN}"), &rotation, T),
            (Ok(T), 2)
        );
    }

    #[test]
    fn header_length_and_v1_count_are_capped() {
        let five = format!("t={T}{}", format!(",v1={KNOWN}").repeat(MAX_V1 + 1));
        assert!(five.len() <= MAX_HEADER_LEN);
        assert_eq!(check(&five), Err(SignatureError::TooLarge));
        let at_cap = format!("t={T}{}", format!(",v1={KNOWN}").repeat(MAX_V1));
        assert_eq!(check(&at_cap), Ok(T));
        let long = format!("t={T},v1={KNOWN},x={}", "y".repeat(MAX_HEADER_LEN));
        assert_eq!(check(&long), Err(SignatureError::TooLarge));
    }

    #[test]
    fn negative_tolerance_refuses_everything_but_the_exact_second() {
        let h = format!("t={T},v1={KNOWN}");
        assert_eq!(
            verify(Some(&h), BODY, &secrets(), T + 1, -5),
            Err(SignatureError::Stale)
        );
    }
}

//! Stripe webhook signatures: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=...][,v0=...]`, where each v1 is
//! HMAC-SHA256 over `"{t}.{raw body}"` keyed with the whole `whsec_...` secret. Any v1 under any
//! configured secret matches (secret rotation); other schemes are ignored. Pure: no clock, no I/O.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Why a delivery was refused. The text is safe to send back: it names no secret and no internals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("missing Stripe-Signature header")]
    Missing,
    #[error("malformed Stripe-Signature header")]
    Malformed,
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
    secrets: &[String],
    now: i64,
    tolerance_secs: i64,
) -> Result<i64, SignatureError> {
    let header = header
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .ok_or(SignatureError::Missing)?;
    let mut timestamp = None;
    let mut candidates = Vec::new();
    let mut saw_v1 = false;
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
            // A v1 that is not hex can never match; keep looking at the others.
            "v1" => {
                saw_v1 = true;
                candidates.extend(hex::decode(value).ok());
            }
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if !saw_v1 {
        return Err(SignatureError::NoV1);
    }
    let signed = signed_payload(timestamp, body);
    let matched = secrets.iter().any(|secret| {
        candidates.iter().any(|candidate| {
            let mut mac =
                HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
            mac.update(&signed);
            // Constant-time comparison.
            mac.verify_slice(candidate).is_ok()
        })
    });
    if !matched {
        return Err(SignatureError::Mismatch);
    }
    if (now - timestamp).abs() > tolerance_secs {
        return Err(SignatureError::Stale);
    }
    Ok(timestamp)
}

fn signed_payload(timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut signed = format!("{timestamp}.").into_bytes();
    signed.extend_from_slice(body);
    signed
}

/// The hex v1 signature of `body` at `timestamp`, as Stripe computes it.
pub fn v1(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(&signed_payload(timestamp, body));
    hex::encode(mac.finalize().into_bytes())
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
}

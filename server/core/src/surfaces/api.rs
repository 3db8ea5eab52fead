//! The public API's writes as a surface of the discipline: the key is the client's
//! `Idempotency-Key`, claimed as `(api, api key id, key)` with a fingerprint of the request, and the
//! response (status, headers that matter, body bytes) is stored on the claim in the transaction that
//! does the write. A replay returns those bytes, whatever happened to the record since.

use std::time::Duration;

use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::accounts::api_keys::ApiClient;
use crate::claim::{ClaimKey, Claimed, Outcome, StoredResponse, Terms};
use crate::observe::{Attempt, AttemptOutcome, Concerns, Tracked};
use crate::surfaces::{once, Once, Work};

/// A checked `Idempotency-Key`: 1..255 visible ASCII characters, or the same as a quoted
/// structured-field string (`"abc"` means `abc`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the Idempotency-Key header is required")]
    Missing,
    #[error("the Idempotency-Key must be 1 to 255 visible ASCII characters (or a quoted string)")]
    Malformed,
}

impl IdempotencyKey {
    pub fn parse(header: Option<&[u8]>) -> Result<Self, KeyError> {
        let raw = header.ok_or(KeyError::Missing)?;
        let text = std::str::from_utf8(raw).map_err(|_| KeyError::Malformed)?;
        // A valid sf-string means its content; anything else must be visible ASCII as it stands
        // (so `"abc` with no closing quote is simply a key that starts with a quote).
        let key = match text.strip_prefix('"').and_then(unquote_sf_string) {
            Some(unquoted) => unquoted,
            None if text.bytes().all(|b| b.is_ascii_graphic()) => text.to_owned(),
            None => return Err(KeyError::Malformed),
        };
        if key.is_empty() || key.len() > 255 {
            return Err(KeyError::Malformed);
        }
        Ok(IdempotencyKey(key))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// RFC 8941 sf-string body after the opening quote: printable ASCII, `\"` and `\\` escapes, then the
/// closing quote and nothing after it.
fn unquote_sf_string(rest: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next()? {
                e @ ('"' | '\\') => out.push(e),
                _ => return None,
            },
            '"' => return chars.next().is_none().then_some(out),
            c if (' '..='~').contains(&c) => out.push(c),
            _ => return None,
        }
    }
    None
}

impl TryFrom<String> for IdempotencyKey {
    type Error = KeyError;
    fn try_from(value: String) -> Result<Self, KeyError> {
        IdempotencyKey::parse(Some(value.as_bytes()))
    }
}

/// Method + path + the body's canonical JSON (keys sorted, insignificant whitespace gone), hashed: the
/// same request written differently is still the same request.
pub fn fingerprint(method: &str, path: &str, body: &serde_json::Value) -> Vec<u8> {
    let mut hasher = Sha256::new();
    hasher.update(method.as_bytes());
    hasher.update(b"\n");
    hasher.update(path.as_bytes());
    hasher.update(b"\n");
    hasher.update(body.to_string().as_bytes());
    hasher.finalize().to_vec()
}

#[derive(Debug, Clone, PartialEq)]
pub enum ApiOutcome {
    Created {
        response: StoredResponse,
        invoice: Option<Uuid>,
    },
    Replayed {
        response: StoredResponse,
        invoice: Option<Uuid>,
    },
    InFlight {
        retry_after: Duration,
    },
    Mismatch,
}

impl Tracked for ApiOutcome {
    fn outcome(&self) -> AttemptOutcome {
        match self {
            ApiOutcome::Created { .. } => AttemptOutcome::Won,
            ApiOutcome::Replayed { .. } => AttemptOutcome::Replay,
            ApiOutcome::InFlight { .. } => AttemptOutcome::InFlight,
            ApiOutcome::Mismatch => AttemptOutcome::Mismatch,
        }
    }

    fn concerns(&self) -> Concerns {
        let invoice = match self {
            ApiOutcome::Created { invoice, .. } => *invoice,
            ApiOutcome::Replayed { invoice, .. } => *invoice,
            ApiOutcome::InFlight { .. } | ApiOutcome::Mismatch => None,
        };
        Concerns { org: None, invoice }
    }
}

pub const INVOICES_PATH: &str = "/api/v1/invoices";

/// Runs an API client's request at most once per (client, Idempotency-Key): `work` makes the
/// transaction's work, which answers with the response to store on the claim (and the invoice it
/// concerns, if any) in the same transaction, so a replay returns it byte for byte; an error rolls
/// the claim back with the rest and stores nothing (the key stays usable). A new
/// idempotent endpoint is its work and nothing else.
#[allow(clippy::too_many_arguments)]
pub async fn respond_once<E, F, W>(
    pool: &PgPool,
    attempt: &Attempt,
    client: ApiClient,
    key: &IdempotencyKey,
    fingerprint: &[u8],
    key_ttl: Duration,
    mut work: F,
) -> Result<ApiOutcome, E>
where
    E: From<sqlx::Error> + super::Transient,
    F: FnMut() -> W,
    W: AsyncFnOnce(&mut PgConnection) -> Result<(StoredResponse, Option<Uuid>), E>,
{
    let claim_key = ClaimKey::api(client.key_id, key.as_str());
    let terms = Terms {
        fingerprint: Some(fingerprint),
        expires_after: Some(key_ttl),
        no_wait: true,
        result_id: None,
    };
    let ran = once(pool, attempt, &claim_key, &terms, || {
        let work = work();
        async move |tx: &mut PgConnection| {
            let (response, invoice) = work(tx).await?;
            // The first answer carries its secret; what is stored (and replayed, and shown on the
            // activity page) never does.
            let stored = redacted(&response);
            Ok::<_, E>(Work::Commit {
                answer: (response, invoice),
                outcome: Outcome {
                    result_id: invoice,
                    response: Some(stored),
                },
                concerns: Concerns {
                    org: Some(client.org_id),
                    invoice,
                },
            })
        }
    })
    .await?;
    match ran {
        Once::Ran((response, invoice)) => Ok(ApiOutcome::Created { response, invoice }),
        Once::Done(Outcome {
            response: Some(response),
            result_id,
        }) => Ok(ApiOutcome::Replayed {
            response,
            invoice: result_id,
        }),
        Once::Done(outcome) => Err(sqlx::Error::Protocol(format!(
            "api claim {claim_key:?} is done without a stored response: {outcome:?}"
        ))
        .into()),
        Once::Busy { retry_after } => Ok(ApiOutcome::InFlight { retry_after }),
        Once::Mismatch => Ok(ApiOutcome::Mismatch),
    }
}

/// What [`respond_once`] would answer for (client, key) without running anything: a stored answer,
/// a mismatch, a request in flight; `None` when the key is free. Endpoints whose work leaves the
/// database (a call to Stripe) ask first, so a replay never calls out again.
pub async fn answered(
    pool: &PgPool,
    client: ApiClient,
    key: &IdempotencyKey,
    fingerprint: &[u8],
    key_ttl: Duration,
) -> sqlx::Result<Option<ApiOutcome>> {
    let claim_key = ClaimKey::api(client.key_id, key.as_str());
    let terms = Terms {
        fingerprint: Some(fingerprint),
        expires_after: Some(key_ttl),
        ..Terms::default()
    };
    let found = crate::claim::peek(&mut *pool.acquire().await?, &claim_key, &terms).await?;
    Ok(match found {
        None | Some(Claimed::Won) => None,
        Some(Claimed::Done(Outcome {
            response: Some(response),
            result_id,
        })) => Some(ApiOutcome::Replayed {
            response,
            invoice: result_id,
        }),
        Some(Claimed::Done(_)) => None,
        Some(Claimed::Mismatch) => Some(ApiOutcome::Mismatch),
        Some(Claimed::Busy { retry_after }) => Some(ApiOutcome::InFlight { retry_after }),
    })
}

/// What a secret in a stored answer reads as.
pub const REDACTED: &str = "[redacted]";
/// The header a replay whose stored answer had a secret taken out carries.
pub const REDACTED_HEADER: &str = "idempotent-redacted";

/// The fields that hold a secret in an answer: a webhook endpoint's signing secret, an API key's
/// plaintext.
const SECRET_FIELDS: [&str; 3] = ["secret", "plaintext", "api_key"];

/// `response` as it may be stored: every secret in its JSON body replaced by [`REDACTED`] (a field
/// named as one, or a string shaped as one of ours: `whsec_…`, `ik_` and 64 hex digits), and
/// [`REDACTED_HEADER`] added to its headers when anything was. A body that is not JSON is kept.
pub fn redacted(response: &StoredResponse) -> StoredResponse {
    let Ok(mut body) = serde_json::from_slice::<serde_json::Value>(&response.body) else {
        return response.clone();
    };
    if !redact(&mut body) {
        return response.clone();
    }
    let mut headers = response.headers.clone();
    if let Some(map) = headers.as_object_mut() {
        map.insert(REDACTED_HEADER.into(), "true".into());
    }
    StoredResponse {
        status: response.status,
        headers,
        body: serde_json::to_vec(&body).expect("a JSON value serialises"),
    }
}

/// Replaces the secrets in `value`; whether there were any.
fn redact(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut any = false;
            for (name, field) in map.iter_mut() {
                if SECRET_FIELDS.contains(&name.as_str()) && field.is_string() {
                    *field = REDACTED.into();
                    any = true;
                } else {
                    any |= redact(field);
                }
            }
            any
        }
        Value::Array(items) => items.iter_mut().fold(false, |any, v| redact(v) | any),
        Value::String(text) if secret_shaped(text) => {
            *value = REDACTED.into();
            true
        }
        _ => false,
    }
}

/// A webhook signing secret or an API key, as this app mints them.
fn secret_shaped(text: &str) -> bool {
    let hex_key = |k: &str| k.len() == 64 && k.bytes().all(|b| b.is_ascii_hexdigit());
    text.strip_prefix("whsec_").is_some_and(|s| s.len() >= 24)
        || text.strip_prefix("ik_").is_some_and(hex_key)
}

/// A stored `201 Created` of `body` at `location`.
pub fn created(location: &str, body: &impl serde::Serialize) -> StoredResponse {
    StoredResponse {
        status: 201,
        headers: json!({ "content-type": "application/json", "location": location }),
        body: serde_json::to_vec(body).expect("API answers serialise"),
    }
}

/// A stored `200 OK` of `body`.
pub fn ok(body: &impl serde::Serialize) -> StoredResponse {
    StoredResponse {
        status: 200,
        headers: json!({ "content-type": "application/json" }),
        body: serde_json::to_vec(body).expect("API answers serialise"),
    }
}

pub const CUSTOMERS_PATH: &str = "/api/v1/customers";

pub const CREDIT_NOTES_PATH: &str = "/api/v1/credit_notes";

pub const TAX_RATES_PATH: &str = "/api/v1/tax_rates";

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<String, KeyError> {
        IdempotencyKey::parse(Some(s.as_bytes())).map(|k| k.0)
    }

    #[test]
    fn keys_are_checked() {
        assert_eq!(IdempotencyKey::parse(None), Err(KeyError::Missing));
        assert_eq!(parse(""), Err(KeyError::Malformed));
        assert_eq!(parse("has space"), Err(KeyError::Malformed));
        assert_eq!(parse("tab\there"), Err(KeyError::Malformed));
        assert_eq!(parse("é"), Err(KeyError::Malformed));
        assert_eq!(parse(&"k".repeat(256)), Err(KeyError::Malformed));
        assert_eq!(parse(&"k".repeat(255)), Ok("k".repeat(255)));
        assert_eq!(
            parse("8e03978e-40d5-43e8-bc93-6894a57f9324"),
            Ok("8e03978e-40d5-43e8-bc93-6894a57f9324".into())
        );
    }

    #[test]
    fn a_quoted_sf_string_means_the_same_key() {
        assert_eq!(parse(r#""abc-123""#), parse("abc-123"));
        assert_eq!(parse(r#""with \"escape\"""#), Ok(r#"with "escape""#.into()));
        assert_eq!(parse(r#""""#), Err(KeyError::Malformed));
        // Not a valid sf-string, but visible ASCII: a plain key.
        assert_eq!(parse(r#""unterminated"#), Ok(r#""unterminated"#.into()));
        assert_eq!(parse(r#""trailing"x"#), Ok(r#""trailing"x"#.into()));
        // Not an sf-string and not visible ASCII (a space): refused.
        assert_eq!(parse(r#""bad \n escape""#), Err(KeyError::Malformed));
    }

    #[test]
    fn stored_answers_hold_no_secret() {
        let key = format!("ik_{}", "a1".repeat(32));
        let answer = created(
            "/api/v1/webhook_endpoints/1",
            &json!({"id": 1, "secret": "whsec_c2VjcmV0c2VjcmV0c2VjcmV0", "url": "https://x.example",
                    "nested": [{"note": key}], "description": "ik_short"}),
        );
        let stored = redacted(&answer);
        let body: serde_json::Value = serde_json::from_slice(&stored.body).unwrap();
        assert_eq!(body["secret"], REDACTED);
        assert_eq!(body["nested"][0]["note"], REDACTED);
        assert_eq!(body["url"], "https://x.example");
        assert_eq!(
            body["description"], "ik_short",
            "text that is not a key stays"
        );
        assert_eq!(stored.headers[REDACTED_HEADER], "true");
        assert_eq!(stored.headers["location"], "/api/v1/webhook_endpoints/1");
        // Nothing secret: stored as answered, without the header.
        let plain = ok(&json!({"id": 2}));
        assert_eq!(redacted(&plain), plain);
    }

    #[test]
    fn fingerprints_ignore_key_order_and_whitespace() {
        let a: serde_json::Value = serde_json::from_str(r#"{"a":1,"b":[1,2]}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str("{ \"b\": [1, 2],\n \"a\": 1 }").unwrap();
        let c: serde_json::Value = serde_json::from_str(r#"{"a":2,"b":[1,2]}"#).unwrap();
        assert_eq!(fingerprint("POST", "/x", &a), fingerprint("POST", "/x", &b));
        assert_ne!(fingerprint("POST", "/x", &a), fingerprint("POST", "/x", &c));
        assert_ne!(fingerprint("POST", "/x", &a), fingerprint("POST", "/y", &a));
    }
}

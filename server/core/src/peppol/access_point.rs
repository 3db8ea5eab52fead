//! What sending over Peppol asks of an access point: submit a document (with the caller's SBDH
//! instance id, so a repeat is the same transmission) and say how a transmission fared.
//!
//! [`PhossAp`] speaks the REST API of phoss-ap (Apache 2.0), the reference: `POST
//! /api/outbound/submit/{sender}/{receiver}/{doctype}/{process}/{country}?sbdhInstanceID=...` with
//! the raw UBL as the body and the token in `X-Token`, and `GET /api/outbound/status/{instance}`.
//! Another provider is another implementation of [`AccessPoint`].

use std::future::Future;
use std::time::Duration;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Deserialize;
use uuid::Uuid;

use crate::secret::Secret;

/// One document to send.
#[derive(Debug, Clone)]
pub struct Submission<'a> {
    /// Participant ids as `scheme:value`.
    pub sender: &'a str,
    pub receiver: &'a str,
    /// The Peppol document type id, without its scheme.
    pub document_type: &'a str,
    pub process: &'a str,
    /// The sender's country (C1), ISO 3166-1 alpha-2.
    pub country: &'a str,
    /// The SBDH instance id: the same for every try of one document version.
    pub instance_id: Uuid,
    pub xml: &'a [u8],
}

/// Where a transmission is, as the access point tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Accepted, not yet handed to the receiver's access point (or being retried by it).
    Pending,
    /// Handed to the receiver's access point.
    Sent,
    /// The receiver's access point confirmed it (a Message Level Status of acceptance).
    Delivered,
    /// It will not arrive: the network's reason.
    Failed(String),
    /// The access point knows no such instance.
    Unknown,
}

/// A call that gave no answer about the document.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ApError {
    /// Not reached, or failed on its side: the same call under the same instance id may be made again.
    #[error("the access point could not be reached: {0}")]
    Unreachable(String),
    /// It refused the document itself (no such receiver, a document it will not carry): the same
    /// call would be refused again. Its own words.
    #[error("the access point refused the document: {0}")]
    Refused(String),
}

/// An access point provider.
pub trait AccessPoint: Send + Sync {
    /// Submits a document; Ok once the access point has taken it (a repeat of an instance id it
    /// took is taken again without a second transmission).
    fn submit(&self, s: &Submission<'_>) -> impl Future<Output = Result<(), ApError>> + Send;
    fn status(&self, instance_id: Uuid) -> impl Future<Output = Result<Status, ApError>> + Send;
}

/// A phoss-ap (or an API-compatible access point) at `base`.
#[derive(Debug, Clone)]
pub struct PhossAp {
    base: String,
    token: Option<Secret>,
    http: reqwest::Client,
}

/// What a path segment must escape (a document type id holds `#`, `:` and `::`).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// Participant ids, document types and processes as phoss-ap takes them: with their schemes.
pub fn participant(id: &str) -> String {
    format!("iso6523-actorid-upis::{id}")
}

impl PhossAp {
    pub fn new(base: &str, token: Option<Secret>) -> PhossAp {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(5))
            .build()
            .expect("a reqwest client with timeouts");
        PhossAp {
            base: base.trim_end_matches('/').to_owned(),
            token,
            http,
        }
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(token) => request.header("X-Token", token.expose()),
            None => request,
        }
    }
}

/// The part of phoss-ap's sending report invoicer reads.
#[derive(Debug, Deserialize)]
struct Report {
    #[serde(default, rename = "overallSuccess")]
    overall_success: bool,
    #[serde(default, rename = "sendingError")]
    sending_error: Option<String>,
    #[serde(default, rename = "lookupError")]
    lookup_error: Option<String>,
}

/// phoss-ap's outbound transaction.
#[derive(Debug, Deserialize)]
struct Transaction {
    status: String,
    #[serde(default, rename = "mlsStatus")]
    mls_status: Option<String>,
    #[serde(default, rename = "errorDetails")]
    error_details: Option<String>,
}

/// At most this much of an answer is read (reports are a few kilobytes).
const MAX_ANSWER: usize = 256 * 1024;

async fn body(response: reqwest::Response) -> Result<Vec<u8>, ApError> {
    let mut response = response;
    let mut out = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ApError::Unreachable(e.to_string()))?
    {
        if out.len() + chunk.len() > MAX_ANSWER {
            return Err(ApError::Unreachable("the answer is too large".into()));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// A short reason from a refusal's body: its report's error, or its first 200 characters.
fn reason(bytes: &[u8]) -> String {
    if let Ok(report) = serde_json::from_slice::<Report>(bytes) {
        if let Some(e) = report.lookup_error.or(report.sending_error) {
            return e.chars().take(200).collect();
        }
    }
    String::from_utf8_lossy(bytes).chars().take(200).collect()
}

impl AccessPoint for PhossAp {
    async fn submit(&self, s: &Submission<'_>) -> Result<(), ApError> {
        let url = format!(
            "{}/api/outbound/submit/{}/{}/{}/{}/{}",
            self.base,
            segment(&participant(s.sender)),
            segment(&participant(s.receiver)),
            segment(&format!("busdox-docid-qns::{}", s.document_type)),
            segment(&format!("cenbii-procid-ubl::{}", s.process)),
            segment(s.country),
        );
        let request = self
            .http
            .post(url)
            .query(&[("sbdhInstanceID", s.instance_id.to_string())])
            .header("content-type", "application/xml")
            .body(s.xml.to_vec());
        let response = self
            .authorized(request)
            .send()
            .await
            .map_err(|e| ApError::Unreachable(e.to_string()))?;
        let status = response.status();
        let bytes = body(response).await?;
        match status.as_u16() {
            200..=299 => match serde_json::from_slice::<Report>(&bytes) {
                Ok(report) if report.overall_success => Ok(()),
                Ok(_) => Err(ApError::Unreachable(reason(&bytes))),
                Err(e) => Err(ApError::Unreachable(format!("an unreadable report: {e}"))),
            },
            400 | 422 => Err(ApError::Refused(reason(&bytes))),
            _ => Err(ApError::Unreachable(format!(
                "{status}: {}",
                reason(&bytes)
            ))),
        }
    }

    async fn status(&self, instance_id: Uuid) -> Result<Status, ApError> {
        let url = format!("{}/api/outbound/status/{instance_id}", self.base);
        let response = self
            .authorized(self.http.get(url))
            .send()
            .await
            .map_err(|e| ApError::Unreachable(e.to_string()))?;
        let code = response.status();
        let bytes = body(response).await?;
        if code.as_u16() == 404 {
            return Ok(Status::Unknown);
        }
        if !code.is_success() {
            return Err(ApError::Unreachable(format!("{code}: {}", reason(&bytes))));
        }
        let t: Transaction = serde_json::from_slice(&bytes)
            .map_err(|e| ApError::Unreachable(format!("an unreadable status: {e}")))?;
        let why = || t.error_details.clone().unwrap_or_else(|| t.status.clone());
        Ok(match (t.status.as_str(), t.mls_status.as_deref()) {
            ("rejected" | "permanently_failed", _) => Status::Failed(why()),
            ("sent", Some("received_re")) => Status::Failed(
                t.error_details
                    .clone()
                    .unwrap_or_else(|| "the receiver rejected the document".into()),
            ),
            ("sent", Some("received_ap" | "received_ab")) => Status::Delivered,
            ("sent", _) => Status::Sent,
            _ => Status::Pending,
        })
    }
}

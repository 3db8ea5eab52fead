//! A local Peppol access point for development and tests: the part of phoss-ap's REST API invoicer
//! calls, with a ledger of what it transmitted. Not part of the production binary.
//!
//! - `POST /api/outbound/submit/{sender}/{receiver}/{doctype}/{process}/{country}?sbdhInstanceID=`
//!   (`X-Token`, the raw UBL as the body): a new instance id is one transmission, answered with a
//!   sending report (`overallSuccess: true`); the same instance id with the same document is taken
//!   again without a second transmission; with another document it is refused (422). The receiver
//!   `0088:0000000000000` is not on the network: refused (422, `lookupError`), as a real access
//!   point refuses a participant the SML does not know.
//! - `GET /api/outbound/status/{instance}`: `sent`, and once a second has passed since it was taken,
//!   `mlsStatus: received_ap` (the receiver's access point accepted it); 404 for an unknown id.
//! - `fail_rate` (or `POST /_control {"fail_rate": 0.3}`): that share of submissions fails, half of
//!   them before anything is taken (503), half after the transmission was recorded, the answer lost
//!   (500): the caller cannot tell which, and must submit again under the same instance id.
//! - `GET /_ledger`: every transmission by instance id, with how many submissions named it.
//! - `POST /_deliver {"url", "xml", "instance_id"}`: delivers a received document to the app's
//!   inbound webhook as phoss-ap forwards one (the SBD, `X-SBDH-Instance-ID`), signed with the
//!   inbound secret (Standard Webhooks), retried until the app answers 2xx.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The receiver the local network does not know.
pub const UNKNOWN_RECEIVER: &str = "0088:0000000000000";

#[derive(Debug, Clone)]
pub struct Config {
    /// The token requests must carry in `X-Token` (the app's PEPPOL_AP_TOKEN).
    pub token: String,
    /// The share of submissions that fail (0 to 1).
    pub fail_rate: f64,
    /// Signs deliveries to the app's inbound webhook (the app's PEPPOL_INBOUND_SECRET).
    pub inbound_secret: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            token: invoicer_core::peppol::LOCAL_ACCESS_POINT_TOKEN.to_owned(),
            fail_rate: 0.0,
            inbound_secret: invoicer_core::peppol::DEV_INBOUND_SECRET.to_owned(),
        }
    }
}

/// One transmission: a document the access point took under an instance id.
#[derive(Debug, Clone, Serialize)]
pub struct Transmitted {
    pub instance_id: String,
    pub sender: String,
    pub receiver: String,
    pub document_type: String,
    /// The document's own number (BT-1), read from the XML.
    pub number: String,
    pub sha256: String,
    /// How many submissions named this instance id (1 + the repeats).
    pub submissions: u32,
    #[serde(skip)]
    taken: Option<Instant>,
}

#[derive(Default)]
struct Ledger {
    transmissions: BTreeMap<String, Transmitted>,
    /// Every submission, refused and failed ones too.
    calls: u64,
    failed: u64,
}

#[derive(Clone)]
struct Shared {
    config: Arc<Mutex<Config>>,
    ledger: Arc<Mutex<Ledger>>,
    rng: Arc<Mutex<fastrand::Rng>>,
    http: reqwest::Client,
}

pub struct LocalAccessPoint {
    pub base: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl LocalAccessPoint {
    /// Serves on `addr` (port 0: any free port).
    pub async fn start(addr: SocketAddr, config: Config) -> anyhow::Result<LocalAccessPoint> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let base = format!("http://{}", listener.local_addr()?);
        let shared = Shared {
            config: Arc::new(Mutex::new(config)),
            ledger: Arc::default(),
            rng: Arc::new(Mutex::new(fastrand::Rng::with_seed(61))),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()?,
        };
        let app = Router::new()
            .route(
                "/api/outbound/submit/{sender}/{receiver}/{doctype}/{process}/{country}",
                post(submit),
            )
            .route("/api/outbound/status/{instance}", get(status))
            .route("/_ledger", get(ledger))
            .route("/_control", post(control))
            .route("/_deliver", post(deliver))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(LocalAccessPoint { base, shared, task })
    }

    /// Every transmission, by instance id.
    pub fn transmissions(&self) -> Vec<Transmitted> {
        let ledger = self.shared.ledger.lock().unwrap();
        ledger.transmissions.values().cloned().collect()
    }

    /// (submissions made, submissions failed on purpose).
    pub fn calls(&self) -> (u64, u64) {
        let ledger = self.shared.ledger.lock().unwrap();
        (ledger.calls, ledger.failed)
    }

    pub fn set_fail_rate(&self, rate: f64) {
        self.shared.config.lock().unwrap().fail_rate = rate;
    }
}

impl Drop for LocalAccessPoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// BT-1: the first `<cbc:ID>` after the process (`cbc:ProfileID`), as UBL writes it.
fn number_of(xml: &[u8]) -> String {
    let text = String::from_utf8_lossy(xml);
    let from = text.find("<cbc:ProfileID>").unwrap_or(0);
    let rest = &text[from..];
    rest.find("<cbc:ID>")
        .and_then(|start| {
            let body = &rest[start + "<cbc:ID>".len()..];
            body.find("</cbc:ID>")
                .map(|end| body[..end].trim().to_owned())
        })
        .unwrap_or_default()
}

fn strip(id: &str, scheme: &str) -> String {
    id.strip_prefix(scheme).unwrap_or(id).to_owned()
}

#[derive(Deserialize)]
struct SubmitQuery {
    #[serde(rename = "sbdhInstanceID")]
    instance: Option<String>,
}

fn report(ok: bool, instance: &str, error: Option<(&str, &str)>) -> serde_json::Value {
    let mut body = json!({
        "overallSuccess": ok,
        "sendingSuccess": ok,
        "as4ResponseError": false,
        "sbdhInstanceIdentifier": instance,
    });
    if let Some((field, text)) = error {
        body[field] = json!(text);
    }
    body
}

async fn submit(
    State(s): State<Shared>,
    Path((sender, receiver, doctype, _process, _country)): Path<(
        String,
        String,
        String,
        String,
        String,
    )>,
    Query(query): Query<SubmitQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (token, fail_rate) = {
        let c = s.config.lock().unwrap();
        (c.token.clone(), c.fail_rate)
    };
    if headers.get("x-token").and_then(|v| v.to_str().ok()) != Some(token.as_str()) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "Invalid or missing API token"})),
        )
            .into_response();
    }
    let instance = query
        .instance
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let sender = strip(&sender, "iso6523-actorid-upis::");
    let receiver = strip(&receiver, "iso6523-actorid-upis::");
    let document_type = strip(&doctype, "busdox-docid-qns::");
    let sha256 = hex::encode(Sha256::digest(&body));
    // Which way this call fails, if it does: before anything is taken, or after (the answer lost).
    let fails = {
        let mut rng = s.rng.lock().unwrap();
        (rng.f64() < fail_rate).then(|| rng.bool())
    };
    let mut ledger = s.ledger.lock().unwrap();
    ledger.calls += 1;
    if fails == Some(true) {
        ledger.failed += 1;
        return (StatusCode::SERVICE_UNAVAILABLE, "the access point is busy").into_response();
    }
    if receiver == UNKNOWN_RECEIVER {
        let text = format!("No such participant in the SML: {receiver}");
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(report(false, &instance, Some(("lookupError", &text)))),
        )
            .into_response();
    }
    match ledger.transmissions.get_mut(&instance) {
        Some(t) if t.sha256 != sha256 => {
            return (
                StatusCode::UNPROCESSABLE_ENTITY,
                Json(report(
                    false,
                    &instance,
                    Some((
                        "sendingError",
                        "this SBDH instance id was used for another document",
                    )),
                )),
            )
                .into_response();
        }
        Some(t) => t.submissions += 1,
        None => {
            ledger.transmissions.insert(
                instance.clone(),
                Transmitted {
                    instance_id: instance.clone(),
                    sender,
                    receiver,
                    document_type,
                    number: number_of(&body),
                    sha256,
                    submissions: 1,
                    taken: Some(Instant::now()),
                },
            );
        }
    }
    if fails == Some(false) {
        ledger.failed += 1;
        return (StatusCode::INTERNAL_SERVER_ERROR, "the answer was lost").into_response();
    }
    Json(report(true, &instance, None)).into_response()
}

async fn status(State(s): State<Shared>, Path(instance): Path<String>) -> Response {
    let ledger = s.ledger.lock().unwrap();
    let Some(t) = ledger.transmissions.get(&instance) else {
        return (StatusCode::NOT_FOUND, Json(json!({"error": "not found"}))).into_response();
    };
    let accepted = t
        .taken
        .is_some_and(|at| at.elapsed() >= Duration::from_secs(1));
    Json(json!({
        "sbdhInstanceID": t.instance_id,
        "senderID": t.sender,
        "receiverID": t.receiver,
        "docTypeID": t.document_type,
        "status": "sent",
        "attemptCount": t.submissions,
        "mlsStatus": if accepted { "received_ap" } else { "pending" },
    }))
    .into_response()
}

async fn ledger(State(s): State<Shared>) -> Json<serde_json::Value> {
    let ledger = s.ledger.lock().unwrap();
    Json(json!({
        "calls": ledger.calls,
        "failed": ledger.failed,
        "transmissions": ledger.transmissions.values().collect::<Vec<_>>(),
    }))
}

#[derive(Deserialize)]
struct Control {
    fail_rate: f64,
}

async fn control(State(s): State<Shared>, Json(c): Json<Control>) -> StatusCode {
    if !(0.0..=1.0).contains(&c.fail_rate) {
        return StatusCode::BAD_REQUEST;
    }
    s.config.lock().unwrap().fail_rate = c.fail_rate;
    StatusCode::NO_CONTENT
}

#[derive(Deserialize)]
struct Delivery {
    url: String,
    xml: String,
    instance_id: Option<String>,
}

/// The SBD phoss-ap forwards: the header naming sender, receiver and instance, then the document.
pub fn sbd(sender: &str, receiver: &str, instance: &str, xml: &str) -> String {
    let document = xml
        .trim_start()
        .strip_prefix("<?xml")
        .and_then(|rest| rest.split_once("?>"))
        .map_or(xml, |(_, body)| body);
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<StandardBusinessDocument xmlns="http://www.unece.org/cefact/namespaces/StandardBusinessDocumentHeader">
  <StandardBusinessDocumentHeader>
    <HeaderVersion>1.0</HeaderVersion>
    <Sender><Identifier Authority="iso6523-actorid-upis">{sender}</Identifier></Sender>
    <Receiver><Identifier Authority="iso6523-actorid-upis">{receiver}</Identifier></Receiver>
    <DocumentIdentification>
      <Standard>urn:oasis:names:specification:ubl:schema:xsd:Invoice-2</Standard>
      <TypeVersion>2.1</TypeVersion>
      <InstanceIdentifier>{instance}</InstanceIdentifier>
      <Type>Invoice</Type>
      <CreationDateAndTime>2026-12-08T00:00:00Z</CreationDateAndTime>
    </DocumentIdentification>
  </StandardBusinessDocumentHeader>
{document}
</StandardBusinessDocument>
"#
    )
}

/// Signs and POSTs `body` to the app's inbound webhook as delivery `instance`, as phoss-ap's HTTP
/// forwarding does (with the signature invoicer asks for); the answer's status and body.
pub async fn deliver_signed(
    http: &reqwest::Client,
    url: &str,
    secret: &str,
    instance: &str,
    body: &str,
) -> anyhow::Result<(u16, String)> {
    let timestamp = chrono::Utc::now().timestamp();
    let signature = invoicer_core::webhooks_out::sign(secret, instance, timestamp, body.as_bytes())
        .ok_or_else(|| anyhow::anyhow!("the inbound secret is not whsec_<base64>"))?;
    let response = http
        .post(url)
        .header("content-type", "application/xml")
        .header("x-sbdh-instance-id", instance)
        .header("webhook-id", instance)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body.to_owned())
        .send()
        .await?;
    let status = response.status().as_u16();
    Ok((status, response.text().await?))
}

async fn deliver(State(s): State<Shared>, Json(d): Json<Delivery>) -> Response {
    let secret = s.config.lock().unwrap().inbound_secret.clone();
    let instance = d
        .instance_id
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let body = d.xml;
    let mut delay = Duration::from_millis(200);
    for _ in 0..8 {
        match deliver_signed(&s.http, &d.url, &secret, &instance, &body).await {
            Ok((status, answer)) if (200..300).contains(&status) => {
                return Json(json!({"instance_id": instance, "status": status, "answer": answer}))
                    .into_response()
            }
            Ok((status, answer)) if (400..500).contains(&status) && status != 409 => {
                return (
                    StatusCode::BAD_GATEWAY,
                    Json(json!({"instance_id": instance, "status": status, "answer": answer})),
                )
                    .into_response()
            }
            _ => {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
    }
    (
        StatusCode::GATEWAY_TIMEOUT,
        Json(json!({"instance_id": instance, "error": "the app did not take it"})),
    )
        .into_response()
}

//! A small typed client for the part of Stripe's API invoicer calls: creating and reading Checkout
//! sessions, and creating and listing refunds. Form-encoded requests, `Stripe-Version` pinned, a
//! timeout on every call, and retries with backoff on network errors, 409 (a request under the same
//! key still in progress), 429 and 5xx — always with the same `Idempotency-Key`, as Stripe requires,
//! so a retry can never create a second session or refund.

use std::time::Duration;

use serde::Deserialize;

use crate::payments::provider::NewCharge;

/// The API version the requests and the parsing are written against.
pub const STRIPE_VERSION: &str = "2024-06-20";
/// Stripe's public API (`STRIPE_API_BASE` points the app elsewhere: the local Stripe in dev and tests).
pub const DEFAULT_API_BASE: &str = "https://api.stripe.com";

/// Tries per call: the first and up to three retries.
const TRIES: u32 = 4;
/// Calls to Stripe at once (see [`Stripe::call_slot`]).
pub const MAX_CALLS: usize = 32;

#[derive(Clone, Debug)]
pub struct Stripe {
    base: String,
    secret_key: Option<crate::secret::Secret>,
    http: reqwest::Client,
    /// The first retry's pause; doubled each time (tests shorten it).
    backoff: Duration,
    /// Calls to Stripe under way at once, across every clone of this client: beyond them a Pay is
    /// refused before anything is claimed (503 with Retry-After), so slow answers from Stripe cannot
    /// pile up requests without bound.
    calls: std::sync::Arc<tokio::sync::Semaphore>,
}

/// A Checkout session as Stripe answers it (the fields invoicer reads).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct Session {
    pub id: String,
    /// The hosted checkout page; absent once the session is complete or expired.
    pub url: Option<String>,
    /// Unix seconds.
    pub expires_at: i64,
    pub livemode: bool,
    pub amount_total: Option<i64>,
    pub currency: Option<String>,
    pub client_reference_id: Option<String>,
    /// `open`, `complete` or `expired`.
    pub status: Option<String>,
    pub payment_status: Option<String>,
}

/// A refund as Stripe answers it (the fields invoicer reads).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Refund {
    pub id: String,
    /// Stripe's units.
    pub amount: i64,
    /// `succeeded`, `pending`, `requires_action`, `failed` or `canceled`.
    pub status: Option<String>,
    pub payment_intent: Option<String>,
    /// What the refund was created with: how it is found again once Stripe forgot its key.
    #[serde(default)]
    pub metadata: std::collections::HashMap<String, String>,
}

/// A customer as Stripe answers it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Customer {
    pub id: String,
    #[serde(default)]
    pub livemode: bool,
}

/// What a setup session asks for: a page where `customer` saves a method.
#[derive(Debug, Clone)]
pub struct NewSetupSession<'a> {
    pub org: model::OrgId,
    pub customer_id: uuid::Uuid,
    /// Stripe's customer.
    pub customer: &'a str,
    /// The currency the methods will be charged in (Stripe asks it of a setup session that offers a
    /// SEPA debit).
    pub currency: &'a str,
    pub success_url: &'a str,
    pub cancel_url: &'a str,
}

/// A PaymentIntent as Stripe answers it (the fields invoicer reads).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Intent {
    pub id: String,
    /// `processing`, `requires_action`, `requires_payment_method` (declined), `succeeded`, ...
    pub status: String,
    #[serde(default)]
    pub last_payment_error: Option<IntentError>,
    #[serde(default)]
    pub next_action: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IntentError {
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
}

impl Intent {
    /// Where the customer confirms it, when it needs them.
    pub fn action_url(&self) -> Option<String> {
        let action = self.next_action.as_ref()?;
        action["redirect_to_url"]["url"]
            .as_str()
            .or_else(|| action["use_stripe_sdk"]["stripe_js"].as_str())
            .map(str::to_owned)
    }

    /// The provider's words for a failure, when there was one.
    pub fn failure(&self) -> Option<String> {
        let e = self.last_payment_error.as_ref()?;
        e.message.clone().or_else(|| e.code.clone())
    }
}

/// A PaymentMethod as Stripe answers it (the fields invoicer shows).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Method {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub customer: Option<String>,
    #[serde(default)]
    pub card: Option<MethodCard>,
    #[serde(default)]
    pub sepa_debit: Option<MethodDebit>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MethodCard {
    #[serde(default)]
    pub brand: Option<String>,
    #[serde(default)]
    pub last4: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MethodDebit {
    #[serde(default)]
    pub last4: Option<String>,
}

/// A SEPA mandate as Stripe answers it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Mandate {
    pub id: String,
    /// `active`, `pending` or `inactive`.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub payment_method_details: serde_json::Value,
}

impl Mandate {
    /// The reference the customer's bank statement shows.
    pub fn reference(&self) -> Option<String> {
        self.payment_method_details["sepa_debit"]["reference"]
            .as_str()
            .map(str::to_owned)
    }
}

/// A page of one of Stripe's lists.
#[derive(Debug, Deserialize)]
struct List<T> {
    data: Vec<T>,
    #[serde(default)]
    has_more: bool,
}

/// Refunds per page of a list (Stripe's largest page).
const LIST_LIMIT: usize = 100;
/// Pages read of one list at most: a payment with more refunds than this is not one this app made.
const LIST_PAGES: usize = 10;

/// What a new session asks for: one line, the amount due, in Stripe's units.
#[derive(Debug, Clone)]
pub struct NewSession<'a> {
    pub org: model::OrgId,
    pub invoice: uuid::Uuid,
    /// In Stripe's minor units of `currency`.
    pub amount: i64,
    pub currency: &'a str,
    /// The line's name on the checkout page: "Invoice INV-0001 from Acme".
    pub description: &'a str,
    pub customer_email: Option<&'a str>,
    pub success_url: &'a str,
    pub cancel_url: &'a str,
    /// Unix seconds, 30 minutes to 24 hours from now (Stripe's bounds).
    pub expires_at: i64,
}

impl NewSession<'_> {
    /// Stripe's form encoding, nested keys in brackets.
    pub fn form(&self) -> Vec<(String, String)> {
        let mut form = vec![
            ("mode".to_owned(), "payment".to_owned()),
            ("client_reference_id".to_owned(), self.invoice.to_string()),
            ("metadata[invoice_id]".to_owned(), self.invoice.to_string()),
            ("metadata[org_id]".to_owned(), self.org.to_string()),
            (
                "payment_intent_data[metadata][invoice_id]".to_owned(),
                self.invoice.to_string(),
            ),
            ("line_items[0][quantity]".to_owned(), "1".to_owned()),
            (
                "line_items[0][price_data][currency]".to_owned(),
                self.currency.to_owned(),
            ),
            (
                "line_items[0][price_data][unit_amount]".to_owned(),
                self.amount.to_string(),
            ),
            (
                "line_items[0][price_data][product_data][name]".to_owned(),
                self.description.to_owned(),
            ),
            ("success_url".to_owned(), self.success_url.to_owned()),
            ("cancel_url".to_owned(), self.cancel_url.to_owned()),
            ("expires_at".to_owned(), self.expires_at.to_string()),
        ];
        if let Some(email) = self.customer_email.filter(|e| !e.is_empty()) {
            form.push(("customer_email".to_owned(), email.to_owned()));
        }
        form
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum StripeError {
    #[error("Stripe is not configured: set STRIPE_SECRET_KEY")]
    NotConfigured,
    /// Stripe answered with an error object.
    #[error("Stripe answered {status}: {kind} ({code}): {message}")]
    Api {
        status: u16,
        kind: String,
        code: String,
        message: String,
    },
    /// A charge the customer's bank or card refused (402), with the intent it made.
    #[error("Stripe declined the charge: {code}")]
    Declined { code: String, intent: Box<Intent> },
    #[error("Stripe could not be reached: {0}")]
    Network(String),
    #[error("Stripe's answer could not be read: {0}")]
    Unreadable(String),
}

impl StripeError {
    /// Worth another try with the same key: the network, a request under the same key still in
    /// progress at Stripe (409), rate limits, Stripe's own errors. Never a 4xx that says the request
    /// itself is wrong.
    pub fn retryable(&self) -> bool {
        match self {
            StripeError::Network(_) => true,
            StripeError::Api { status, .. } => *status == 409 || *status == 429 || *status >= 500,
            StripeError::NotConfigured
            | StripeError::Unreadable(_)
            | StripeError::Declined { .. } => false,
        }
    }
}

/// `id` as one segment of a URL's path or one value of its query, whatever it holds.
fn path_segment(id: &str) -> String {
    percent_encoding::utf8_percent_encode(id, percent_encoding::NON_ALPHANUMERIC).collect()
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorObject,
}

#[derive(Deserialize)]
struct ErrorObject {
    #[serde(rename = "type", default)]
    kind: String,
    /// A declined charge's intent.
    #[serde(default)]
    payment_intent: Option<Intent>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

impl Stripe {
    pub fn new(base: &str, secret_key: Option<crate::secret::Secret>) -> Stripe {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(20))
            .user_agent(concat!("invoicer/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("an HTTP client with timeouts builds");
        Stripe {
            base: base.trim_end_matches('/').to_owned(),
            secret_key: secret_key.filter(|k| !k.is_blank()),
            http,
            backoff: Duration::from_millis(500),
            calls: std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_CALLS)),
        }
    }

    /// The same client with room for `n` calls at once (tests).
    pub fn with_max_calls(mut self, n: usize) -> Stripe {
        self.calls = std::sync::Arc::new(tokio::sync::Semaphore::new(n));
        self
    }

    /// A place for one call, if one is free now; held until the call is over.
    pub fn call_slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.calls.clone().try_acquire_owned().ok()
    }

    /// The same client with another first-retry pause (tests keep retries fast).
    pub fn with_backoff(mut self, backoff: Duration) -> Stripe {
        self.backoff = backoff;
        self
    }

    pub fn configured(&self) -> bool {
        self.secret_key.is_some()
    }

    /// `POST /v1/checkout/sessions` under `idempotency_key`: a repeat of the same key and parameters
    /// gets the same session back from Stripe.
    pub async fn create_checkout_session(
        &self,
        new: &NewSession<'_>,
        idempotency_key: &str,
    ) -> Result<Session, StripeError> {
        let form = new.form();
        let url = format!("{}/v1/checkout/sessions", self.base);
        self.call(|http, key| {
            http.post(&url)
                .bearer_auth(key)
                .header("Idempotency-Key", idempotency_key)
                .form(&form)
        })
        .await
    }

    /// `POST /v1/checkout/sessions/{id}/expire` under `idempotency_key`: nobody can pay the session
    /// any more.
    pub async fn expire_checkout_session(
        &self,
        id: &str,
        idempotency_key: &str,
    ) -> Result<Session, StripeError> {
        let id = path_segment(id);
        let url = format!("{}/v1/checkout/sessions/{id}/expire", self.base);
        self.call(|http, key| {
            http.post(&url)
                .bearer_auth(key)
                .header("Idempotency-Key", idempotency_key)
        })
        .await
    }

    /// `POST /v1/refunds` of `amount` (Stripe's units) of `payment_intent` under `idempotency_key`:
    /// a repeat of the same key and parameters gets the same refund back, never a second one.
    pub async fn create_refund(
        &self,
        payment_intent: &str,
        amount: i64,
        metadata: &[(&str, String)],
        idempotency_key: &str,
    ) -> Result<Refund, StripeError> {
        let mut form = vec![
            ("payment_intent".to_owned(), payment_intent.to_owned()),
            ("amount".to_owned(), amount.to_string()),
            ("reason".to_owned(), "requested_by_customer".to_owned()),
        ];
        form.extend(
            metadata
                .iter()
                .map(|(k, v)| (format!("metadata[{k}]"), v.clone())),
        );
        let url = format!("{}/v1/refunds", self.base);
        self.call(|http, key| {
            http.post(&url)
                .bearer_auth(key)
                .header("Idempotency-Key", idempotency_key)
                .form(&form)
        })
        .await
    }

    /// `GET /v1/refunds?payment_intent=...`: every refund of `payment_intent`, newest first, read
    /// page by page.
    pub async fn list_refunds(&self, payment_intent: &str) -> Result<Vec<Refund>, StripeError> {
        let first = format!(
            "{}/v1/refunds?payment_intent={}&limit={LIST_LIMIT}",
            self.base,
            path_segment(payment_intent)
        );
        let mut url = first.clone();
        let mut refunds = Vec::new();
        for _ in 0..LIST_PAGES {
            let page: List<Refund> = self
                .call(|http, key| http.get(&url).bearer_auth(key))
                .await?;
            let more = page.has_more;
            let last = page.data.last().map(|r| r.id.clone());
            refunds.extend(page.data);
            match last {
                Some(last) if more => {
                    url = format!("{first}&starting_after={}", path_segment(&last))
                }
                _ => return Ok(refunds),
            }
        }
        Err(StripeError::Unreadable(format!(
            "more than {} refunds of {payment_intent}",
            LIST_LIMIT * LIST_PAGES
        )))
    }

    /// `POST /v1/customers` under `idempotency_key` (named by our customer: a repeat finds the same
    /// one while Stripe remembers the key).
    pub async fn create_customer(
        &self,
        email: &str,
        name: &str,
        metadata: &[(&str, String)],
        idempotency_key: &str,
    ) -> Result<Customer, StripeError> {
        let mut form = vec![
            ("email".to_owned(), email.to_owned()),
            ("name".to_owned(), name.to_owned()),
        ];
        form.extend(
            metadata
                .iter()
                .map(|(k, v)| (format!("metadata[{k}]"), v.clone())),
        );
        let url = format!("{}/v1/customers", self.base);
        self.call(|http, key| {
            http.post(&url)
                .bearer_auth(key)
                .header("Idempotency-Key", idempotency_key)
                .form(&form)
        })
        .await
    }

    /// `POST /v1/checkout/sessions` in `setup` mode for `customer` (Stripe's id): the page where
    /// they save a card or a SEPA Direct Debit mandate for later charges.
    pub async fn create_setup_session(
        &self,
        new: &NewSetupSession<'_>,
        idempotency_key: &str,
    ) -> Result<Session, StripeError> {
        let mut form = vec![
            ("mode".to_owned(), "setup".to_owned()),
            ("customer".to_owned(), new.customer.to_owned()),
            ("currency".to_owned(), new.currency.to_owned()),
            ("payment_method_types[0]".to_owned(), "card".to_owned()),
            (
                "payment_method_types[1]".to_owned(),
                "sepa_debit".to_owned(),
            ),
            ("success_url".to_owned(), new.success_url.to_owned()),
            ("cancel_url".to_owned(), new.cancel_url.to_owned()),
            (
                "setup_intent_data[metadata][org_id]".to_owned(),
                new.org.to_string(),
            ),
            (
                "setup_intent_data[metadata][customer_id]".to_owned(),
                new.customer_id.to_string(),
            ),
            ("metadata[org_id]".to_owned(), new.org.to_string()),
            (
                "metadata[customer_id]".to_owned(),
                new.customer_id.to_string(),
            ),
        ];
        form.sort();
        let url = format!("{}/v1/checkout/sessions", self.base);
        self.call(|http, key| {
            http.post(&url)
                .bearer_auth(key)
                .header("Idempotency-Key", idempotency_key)
                .form(&form)
        })
        .await
    }

    /// `POST /v1/payment_intents`, confirmed off-session with a saved method, under
    /// `idempotency_key`: a repeat of the key gets the same intent back (a 402 for a declined one
    /// carries the intent too), never a second charge.
    pub async fn create_charge(
        &self,
        charge: &NewCharge<'_>,
        idempotency_key: &str,
    ) -> Result<Intent, StripeError> {
        let form = vec![
            ("amount".to_owned(), charge.amount.to_string()),
            ("currency".to_owned(), charge.currency.to_owned()),
            ("customer".to_owned(), charge.customer.to_owned()),
            (
                "payment_method".to_owned(),
                charge.payment_method.to_owned(),
            ),
            ("confirm".to_owned(), "true".to_owned()),
            ("off_session".to_owned(), "true".to_owned()),
            ("description".to_owned(), charge.description.to_owned()),
            (
                "metadata[invoice_id]".to_owned(),
                charge.invoice.to_string(),
            ),
            ("metadata[org_id]".to_owned(), charge.org.to_string()),
            ("metadata[attempt]".to_owned(), charge.attempt.to_string()),
        ];
        let url = format!("{}/v1/payment_intents", self.base);
        let answered = self
            .call::<Intent>(|http, key| {
                http.post(&url)
                    .bearer_auth(key)
                    .header("Idempotency-Key", idempotency_key)
                    .form(&form)
            })
            .await;
        match answered {
            // A declined or unauthenticated charge is a 402 whose error names the intent: that is
            // an answer about the charge, not a failed call.
            Err(StripeError::Declined { intent, .. }) => Ok(*intent),
            other => other,
        }
    }

    /// `GET /v1/payment_methods/{id}`.
    pub async fn retrieve_payment_method(&self, id: &str) -> Result<Method, StripeError> {
        let id = path_segment(id);
        let url = format!("{}/v1/payment_methods/{id}", self.base);
        self.call(|http, key| http.get(&url).bearer_auth(key)).await
    }

    /// `GET /v1/mandates/{id}`.
    pub async fn retrieve_mandate(&self, id: &str) -> Result<Mandate, StripeError> {
        let id = path_segment(id);
        let url = format!("{}/v1/mandates/{id}", self.base);
        self.call(|http, key| http.get(&url).bearer_auth(key)).await
    }

    /// `POST /v1/payment_methods/{id}/detach` under `idempotency_key`: it can be charged no more.
    pub async fn detach_payment_method(
        &self,
        id: &str,
        idempotency_key: &str,
    ) -> Result<Method, StripeError> {
        let id = path_segment(id);
        let url = format!("{}/v1/payment_methods/{id}/detach", self.base);
        self.call(|http, key| {
            http.post(&url)
                .bearer_auth(key)
                .header("Idempotency-Key", idempotency_key)
        })
        .await
    }

    /// `GET /v1/checkout/sessions/{id}`.
    pub async fn retrieve_checkout_session(&self, id: &str) -> Result<Session, StripeError> {
        let id = path_segment(id);
        let url = format!("{}/v1/checkout/sessions/{id}", self.base);
        self.call(|http, key| http.get(&url).bearer_auth(key)).await
    }

    async fn call<T: serde::de::DeserializeOwned>(
        &self,
        request: impl Fn(&reqwest::Client, &str) -> reqwest::RequestBuilder,
    ) -> Result<T, StripeError> {
        let key = self
            .secret_key
            .as_ref()
            .map(crate::secret::Secret::expose)
            .ok_or(StripeError::NotConfigured)?;
        let mut pause = self.backoff;
        for attempt in 1..=TRIES {
            let sent = request(&self.http, key)
                .header("Stripe-Version", STRIPE_VERSION)
                .send()
                .await;
            let (result, no_retry) = match sent {
                Err(e) => (Err(StripeError::Network(e.to_string())), false),
                Ok(response) => {
                    let no_retry = should_not_retry(&response);
                    (read(response).await, no_retry)
                }
            };
            match result {
                Err(e) if e.retryable() && !no_retry && attempt < TRIES => {
                    tracing::warn!(error = %e, attempt, "Stripe call failed; retrying with the same key");
                    metrics::counter!("invoicer_stripe_retries_total").increment(1);
                    // Full jitter around the doubling pause, so retries of many clients spread out.
                    let jitter = fastrand::u64(0..=pause.as_millis() as u64 / 2);
                    tokio::time::sleep(pause + Duration::from_millis(jitter)).await;
                    pause *= 2;
                }
                other => return other,
            }
        }
        unreachable!("the last try returns")
    }
}

/// Stripe's own "do not retry this" (`Stripe-Should-Retry: false`), which wins over the status code.
fn should_not_retry(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get("stripe-should-retry")
        .is_some_and(|v| v == "false")
}

async fn read<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
) -> Result<T, StripeError> {
    let status = response.status().as_u16();
    let no_retry = should_not_retry(&response);
    let body = response
        .bytes()
        .await
        .map_err(|e| StripeError::Network(e.to_string()))?;
    if (200..300).contains(&status) {
        return serde_json::from_slice(&body).map_err(|e| StripeError::Unreadable(e.to_string()));
    }
    let mut error = serde_json::from_slice::<ErrorBody>(&body).ok();
    if status == 402 {
        if let Some(intent) = error.as_mut().and_then(|e| e.error.payment_intent.take()) {
            let code = error
                .as_ref()
                .and_then(|e| e.error.code.clone())
                .unwrap_or_default();
            return Err(StripeError::Declined {
                code,
                intent: Box::new(intent),
            });
        }
    }
    let (kind, code, message) = match error {
        Some(ErrorBody { error: e }) => (
            e.kind,
            e.code.unwrap_or_default(),
            e.message.unwrap_or_default(),
        ),
        None => (
            "unknown".to_owned(),
            String::new(),
            String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
        ),
    };
    Err(StripeError::Api {
        // Stripe-Should-Retry: false turns a retryable status into a final one; a 409 stays a 409
        // (not retried now, but it never says the request itself is wrong).
        status: if no_retry && (status == 429 || status >= 500) {
            400
        } else {
            status
        },
        kind,
        code,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_names_the_invoice_and_org_and_one_line() {
        let (org, invoice) = (
            model::OrgId::from(uuid::Uuid::new_v4()),
            uuid::Uuid::new_v4(),
        );
        let new = NewSession {
            org,
            invoice,
            amount: 12_345,
            currency: "eur",
            description: "Invoice INV-1",
            customer_email: Some("ada@example.com"),
            success_url: "https://x/i/t?paid=1",
            cancel_url: "https://x/i/t",
            expires_at: 1_900_000_000,
        };
        let form: std::collections::HashMap<_, _> = new.form().into_iter().collect();
        assert_eq!(form["mode"], "payment");
        assert_eq!(form["client_reference_id"], invoice.to_string());
        assert_eq!(form["metadata[org_id]"], org.to_string());
        assert_eq!(form["line_items[0][price_data][unit_amount]"], "12345");
        assert_eq!(form["line_items[0][price_data][currency]"], "eur");
        assert_eq!(form["customer_email"], "ada@example.com");
    }

    #[test]
    fn only_transient_failures_are_retried() {
        let api = |status| StripeError::Api {
            status,
            kind: "x".into(),
            code: String::new(),
            message: String::new(),
        };
        assert!(api(500).retryable());
        assert!(api(429).retryable());
        // Another request under the same key is still in progress at Stripe: not yet, not no.
        assert!(api(409).retryable());
        assert!(!api(400).retryable());
        assert!(!api(402).retryable());
        assert!(StripeError::Network("reset".into()).retryable());
        assert!(!StripeError::NotConfigured.retryable());
    }
}

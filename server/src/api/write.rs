//! What every idempotent write of the API shares: the [`Write`] extractor (who asks, the
//! Idempotency-Key as sent, and the method and path of the matched route), the attempt it runs as,
//! the key checked before anything else, the fingerprint and the claim ([`Keyed::once`]), and the
//! answer (a replay is the stored response, byte for byte). A handler reads extract → once → answer;
//! the body is read and checked before anything is claimed (an invalid request is not stored, so its
//! key stays usable).

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, MatchedPath, RawPathParams, Request};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use invoicer_core::accounts::api_keys::ApiClient;
use invoicer_core::claim::StoredResponse;
use invoicer_core::observe::{Attempt, Surface};
use invoicer_core::surfaces::api::{self, ApiOutcome, IdempotencyKey};
use invoicer_core::surfaces::track;
use invoicer_core::surfaces::Transient;
use invoicer_core::AppState;
use model::Action;
use serde::de::DeserializeOwned;
use sqlx::PgConnection;
use uuid::Uuid;

use super::client::Client;
use super::problem::{internal, problem, ProblemResponse};

/// An idempotent write as its route received it: who asks, its headers and body. The fingerprint's
/// method and path are the request's method and the matched route with its `{id}` written as the id
/// it names (the canonical UUID), so `POST /api/v1/invoices/{id}/finalize` fingerprints as
/// `POST /api/v1/invoices/<uuid>/finalize`.
pub(super) struct Write {
    state: AppState,
    client: Client,
    headers: HeaderMap,
    method: String,
    route: String,
    id: Option<String>,
    body: Result<Bytes, BytesRejection>,
}

/// The body as sent; read (and its rejection answered) by the handler, after the key is checked.
pub(super) type Body = Result<Bytes, BytesRejection>;

impl FromRequest<AppState> for Write {
    /// A path that is not UTF-8 is axum's own 400, as a `Path` extractor answers it.
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let client = Client::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let route = parts
            .extensions
            .get::<MatchedPath>()
            .ok_or_else(|| internal("an idempotent write", "no matched route").into_response())?
            .as_str()
            .to_owned();
        let params = RawPathParams::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let id = params
            .iter()
            .find(|(name, _)| *name == "id")
            .map(|(_, value)| value.to_owned());
        let (headers, method) = (parts.headers.clone(), parts.method.as_str().to_owned());
        let body = Bytes::from_request(Request::from_parts(parts, body), state).await;
        Ok(Write {
            state: state.clone(),
            client,
            headers,
            method,
            route,
            id,
            body,
        })
    }
}

impl Write {
    /// 403 unless the key may `action` (beyond what the method already asked).
    pub(super) fn require(&self, action: Action) -> Result<(), ProblemResponse> {
        self.client.require(action)
    }

    /// Runs `request` as this write's tracked attempt, named by the key as sent; the key is checked
    /// first (400), then `request` reads the body and claims through [`Keyed::once`].
    pub(super) async fn run(
        mut self,
        request: impl AsyncFnOnce(&Keyed<'_>, Body) -> Result<ApiOutcome, ProblemResponse>,
    ) -> Result<Response, ProblemResponse> {
        let client = self.client.0;
        let sent = self.headers.get("idempotency-key").cloned();
        let named = sent.as_ref().map(|v| String::from_utf8_lossy(v.as_bytes()));
        let request_id = self
            .headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let attempt = Attempt::new(Surface::Api, named.unwrap_or_default(), request_id);
        attempt.identify(client.key_id.to_string(), Some(client.org_id));
        let body = std::mem::replace(&mut self.body, Ok(Bytes::new()));
        let pool = self.state.pool.clone();
        let outcome = track(&pool, attempt, async |attempt| {
            let key = IdempotencyKey::parse(sent.as_ref().map(|v| v.as_bytes()))?;
            let keyed = Keyed {
                write: &self,
                attempt: &attempt,
                key,
            };
            request(&keyed, body).await
        })
        .await?;
        answer(outcome)
    }
}

/// A write whose key is checked: what a handler claims with.
pub(super) struct Keyed<'a> {
    write: &'a Write,
    attempt: &'a Attempt,
    key: IdempotencyKey,
}

impl Keyed<'_> {
    pub(super) fn state(&self) -> &AppState {
        &self.write.state
    }

    pub(super) fn headers(&self) -> &HeaderMap {
        &self.write.headers
    }

    pub(super) fn client(&self) -> ApiClient {
        self.write.client.0
    }

    pub(super) fn org(&self) -> model::OrgId {
        self.write.client.0.org_id
    }

    /// The attempt's name as a business key: `api:<API key id>/<Idempotency-Key>`.
    pub(super) fn attempt_name(&self) -> String {
        format!("api:{}/{}", self.client().key_id, self.key.as_str())
    }

    /// The id the route names, or `missing` (a 404) when it is not a UUID.
    pub(super) fn id(&self, missing: fn() -> ProblemResponse) -> Result<Uuid, ProblemResponse> {
        self.write
            .id
            .as_deref()
            .and_then(|id| Uuid::try_parse(id).ok())
            .ok_or_else(missing)
    }

    /// The route's path with its id filled in.
    fn path(&self) -> String {
        match self.write.id.as_deref().map(Uuid::try_parse) {
            Some(Ok(id)) => self.write.route.replace("{id}", &id.to_string()),
            _ => self.write.route.clone(),
        }
    }

    /// Where a resource this write created is: the collection's path and the new id.
    pub(super) fn location(&self, id: Uuid) -> String {
        format!("{}/{id}", self.path())
    }

    fn fingerprint(&self, body: &serde_json::Value) -> Vec<u8> {
        api::fingerprint(&self.write.method, &self.path(), body)
    }

    /// Runs `work` at most once per (client, key) and `body` (the request as the fingerprint takes
    /// it); its stored response is what every retry gets.
    pub(super) async fn once<F, W>(
        &self,
        body: &serde_json::Value,
        work: F,
    ) -> Result<ApiOutcome, ProblemResponse>
    where
        F: FnMut() -> W,
        W: AsyncFnOnce(&mut PgConnection) -> Result<(StoredResponse, Option<Uuid>), Failed>,
    {
        let ttl = self.write.state.settings.idempotency_key_ttl;
        let fingerprint = self.fingerprint(body);
        let (pool, attempt, client) = (&self.write.state.pool, self.attempt, self.client());
        api::respond_once(pool, attempt, client, &self.key, &fingerprint, ttl, work)
            .await
            .map_err(|failed| match failed {
                Failed::Db(e) => ProblemResponse::from(e),
                Failed::Refused(problem) => problem,
            })
    }

    /// What [`Keyed::once`] would answer without running anything (for work that calls out).
    pub(super) async fn answered(
        &self,
        body: &serde_json::Value,
    ) -> Result<Option<ApiOutcome>, ProblemResponse> {
        let ttl = self.write.state.settings.idempotency_key_ttl;
        let fingerprint = self.fingerprint(body);
        let (pool, client) = (&self.write.state.pool, self.client());
        Ok(api::answered(pool, client, &self.key, &fingerprint, ttl).await?)
    }
}

/// How a write's work inside its claimed transaction fails: a database error (run again from the
/// claim when Postgres aborted the transaction), or a refusal of the command, answered and never
/// stored (the transaction rolls back with the claim, so the key stays usable).
pub(super) enum Failed {
    Db(sqlx::Error),
    Refused(ProblemResponse),
}

impl From<sqlx::Error> for Failed {
    fn from(e: sqlx::Error) -> Self {
        Failed::Db(e)
    }
}

impl From<ProblemResponse> for Failed {
    fn from(problem: ProblemResponse) -> Self {
        Failed::Refused(problem)
    }
}

impl Transient for Failed {
    fn is_transient(&self) -> bool {
        matches!(self, Failed::Db(e) if e.is_transient())
    }
}

/// The body as JSON (for the fingerprint) and as a `T` that passes `check`; `what` names it in
/// problems (`invalid-<what>`).
pub(super) fn json_body<T: DeserializeOwned>(
    body: Body,
    what: &str,
    check: impl FnOnce(&T) -> Result<(), BTreeMap<String, String>>,
) -> Result<(serde_json::Value, T), ProblemResponse> {
    let value: serde_json::Value = serde_json::from_slice(&body?).map_err(|e| {
        problem(
            StatusCode::BAD_REQUEST,
            "malformed-json",
            "Malformed JSON",
            format!("The body is not JSON: {e}"),
        )
    })?;
    let input = typed(&value, what)?;
    check(&input).map_err(|fields| invalid(what, fields))?;
    Ok((value, input))
}

/// `value` as a `T`: otherwise 422 `invalid-<what>`, with `errors` naming the field that does not
/// read (`interval`, `lines[2].quantity`) and serde's reason, or the reason alone when it concerns
/// the whole body (an unknown field, a body that is not an object).
pub(super) fn typed<T: DeserializeOwned>(
    value: &serde_json::Value,
    what: &str,
) -> Result<T, ProblemResponse> {
    serde_path_to_error::deserialize(value.clone()).map_err(|e| {
        let field = e.path().to_string();
        not_read(
            what,
            model::Unreadable {
                field: (field != ".").then_some(field),
                reason: e.inner().to_string(),
            },
        )
    })
}

/// The answer to a body that does not read: 422 `invalid-<what>` with `errors` naming the field
/// that does not, or with the reason alone when it concerns the whole body.
pub(super) fn not_read(what: &str, why: model::Unreadable) -> ProblemResponse {
    match why.field {
        Some(field) => invalid(what, BTreeMap::from([(field, why.reason)])),
        None => unreadable(what, why.reason),
    }
}

/// 422 `invalid-<what>` with why the JSON is not one.
pub(super) fn unreadable(what: &str, detail: String) -> ProblemResponse {
    let (slug, title) = (format!("invalid-{what}"), format!("Invalid {what}"));
    problem(StatusCode::UNPROCESSABLE_ENTITY, &slug, &title, detail)
}

/// The body of a merge patch: a JSON object, or 400 naming what it patches.
pub(super) fn patch_body(body: Body, of: &str) -> Result<serde_json::Value, ProblemResponse> {
    serde_json::from_slice(&body?)
        .ok()
        .filter(serde_json::Value::is_object)
        .ok_or_else(|| {
            problem(
                StatusCode::BAD_REQUEST,
                "malformed-json",
                "Malformed JSON",
                format!("The body must be a JSON object (a merge patch of {of})."),
            )
        })
}

/// 422 `invalid-<what>` with the field errors (nothing was claimed: the key stays usable).
pub(super) fn invalid(what: &str, fields: BTreeMap<String, String>) -> ProblemResponse {
    let mut p = problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        &format!("invalid-{what}"),
        &format!("Invalid {what}"),
        "Some fields are invalid; see `errors`.",
    );
    p.problem.errors = Some(fields);
    p
}

/// The HTTP answer of a write's outcome.
fn answer(outcome: ApiOutcome) -> Result<Response, ProblemResponse> {
    match outcome {
        ApiOutcome::Created { response, .. } => Ok(stored_to_response(response, false)),
        ApiOutcome::Replayed { response, .. } => Ok(stored_to_response(response, true)),
        ApiOutcome::InFlight { retry_after } => Err(problem(
            StatusCode::CONFLICT,
            "in-flight",
            "Request in flight",
            "A request with this Idempotency-Key is still being processed. Retry later.",
        )
        .retry_after(retry_after)),
        ApiOutcome::Mismatch => Err(problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency-key-reused",
            "Idempotency-Key already used with a different request",
            "This key was used for a request with another method, path or body. Use a new key.",
        )),
    }
}

fn stored_to_response(stored: StoredResponse, replayed: bool) -> Response {
    let mut builder = Response::builder().status(stored.status);
    if let Some(headers) = stored.headers.as_object() {
        for (name, value) in headers {
            if let Some(value) = value.as_str() {
                builder = builder.header(name.as_str(), value);
            }
        }
    }
    if replayed {
        builder = builder.header("idempotent-replayed", "true");
    }
    builder
        .body(axum::body::Body::from(stored.body))
        .unwrap_or_else(|e| internal("rebuilding a stored response", e).into_response())
}

/// The stored answer of a problem (a lifecycle refusal is as final for its key as a success).
pub(super) fn stored_problem(p: ProblemResponse) -> StoredResponse {
    StoredResponse {
        status: p.status.as_u16(),
        headers: serde_json::json!({ "content-type": "application/problem+json" }),
        body: serde_json::to_vec(&p.problem).expect("problems serialise"),
    }
}

/// [`Keyed::once`] for a create: `$insert` (with `$tx` and a fresh `$id` in scope) writes the resource
/// and the answer is 201 with its Location; `names` says whether the attempt's row names the new id.
/// A macro, not a function taking an async closure: that closure's future is not provably `Send`.
macro_rules! create_once {
    ($req:expr, $body:expr, names: $names:expr, |$tx:ident, $id:ident| $insert:expr) => {
        $req.once($body, || {
            async |$tx| {
                let $id = uuid::Uuid::now_v7();
                let created = $insert.await?;
                let location = $req.location($id);
                let response = invoicer_core::surfaces::api::created(&location, &created);
                Ok((response, ($names).then_some($id)))
            }
        })
        .await
    };
}
pub(super) use create_once;

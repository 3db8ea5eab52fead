//! The invoice endpoints: create (once per Idempotency-Key, through the API surface), list, get.

use app::model::{Invoice, InvoiceInput};
use app::ssr::claim::StoredResponse;
use app::ssr::invoice_error::InvoiceError;
use app::ssr::lifecycle::{self, Action, Edited, Moved};
use app::ssr::observe::track;
use app::ssr::surfaces::api::{self, IdempotencyKey, INVOICES_PATH};
use app::ssr::{invoices, AppState};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::client::Client;
use super::problem::{problem, Problem, ProblemResponse};
use super::write;

/// Create an invoice, once per `Idempotency-Key`.
#[utoipa::path(
    post,
    path = "/api/v1/invoices",
    tag = "invoices",
    request_body = InvoiceInput,
    params(
        ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Names this attempt: 1..255 visible ASCII characters (a quoted structured-field string is accepted). Retries must reuse it. Keys expire after IDEMPOTENCY_KEY_TTL_HOURS (24)."),
    ),
    responses(
        (status = 201, description = "Created; replays return the stored response with `Idempotent-Replayed: true`", body = Invoice,
            headers(("Location" = String, description = "The invoice's URL"))),
        (status = 400, description = "Missing or malformed Idempotency-Key, or a body that is not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing, unknown or revoked API key", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The same key is still in flight; retry after `Retry-After` seconds", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 1 MiB", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid invoice (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []))
)]
pub(super) async fn post_invoice(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ProblemResponse> {
    let attempt = write::attempt(client, &headers);
    let outcome = track(&state.pool, attempt, async |attempt| {
        let key = IdempotencyKey::parse(headers.get("idempotency-key").map(|v| v.as_bytes()))?;
        let (value, mut input) = write::json_body(body, "invoice", |_: &InvoiceInput| Ok(()))?;
        with_customer(&state, client.org_id, &mut input).await?;
        let fingerprint = api::fingerprint("POST", INVOICES_PATH, &value);
        let ttl = state.settings.idempotency_key_ttl;
        let created = api::invoice_from_request(
            &state.pool,
            &attempt,
            client,
            &key,
            &fingerprint,
            &input,
            ttl,
            &state.settings.public_url,
        )
        .await?;
        Ok::<_, ProblemResponse>(created)
    })
    .await?;
    write::answer(outcome)
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// 1..100, default 20.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// draft | open | paid | void | uncollectible | refunded | overdue
    pub status: Option<String>,
    /// unpaid | processing | partially_paid | paid | partially_refunded | refunded | disputed
    pub payment_state: Option<String>,
    /// The start of a number or of the customer's name (case-insensitive).
    #[param(max_length = 200)]
    pub q: Option<String>,
    /// `next_cursor` of the previous page.
    #[param(max_length = 100)]
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InvoiceList {
    /// Newest first; with `status=overdue`, most overdue first (by due date).
    pub data: Vec<Invoice>,
    /// Pass as `cursor` for the next page, with the same filters; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The org's invoices, newest first (overdue ones: most overdue first), filtered, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/invoices",
    tag = "invoices",
    params(ListQuery),
    responses(
        (status = 200, body = InvoiceList),
        (status = 400, body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []))
)]
pub(super) async fn list_invoices(
    State(state): State<AppState>,
    Client(client): Client,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<InvoiceList>, ProblemResponse> {
    let bad = |detail: String| problem(StatusCode::BAD_REQUEST, "bad-query", "Bad query", detail);
    let Query(query) = query.map_err(|e| bad(e.body_text()))?;
    let limit = query.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(bad("limit must be 1..100".to_owned()));
    }
    let filter = invoices::ListFilter {
        status: query.status.filter(|s| !s.is_empty()),
        payment_state: query.payment_state.filter(|s| !s.is_empty()),
        q: query.q.filter(|s| !s.is_empty()),
    };
    invoices::check_filter(&filter).map_err(bad)?;
    let before = match query.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(text) => Some(
            invoices::ListCursor::parse(text, &filter)
                .ok_or_else(|| bad("cursor is not one this API gave out".to_owned()))?,
        ),
    };
    let mut conn = state.reads.acquire().await?;
    let (page, next) = invoices::page(&mut *conn, client.org_id, &filter, before, limit).await?;
    let ids: Vec<uuid::Uuid> = page.iter().map(|s| s.id).collect();
    let data =
        invoices::get_many(&mut conn, client.org_id, &ids, &state.settings.public_url).await?;
    Ok(Json(InvoiceList {
        data,
        next_cursor: next.map(invoices::ListCursor::encode),
    }))
}

/// One invoice of the org; another org's id is 404.
#[utoipa::path(
    get,
    path = "/api/v1/invoices/{id}",
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id (UUID)")),
    responses(
        (status = 200, body = Invoice, headers(("ETag" = String, description = "The version, for If-Match when editing a draft"))),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []))
)]
pub(super) async fn get_invoice(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Response, ProblemResponse> {
    let id = uuid::Uuid::try_parse(&id).map_err(|_| not_found())?;
    let mut conn = state.reads.acquire().await?;
    let invoice = invoices::get(&mut conn, client.org_id, id, &state.settings.public_url)
        .await?
        .ok_or_else(not_found)?;
    let etag = format!("\"{}\"", invoice.version);
    Ok(([(header::ETAG, etag)], Json(invoice)).into_response())
}

fn not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such invoice.",
    )
}

/// What every action on one invoice (finalize, void, delete, duplicate, ...) is asked with: the key,
/// the id, and no body or a JSON object (ignored, but part of the fingerprint).
fn action_request(
    headers: &HeaderMap,
    id: &str,
    body: Result<Bytes, BytesRejection>,
) -> Result<(IdempotencyKey, uuid::Uuid, serde_json::Value), ProblemResponse> {
    let key = IdempotencyKey::parse(headers.get("idempotency-key").map(|v| v.as_bytes()))?;
    let id = uuid::Uuid::try_parse(id).map_err(|_| not_found())?;
    let body = body?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok((key, id, serde_json::Value::Null));
    }
    match serde_json::from_slice(&body) {
        Ok(value @ serde_json::Value::Object(_)) => Ok((key, id, value)),
        _ => Err(problem(
            StatusCode::BAD_REQUEST,
            "malformed-json",
            "Malformed JSON",
            "The body must be empty or a JSON object.",
        )),
    }
}

/// A lifecycle action, once per `Idempotency-Key`: 200 with the invoice when it moved or was already
/// there (a repeat, or a race someone else won), 409 when it cannot move from where it is.
async fn act(
    state: AppState,
    client: app::ssr::api_keys::ApiClient,
    headers: HeaderMap,
    id: String,
    body: Result<Bytes, BytesRejection>,
    action: Action,
) -> Result<Response, ProblemResponse> {
    let attempt = write::attempt(client, &headers);
    let outcome = track(&state.pool, attempt, async |attempt| {
        let (key, id, value) = action_request(&headers, &id, body)?;
        let (method, path) = match action {
            Action::DeleteDraft => ("DELETE", format!("{INVOICES_PATH}/{id}")),
            _ => ("POST", format!("{INVOICES_PATH}/{id}/{}", action.as_str())),
        };
        let fingerprint = api::fingerprint(method, &path, &value);
        // An unknown id is answered before anything is claimed: the key stays usable. Not for a
        // delete, whose retry after success finds no invoice and must get the stored answer.
        if action != Action::DeleteDraft
            && !invoices::exists(&mut *state.pool.acquire().await?, client.org_id, id).await?
        {
            return Err(not_found());
        }
        let base = &state.settings.public_url;
        let ttl = state.settings.idempotency_key_ttl;
        let pool = &state.pool;
        let ran = api::respond_once(pool, &attempt, client, &key, &fingerprint, ttl, || {
            async |tx| {
                let moved = lifecycle::apply(tx, client.org_id, id, action).await?;
                let response = match moved {
                    Moved::Now if action == Action::DeleteDraft => StoredResponse {
                        status: 204,
                        headers: serde_json::json!({}),
                        body: Vec::new(),
                    },
                    Moved::Now | Moved::Already => {
                        match invoices::get(tx, client.org_id, id, base).await? {
                            Some(invoice) => api::ok(&invoice),
                            None => write::stored_problem(not_found()),
                        }
                    }
                    Moved::Refused(status, payment) => write::stored_problem(problem(
                        StatusCode::CONFLICT,
                        "invalid-transition",
                        "Invalid transition",
                        action.refusal(status, payment),
                    )),
                    Moved::NotFound => write::stored_problem(not_found()),
                };
                // An invoice that is not there (deleted now, or never) cannot be named by the
                // attempt's row: its foreign key.
                let concerns = match moved {
                    Moved::NotFound => None,
                    Moved::Now if action == Action::DeleteDraft => None,
                    _ => Some(id),
                };
                Ok((response, concerns))
            }
        })
        .await?;
        Ok::<_, ProblemResponse>(ran)
    })
    .await?;
    write::answer(outcome)
}

macro_rules! action_route {
    ($name:ident, $action:expr, $path:literal, $what:literal) => {
        #[doc = $what]
        #[utoipa::path(
            post,
            path = $path,
            tag = "invoices",
            params(
                ("id" = String, Path, description = "Invoice id (UUID)"),
                ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Names this attempt, as for creation."),
            ),
            responses(
                (status = 200, description = "Moved, or already there; replays return the stored response with `Idempotent-Replayed: true`", body = Invoice),
                (status = 400, description = "Missing or malformed Idempotency-Key, or a body that is neither empty nor a JSON object", body = Problem, content_type = "application/problem+json"),
                (status = 401, body = Problem, content_type = "application/problem+json"),
                (status = 404, body = Problem, content_type = "application/problem+json"),
                (status = 409, description = "The invoice cannot move from its current state, or the same key is still in flight", body = Problem, content_type = "application/problem+json"),
                (status = 422, description = "The key was used with a different request", body = Problem, content_type = "application/problem+json"),
            ),
            security(("api_key" = []))
        )]
        pub(super) async fn $name(
            State(state): State<AppState>,
            Client(client): Client,
            headers: HeaderMap,
            Path(id): Path<String>,
            body: Result<Bytes, BytesRejection>,
        ) -> Result<Response, ProblemResponse> {
            act(state, client, headers, id, body, $action).await
        }
    };
}

action_route!(
    finalize_invoice,
    Action::Finalize,
    "/api/v1/invoices/{id}/finalize",
    "Finalize a draft: it gets its number and public page."
);
action_route!(
    void_invoice,
    Action::Void,
    "/api/v1/invoices/{id}/void",
    "Void an open or uncollectible invoice with no payment; its public page stops working."
);
action_route!(
    mark_uncollectible,
    Action::MarkUncollectible,
    "/api/v1/invoices/{id}/mark_uncollectible",
    "Mark an open invoice uncollectible (it can still be paid)."
);

/// A Checkout session to pay an invoice: where to send the payer.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckoutSession {
    /// Stripe's session id (`cs_...`).
    pub id: String,
    /// Stripe's hosted payment page.
    pub url: String,
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// A Checkout session for the amount due, once per `Idempotency-Key`; and one per invoice and amount
/// due whatever the keys: another key (or the customer's Pay button) gets the same open session.
#[utoipa::path(
    post,
    path = "/api/v1/invoices/{id}/checkout",
    tag = "invoices",
    params(
        ("id" = String, Path, description = "Invoice id (UUID)"),
        ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Names this attempt, as for creation."),
    ),
    responses(
        (status = 200, description = "The open session; replays return the stored response with `Idempotent-Replayed: true`", body = CheckoutSession),
        (status = 400, description = "Missing or malformed Idempotency-Key, or a body that is neither empty nor a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Nothing is due (draft, paid, void), or the same key (or the session) is still being created: retry after `Retry-After`", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The key was used with a different request", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Stripe could not be reached (nothing stored: retry with the same key)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []))
)]
pub(super) async fn checkout_invoice(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ProblemResponse> {
    use app::ssr::checkout::{self, Checkout, CheckoutError, Urls};

    let attempt = write::attempt(client, &headers);
    let outcome = track(&state.pool, attempt, async |attempt| {
        let (key, id, value) = action_request(&headers, &id, body)?;
        let path = format!("{INVOICES_PATH}/{id}/checkout");
        let fingerprint = api::fingerprint("POST", &path, &value);
        let ttl = state.settings.idempotency_key_ttl;
        let pool = &state.pool;
        // A replay (or a reused key) is answered before anything calls Stripe.
        if let Some(earlier) = api::answered(pool, client, &key, &fingerprint, ttl).await? {
            return Ok(earlier);
        }
        let urls = Urls {
            public_base: &state.settings.public_url,
        };
        let response =
            match checkout::session(pool, &state.stripe, &urls, client.org_id, id).await {
                Ok(Checkout::Session(s)) => api::ok(&CheckoutSession {
                    id: s.id,
                    url: s.url,
                    expires_at: s.expires_at,
                }),
                Ok(Checkout::NothingDue { status }) => write::stored_problem(problem(
                    StatusCode::CONFLICT,
                    "nothing-due",
                    "Nothing to pay",
                    format!("This invoice is {status} with nothing due."),
                )),
                Ok(Checkout::NotFound) => return Err(not_found()),
                Ok(Checkout::NotEnabled) => write::stored_problem(problem(
                    StatusCode::CONFLICT,
                    "payments-not-enabled",
                    "Payments not enabled yet",
                    "This organisation may not take card payments yet: the operator enables them.",
                )),
                Err(CheckoutError::Busy(retry_after)) => {
                    return Err(problem(
                        StatusCode::CONFLICT,
                        "in-flight",
                        "Checkout in flight",
                        "The checkout session is being created. Retry later.",
                    )
                    .retry_after(retry_after))
                }
                Err(CheckoutError::Saturated) => return Err(problem(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "payment-unavailable",
                    "Payment temporarily unavailable",
                    "Too many payments are being set up right now. Nothing was stored: retry with \
                     the same key.",
                )
                .retry_after(std::time::Duration::from_secs(5))),
                Err(CheckoutError::Stripe(e)) => {
                    tracing::error!(error = %e, invoice = %id, "creating a checkout session");
                    return Err(problem(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "payment-unavailable",
                        "Payment temporarily unavailable",
                        "Stripe could not be reached. Nothing was stored: retry with the same key.",
                    )
                    .retry_after(std::time::Duration::from_secs(30)));
                }
                Err(CheckoutError::Db(e)) => return Err(e.into()),
            };
        let ran = api::respond_once(pool, &attempt, client, &key, &fingerprint, ttl, || {
            let response = response.clone();
            async move |_tx: &mut sqlx::PgConnection| Ok((response, Some(id)))
        })
        .await?;
        Ok::<_, ProblemResponse>(ran)
    })
    .await?;
    write::answer(outcome)
}

/// `If-Match: "3"` (or a bare `3`): the draft version the edit was made from.
fn if_match(headers: &HeaderMap) -> Result<i32, ProblemResponse> {
    let Some(value) = headers.get(header::IF_MATCH) else {
        return Err(problem(
            StatusCode::PRECONDITION_REQUIRED,
            "if-match-required",
            "If-Match required",
            "Editing a draft needs If-Match with the version you edited (the invoice's ETag).",
        ));
    };
    value
        .to_str()
        .ok()
        .map(|v| v.trim().trim_matches('"'))
        .and_then(|v| v.parse::<i32>().ok())
        .ok_or_else(|| {
            problem(
                StatusCode::BAD_REQUEST,
                "bad-if-match",
                "Malformed If-Match",
                "If-Match must be the invoice's ETag, e.g. \"3\".",
            )
        })
}

/// Edit a draft: a JSON merge patch (RFC 7396) of the invoice input, applied only if the draft is
/// still at the version `If-Match` names, once per `Idempotency-Key`.
#[utoipa::path(
    patch,
    path = "/api/v1/invoices/{id}",
    tag = "invoices",
    request_body(content = serde_json::Value, description = "A JSON merge patch of the invoice input (`lines`, when given, replaces all lines)", content_type = "application/merge-patch+json"),
    params(
        ("id" = String, Path, description = "Invoice id (UUID)"),
        ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Names this attempt, as for creation."),
        ("If-Match" = Option<String>, Header, description = "The draft's version as its ETag, e.g. \"3\". Required: without it the answer is 428."),
    ),
    responses(
        (status = 200, description = "Saved; the new version is in `version` and the ETag", body = Invoice,
            headers(("ETag" = String, description = "The draft's new version"))),
        (status = 400, description = "Missing or malformed Idempotency-Key or If-Match, or a body that is not a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Not a draft any more, or the same key is still in flight", body = Problem, content_type = "application/problem+json"),
        (status = 412, description = "The draft is at another version: someone saved since", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The patched invoice is invalid (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
        (status = 428, description = "If-Match is missing", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []))
)]
pub(super) async fn patch_invoice(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ProblemResponse> {
    let attempt = write::attempt(client, &headers);
    let outcome = track(&state.pool, attempt, async |attempt| {
        let key = IdempotencyKey::parse(headers.get("idempotency-key").map(|v| v.as_bytes()))?;
        let id = uuid::Uuid::try_parse(&id).map_err(|_| not_found())?;
        let version = if_match(&headers)?;
        let patch: serde_json::Value = serde_json::from_slice(&body?)
            .ok()
            .filter(serde_json::Value::is_object)
            .ok_or_else(|| {
                problem(
                    StatusCode::BAD_REQUEST,
                    "malformed-json",
                    "Malformed JSON",
                    "The body must be a JSON object (a merge patch of the invoice input).",
                )
            })?;
        let base = &state.settings.public_url;
        // Checked before anything is claimed: an unknown id, a stale version or an invalid result
        // leaves the key usable.
        let current = invoices::get(&mut *state.pool.acquire().await?, client.org_id, id, base)
            .await?
            .ok_or_else(not_found)?;
        let stale = || {
            problem(
                StatusCode::PRECONDITION_FAILED,
                "stale-version",
                "Stale version",
                "The draft was saved by someone else since the version you edited. GET it again and reapply your change.",
            )
        };
        let not_draft = |status: app::model::InvoiceStatus| {
            problem(
                StatusCode::CONFLICT,
                "not-a-draft",
                "Not a draft",
                format!("This invoice is {}; only drafts can be edited.", status.as_str()),
            )
        };
        // A draft at the named version: the patched result is checked now, so an invalid one claims
        // nothing. Otherwise the edit cannot apply (versions only grow, drafts never come back); the
        // claim still decides, so a retry of a request that did apply gets its stored answer.
        let editable = current.status == app::model::InvoiceStatus::Draft && current.version == version;
        let input = if editable {
            let mut merged =
                serde_json::to_value(InvoiceInput::of(&current)).expect("input serialises");
            // A due date sent alone replaces the draft's terms: the later choice wins.
            let sets_date_only = patch.get("due_date").is_some_and(|d| !d.is_null())
                && patch.get("payment_terms_days").is_none();
            write::merge_patch(&mut merged, &patch);
            merged["draft"] = true.into();
            if sets_date_only {
                merged["payment_terms_days"] = serde_json::Value::Null;
            }
            let (_, mut input) = write::json_body(
                Ok(Bytes::from(merged.to_string())),
                "invoice",
                |input: &InvoiceInput| match input.save_customer {
                    true => Err(app::error::FieldErrors::from([(
                        "save_customer".to_owned(),
                        "Only when creating an invoice: create the customer, then set customer_id."
                            .to_owned(),
                    )])),
                    false => Ok(()),
                },
            )?;
            with_customer(&state, client.org_id, &mut input).await?;
            input
        } else {
            InvoiceInput::of(&current)
        };
        let path = format!("{INVOICES_PATH}/{id}");
        let mut fingerprinted = patch.clone();
        fingerprinted["if-match"] = version.into();
        let fingerprint = api::fingerprint("PATCH", &path, &fingerprinted);
        let ttl = state.settings.idempotency_key_ttl;
        let pool = &state.pool;
        let ran = api::respond_once(pool, &attempt, client, &key, &fingerprint, ttl, || {
            async |tx| {
                let org = client.org_id;
                let edited = lifecycle::edit_draft(tx, org, id, version, &input).await?;
                let response = match edited {
                    Edited::Now(_) => match invoices::get(tx, org, id, base).await? {
                        Some(invoice) => with_etag(api::ok(&invoice), invoice.version),
                        None => write::stored_problem(not_found()),
                    },
                    Edited::Stale { .. } => write::stored_problem(stale()),
                    Edited::NotDraft(status) => write::stored_problem(not_draft(status)),
                    Edited::NotFound => write::stored_problem(not_found()),
                };
                // Deleted since the check: the attempt's row cannot name it.
                Ok((response, (edited != Edited::NotFound).then_some(id)))
            }
        })
        .await?;
        Ok::<_, ProblemResponse>(ran)
    })
    .await?;
    write::answer(outcome)
}

fn with_etag(mut stored: StoredResponse, version: i32) -> StoredResponse {
    stored.headers["etag"] = format!("\"{version}\"").into();
    stored
}

/// The named customer's name and email onto `input` (one of the org's, or a 422), then the input's
/// own checks, then its lines' tax rates (the org's, or a 422).
async fn with_customer(
    state: &AppState,
    org: uuid::Uuid,
    input: &mut InvoiceInput,
) -> Result<(), ProblemResponse> {
    // What was sent is checked as sent: with a customer, a name and email may be left out (blank),
    // but one that is there must be valid, even though the customer's replaces it.
    if let Err(mut fields) = input.check() {
        if input.customer_id.is_some() {
            if input.customer_name.is_empty() {
                fields.remove("customer_name");
            }
            if input.customer_email.is_empty() {
                fields.remove("customer_email");
            }
        }
        if !fields.is_empty() {
            return Err(write::invalid("invoice", fields));
        }
    }
    let (name, email) = (&mut input.customer_name, &mut input.customer_email);
    match app::ssr::customers::fill_invoice(&state.pool, org, input.customer_id, name, email).await
    {
        Ok(()) => {}
        Err(InvoiceError::Invalid(fields)) => return Err(write::invalid("invoice", fields)),
        Err(e) => return Err(super::problem::internal("reading a customer", e)),
    }
    input
        .check()
        .map_err(|fields| write::invalid("invoice", fields))?;
    match app::ssr::tax_rates::check(&state.pool, org, input).await {
        Ok(()) => Ok(()),
        Err(InvoiceError::Invalid(fields)) => Err(write::invalid("invoice", fields)),
        Err(e) => Err(super::problem::internal("reading tax rates", e)),
    }
}

/// Delete a draft, once per `Idempotency-Key` (a retry after success gets the stored 204).
#[utoipa::path(
    delete,
    path = "/api/v1/invoices/{id}",
    tag = "invoices",
    params(
        ("id" = String, Path, description = "Invoice id (UUID)"),
        ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Names this attempt, as for creation."),
    ),
    responses(
        (status = 204, description = "Deleted; replays return the stored 204 with `Idempotent-Replayed: true`"),
        (status = 400, description = "Missing or malformed Idempotency-Key, or a body that is neither empty nor a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such invoice (stored for the key)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Not a draft (void it instead), or the same key is still in flight", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []))
)]
pub(super) async fn delete_invoice(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ProblemResponse> {
    act(state, client, headers, id, body, Action::DeleteDraft).await
}

/// Duplicate any invoice as a new draft, once per `Idempotency-Key`.
#[utoipa::path(
    post,
    path = "/api/v1/invoices/{id}/duplicate",
    tag = "invoices",
    params(
        ("id" = String, Path, description = "Invoice id (UUID)"),
        ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Names this attempt, as for creation."),
    ),
    responses(
        (status = 201, description = "The new draft; replays return the stored response with `Idempotent-Replayed: true`", body = Invoice,
            headers(("Location" = String, description = "The draft's URL"))),
        (status = 400, description = "Missing or malformed Idempotency-Key, or a body that is neither empty nor a JSON object", body = Problem, content_type = "application/problem+json"),
        (status = 401, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The same key is still in flight", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []))
)]
pub(super) async fn duplicate_invoice(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ProblemResponse> {
    let attempt = write::attempt(client, &headers);
    let outcome = track(&state.pool, attempt, async |attempt| {
        let (key, id, value) = action_request(&headers, &id, body)?;
        if !invoices::exists(&mut *state.pool.acquire().await?, client.org_id, id).await? {
            return Err(not_found());
        }
        let path = format!("{INVOICES_PATH}/{id}/duplicate");
        let fingerprint = api::fingerprint("POST", &path, &value);
        let (base, ttl, pool) = (
            &state.settings.public_url,
            state.settings.idempotency_key_ttl,
            &state.pool,
        );
        let ran = api::respond_once(pool, &attempt, client, &key, &fingerprint, ttl, || {
            async |tx| {
                let copy = uuid::Uuid::now_v7();
                let source = format!("duplicate:api:{}", copy);
                let response =
                    match lifecycle::duplicate(tx, client.org_id, id, copy, &source).await? {
                        Some(_) => match invoices::get(tx, client.org_id, copy, base).await? {
                            Some(draft) => api::created(&format!("{INVOICES_PATH}/{copy}"), &draft),
                            None => write::stored_problem(not_found()),
                        },
                        None => write::stored_problem(not_found()),
                    };
                Ok((response, Some(copy)))
            }
        })
        .await?;
        Ok::<_, ProblemResponse>(ran)
    })
    .await?;
    write::answer(outcome)
}

//! Bank statements in: a CAMT.053 / CAMT.054 / MT940 file imported once per Idempotency-Key (each
//! entry recorded once whatever the key), its entries listed by state, an unmatched credit matched
//! to an invoice by hand (once per key), an entry set aside for good.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use invoicer_core::bank::{self, import};
use invoicer_core::surfaces::api;
use invoicer_core::AppState;
use model::BankEntry;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::client::Client;
use super::documented::{BankEntryId, BankEntryWrite, InFlight, New, NotFound, Unauthorized};
use super::problem::{problem, Problem, ProblemResponse};
use super::query::ListQuery;
use super::write::{self, stored_problem, Write};

/// What an import did.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BankStatement {
    pub id: Uuid,
    /// `camt.053`, `camt.054` or `mt940`.
    pub format: String,
    /// The (first) account the file reports on.
    pub account_iban: String,
    /// Booked entries in the file.
    pub entries: usize,
    /// Of them, not recorded by an earlier import.
    pub new_entries: usize,
    /// Of the new ones, matched to an invoice and recorded as its payment.
    pub matched: usize,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BankEntryList {
    /// Newest booking first.
    pub data: Vec<BankEntry>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BankEntryQuery {
    /// `unmatched` (default), `matched` or `ignored`.
    pub state: Option<String>,
}

/// What a match names.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MatchInput {
    pub invoice_id: Uuid,
}

fn entry_not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such bank entry.",
    )
}

/// Every slot that reads statements stayed taken: nothing was claimed, the same key may be sent again.
fn busy() -> ProblemResponse {
    problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy",
        "Busy",
        "Other statements are being read; nothing was saved. Retry with the same Idempotency-Key after Retry-After seconds.",
    )
    .retry_after(bank::READ_WAIT)
}

fn invalid_statement(detail: String) -> ProblemResponse {
    problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid-statement",
        "Invalid statement",
        detail,
    )
}

/// Import a bank statement (the file as the body: CAMT.053 or CAMT.054 XML, or MT940 text), once
/// per `Idempotency-Key`. Each entry is recorded once whatever imports it: the same file again, or
/// statements that overlap, add nothing.
#[utoipa::path(
    post, path = "/api/v1/bank_statements", tag = "bank",
    params(New),
    request_body(content = String, description = "The statement file (at most 10 MB)", content_type = "application/xml"),
    responses(
        (status = 201, description = "Imported; replays return the stored response with `Idempotent-Replayed: true`", body = BankStatement),
        (status = 400, description = "Missing or malformed Idempotency-Key", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
        (status = 403, description = "The API key's role may not take payments", body = Problem, content_type = "application/problem+json"),
        InFlight,
        (status = 413, description = "A file over 10 MB", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not a statement we read (the reason names the line or element), a statement for an account that is not the org's, or the key was used with a different file", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database is switching to another server, or every slot that reads statements is taken: retry with the same key after Retry-After seconds", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn post_statement(write: Write) -> Result<Response, ProblemResponse> {
    write.require(model::Action::EditInvoices)?;
    write
        .run(async |req, body| {
            let read = bank::read(body?).await.map_err(|_| busy())?;
            let parsed = read.parsed.map_err(|e| invalid_statement(e.to_string()))?;
            let org = req.org();
            // An account that is not the org's is refused before anything is claimed.
            let ours = import::accounts(&mut *req.state().pool.acquire().await?, org).await?;
            if let Some(other) = parsed.accounts.iter().find(|a| !ours.contains(a)) {
                return Err(invalid_statement(format!(
                    "The statement is for account {other}, which is not one of the org's \
                     (its IBAN and bank_accounts in PATCH /api/v1/org)."
                )));
            }
            let fingerprint = serde_json::json!({ "sha256": hex::encode(read.sha256) });
            req.once(&fingerprint, || {
                let parsed = &parsed;
                async move |tx| {
                    let id = Uuid::now_v7();
                    let done = match import::import(tx, org, id, parsed).await {
                        Ok(done) => done,
                        Err(import::ImportError::Db(e)) => return Err(e.into()),
                        Err(e @ import::ImportError::NotOurs(_)) => {
                            return Err(invalid_statement(e.to_string()).into())
                        }
                    };
                    let body = BankStatement {
                        id: done.id,
                        format: done.format,
                        account_iban: done.account_iban,
                        entries: done.entries,
                        new_entries: done.new_entries,
                        matched: done.matched,
                    };
                    Ok((
                        api::created(&format!("/api/v1/bank_statements/{id}"), &body),
                        None,
                    ))
                }
            })
            .await
        })
        .await
}

/// The org's bank entries in one state, newest booking first (at most 500).
#[utoipa::path(
    get, path = "/api/v1/bank_entries", tag = "bank", params(BankEntryQuery),
    responses(
        (status = 200, body = BankEntryList),
        (status = 400, description = "An unknown state", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
    ),
)]
pub(super) async fn list_entries(
    State(state): State<AppState>,
    Client(client): Client,
    ListQuery(query): ListQuery<BankEntryQuery>,
) -> Result<Json<BankEntryList>, ProblemResponse> {
    let wanted = query.state.unwrap_or_else(|| "unmatched".to_owned());
    if !matches!(wanted.as_str(), "unmatched" | "matched" | "ignored") {
        return Err(problem(
            StatusCode::BAD_REQUEST,
            "invalid-query",
            "Invalid query",
            "state is unmatched, matched or ignored.",
        ));
    }
    let rows = invoicer_core::bank::entries::list(&state.pool, client.org_id, &wanted, 500).await?;
    Ok(Json(BankEntryList { data: rows }))
}

/// Match an unmatched credit to an invoice of the org, once per `Idempotency-Key`: it is recorded
/// as the invoice's payment (`source: bank`); matching it again is a no-op.
#[utoipa::path(
    post, path = "/api/v1/bank_entries/{id}/match", tag = "bank",
    params(BankEntryWrite), request_body = MatchInput,
    responses(
        (status = 200, description = "Matched; replays return the stored response with `Idempotent-Replayed: true`", body = BankEntry),
        (status = 400, description = "Missing or malformed Idempotency-Key, or a body that is not JSON", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
        NotFound,
        InFlight,
        (status = 409, description = "The entry is not an unmatched credit in the invoice's currency, or the invoice takes no payments (stored for the key)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn match_entry(write: Write) -> Result<Response, ProblemResponse> {
    write.require(model::Action::EditInvoices)?;
    write
        .run(async |req, body| {
            let id = req.id(entry_not_found)?;
            let (value, input) = write::json_body(body, "match", |_: &MatchInput| Ok(()))?;
            let org = req.org();
            req.once(&value, || {
                async |tx| {
                    let Some(before) = invoicer_core::bank::entries::get(&mut *tx, org, id).await? else {
                        return Ok((stored_problem(entry_not_found()), None));
                    };
                    if before.state == "matched" && before.invoice_id == Some(input.invoice_id) {
                        return Ok((api::ok(&before), None));
                    }
                    if !invoicer_core::invoicing::invoices::exists(
                        &mut *tx,
                        org,
                        model::InvoiceId::from(input.invoice_id),
                    )
                    .await?
                    {
                        let missing = problem(StatusCode::NOT_FOUND, "not-found", "Not found", "No such invoice.");
                        return Ok((stored_problem(missing), None));
                    }
                    if !import::record(tx, org, id, input.invoice_id).await? {
                        let refused = problem(
                            StatusCode::CONFLICT,
                            "not-matchable",
                            "Not matchable",
                            "Only an unmatched credit in the invoice's currency matches an invoice that takes payments.",
                        );
                        return Ok((stored_problem(refused), None));
                    }
                    let after = invoicer_core::bank::entries::get(&mut *tx, org, id).await?.ok_or_else(|| {
                        write::Failed::Refused(entry_not_found())
                    })?;
                    Ok((api::ok(&after), Some(input.invoice_id)))
                }
            })
            .await
        })
        .await
}

/// Set an unmatched entry aside for good (a debit, a credit that pays none of the org's invoices).
/// Its own repeat: ignoring an ignored entry answers the same.
#[utoipa::path(
    post, path = "/api/v1/bank_entries/{id}/ignore", tag = "bank", params(BankEntryId),
    responses(
        (status = 200, description = "Ignored", body = BankEntry),
        Unauthorized,
        (status = 403, description = "The API key's role may not take payments", body = Problem, content_type = "application/problem+json"),
        NotFound,
        (status = 409, description = "The entry is matched", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn ignore_entry(
    State(state): State<AppState>,
    asking: Client,
    Path(id): Path<String>,
) -> Result<Json<BankEntry>, ProblemResponse> {
    asking.require(model::Action::EditInvoices)?;
    let client = asking.0;
    let id = Uuid::try_parse(&id).map_err(|_| entry_not_found())?;
    let mut tx = state.pool.begin().await?;
    import::ignore(&mut tx, client.org_id, id).await?;
    let entry = invoicer_core::bank::entries::get(&mut *tx, client.org_id, id)
        .await?
        .ok_or_else(entry_not_found)?;
    tx.commit().await?;
    if entry.state == "matched" {
        return Err(problem(
            StatusCode::CONFLICT,
            "matched",
            "Matched",
            "The entry is matched to an invoice.",
        ));
    }
    Ok(Json(entry))
}

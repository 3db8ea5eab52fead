//! Quotes: create one (once per Idempotency-Key; open at once unless `draft`), list them, read one,
//! and send one to its customer (opening a draft).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use invoicer_core::invoicing::quotes::{self, QuoteError};
use invoicer_core::jobs::schedules::org_today;
use invoicer_core::surfaces::api;
use invoicer_core::AppState;
use model::{Quote, QuoteInput};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::client::Client;
use super::documented::{
    CreateProblems, InFlight, New, NotFound, QuoteId, QuoteWrite, Unauthorized,
};
use super::problem::{problem, Problem, ProblemResponse};
use super::write::{self, stored_problem, Write};

fn not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such quote.",
    )
}

/// Why the mail gate let no email through: 403 (the key's creator has no verified address) or 429
/// with when to come back.
fn mail_refused(refused: invoicer_core::mail::gate::Refused) -> ProblemResponse {
    use invoicer_core::mail::gate::Refused;
    match refused {
        Refused::Unverified => problem(
            StatusCode::FORBIDDEN,
            "unverified-sender",
            "Sender not verified",
            "The member who made this API key has not verified their email address.",
        ),
        Refused::Allowance { retry_after } => problem(
            StatusCode::TOO_MANY_REQUESTS,
            "email-allowance",
            "Email allowance spent",
            refused.to_string(),
        )
        .retry_after(retry_after),
    }
}

/// The mail gate asked before a send's key is claimed (nothing held): its refusal is answered and
/// not stored.
async fn mail_gate_check(
    state: &AppState,
    org: model::OrgId,
    quote: Uuid,
    gate: invoicer_core::mail::gate::Gate,
) -> Result<(), ProblemResponse> {
    let mut conn = state.pool.acquire().await?;
    let Some(to) = quotes::recipient(&mut conn, org, quote).await? else {
        return Err(not_found());
    };
    gate.check(&mut conn, org, &to).await?.map_err(mail_refused)
}

fn refused(status: model::QuoteStatus) -> ProblemResponse {
    problem(
        StatusCode::CONFLICT,
        "quote-state",
        "The quote cannot be sent",
        format!("The quote is {}.", status.as_str()),
    )
}

/// Create a quote, once per `Idempotency-Key`: the invoice input (no `save_customer`) plus
/// `expires_on` and `on_accept` (`draft`, `finalize` or `send`: what accepting does with the
/// invoice). Open at once (numbered, with its `public_url`) unless `draft` is true. 201.
#[utoipa::path(
    post, path = "/api/v1/quotes", tag = "quotes",
    request_body = QuoteInput,
    params(New),
    responses(
        (status = 201, description = "Created; replays return the stored response with `Idempotent-Replayed: true`", body = Quote,
            headers(("Location" = String, description = "The quote's URL"))),
        CreateProblems,
        InFlight,
        (status = 422, description = "Invalid quote (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn post_quote(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (value, _) = write::json_body(body, "quote", |_: &serde_json::Value| Ok(()))?;
            let input =
                QuoteInput::from_json(&value).map_err(|why| write::not_read("quote", why))?;
            // The fields as sent; the quote's and the org's rules are the command's.
            (input.invoice.check_as_sent()).map_err(|fields| write::invalid("quote", fields))?;
            let org = req.org();
            let name = req.attempt_name();
            let base = req.state().settings.public_url.clone();
            req.once(&value, || {
                async |tx| {
                    let id = Uuid::now_v7();
                    let today = org_today(tx, org, chrono::Utc::now()).await?;
                    let made = quotes::create(tx, org, id, &name, &input, today, &base).await;
                    let response = match made {
                        Ok(q) => api::created(&req.location(q.id), &q),
                        Err(QuoteError::Db(e)) => return Err(e.into()),
                        Err(QuoteError::Invalid(fields)) => {
                            return Err(write::invalid("quote", fields).into())
                        }
                        Err(QuoteError::NotFound) => stored_problem(not_found()),
                        Err(QuoteError::Refused(status)) => stored_problem(refused(status)),
                        Err(QuoteError::Mail(refused)) => stored_problem(mail_refused(refused)),
                    };
                    Ok((response, None))
                }
            })
            .await
        })
        .await
}

#[derive(Debug, Serialize, ToSchema)]
pub struct QuoteList {
    /// Newest first, the latest 200.
    pub data: Vec<Quote>,
}

/// The org's quotes, newest first.
#[utoipa::path(
    get, path = "/api/v1/quotes", tag = "quotes",
    responses(
        (status = 200, body = QuoteList),
        Unauthorized,
    ),
)]
pub(super) async fn list_quotes(
    State(state): State<AppState>,
    Client(client): Client,
) -> Result<Json<QuoteList>, ProblemResponse> {
    let mut conn = state.pool.acquire().await?;
    let data = quotes::list(&mut conn, client.org_id, &state.settings.public_url).await?;
    Ok(Json(QuoteList { data }))
}

/// One quote: its status (`expired` once an open quote is past `expires_on`) and, once accepted,
/// its `invoice_id`.
#[utoipa::path(
    get, path = "/api/v1/quotes/{id}", tag = "quotes", params(QuoteId),
    responses(
        (status = 200, body = Quote),
        Unauthorized,
        NotFound,
    ),
)]
pub(super) async fn get_quote(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Json<Quote>, ProblemResponse> {
    let id = Uuid::try_parse(&id).map_err(|_| not_found())?;
    let mut conn = state.pool.acquire().await?;
    quotes::get(&mut conn, client.org_id, id, &state.settings.public_url)
        .await?
        .map(Json)
        .ok_or_else(not_found)
}

/// Send a quote to its customer by email (a draft is opened first: numbered, with its page). Once
/// per `Idempotency-Key`; 409 for a quote that is accepted, declined or expired. The email passes
/// the org's hourly allowance and the recipient's (429 with `Retry-After`, the key still free), and
/// the key's creator must have a verified address (403).
#[utoipa::path(
    post, path = "/api/v1/quotes/{id}/send", tag = "quotes", params(QuoteWrite),
    responses(
        (status = 200, description = "Queued; replays return the stored response with `Idempotent-Replayed: true`", body = Quote),
        CreateProblems,
        NotFound,
        InFlight,
        (status = 409, description = "The quote is accepted, declined or expired", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The API key's creator has not verified their email address", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "The org's hourly email allowance, or the recipient's, is spent (see `Retry-After`); nothing was claimed", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn send_quote(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let id = req.id(not_found)?;
            let org = req.org();
            let value = super::invoices::action_body(body)?;
            let base = req.state().settings.public_url.clone();
            let sender = invoicer_core::mail::gate::Sender::ApiKey(req.client().key_id);
            let gate = invoicer_core::mail::gate::Gate::new(
                invoicer_core::mail::gate::Allowance::of(&req.state().settings.limits),
                sender,
            );
            // The gate is asked before the key is claimed: a refusal (429, 403) is not the key's
            // answer, and the same key works once the hour allows. Inside, a send that lost a race
            // for the last place waits for its slot.
            mail_gate_check(req.state(), org, id, gate).await?;
            req.once(&value, || {
                async |tx| {
                    let response = match quotes::send(tx, org, id, &base, gate.waiting()).await {
                        Ok(q) => api::ok(&q),
                        Err(QuoteError::Db(e)) => return Err(e.into()),
                        Err(QuoteError::Refused(status)) => stored_problem(refused(status)),
                        Err(QuoteError::Mail(refused)) => stored_problem(mail_refused(refused)),
                        Err(_) => stored_problem(not_found()),
                    };
                    Ok((response, None))
                }
            })
            .await
        })
        .await
}

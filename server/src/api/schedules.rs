//! Recurring invoices: create a schedule (once per Idempotency-Key), read one with its next dates
//! and runs, list them, edit its template, pause and resume one.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use invoicer_core::jobs::schedules::{self, ScheduleError};
use invoicer_core::surfaces::api;
use invoicer_core::AppState;
use model::{Schedule, ScheduleInput};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::client::Client;
use super::documented::{
    CreateProblems, InFlight, New, NotFound, ScheduleId, ScheduleWrite, Unauthorized,
};
use super::problem::{problem, Problem, ProblemResponse};
use super::write::{self, stored_problem, Write};

fn not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such schedule.",
    )
}

/// Edit the invoice a schedule's later runs issue: a JSON merge patch of its template (the invoice
/// input's fields only; the cadence stays). Once per `Idempotency-Key`; the invoices already issued
/// keep theirs.
#[utoipa::path(
    patch, path = "/api/v1/schedules/{id}", tag = "schedules", params(ScheduleWrite),
    request_body(content = Object, description = "A JSON merge patch of the template (the invoice input's fields)"),
    responses(
        (status = 200, description = "Edited; replays return the stored response with `Idempotent-Replayed: true`", body = Schedule),
        CreateProblems,
        NotFound,
        InFlight,
        (status = 422, description = "The edited template is invalid, or names a field it does not have (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn patch_schedule(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (id, org) = (req.id(not_found)?, req.org());
            let patch = write::patch_body(body, "the schedule's template")?;
            if let Some(name) = patch.as_object().and_then(|o| {
                o.keys()
                    .find(|k| !model::INVOICE_FIELDS.contains(&k.as_str()))
            }) {
                return Err(write::unreadable(
                    "schedule",
                    format!(
                        "`{name:.40}` is not a field of the template (the cadence cannot change)"
                    ),
                ));
            }
            let pool = &req.state().pool;
            let current = schedules::get(&mut *pool.acquire().await?, org, id)
                .await?
                .ok_or_else(not_found)?;
            let template = invoicer_core::patch::patched(&current.template, &patch)
                .map_err(|why| write::unreadable("schedule", why))?;
            // The fields as sent; the template's and the org's rules are the command's.
            (template.check_as_sent()).map_err(|fields| write::invalid("schedule", fields))?;
            req.once(&patch, || {
                async |tx| {
                    let response = match schedules::edit_template(tx, org, id, &template).await {
                        Ok(s) => api::ok(&s),
                        Err(ScheduleError::Db(e)) => return Err(e.into()),
                        Err(ScheduleError::Invalid(fields)) => {
                            return Err(write::invalid("schedule", fields).into())
                        }
                        Err(ScheduleError::NotFound) => stored_problem(not_found()),
                    };
                    Ok((response, None))
                }
            })
            .await
        })
        .await
}

/// Create a schedule of recurring invoices, once per `Idempotency-Key`: the invoice input (with
/// `payment_terms_days`; no `due_date`, `draft` or `save_customer`) plus the cadence. 201 with its
/// `id` and `next_run_on`.
#[utoipa::path(
    post, path = "/api/v1/schedules", tag = "schedules",
    request_body = ScheduleInput,
    params(New),
    responses(
        (status = 201, description = "Created; replays return the stored response with `Idempotent-Replayed: true`", body = Schedule,
            headers(("Location" = String, description = "The schedule's URL"))),
        CreateProblems,
        InFlight,
        (status = 422, description = "Invalid schedule (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn post_schedule(write: Write) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let (value, _) = write::json_body(body, "schedule", |_: &serde_json::Value| Ok(()))?;
            let input =
                ScheduleInput::from_json(&value).map_err(|why| write::not_read("schedule", why))?;
            // The fields as sent; the cadence's and the org's rules are the command's.
            (input.invoice.check_as_sent()).map_err(|fields| write::invalid("schedule", fields))?;
            let org = req.org();
            let name = req.attempt_name();
            req.once(&value, || {
                async |tx| {
                    let id = Uuid::now_v7();
                    let today = schedules::org_today(tx, org, chrono::Utc::now()).await?;
                    let made = schedules::create(tx, org, id, &name, &input, today).await;
                    let response = match made {
                        Ok(s) => api::created(&req.location(s.id), &s),
                        Err(ScheduleError::Db(e)) => return Err(e.into()),
                        Err(ScheduleError::Invalid(fields)) => {
                            return Err(write::invalid("schedule", fields).into())
                        }
                        Err(ScheduleError::NotFound) => stored_problem(not_found()),
                    };
                    Ok((response, None))
                }
            })
            .await
        })
        .await
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleList {
    /// Newest first (without their runs).
    pub data: Vec<Schedule>,
}

/// The org's schedules, newest first.
#[utoipa::path(
    get, path = "/api/v1/schedules", tag = "schedules",
    responses(
        (status = 200, body = ScheduleList),
        Unauthorized,
    ),
)]
pub(super) async fn list_schedules(
    State(state): State<AppState>,
    Client(client): Client,
) -> Result<Json<ScheduleList>, ProblemResponse> {
    let mut conn = state.pool.acquire().await?;
    let data = schedules::list(&mut conn, client.org_id).await?;
    Ok(Json(ScheduleList { data }))
}

/// One schedule with its next five dates and its runs (`runs: [{period, invoice_id, outcome}]`,
/// newest first).
#[utoipa::path(
    get, path = "/api/v1/schedules/{id}", tag = "schedules", params(ScheduleId),
    responses(
        (status = 200, body = Schedule),
        Unauthorized,
        NotFound,
    ),
)]
pub(super) async fn get_schedule(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
) -> Result<Json<Schedule>, ProblemResponse> {
    let id = Uuid::try_parse(&id).map_err(|_| not_found())?;
    let mut conn = state.pool.acquire().await?;
    schedules::get(&mut conn, client.org_id, id)
        .await?
        .map(Json)
        .ok_or_else(not_found)
}

async fn set_paused(write: Write, paused: bool) -> Result<Response, ProblemResponse> {
    write
        .run(async |req, body| {
            let id = req.id(not_found)?;
            let org = req.org();
            let value = super::invoices::action_body(body)?;
            let pool = &req.state().pool;
            let today =
                schedules::org_today(&mut *pool.acquire().await?, org, chrono::Utc::now()).await?;
            req.once(&value, || {
                async |tx| {
                    let response = match schedules::set_paused(tx, org, id, paused, today).await {
                        Ok(s) => api::ok(&s),
                        Err(ScheduleError::Db(e)) => return Err(e.into()),
                        Err(_) => stored_problem(not_found()),
                    };
                    Ok((response, None))
                }
            })
            .await
        })
        .await
}

/// Pause a schedule: no run until it is resumed. Once per `Idempotency-Key`; pausing a paused one
/// changes nothing.
#[utoipa::path(
    post, path = "/api/v1/schedules/{id}/pause", tag = "schedules", params(ScheduleWrite),
    responses(
        (status = 200, description = "Paused; replays return the stored response with `Idempotent-Replayed: true`", body = Schedule),
        CreateProblems,
        NotFound,
        InFlight,
    ),
)]
pub(super) async fn pause_schedule(write: Write) -> Result<Response, ProblemResponse> {
    set_paused(write, true).await
}

/// Resume a schedule from its first date on or after today (the dates that passed while it was
/// paused are not issued). Once per `Idempotency-Key`.
#[utoipa::path(
    post, path = "/api/v1/schedules/{id}/resume", tag = "schedules", params(ScheduleWrite),
    responses(
        (status = 200, description = "Resumed; replays return the stored response with `Idempotent-Replayed: true`", body = Schedule),
        CreateProblems,
        NotFound,
        InFlight,
    ),
)]
pub(super) async fn resume_schedule(write: Write) -> Result<Response, ProblemResponse> {
    set_paused(write, false).await
}

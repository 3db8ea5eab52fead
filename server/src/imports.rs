//! Files imported through a plain multipart form (works without JavaScript), each read no further
//! than its limit and refused with a page that says why:
//!
//! - `POST /customers/import`: a CSV file of customers, checked row by row and stored as a preview
//!   keyed by the file's SHA-256 within the org; the answer is a redirect to the import's page
//!   (`/customers/import/{id}`), the same one for the same file.
//! - `POST /payments/bank`: a bank statement (CAMT.053, CAMT.054 or MT940), imported once per
//!   rendered form (the form's claim and the import commit together); each entry is recorded once
//!   whatever imports it. The answer is a redirect to `/payments/bank?imported={id}`.
//! - `POST /inbox`: a received e-invoice (UBL, CII or a Factur-X PDF), kept once per rendered form
//!   and once per file (the same bytes are one document); the answer is a redirect to its page,
//!   `/inbox/{id}`.

use axum::extract::{DefaultBodyLimit, Multipart, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use invoicer_core::accounts::auth::AuthSession;
use invoicer_core::bank::{self, import};
use invoicer_core::customers::imports::{self, MAX_BYTES};
use invoicer_core::observe::{Attempt, Surface};
use invoicer_core::peppol::inbox;
use invoicer_core::surfaces::form::{setting_once, Saved};
use invoicer_core::surfaces::forms::Form;
use invoicer_core::surfaces::track;
use invoicer_core::AppState;
use model::error::AppError;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/customers/import",
            post(upload).layer(DefaultBodyLimit::max(MAX_BYTES + 16 * 1024)),
        )
        .route(
            "/payments/bank",
            post(upload_statement).layer(DefaultBodyLimit::max(bank::MAX_FILE_BYTES + 16 * 1024)),
        )
        .route(
            "/inbox",
            post(upload_received).layer(DefaultBodyLimit::max(inbox::MAX_FILE_BYTES + 16 * 1024)),
        )
        .route("/inbox/{id}/file", get(received_file))
        .route("/inbox.csv", get(received_csv))
}

/// The signed-in user's org, for the inbox's downloads (any role reads them).
fn reader(session: &AuthSession) -> Option<model::OrgId> {
    session.user.as_ref().map(|u| u.org_id)
}

fn log_in() -> Response {
    (StatusCode::UNAUTHORIZED, "Please log in.").into_response()
}

/// `/inbox/{id}/file`: a received document's file as it came.
async fn received_file(
    State(state): State<AppState>,
    session: AuthSession,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    let Some(org) = reader(&session) else {
        return log_in();
    };
    let Ok(id) = uuid::Uuid::try_parse(&id) else {
        return (StatusCode::NOT_FOUND, "No such document.").into_response();
    };
    match inbox::original(&state.reads, org, id).await {
        Ok(Some((bytes, kind, number))) => crate::api::received_file(bytes, &kind, &number),
        Ok(None) => (StatusCode::NOT_FOUND, "No such document.").into_response(),
        Err(e) => not_stored("received file", e),
    }
}

/// `/inbox.csv`: the inbox as a spreadsheet.
async fn received_csv(State(state): State<AppState>, session: AuthSession) -> Response {
    let Some(org) = reader(&session) else {
        return log_in();
    };
    match inbox::list(&state.reads, org, 10_000).await {
        Ok(documents) => (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"received-documents.csv\"",
                ),
            ],
            inbox::csv(&documents),
        )
            .into_response(),
        Err(e) => not_stored("received csv", e),
    }
}

/// Where a refused file of each kind goes back to.
#[derive(Clone, Copy)]
enum Upload {
    Customers,
    Statement,
    Received,
}

impl Upload {
    fn back(self) -> &'static str {
        match self {
            Upload::Customers => "/customers/import",
            Upload::Statement => "/payments/bank",
            Upload::Received => "/inbox",
        }
    }

    fn limit(self) -> usize {
        match self {
            Upload::Customers => MAX_BYTES,
            Upload::Statement => bank::MAX_FILE_BYTES,
            Upload::Received => inbox::MAX_FILE_BYTES,
        }
    }

    fn missing(self) -> &'static str {
        match self {
            Upload::Customers => "Choose a CSV file to import.",
            Upload::Statement => "Choose a statement file (CAMT.053, CAMT.054 or MT940) to import.",
            Upload::Received => "Choose an e-invoice (UBL or CII XML, or a Factur-X PDF).",
        }
    }
}

/// A page saying why the file was refused, with the way back; nothing was stored.
fn refused(upload: Upload, status: StatusCode, why: &str) -> Response {
    let why = why
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let css = crate::assets::stylesheet();
    let body = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"icon\" href=\"data:,\">\
         <title>File not imported</title><link rel=\"stylesheet\" href=\"{css}\"></head>\
         <body><main class=\"card\"><h1>File not imported</h1><p class=\"error import-error\">{why}</p>\
         <p><a href=\"{back}\">Back to the import</a></p></main></body></html>",
        back = upload.back()
    );
    (status, axum::response::Html(body)).into_response()
}

/// The form's key and file (its name and bytes), the file read no further than its limit + 1.
async fn read_form(
    upload: Upload,
    mut form: Multipart,
) -> Result<(String, String, Vec<u8>), (StatusCode, String)> {
    let too_large = || {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "The file is larger than {} MB.",
                upload.limit() / 1024 / 1024
            ),
        )
    };
    let broken = |e: axum::extract::multipart::MultipartError| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            too_large()
        } else {
            (
                StatusCode::BAD_REQUEST,
                "The upload could not be read.".to_owned(),
            )
        }
    };
    let (mut key, mut name, mut file) = (String::new(), String::new(), Vec::new());
    while let Some(mut field) = form.next_field().await.map_err(broken)? {
        match field.name() {
            Some("idempotency_key") => {
                key = field
                    .text()
                    .await
                    .map_err(broken)?
                    .chars()
                    .take(64)
                    .collect();
            }
            Some("file") => {
                name = field.file_name().unwrap_or("").chars().take(200).collect();
                while let Some(chunk) = field.chunk().await.map_err(broken)? {
                    if file.len() + chunk.len() > upload.limit() {
                        return Err(too_large());
                    }
                    file.extend_from_slice(&chunk);
                }
            }
            _ => {}
        }
    }
    if file.is_empty() {
        return Err((StatusCode::BAD_REQUEST, upload.missing().into()));
    }
    Ok((key, name, file))
}

/// The signed-in user, if their role may import: asked before the body is read.
fn importer(
    session: &AuthSession,
) -> Result<invoicer_core::accounts::auth::SessionUser, (StatusCode, String)> {
    let Some(user) = session.user.clone() else {
        return Err((StatusCode::UNAUTHORIZED, "Please log in.".into()));
    };
    user.allowed(model::Action::EditInvoices)
        .map_err(|e| (StatusCode::FORBIDDEN, e.to_string()))
}

/// The form's key, if it was rendered for the user's org: a post from elsewhere has none that fits.
fn form_key(
    user: &invoicer_core::accounts::auth::SessionUser,
    key: &str,
) -> Result<uuid::Uuid, (StatusCode, String)> {
    match uuid::Uuid::try_parse(key.trim()) {
        Ok(k) if model::form_key_fits(k, user.org_id) => Ok(k),
        _ => Err((
            StatusCode::BAD_REQUEST,
            "This form has expired, or was opened for another organisation. Reload the page and try again."
                .into(),
        )),
    }
}

/// The answer when the database did not take the file: nothing was stored, the same form may be
/// sent again.
fn not_stored(what: &str, e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "{what}");
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "5")],
        "The file could not be stored. Try again in a moment.",
    )
        .into_response()
}

async fn upload(State(state): State<AppState>, session: AuthSession, form: Multipart) -> Response {
    let up = Upload::Customers;
    let user = match importer(&session) {
        Ok(user) => user,
        Err((status, why)) => return refused(up, status, &why),
    };
    let (key, name, file) = match read_form(up, form).await {
        Ok(read) => read,
        Err((status, why)) => return refused(up, status, &why),
    };
    if let Err((status, why)) = form_key(&user, &key) {
        return refused(up, status, &why);
    }
    let parsed = match imports::parse(&file) {
        Ok(parsed) => parsed,
        Err(why) => return refused(up, StatusCode::UNPROCESSABLE_ENTITY, &why),
    };
    match imports::store(&state.pool, user.org_id, Some(user.id), &name, &parsed).await {
        Ok(id) => (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, format!("/customers/import/{id}"))],
        )
            .into_response(),
        Err(e) => not_stored("customer import", e),
    }
}

async fn upload_statement(
    State(state): State<AppState>,
    session: AuthSession,
    form: Multipart,
) -> Response {
    let up = Upload::Statement;
    let user = match importer(&session) {
        Ok(user) => user,
        Err((status, why)) => return refused(up, status, &why),
    };
    let (key, _, file) = match read_form(up, form).await {
        Ok(read) => read,
        Err((status, why)) => return refused(up, status, &why),
    };
    let form_key = match form_key(&user, &key) {
        Ok(key) => key,
        Err((status, why)) => return refused(up, status, &why),
    };
    let read = match bank::read(file).await {
        Ok(read) => read,
        Err(_) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                "Other statements are being read. Send the file again in a moment.",
            )
                .into_response()
        }
    };
    let parsed = match read.parsed {
        Ok(parsed) => parsed,
        Err(why) => return refused(up, StatusCode::UNPROCESSABLE_ENTITY, &why.to_string()),
    };
    let org = user.org_id;
    let attempt = Attempt::new(Surface::Form, form_key.to_string(), None);
    let fingerprint = hex::encode(read.sha256);
    let saved = track(&state.pool, attempt, async |attempt| {
        attempt.identify(org.to_string(), Some(org));
        setting_once(
            &state.pool,
            &attempt,
            org,
            Form::ImportBankStatement,
            form_key,
            &fingerprint,
            || {
                let parsed = &parsed;
                async move |tx: &mut sqlx::PgConnection| {
                    let id = uuid::Uuid::now_v7();
                    match import::import(tx, org, id, parsed).await {
                        Ok(done) => Ok(done.id),
                        Err(import::ImportError::Db(e)) => Err(e.into()),
                        Err(e @ import::ImportError::NotOurs(_)) => {
                            Err(AppError::BadRequest(e.to_string()))
                        }
                    }
                }
            },
        )
        .await
    })
    .await;
    match saved {
        Ok(Saved::Created(id) | Saved::Replayed(id)) => (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, format!("/payments/bank?imported={id}"))],
        )
            .into_response(),
        Ok(Saved::KeyReused) => refused(
            up,
            StatusCode::UNPROCESSABLE_ENTITY,
            "This form was already used for another file. Reload the page and try again.",
        ),
        Err(AppError::BadRequest(why)) => refused(
            up,
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("{why}. Add the account on Settings (or check the file) and try again."),
        ),
        Err(e) => not_stored("bank statement upload", e),
    }
}

async fn upload_received(
    State(state): State<AppState>,
    session: AuthSession,
    form: Multipart,
) -> Response {
    let up = Upload::Received;
    let user = match importer(&session) {
        Ok(user) => user,
        Err((status, why)) => return refused(up, status, &why),
    };
    let (key, _, file) = match read_form(up, form).await {
        Ok(read) => read,
        Err((status, why)) => return refused(up, status, &why),
    };
    let form_key = match form_key(&user, &key) {
        Ok(key) => key,
        Err((status, why)) => return refused(up, status, &why),
    };
    let opened = match inbox::open_bounded(file).await {
        Ok(Ok(opened)) => opened,
        Ok(Err(why)) => return refused(up, StatusCode::UNPROCESSABLE_ENTITY, &why.to_string()),
        Err(_) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                "Other files are being read. Send the file again in a moment.",
            )
                .into_response()
        }
    };
    let org = user.org_id;
    let attempt = Attempt::new(Surface::Form, form_key.to_string(), None);
    let fingerprint = hex::encode(opened.sha256);
    let saved = track(&state.pool, attempt, async |attempt| {
        attempt.identify(org.to_string(), Some(org));
        setting_once(
            &state.pool,
            &attempt,
            org,
            Form::ReceiveDocument,
            form_key,
            &fingerprint,
            || {
                let opened = &opened;
                async move |tx: &mut sqlx::PgConnection| {
                    let (detail, _) = inbox::store(tx, org, opened, "upload", None).await?;
                    Ok(detail.document.id)
                }
            },
        )
        .await
    })
    .await;
    match saved {
        Ok(Saved::Created(id) | Saved::Replayed(id)) => (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, format!("/inbox/{id}"))],
        )
            .into_response(),
        Ok(Saved::KeyReused) => refused(
            up,
            StatusCode::UNPROCESSABLE_ENTITY,
            "This form was already used for another file. Reload the page and try again.",
        ),
        Err(e) => not_stored("e-invoice upload", e),
    }
}

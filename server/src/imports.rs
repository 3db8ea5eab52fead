//! `POST /customers/import`: a CSV file of customers (multipart, a plain form: works without
//! JavaScript), read no further than its limit, checked row by row and stored as a preview keyed by
//! the file's SHA-256 within the org; the answer is a redirect to the import's page
//! (`/customers/import/{id}`), the same one for the same file.

use axum::extract::{DefaultBodyLimit, Multipart, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use invoicer_core::accounts::auth::AuthSession;
use invoicer_core::customers::imports::{self, MAX_BYTES};
use invoicer_core::AppState;

pub fn routes() -> Router<AppState> {
    Router::new().route(
        "/customers/import",
        post(upload).layer(DefaultBodyLimit::max(MAX_BYTES + 16 * 1024)),
    )
}

/// A page saying why the file was refused, with the way back; nothing was stored.
fn refused(status: StatusCode, why: &str) -> Response {
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
         <p><a href=\"/customers/import\">Back to the import</a></p></main></body></html>"
    );
    (status, axum::response::Html(body)).into_response()
}

/// The form's key and file (its name and bytes), the file read no further than [`MAX_BYTES`] + 1.
async fn read_form(mut form: Multipart) -> Result<(String, String, Vec<u8>), (StatusCode, String)> {
    let too_large = || {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("The file is larger than {} MB.", MAX_BYTES / 1024 / 1024),
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
                    if file.len() + chunk.len() > MAX_BYTES {
                        return Err(too_large());
                    }
                    file.extend_from_slice(&chunk);
                }
            }
            _ => {}
        }
    }
    if file.is_empty() {
        return Err((
            StatusCode::BAD_REQUEST,
            "Choose a CSV file to import.".into(),
        ));
    }
    Ok((key, name, file))
}

async fn upload(State(state): State<AppState>, session: AuthSession, form: Multipart) -> Response {
    let Some(user) = session.user.clone() else {
        return refused(StatusCode::UNAUTHORIZED, "Please log in.");
    };
    let user = match user.allowed(model::Action::EditInvoices) {
        Ok(user) => user,
        Err(e) => return refused(StatusCode::FORBIDDEN, &e.to_string()),
    };
    let (key, name, file) = match read_form(form).await {
        Ok(read) => read,
        Err((status, why)) => return refused(status, &why),
    };
    // The form's key names the org it was rendered for: a post from elsewhere has none that fits.
    if !uuid::Uuid::try_parse(key.trim()).is_ok_and(|k| model::form_key_fits(k, user.org_id)) {
        return refused(
            StatusCode::BAD_REQUEST,
            "This form has expired, or was opened for another organisation. Reload the page and try again.",
        );
    }
    let parsed = match imports::parse(&file) {
        Ok(parsed) => parsed,
        Err(why) => return refused(StatusCode::UNPROCESSABLE_ENTITY, &why),
    };
    match imports::store(&state.pool, user.org_id, Some(user.id), &name, &parsed).await {
        Ok(id) => (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, format!("/customers/import/{id}"))],
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "customer import");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                "The file could not be stored. Try again in a moment.",
            )
                .into_response()
        }
    }
}

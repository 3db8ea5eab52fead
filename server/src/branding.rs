//! The org's logo: uploaded as PNG or JPEG (at most 512 KB), decoded under limits that refuse a
//! declared size before anything is allocated for it (a decompression bomb is a few bytes), scaled
//! to fit 800 × 320 and re-encoded as a plain PNG: nothing of the uploaded file is ever served.
//! SVG (a document that can carry script) and every other format are refused.
//!
//! `POST /settings/logo` (multipart, a plain form: works without JavaScript; the form's key is
//! claimed once) and `GET /logos/{token}.png` (public: the customer's pages show it).

use std::io::Cursor;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use image::{ImageError, ImageFormat, ImageReader, Limits};
use invoicer_core::accounts::auth::AuthSession;
use invoicer_core::observe::{Attempt, Surface};
use invoicer_core::surfaces::form::{setting_once, Saved};
use invoicer_core::surfaces::forms::Form;
use invoicer_core::surfaces::track;
use invoicer_core::AppState;
use tokio::sync::Semaphore;

/// The largest upload, in bytes.
pub const MAX_BYTES: usize = 512 * 1024;
/// The largest declared width or height decoded.
const MAX_SIDE: u32 = 4096;
/// What a decode may allocate at most: one 4096 × 4096 RGBA frame and a little.
const MAX_ALLOC: u64 = 80 << 20;
/// The stored logo fits in this box.
const BOX: (u32, u32) = (800, 320);

/// Why an upload is refused: each says what to do in the user's words.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogoError {
    #[error("The logo is larger than 512 KB. Save it smaller and upload it again.")]
    TooLarge,
    #[error("Only PNG and JPEG logos are accepted (not SVG, GIF, WebP or other files).")]
    NotPngOrJpeg,
    #[error("The logo is more than 4096 pixels wide or high. Scale it down and upload it again.")]
    TooManyPixels,
    #[error("The file could not be read as an image. Export it again as PNG or JPEG.")]
    Unreadable,
    #[error("Choose a file to upload.")]
    Missing,
}

/// `bytes` (an uploaded logo) as a fresh PNG that fits [`BOX`], with its width and height.
pub fn reencode(bytes: &[u8]) -> Result<(Vec<u8>, u32, u32), LogoError> {
    if bytes.len() > MAX_BYTES {
        return Err(LogoError::TooLarge);
    }
    if bytes.is_empty() {
        return Err(LogoError::Missing);
    }
    // By content, never by the name or type the browser sent.
    let format = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        ImageFormat::Png
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        ImageFormat::Jpeg
    } else {
        return Err(LogoError::NotPngOrJpeg);
    };
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_ALLOC);
    reader.limits(limits);
    let image = reader.decode().map_err(|e| match e {
        ImageError::Limits(_) => LogoError::TooManyPixels,
        _ => LogoError::Unreadable,
    })?;
    let image = if image.width() > BOX.0 || image.height() > BOX.1 {
        image.thumbnail(BOX.0, BOX.1)
    } else {
        image
    };
    let rgba = image.to_rgba8();
    let (width, height) = rgba.dimensions();
    let mut png = Vec::new();
    rgba.write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
        .map_err(|_| LogoError::Unreadable)?;
    Ok((png, width, height))
}

/// Decodes at once: decoding is CPU and memory, so uploads cannot occupy every core.
static DECODES: LazyLock<Arc<Semaphore>> = LazyLock::new(|| Arc::new(Semaphore::new(1)));

/// The routes that need the session (the upload).
pub fn session_routes() -> Router<AppState> {
    Router::new().route(
        "/settings/logo",
        // A little more than the file: the form's other field and the multipart framing.
        post(upload).layer(DefaultBodyLimit::max(MAX_BYTES + 16 * 1024)),
    )
}

/// The public route: the logo file.
pub fn public_routes() -> Router<AppState> {
    Router::new().route("/logos/{file}", get(logo))
}

/// A page saying why the upload was refused, with the way back; nothing was stored.
fn refused(status: StatusCode, why: &str) -> Response {
    let css = crate::assets::stylesheet();
    let body = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"icon\" href=\"data:,\">\
         <title>Logo not saved</title><link rel=\"stylesheet\" href=\"{css}\"></head>\
         <body><main class=\"card\"><h1>Logo not saved</h1><p class=\"error logo-error\">{}</p>\
         <p><a href=\"/settings/org\">Back to the settings</a></p></main></body></html>",
        html_escape(why)
    );
    (status, axum::response::Html(body)).into_response()
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The form's fields: its key and the file, the file read no further than [`MAX_BYTES`] + 1.
async fn read_form(mut form: Multipart) -> Result<(String, Vec<u8>), LogoError> {
    // A body past the route's limit ends the stream with a 413 error; any other broken body is
    // not a form we can read.
    let broken = |e: axum::extract::multipart::MultipartError| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            LogoError::TooLarge
        } else {
            LogoError::Missing
        }
    };
    let (mut key, mut file) = (String::new(), Vec::new());
    while let Some(mut field) = form.next_field().await.map_err(broken)? {
        match field.name() {
            Some("idempotency_key") => {
                let text = field.text().await.map_err(broken)?;
                key = text.chars().take(64).collect();
            }
            Some("logo") => {
                while let Some(chunk) = field.chunk().await.map_err(broken)? {
                    if file.len() + chunk.len() > MAX_BYTES {
                        return Err(LogoError::TooLarge);
                    }
                    file.extend_from_slice(&chunk);
                }
            }
            _ => {}
        }
    }
    Ok((key, file))
}

async fn upload(State(state): State<AppState>, session: AuthSession, form: Multipart) -> Response {
    let user = match session.user.clone() {
        Some(user) => user,
        None => return refused(StatusCode::UNAUTHORIZED, "Please log in."),
    };
    let user = match user.allowed(model::Action::ManageOrg) {
        Ok(user) => user,
        Err(e) => return refused(StatusCode::FORBIDDEN, &e.to_string()),
    };
    let (key, file) = match read_form(form).await {
        Ok(read) => read,
        Err(e @ LogoError::TooLarge) => {
            return refused(StatusCode::PAYLOAD_TOO_LARGE, &e.to_string())
        }
        Err(e) => return refused(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let Some(form_key) = uuid::Uuid::try_parse(key.trim())
        .ok()
        .filter(|k| model::form_key_fits(*k, user.org_id))
    else {
        return refused(
            StatusCode::BAD_REQUEST,
            "This form has expired, or was opened for another organisation. Reload the page and try again.",
        );
    };
    let wait = Duration::from_secs(5);
    let decoded = invoicer_core::throttle::bounded(&DECODES, wait, move || {
        let hash: [u8; 32] = sha2::Digest::finalize(sha2::Digest::chain_update(
            <sha2::Sha256 as sha2::Digest>::new(),
            &file,
        ))
        .into();
        reencode(&file).map(|logo| (logo, hash))
    })
    .await;
    let ((png, width, height), hash) = match decoded {
        Ok(Ok(done)) => done,
        Ok(Err(why)) => {
            let status = match why {
                LogoError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            return refused(status, &why.to_string());
        }
        Err(_) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                "Busy: try again in a moment.",
            )
                .into_response()
        }
    };
    let attempt = Attempt::new(Surface::Form, form_key.to_string(), None);
    let org = user.org_id;
    let saved = track(&state.pool, attempt, async |attempt| {
        attempt.identify(org.to_string(), Some(org));
        setting_once(
            &state.pool,
            &attempt,
            org,
            Form::UploadLogo,
            form_key,
            &hex::encode(hash),
            || {
                let png = &png;
                async move |tx: &mut sqlx::PgConnection| {
                    invoicer_core::documents::branding::set_logo(tx, org, png, width, height)
                        .await?;
                    Ok(org.uuid())
                }
            },
        )
        .await
    })
    .await;
    match saved {
        Ok(Saved::Created(_) | Saved::Replayed(_)) => {
            (StatusCode::SEE_OTHER, [(header::LOCATION, "/settings/org")]).into_response()
        }
        Ok(Saved::KeyReused) => refused(
            StatusCode::UNPROCESSABLE_ENTITY,
            "This form was already used for another file. Reload the page and try again.",
        ),
        Err(e) => {
            tracing::error!(error = %e, "logo upload");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                "The logo could not be saved. Try again in a moment.",
            )
                .into_response()
        }
    }
}

/// `GET /logos/{token}.png`: the re-encoded PNG, cached for good (a new upload has a new token).
async fn logo(State(state): State<AppState>, Path(file): Path<String>) -> Response {
    let Some(token) = file.strip_suffix(".png") else {
        return StatusCode::NOT_FOUND.into_response();
    };
    match invoicer_core::documents::branding::logo_png(&state.pool, token).await {
        Ok(Some(png)) => {
            let mut response = (
                [
                    (header::CONTENT_TYPE, "image/png"),
                    (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
                ],
                png,
            )
                .into_response();
            response.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static("default-src 'none'"),
            );
            response
        }
        Ok(None) => StatusCode::NOT_FOUND.into_response(),
        Err(e) => {
            tracing::error!(error = %e, "logo");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
            )
                .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG of `width` × `height` transparent pixels.
    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut out = Vec::new();
        image::RgbaImage::new(width, height)
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .unwrap();
        out
    }

    #[test]
    fn a_png_is_re_encoded_and_scaled_into_its_box() {
        let (out, w, h) = reencode(&png(1600, 400)).unwrap();
        assert!(out.starts_with(b"\x89PNG"));
        assert_eq!((w, h), (800, 200));
        let (_, w, h) = reencode(&png(40, 20)).unwrap();
        assert_eq!((w, h), (40, 20), "a small logo keeps its size");
    }

    #[test]
    fn what_is_not_a_png_or_jpeg_is_refused_by_its_content() {
        let svg = br#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#;
        assert_eq!(reencode(svg), Err(LogoError::NotPngOrJpeg));
        assert_eq!(reencode(b"GIF89a...."), Err(LogoError::NotPngOrJpeg));
        assert_eq!(
            reencode(b"\x89PNG\r\n\x1a\nbroken"),
            Err(LogoError::Unreadable)
        );
        assert_eq!(
            reencode(&vec![0u8; MAX_BYTES + 1]),
            Err(LogoError::TooLarge)
        );
    }
}

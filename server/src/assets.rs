//! What the pages load: the browser's wasm, its script and the style sheet under `/pkg`. With
//! cargo-leptos' `hash-files` their names carry their content's hash, so a browser keeps them for a
//! year and asks again only when a release changes them; the release build writes brotli and gzip
//! copies beside each (`--precompress`), sent to a client that accepts them, so nothing compresses the
//! bundle per request. The server's own answers (pages, JSON, CSV) are compressed as they go, by
//! [`compression`].

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use axum::extract::Request;
use axum::http::header::{CACHE_CONTROL, VARY};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use leptos::config::LeptosOptions;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::compression::{CompressionLayer, CompressionLevel};
use tower_http::services::ServeDir;

/// The style sheet's address, as the site's build named it ([`site`]).
static STYLESHEET: OnceLock<String> = OnceLock::new();

/// The site as the build left it: where cargo-leptos' `hash-files` wrote its hash file beside the
/// binary, the files' names carry their hashes (`LEPTOS_HASH_FILES`, where set, decides instead), and
/// the pages name the style sheet by its hashed name.
pub fn site(mut options: LeptosOptions) -> LeptosOptions {
    if std::env::var_os("LEPTOS_HASH_FILES").is_none() {
        options.hash_files = hash_file(&options).is_some_and(|path| path.is_file());
    }
    let _ = STYLESHEET.set(stylesheet_of(&options));
    options
}

/// Where the build writes the files' hashes: beside the server binary.
fn hash_file(options: &LeptosOptions) -> Option<PathBuf> {
    Some(
        std::env::current_exe()
            .ok()?
            .parent()?
            .join(&*options.hash_file),
    )
}

/// `/pkg/invoicer.<hash>.css` from the hash file's `css:` line, or `/pkg/invoicer.css`.
fn stylesheet_of(options: &LeptosOptions) -> String {
    let hash = (options.hash_files)
        .then(|| std::fs::read_to_string(hash_file(options)?).ok())
        .flatten()
        .and_then(|text| {
            (text.lines()).find_map(|line| Some(line.strip_prefix("css:")?.trim().to_owned()))
        });
    let name = match hash {
        Some(hash) => format!("{}.{hash}.css", options.output_name),
        None => format!("{}.css", options.output_name),
    };
    format!("/{}/{name}", options.site_pkg_dir)
}

/// The style sheet's address for the pages the server writes itself (the customer's pages, refusals).
pub fn stylesheet() -> &'static str {
    STYLESHEET.get().map_or("/pkg/invoicer.css", String::as_str)
}

/// How long a browser keeps a file whose name is its content's hash.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// `/pkg/*` from the site's folder: a precompressed copy where there is one and the client takes it,
/// a year's caching where names are hashed (else the browser asks again each time: `no-cache`).
pub fn routes(options: &LeptosOptions) -> Router {
    let dir = Path::new(&*options.site_root).join(&*options.site_pkg_dir);
    let cache = if options.hash_files {
        IMMUTABLE
    } else {
        "no-cache"
    };
    let files = ServeDir::new(dir)
        .precompressed_br()
        .precompressed_gzip()
        .append_index_html_on_directories(false);
    Router::new().nest_service(
        &format!("/{}", options.site_pkg_dir),
        Router::new()
            .fallback_service(files)
            .layer(middleware::from_fn(move |req: Request, next: Next| {
                cached_for(cache, req, next)
            })),
    )
}

/// A found file may be kept `cache`, by a shared cache too, one copy per encoding asked for; a
/// missing one is asked for again.
async fn cached_for(cache: &'static str, req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    if response.status() == StatusCode::OK || response.status() == StatusCode::NOT_MODIFIED {
        let headers = response.headers_mut();
        headers.insert(CACHE_CONTROL, HeaderValue::from_static(cache));
        headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

/// Compression of the server's own answers (pages, JSON, CSV) for a client that accepts brotli or
/// gzip, with `Vary: Accept-Encoding`. Left as they are: what is already compressed (PDFs, whose
/// streams are deflated; images; the precompressed `/pkg` files, which carry their own
/// `Content-Encoding`), event streams, and bodies too small to gain.
pub fn compression() -> CompressionLayer<impl Predicate> {
    let predicate = DefaultPredicate::new()
        .and(NotForContentType::const_new("application/pdf"))
        .and(NotForContentType::const_new("application/wasm"))
        .and(NotForContentType::const_new("application/zip"));
    // Brotli's default quality (11) is meant for files compressed once, as the release build does
    // with `/pkg`, and is many times slower than quality 4, which is meant for answers compressed as
    // they go (gzip at 4 as well).
    CompressionLayer::new()
        .quality(CompressionLevel::Precise(4))
        .compress_when(predicate)
}

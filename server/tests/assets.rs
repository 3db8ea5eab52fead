//! What travels compressed and what a browser may keep: the site's hashed files under `/pkg` (their
//! precompressed copies, a year's caching), and the server's own answers compressed as they go —
//! pages, JSON, CSV — but not PDFs.

use std::io::Read;
use std::path::PathBuf;

use leptos::config::LeptosOptions;
use reqwest::header::HeaderMap;
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::served::{invoice_body, TestApp};

const WASM: &str = "invoicer.0a1b2c3d4e5f.wasm";

/// A site folder like the release build's: a hashed wasm and its brotli and gzip copies, made here
/// with the real encoders.
fn site(hash_files: bool) -> (LeptosOptions, PathBuf, Vec<u8>) {
    let root = std::env::temp_dir().join(format!("invoicer-site-{}", Uuid::new_v4().simple()));
    let pkg = root.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    // Not all alike, as a module is not: compressible, but not to nothing.
    let wasm: Vec<u8> = (0u32..40_000)
        .map(|i| ((i * 7 % 251) ^ (i / 97)) as u8)
        .collect();
    std::fs::write(pkg.join(WASM), &wasm).unwrap();
    let mut br = Vec::new();
    brotli::BrotliCompress(&mut &wasm[..], &mut br, &Default::default()).unwrap();
    std::fs::write(pkg.join(format!("{WASM}.br")), br).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut gz, &wasm).unwrap();
    std::fs::write(pkg.join(format!("{WASM}.gz")), gz.finish().unwrap()).unwrap();
    let options = LeptosOptions::builder()
        .output_name("invoicer")
        .site_root(root.to_string_lossy().into_owned())
        .site_pkg_dir("pkg")
        .hash_files(hash_files)
        .build();
    (options, root, wasm)
}

/// GETs `path` saying it accepts `encoding` (none: no header); the status, headers and body as sent.
async fn get(app: &TestApp, path: &str, encoding: Option<&str>) -> (u16, HeaderMap, Vec<u8>) {
    let mut req = app.http.get(format!("{}{path}", app.base));
    if let Some(encoding) = encoding {
        req = req.header("accept-encoding", encoding);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    (status, headers, res.bytes().await.unwrap().to_vec())
}

/// The body as it was before its `Content-Encoding`.
fn decoded(headers: &HeaderMap, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match headers.get("content-encoding").map(|v| v.to_str().unwrap()) {
        None => out.extend_from_slice(body),
        Some("br") => {
            brotli::BrotliDecompress(&mut &body[..], &mut out).unwrap();
        }
        Some("gzip") => {
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut out)
                .unwrap();
        }
        Some(other) => panic!("unexpected content-encoding {other}"),
    }
    out
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.to_str().unwrap())
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn hashed_files_are_sent_precompressed_and_kept_for_a_year(pool: PgPool) {
    let (options, root, wasm) = site(true);
    let app = TestApp::spawn_site(pool, |_| {}, options).await;
    let path = format!("/pkg/{WASM}");
    for (accepts, encoding) in [
        (Some("br, gzip"), Some("br")),
        (Some("gzip, deflate"), Some("gzip")),
        (None, None),
        (Some("identity"), None),
    ] {
        let (status, headers, body) = get(&app, &path, accepts).await;
        assert_eq!(status, 200, "{accepts:?}");
        assert_eq!(
            header(&headers, "content-encoding"),
            encoding,
            "{accepts:?}"
        );
        assert_eq!(
            header(&headers, "cache-control"),
            Some("public, max-age=31536000, immutable")
        );
        assert_eq!(header(&headers, "content-type"), Some("application/wasm"));
        assert_eq!(
            header(&headers, "vary"),
            Some("accept-encoding"),
            "{accepts:?}"
        );
        // The copy on disk, sent as it is: nothing compressed per request.
        let on_disk = match encoding {
            Some("br") => std::fs::read(root.join(format!("pkg/{WASM}.br"))).unwrap(),
            Some(_) => std::fs::read(root.join(format!("pkg/{WASM}.gz"))).unwrap(),
            None => wasm.clone(),
        };
        assert_eq!(body, on_disk, "{accepts:?}");
        assert_eq!(decoded(&headers, &body), wasm, "{accepts:?}");
        if encoding.is_some() {
            assert!(
                body.len() < wasm.len() / 2,
                "{accepts:?}: {} bytes",
                body.len()
            );
        }
    }
    // A name that is not there is asked for again, never kept.
    let (status, headers, _) = get(&app, "/pkg/invoicer.ffffffffffff.wasm", Some("br")).await;
    assert_eq!(status, 404);
    assert_eq!(header(&headers, "cache-control"), None);
    let _ = std::fs::remove_dir_all(root);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn files_without_a_hash_in_their_name_are_checked_again_each_time(pool: PgPool) {
    let (options, root, wasm) = site(false);
    let app = TestApp::spawn_site(pool, |_| {}, options).await;
    let (status, headers, body) = get(&app, &format!("/pkg/{WASM}"), Some("gzip")).await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "cache-control"), Some("no-cache"));
    assert_eq!(decoded(&headers, &body), wasm);
    let _ = std::fs::remove_dir_all(root);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn pages_json_and_csv_are_compressed_for_a_client_that_accepts_it_and_pdfs_are_not(
    pool: PgPool,
) {
    let app = TestApp::spawn(pool).await;
    let (_, token) = app.api_client().await;
    let created = app
        .post_invoice(
            Some(&token),
            Some(&Uuid::new_v4().to_string()),
            &invoice_body("Compressed Co"),
        )
        .await
        .json();
    let id = created["id"].as_str().unwrap();
    let public = created["public_url"].as_str().unwrap();
    let public = public.strip_prefix(&app.base).unwrap();

    let authed = |path: &str, encoding: &'static str| {
        app.http
            .get(format!("{}{path}", app.base))
            .bearer_auth(&token)
            .header("accept-encoding", encoding)
            .send()
    };
    // The customer's page (HTML), an invoice (JSON) and an export (CSV): compressed, and the same once
    // decoded as without compression.
    for (path, kind, api) in [
        (public.to_owned(), "text/html", false),
        (format!("/api/v1/invoices/{id}"), "application/json", true),
        ("/api/v1/exports/invoices.csv".to_owned(), "text/csv", true),
    ] {
        for encoding in ["br", "gzip"] {
            let plain_res = if api {
                authed(&path, "identity").await.unwrap()
            } else {
                app.http
                    .get(format!("{}{path}", app.base))
                    .send()
                    .await
                    .unwrap()
            };
            assert_eq!(plain_res.status(), 200, "{path}");
            assert_eq!(plain_res.headers().get("content-encoding"), None, "{path}");
            let plain = plain_res.bytes().await.unwrap();
            let res = if api {
                authed(&path, encoding).await.unwrap()
            } else {
                app.http
                    .get(format!("{}{path}", app.base))
                    .header("accept-encoding", encoding)
                    .send()
                    .await
                    .unwrap()
            };
            assert_eq!(res.status(), 200, "{path}");
            let headers = res.headers().clone();
            assert!(
                header(&headers, "content-type").unwrap().starts_with(kind),
                "{path}"
            );
            assert_eq!(
                header(&headers, "content-encoding"),
                Some(encoding),
                "{path}"
            );
            assert!(
                header(&headers, "vary")
                    .unwrap()
                    .to_ascii_lowercase()
                    .contains("accept-encoding"),
                "{path}"
            );
            let body = res.bytes().await.unwrap();
            let text = String::from_utf8(decoded(&headers, &body)).unwrap();
            if kind == "application/json" {
                // The same invoice (the answer carries no per-request field).
                assert_eq!(
                    serde_json::from_str::<serde_json::Value>(&text).unwrap(),
                    serde_json::from_slice::<serde_json::Value>(&plain).unwrap()
                );
            } else if kind == "text/csv" {
                assert_eq!(text.as_bytes(), &plain[..], "{path}");
            } else {
                assert!(text.contains("Compressed Co"), "{path}");
            }
        }
    }

    // A PDF's streams are deflated already: sent as it is, whatever the client accepts.
    let (status, headers, body) = get(&app, &format!("{public}/pdf"), Some("br, gzip")).await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), Some("application/pdf"));
    assert_eq!(header(&headers, "content-encoding"), None);
    assert!(body.starts_with(b"%PDF-"));
}

/// Only the pages with an island (`app::ISLAND_PAGES`) load the hydration script and the wasm
/// module; every other page is HTML and CSS alone, settled as it arrives (`<body data-hydrated>`).
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn only_the_pages_with_an_island_load_script(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let http = crate::common::client();
    crate::common::signup_and_login(&app, &http).await;
    let page = |path: &'static str| {
        let req = http.get(format!("{}{path}", app.base)).send();
        async move {
            let res = req.await.unwrap();
            assert_eq!(res.status(), 200, "{path}");
            res.text().await.unwrap()
        }
    };
    for path in [
        "/invoices",
        "/dashboard",
        "/customers",
        "/customers/new",
        "/quotes",
        "/activity",
        "/settings/org",
        "/settings/webhooks",
    ] {
        let html = page(path).await;
        assert!(!html.contains("type=\"module\""), "{path} loads a script");
        // What the page read is not sent along as JSON for a hydration that never comes.
        assert!(!html.contains("__RESOLVED_RESOURCES["), "{path}: {html}");
        assert!(!html.contains(".wasm"), "{path} names the wasm module");
        assert!(!html.contains("<leptos-island"), "{path} has an island");
        assert!(html.contains("<body data-hydrated=\"true\""), "{path}");
    }
    for path in [
        "/invoices/new",
        "/quotes/new",
        "/schedules/new",
        "/settings/api-keys",
    ] {
        let html = page(path).await;
        assert!(html.contains("<leptos-island"), "{path} has no island");
        assert!(html.contains("type=\"module\""), "{path} loads no script");
        assert!(html.contains(".wasm"), "{path} does not load the module");
        assert!(
            !html.contains("data-hydrated"),
            "{path} is marked before it is"
        );
    }
}

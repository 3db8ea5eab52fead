//! Branding: a logo is a PNG or JPEG of at most 512 KB, decoded under limits (a decompression bomb
//! allocates nothing) and served re-encoded; the accent colour and the footer reach the customer's
//! pages, the PDFs and the emails, and the invoice email carries the PDF.

use std::io::Cursor;
use std::time::Duration;

use image::{ImageFormat, RgbaImage};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::rows::{public_token, scalar};
use crate::common::served::TestApp;
use crate::common::{self, client, login, Server, SmtpSink, TestDb};

/// A `width` × `height` PNG with a text chunk saying `marker` (which re-encoding must drop).
fn png_with_text(width: u32, height: u32, marker: &str) -> Vec<u8> {
    let mut out = Vec::new();
    RgbaImage::from_pixel(width, height, image::Rgba([200, 30, 30, 255]))
        .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .unwrap();
    // A tEXt chunk right after IHDR (8 bytes of signature, 25 of IHDR).
    let data = format!("Comment\0{marker}");
    let mut chunk = (data.len() as u32).to_be_bytes().to_vec();
    let typed: Vec<u8> = [b"tEXt".as_slice(), data.as_bytes()].concat();
    chunk.extend_from_slice(&typed);
    chunk.extend_from_slice(&crc32(&typed).to_be_bytes());
    out.splice(33..33, chunk);
    out
}

/// A valid small PNG whose header then claims `side` × `side` pixels (its CRC fixed up): a
/// decoder that believed it would allocate `side² × 4` bytes.
fn bomb(side: u32) -> Vec<u8> {
    let mut out = Vec::new();
    RgbaImage::new(1, 1)
        .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .unwrap();
    out[16..20].copy_from_slice(&side.to_be_bytes());
    out[20..24].copy_from_slice(&side.to_be_bytes());
    let crc = crc32(&out[12..29]);
    out[29..33].copy_from_slice(&crc.to_be_bytes());
    out
}

/// CRC-32 (IEEE), as PNG chunks carry it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::new();
    image::RgbImage::from_pixel(width, height, image::Rgb([10, 90, 200]))
        .write_to(&mut Cursor::new(&mut out), ImageFormat::Jpeg)
        .unwrap();
    out
}

/// Posts `bytes` as the logo form would, with a key minted for `org`: (status, body, location).
async fn upload(
    http: &reqwest::Client,
    base: &str,
    org: model::OrgId,
    name: &str,
    mime: &str,
    bytes: Vec<u8>,
) -> (u16, String, String) {
    let form = reqwest::multipart::Form::new()
        .text("idempotency_key", model::form_key(org).to_string())
        .part(
            "logo",
            reqwest::multipart::Part::bytes(bytes)
                .file_name(name.to_owned())
                .mime_str(mime)
                .unwrap(),
        );
    let res = http
        .post(format!("{base}/settings/logo"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let location = res
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, res.text().await.unwrap(), location)
}

#[tokio::test]
async fn uploads_are_refused_with_a_reason_and_a_bomb_allocates_nothing() {
    let db = TestDb::with_org("branding_upload", "Acme", "logo@example.com").await;
    let pool = db.pool().await;
    let org: model::OrgId = scalar(&pool, "select id from orgs").await;
    let server = Server::start(&db, "").await;
    let http = client();
    login(&http, &server.base, "logo@example.com", "correct horse").await;
    let base = server.base.clone();

    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect/></svg>"#;
    let refusals = [
        (
            "logo.txt",
            "text/plain",
            b"just text".to_vec(),
            422,
            "Only PNG and JPEG",
        ),
        (
            "logo.svg",
            "image/svg+xml",
            svg.to_vec(),
            422,
            "Only PNG and JPEG",
        ),
        // An SVG named and typed as a PNG: judged by its content.
        (
            "logo.png",
            "image/png",
            svg.to_vec(),
            422,
            "Only PNG and JPEG",
        ),
        (
            "big.png",
            "image/png",
            vec![0x89; 600 * 1024],
            413,
            "larger than 512 KB",
        ),
        (
            "cut.png",
            "image/png",
            png_with_text(40, 40, "x")[..60].to_vec(),
            422,
            "could not be read",
        ),
    ];
    for (name, mime, bytes, status, says) in refusals {
        let (got, body, _) = upload(&http, &base, org, name, mime, bytes).await;
        assert_eq!(got, status, "{name}: {body}");
        assert!(body.contains(says), "{name}: {body}");
    }

    // 60 000 × 60 000 RGBA would be 14.4 GB, 8 000 × 8 000 256 MB (within the image crate's own
    // default limit): both refused by their header, before any allocation.
    let before = server.peak_rss_kib().unwrap();
    for side in [8_000, 60_000] {
        let (status, body, _) =
            upload(&http, &base, org, "bomb.png", "image/png", bomb(side)).await;
        assert_eq!(status, 422, "{side}: {body}");
        assert!(body.contains("more than 4096 pixels"), "{side}: {body}");
    }
    let after = server.peak_rss_kib().unwrap();
    assert!(
        after < before + 64 * 1024,
        "the bomb's declared size was never allocated: peak {before} KiB → {after} KiB"
    );
    let stored: i64 = scalar(&pool, "select count(*) from org_logos").await;
    assert_eq!(stored, 0, "nothing refused was stored");

    // A PNG with a text chunk: accepted, scaled into its box, served as a fresh PNG without it.
    let (status, body, location) = upload(
        &http,
        &base,
        org,
        "logo.png",
        "image/png",
        png_with_text(1200, 300, "secret-marker-in-metadata"),
    )
    .await;
    assert_eq!(
        (status, location.as_str()),
        (303, "/settings/org"),
        "{body}"
    );
    let (token, width, height): (String, i32, i32) =
        sqlx::query_as("select token, width, height from org_logos")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((width, height), (800, 200));
    let res = http
        .get(format!("{base}/logos/{token}.png"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "image/png");
    assert!(res.headers()["cache-control"]
        .to_str()
        .unwrap()
        .contains("immutable"));
    let served = res.bytes().await.unwrap();
    assert!(served.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(
        !served
            .windows(b"secret-marker".len())
            .any(|w| w == b"secret-marker"),
        "nothing of the upload is served"
    );
    let decoded = image::load_from_memory(&served).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (800, 200));

    // A JPEG replaces it, under a new name; the old name is gone.
    let (status, _, _) = upload(&http, &base, org, "logo.jpg", "image/jpeg", jpeg(300, 120)).await;
    assert_eq!(status, 303);
    let new_token: String = scalar(&pool, "select token from org_logos").await;
    assert_ne!(new_token, token);
    let old = http
        .get(format!("{base}/logos/{token}.png"))
        .send()
        .await
        .unwrap();
    assert_eq!(old.status(), 404);

    // Another session without the right (no session at all here) stores nothing.
    let anonymous = client();
    let (status, _, _) = upload(&anonymous, &base, org, "l.png", "image/png", jpeg(10, 10)).await;
    assert!(status == 401 || status == 302 || status == 303, "{status}");
    let still: String = scalar(&pool, "select token from org_logos").await;
    assert_eq!(still, new_token);

    server.stop().await;
    db.finish(pool).await;
}

/// An org (owner `email`) with a logo, a pale accent and a footer, and one open invoice to
/// `customer`; returns (org, invoice).
async fn branded_invoice(pool: &PgPool, customer: &str) -> (model::OrgId, Uuid) {
    let (org, invoice) = common::seed_invoice(pool, customer, 12_345, "eur").await;
    let mut tx = pool.begin().await.unwrap();
    let png = png_bytes(300, 100);
    invoicer_core::documents::branding::set_logo(&mut tx, org, &png, 300, 100)
        .await
        .unwrap();
    invoicer_core::documents::branding::save(
        &mut tx,
        org,
        Some("#ffee00"),
        "Acme Ltd · Registered in Utopia 42",
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    (org, invoice)
}

/// A plain PNG, for the rows the tests write directly.
fn png_bytes(width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::new();
    RgbaImage::from_pixel(width, height, image::Rgba([0, 0, 0, 255]))
        .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .unwrap();
    out
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_customers_page_and_pdf_wear_the_orgs_look(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, invoice) = branded_invoice(&app.pool, "look@example.com").await;
    let token = public_token(&app.pool, invoice).await;
    let res = app
        .http
        .get(format!("{}/i/{token}", app.base))
        .send()
        .await
        .unwrap();
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    let html = res.text().await.unwrap();
    assert!(html.contains(r#"class="logo""#), "{html}");
    assert!(html.contains("/logos/"), "{html}");
    assert!(html.contains("Registered in Utopia 42"), "{html}");
    // The pale yellow is darkened to a legible accent; the CSP allows exactly that style.
    let style_at = html.find("<style>").expect("the accent's style");
    let style = &html[style_at + 7..html[style_at..].find("</style>").unwrap() + style_at];
    assert!(style.starts_with(":root{--accent:#"), "{style}");
    assert_ne!(
        style, ":root{--accent:#ffee00}",
        "a pale accent is darkened"
    );
    use base64::Engine;
    use sha2::Digest;
    let hash =
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(style.as_bytes()));
    assert!(csp.contains(&format!("'sha256-{hash}'")), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");

    // The PDF: the footer's words and one image (the logo).
    let pdf = app
        .http
        .get(format!("{}/i/{token}/pdf", app.base))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let dir = std::env::temp_dir().join(format!("invoicer-brand-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("invoice.pdf");
    std::fs::write(&file, &pdf).unwrap();
    let text = std::process::Command::new("pdftotext")
        .arg(&file)
        .arg("-")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Registered in Utopia 42"), "{text}");
    let images = std::process::Command::new("pdfimages")
        .arg("-list")
        .arg(&file)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&images.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.contains(" 300 ") && l.contains(" 100 ")),
        "the logo is in the PDF at its pixel size: {listed}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_invoice_email_carries_its_pdf_and_the_orgs_footer(pool: PgPool) {
    let sink = SmtpSink::start(0, false).await;
    let (org, invoice) = branded_invoice(&pool, "mailed@example.com").await;
    common::queue_email(&pool, org, Uuid::new_v4(), invoice)
        .await
        .unwrap();
    let config = invoicer_core::worker::WorkerConfig {
        id: "branding-test".into(),
        invoice_pdf: Some(server::pdf::mail::renderer("http://invoicer.test")),
        ..Default::default()
    };
    let mailer = invoicer_core::mail::Mailer::new(
        Some(&sink.url()),
        None,
        std::path::Path::new("unused"),
        Duration::from_secs(10),
        invoicer_core::mail::DEV_FROM,
    )
    .unwrap();
    while invoicer_core::worker::drain_once(&pool, &mailer, &config)
        .await
        .unwrap()
        > 0
    {}
    let messages = sink.wait_for(1, Duration::from_secs(10)).await;
    let raw = &messages[0];
    let number: String = scalar(&pool, "select number_text from invoices").await;
    assert!(raw.contains("Content-Type: application/pdf"), "{raw}");
    assert!(
        raw.contains(&format!("filename=\"invoice-{number}.pdf\"")),
        "{raw}"
    );
    assert!(
        raw.contains("Content-ID: <logo>"),
        "the logo travels inline: {raw}"
    );
    let unfolded = raw.replace("=\r\n", "").replace("=\n", "");
    assert!(unfolded.contains("Registered in Utopia 42"), "{unfolded}");
    // The attachment is the invoice's PDF.
    let body_at = raw.find("Content-Type: application/pdf").unwrap();
    let part = &raw[body_at..];
    let b64: String = part
        .split("\r\n\r\n")
        .nth(1)
        .unwrap()
        .split("--")
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    use base64::Engine;
    let pdf = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    // Byte for byte the PDF stored for the invoice (what its page serves), not merely a PDF.
    let stored: Vec<u8> =
        sqlx::query_scalar("select pdf from document_pdfs where document_id = $1 and paper = 'a4'")
            .bind(invoice)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(pdf, stored, "the email attaches the stored PDF");
}

/// Another site's page posting a logo as the signed-in owner (a cross-origin multipart form) is
/// refused like every other form post; the same upload from our own page is stored.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_cross_origin_logo_upload_is_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (email, account) = crate::common::rows::new_owner(&app.pool, "Logo Co").await;
    let http = client();
    login(&http, &app.base, &email, "correct horse").await;
    let post = |origin: Option<&str>| {
        let form = reqwest::multipart::Form::new()
            .text(
                "idempotency_key",
                model::form_key(account.org_id).to_string(),
            )
            .part(
                "logo",
                reqwest::multipart::Part::bytes(png_bytes(40, 20))
                    .file_name("logo.png")
                    .mime_str("image/png")
                    .unwrap(),
            );
        let mut req = http
            .post(format!("{}/settings/logo", app.base))
            .multipart(form);
        if let Some(origin) = origin {
            req = req.header("origin", origin);
        }
        req.send()
    };
    let forged = post(Some("https://evil.example")).await.unwrap();
    assert_eq!(forged.status(), 403);
    let stored: i64 = scalar(&app.pool, "select count(*) from org_logos").await;
    assert_eq!(stored, 0, "nothing stored from another site's post");
    let own = post(Some(&app.base)).await.unwrap();
    assert!(own.status().is_redirection(), "{}", own.status());
    let stored: i64 = scalar(&app.pool, "select count(*) from org_logos").await;
    assert_eq!(stored, 1);
}

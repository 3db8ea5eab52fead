//! What the open internet requires of every answer: cross-origin form posts refused, only the server's
//! own error messages shown on its pages, and the response headers that keep pages out of frames and
//! scripts to the ones the server rendered.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What the guards need to know about this deployment.
#[derive(Clone)]
pub struct Guard {
    /// `scheme://host[:port]` of INVOICER_PUBLIC_URL.
    pub public_origin: Arc<str>,
    /// Served over https: HSTS and `__Host-` cookies.
    pub https: bool,
    /// Signs the error a no-JavaScript form post carries back in its redirect URL. Random per
    /// process: an error link from another process is dropped (the form shows without its message).
    error_key: Arc<[u8; 32]>,
}

impl Guard {
    pub fn new(public_origin: &str, https: bool) -> Guard {
        let mut key = [0u8; 32];
        random_fill(&mut key);
        Guard {
            public_origin: public_origin.into(),
            https,
            error_key: Arc::new(key),
        }
    }

    fn error_signature(&self, path: &str, err: &str) -> String {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(self.error_key.as_slice()).expect("any key length");
        mac.update(path.as_bytes());
        mac.update(b"\n");
        mac.update(err.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }
}

fn random_fill(bytes: &mut [u8]) {
    // uuid's v4 comes from the OS generator (getrandom): 122 random bits per id.
    for chunk in bytes.chunks_mut(16) {
        let id = uuid::Uuid::new_v4();
        chunk.copy_from_slice(&id.as_bytes()[..chunk.len()]);
    }
}

/// The `scheme://host[:port]` of a URL, as browsers send it in `Origin`.
pub fn origin_of(url: &str) -> Result<String, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Err(format!("{url:?} is not an http(s) URL"));
    }
    Ok(parsed.origin().ascii_serialization())
}

/// True when a state-changing request comes from another site's page. Browsers say where a request
/// comes from in `Sec-Fetch-Site` (every current one) or at least `Origin`; a request with neither
/// is not from a browser (curl, a script) and cannot carry a victim's cookies on their behalf, so it
/// passes, as in Go's `http.CrossOriginProtection`.
pub fn cross_origin(method: &Method, headers: &HeaderMap, public_origin: &str) -> bool {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return false;
    }
    match headers.get("sec-fetch-site").map(HeaderValue::as_bytes) {
        Some(b"same-origin" | b"none") => return false,
        // cross-site, same-site (a sibling subdomain) or anything unknown.
        Some(_) => return true,
        None => {}
    }
    match headers.get(header::ORIGIN) {
        None => false,
        Some(origin) => {
            let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
            let origin = origin.to_str().unwrap_or("null");
            origin != public_origin && !host.is_some_and(|h| same_host(origin, h))
        }
    }
}

/// `Origin: http://h:p` against `Host: h:p` (a deployment reached under another name than its public
/// URL, as in dev on `localhost` instead of `127.0.0.1`).
fn same_host(origin: &str, host: &str) -> bool {
    origin
        .split_once("://")
        .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host))
}

/// Whether a state-changing request to `path` is a browser's form post (server functions, logout,
/// uploads, the customer's Pay and Accept buttons, and any form route added later), as opposed to
/// the API's and Stripe's, which authenticate without cookies.
pub fn browser_route(path: &str) -> bool {
    !(path.starts_with("/api/") || path.starts_with("/webhooks/"))
}

/// Refuses cross-origin posts to every browser route with 403 (login CSRF, sibling subdomains
/// posting as the user).
pub async fn same_origin_posts(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if browser_route(path) && cross_origin(req.method(), req.headers(), &guard.public_origin) {
        tracing::warn!(path, "cross-origin post refused");
        return (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "cross-origin request refused",
        )
            .into_response();
    }
    next.run(req).await
}

/// A no-JavaScript form post that fails is redirected back to its page with the error in the URL
/// (`__path`, `__err`), and the page shows it. Anyone can craft such a URL, so the server signs the
/// ones it writes (`__sig`) and a page request whose error is not signed is redirected to the same
/// page without it: only messages this server produced are ever shown.
pub async fn signed_form_errors(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    let is_rpc = req.uri().path().starts_with("/rpc/");
    if !is_rpc && *req.method() == Method::GET {
        if let Some(query) = req.uri().query() {
            if let Some(clean) = unsigned_error_removed(&guard, req.uri().path(), query) {
                return Redirect::to(&clean).into_response();
            }
        }
        return next.run(req).await;
    }
    let mut response = next.run(req).await;
    if is_rpc && response.status().is_redirection() {
        let signed = response
            .headers()
            .get(header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .and_then(|location| sign_location(&guard, location));
        if let Some(signed) = signed.and_then(|s| HeaderValue::from_str(&s).ok()) {
            response.headers_mut().insert(header::LOCATION, signed);
        }
    }
    response
}

fn error_params(query: &str) -> (Option<String>, Option<String>, Option<String>) {
    let (mut path, mut err, mut sig) = (None, None, None);
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "__path" => path = Some(v.into_owned()),
            "__err" => err = Some(v.into_owned()),
            "__sig" => sig = Some(v.into_owned()),
            _ => {}
        }
    }
    (path, err, sig)
}

/// Appends `__sig` to a redirect that carries a form error.
fn sign_location(guard: &Guard, location: &str) -> Option<String> {
    let (url, fragment) = match location.split_once('#') {
        Some((url, fragment)) => (url, Some(fragment)),
        None => (location, None),
    };
    let (path, err, _) = error_params(url.split_once('?')?.1);
    let signature = guard.error_signature(&path?, &err?);
    Some(match fragment {
        Some(fragment) => format!("{url}&__sig={signature}#{fragment}"),
        None => format!("{url}&__sig={signature}"),
    })
}

/// The page's URL without the error parameters when they are present and not signed by us.
fn unsigned_error_removed(guard: &Guard, path: &str, query: &str) -> Option<String> {
    let (err_path, err, sig) = error_params(query);
    if err.is_none() && err_path.is_none() && sig.is_none() {
        return None;
    }
    if let (Some(p), Some(e), Some(s)) = (&err_path, &err, &sig) {
        let expected = guard.error_signature(p, e);
        if subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), s.as_bytes()).into() {
            return None;
        }
    }
    let kept: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            form_urlencoded::parse(query.as_bytes())
                .filter(|(k, _)| !matches!(&**k, "__path" | "__err" | "__sig")),
        )
        .finish();
    Some(if kept.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{kept}")
    })
}

/// Headers on every answer: no MIME sniffing, no referrer beyond this origin, no framing, and HSTS
/// under https. Pages add their Content-Security-Policy (with the render's nonce) in [`page_csp`].
pub async fn response_headers(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // A page may ask for less (the customer's page sends no referrer at all).
    if !headers.contains_key(header::REFERRER_POLICY) {
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("strict-origin-when-cross-origin"),
        );
    }
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if guard.https {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000; includeSubDomains"),
        );
    }
    response
}

/// The Content-Security-Policy of a page rendered with `nonce`: scripts only from this origin or
/// inline with the render's nonce (Leptos' hydration scripts carry it), WebAssembly compiled from
/// this origin, no plugins, no framing, forms only to this origin. `dev_reload` adds the
/// `cargo leptos watch` live-reload socket.
pub fn page_csp(nonce: &str, dev_reload: Option<&str>) -> String {
    let connect = match dev_reload {
        Some(ws) => format!("'self' {ws}"),
        None => "'self'".to_owned(),
    };
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self'; img-src 'self' data:; connect-src {connect}; object-src 'none'; \
         base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: &str = "https://invoicer.example";

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn cross_origin_posts_are_told_apart() {
        let post = &Method::POST;
        let refused = |h: &[(&'static str, &'static str)]| cross_origin(post, &headers(h), ORIGIN);
        assert!(!refused(&[]), "no browser headers: not a browser");
        assert!(!refused(&[("sec-fetch-site", "same-origin")]));
        assert!(
            !refused(&[("sec-fetch-site", "none")]),
            "typed in the address bar"
        );
        assert!(refused(&[("sec-fetch-site", "cross-site")]));
        assert!(
            refused(&[("sec-fetch-site", "same-site")]),
            "sibling subdomain"
        );
        assert!(refused(&[
            ("sec-fetch-site", "cross-site"),
            ("origin", "https://invoicer.example")
        ]));
        assert!(!refused(&[("origin", "https://invoicer.example")]));
        assert!(refused(&[("origin", "https://evil.example")]));
        assert!(refused(&[("origin", "null")]));
        assert!(!refused(&[
            ("origin", "http://localhost:3000"),
            ("host", "localhost:3000")
        ]));
        assert!(refused(&[
            ("origin", "http://evil.example"),
            ("host", "localhost:3000")
        ]));
        assert!(!cross_origin(
            &Method::GET,
            &headers(&[("sec-fetch-site", "cross-site")]),
            ORIGIN
        ));
    }

    #[test]
    fn public_origin_is_scheme_host_and_port() {
        assert_eq!(
            origin_of("https://a.example/app/").unwrap(),
            "https://a.example"
        );
        assert_eq!(
            origin_of("http://127.0.0.1:3000").unwrap(),
            "http://127.0.0.1:3000"
        );
        assert!(origin_of("invoicer.example").is_err());
        assert!(origin_of("ftp://a.example").is_err());
    }

    #[test]
    fn only_signed_form_errors_survive() {
        let guard = Guard::new(ORIGIN, true);
        let location = "/login?next=%2Finvoices&__path=%2Frpc%2Flogin&__err=eyJ4Ijo";
        let signed = sign_location(&guard, location).unwrap();
        let query = signed.split_once('?').unwrap().1;
        assert_eq!(unsigned_error_removed(&guard, "/login", query), None);
        // Forged or altered: stripped, the rest of the query kept.
        assert_eq!(
            unsigned_error_removed(&guard, "/login", location.split_once('?').unwrap().1),
            Some("/login?next=%2Finvoices".to_owned())
        );
        let altered = query.replace("eyJ4Ijo", "eyJ5Ijo");
        assert_eq!(
            unsigned_error_removed(&guard, "/login", &altered),
            Some("/login?next=%2Finvoices".to_owned())
        );
        assert_eq!(
            unsigned_error_removed(&guard, "/login", "__err=abc"),
            Some("/login".to_owned())
        );
        assert_eq!(unsigned_error_removed(&guard, "/login", "next=%2Fa"), None);
        // Another process's signature does not verify.
        let other = Guard::new(ORIGIN, true);
        assert!(unsigned_error_removed(&other, "/login", query).is_some());
    }
}

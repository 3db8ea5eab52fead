//! The HTTP calls tests make again and again: a page's text or bytes, a form posted as a browser
//! posts it, where a redirect leads.

use reqwest::{Client, RequestBuilder, Response};
use serde::Serialize;

async fn send(request: RequestBuilder) -> Response {
    request.send().await.unwrap()
}

/// GET `url` with `http`; the body as text.
pub async fn text(http: &Client, url: String) -> String {
    send(http.get(url)).await.text().await.unwrap()
}

/// GET `url` with `http`; the body's bytes.
pub async fn bytes(http: &Client, url: String) -> Vec<u8> {
    send(http.get(url)).await.bytes().await.unwrap().to_vec()
}

/// POST `form` to `url` with `http` as a script-free browser does (it accepts HTML).
pub async fn submit<F: Serialize + ?Sized>(http: &Client, url: String, form: &F) -> Response {
    send(http.post(url).header("accept", "text/html").form(form)).await
}

/// POST `form` to `url` with `http` with no Accept header (as the hydrated app's fetch does).
pub async fn post_form<F: Serialize + ?Sized>(http: &Client, url: String, form: &F) -> Response {
    send(http.post(url).form(form)).await
}

/// POST to `url` with `http`, no body.
pub async fn post(http: &Client, url: String) -> Response {
    send(http.post(url)).await
}

/// GET `url` with `http`.
pub async fn get(http: &Client, url: String) -> Response {
    send(http.get(url)).await
}

/// Where `res` redirects to ("" when it does not).
pub fn location(res: &Response) -> String {
    res.headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

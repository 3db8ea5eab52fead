//! The HTTP side of a row: one path read by concurrent clients for a while.

use std::time::{Duration, Instant};

use super::paths::{Auth, Read};

/// What the requests carry (see [`Auth`]).
pub(super) struct Credentials<'a> {
    pub(super) cookie: &'a str,
    pub(super) api_key: &'a str,
    pub(super) metrics_token: Option<&'a str>,
}

/// How long each row's clients run before it is measured.
pub(super) const WARM_UP: Duration = Duration::from_secs(1);

pub(super) async fn measure(
    http: &reqwest::Client,
    base: &str,
    read: &Read,
    credentials: &Credentials<'_>,
    clients: usize,
    length: Duration,
) -> (f64, f64, f64, u64) {
    let deadline = Instant::now() + length;
    let url = format!("{base}{}", read.path);
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (http, url, cookie, key, auth, metrics) = (
                http.clone(),
                url.clone(),
                credentials.cookie.to_owned(),
                credentials.api_key.to_owned(),
                read.auth,
                credentials.metrics_token.map(str::to_owned),
            );
            tokio::spawn(async move {
                let (mut took, mut errors) = (Vec::new(), 0u64);
                while Instant::now() < deadline {
                    let req = match (auth, &metrics) {
                        (Auth::Session, _) => http.get(&url).header("cookie", &cookie),
                        (Auth::ApiKey, _) => http.get(&url).bearer_auth(&key),
                        (Auth::Metrics, Some(token)) => http.get(&url).bearer_auth(token),
                        (Auth::Metrics, None) => http.get(&url),
                    };
                    let sent = Instant::now();
                    match req.send().await {
                        Ok(res) if res.status().is_success() => {
                            // A read answered with nothing read nothing: it counts as an error.
                            match res.bytes().await {
                                Ok(body) if !body.is_empty() => took.push(sent.elapsed()),
                                _ => errors += 1,
                            }
                        }
                        _ => errors += 1,
                    }
                }
                (took, errors)
            })
        })
        .collect();
    let (mut all, mut errors) = (Vec::new(), 0);
    for task in tasks {
        if let Ok((took, e)) = task.await {
            all.extend(took);
            errors += e;
        }
    }
    all.sort();
    let at = |q: f64| {
        all.get(((all.len().max(1) - 1) as f64 * q).round() as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    (
        all.len() as f64 / length.as_secs_f64(),
        at(0.5),
        at(0.99),
        errors,
    )
}

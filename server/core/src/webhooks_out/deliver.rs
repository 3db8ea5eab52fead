//! One delivery: an outbox row of kind `webhook` (an event for an endpoint), sent by a worker under
//! its lease. The worker marks the row sent or failed afterwards, fenced by the lease, as it does an
//! email; here the call is made and what it got is logged. A crash after the call and before the
//! mark sends it again after the lease: at least once, with the same `webhook-id`, which is what the
//! receiver dedupes on.

use model::OrgId;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde_json::Value as JsonValue;
use sqlx::PgPool;
use uuid::Uuid;

use super::guard::{self, Policy};
use model::webhooks::message_id;

/// Deliveries are retried for this long after they were queued, then given up; an endpoint whose
/// deliveries have failed for this long is disabled (and its owners emailed).
pub const RETRY_WINDOW: chrono::TimeDelta = chrono::TimeDelta::days(3);
/// The longest wait between two tries.
pub const BACKOFF_CAP: std::time::Duration = std::time::Duration::from_secs(6 * 3600);
/// How much of an answer the log keeps.
pub const RESPONSE_KEPT: usize = 1024;

/// Why a delivery did not succeed: what the UI shows, the whole text for the log, and whether to
/// stop trying.
pub type Failed = (String, String, bool);

struct Target {
    event_id: Uuid,
    org_id: Uuid,
    body: String,
    url: String,
    secret: String,
    previous_secret: Option<String>,
    previous_secret_until: Option<DateTime<Utc>>,
    usable: bool,
    queued_at: DateTime<Utc>,
}

/// Delivers outbox row `outbox_id` (its `payload` names the event and the endpoint) with `client`
/// under `policy`, logs the attempt and the endpoint's health, and says how it went.
pub async fn deliver(
    pool: &PgPool,
    client: &reqwest::Client,
    policy: Policy,
    outbox_id: Uuid,
    payload: &JsonValue,
) -> Result<(), Failed> {
    let id = |name: &str| payload[name].as_str().and_then(|v| Uuid::try_parse(v).ok());
    let (Some(event), Some(endpoint)) = (id("event_id"), id("endpoint_id")) else {
        return Err(give_up("the delivery names no event or endpoint"));
    };
    // language=PostgreSQL
    let target = sqlx::query_as!(
        Target,
        r#"
        select e.id as event_id, e.org_id, e.body, w.url, w.secret, w.previous_secret,
               w.previous_secret_until as "previous_secret_until: DateTime<Utc>",
               (w.deleted_at is null and w.disabled_at is null) as "usable!",
               o.created_at as "queued_at: DateTime<Utc>"
        from webhook_events e
        join webhook_endpoints w on w.id = $2 and w.org_id = e.org_id
        join outbox o on o.id = $3
        where e.id = $1
        "#,
        event,
        endpoint,
        outbox_id,
    )
    .fetch_optional(pool)
    .await
    .map_err(|e| retry("database error", e.to_string()))?;
    let Some(target) = target else {
        return Err(give_up("the event or the endpoint is gone"));
    };
    if !target.usable {
        return Err(give_up("the endpoint is disabled or deleted"));
    }
    let started = Instant::now();
    let answer = call(client, policy, &target).await;
    let latency_ms = started.elapsed().as_millis().min(i32::MAX as u128) as i32;
    let (status, response, error) = match &answer {
        Ok((status, response)) => (Some(i32::from(*status)), response.clone(), None),
        Err(why) => (None, String::new(), Some(why.clone())),
    };
    let ok = status.is_some_and(|s| (200..300).contains(&s));
    let give_up_now = !ok && Utc::now() - target.queued_at >= RETRY_WINDOW;
    let disabled = log(
        pool,
        &target,
        endpoint,
        outbox_id,
        status,
        latency_ms,
        &response,
        error.as_deref(),
        ok,
    )
    .await
    .map_err(|e| retry("database error", e.to_string()))?;
    if ok {
        return Ok(());
    }
    let shown = match status {
        Some(s) => format!("the endpoint answered {s}"),
        None => error.clone().unwrap_or_default(),
    };
    let stop = give_up_now || disabled;
    Err((shown.clone(), shown, stop))
}

fn give_up(why: &str) -> Failed {
    (why.to_owned(), why.to_owned(), true)
}

fn retry(shown: &str, detail: String) -> Failed {
    (shown.to_owned(), detail, false)
}

/// POSTs the event; the answer's status and first [`RESPONSE_KEPT`] bytes, or why there was none
/// (in our words: the log is shown to the org).
async fn call(
    client: &reqwest::Client,
    policy: Policy,
    target: &Target,
) -> Result<(u16, String), String> {
    guard::check_url(&target.url, policy)?;
    let msg = message_id(target.event_id);
    let timestamp = Utc::now().timestamp();
    let body = target.body.as_bytes();
    let mut signatures = vec![super::sign(&target.secret, &msg, timestamp, body)
        .ok_or_else(|| "the endpoint's secret is not whsec_<base64>".to_owned())?];
    if let (Some(previous), Some(until)) = (&target.previous_secret, target.previous_secret_until) {
        if until > Utc::now() {
            signatures.extend(super::sign(previous, &msg, timestamp, body));
        }
    }
    let sent = client
        .post(&target.url)
        .header("content-type", "application/json")
        .header("webhook-id", &msg)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signatures.join(" "))
        .body(target.body.clone())
        .send()
        .await;
    let mut res = match sent {
        Ok(res) => res,
        Err(e) => {
            let why = if e.is_timeout() {
                "no answer within 10 seconds".to_owned()
            } else if e.is_connect() {
                "could not connect (refused, unreachable, or not a public address)".to_owned()
            } else {
                "the request failed".to_owned()
            };
            let error = causes(&e.without_url());
            let url = origin(&target.url);
            tracing::info!(%error, %url, "webhook delivery: no answer");
            return Err(why);
        }
    };
    let status = res.status().as_u16();
    let mut kept: Vec<u8> = Vec::new();
    while kept.len() < RESPONSE_KEPT {
        match res.chunk().await {
            Ok(Some(chunk)) => kept.extend_from_slice(&chunk),
            _ => break,
        }
    }
    kept.truncate(RESPONSE_KEPT);
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    while text.len() > RESPONSE_KEPT {
        text.pop();
    }
    Ok((status, text.replace('\0', "")))
}

/// `url` as logs show it: scheme, host and port only (a receiver's path or query can hold its own
/// secret token).
fn origin(url: &str) -> String {
    match url::Url::parse(url.trim()) {
        Ok(parsed) => match parsed.host() {
            Some(host) => {
                let port = parsed.port_or_known_default().unwrap_or(0);
                format!("{}://{host}:{port}", parsed.scheme())
            }
            None => format!("{}:", parsed.scheme()),
        },
        Err(_) => "(not a URL)".to_owned(),
    }
}

/// `e` and its causes, each after a colon.
fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}

/// Logs the attempt and the endpoint's health in one transaction; a failure that ends three days of
/// failures disables the endpoint, gives up its deliveries and emails the org's owners. Returns
/// whether the endpoint is now disabled.
#[allow(clippy::too_many_arguments)]
async fn log(
    pool: &PgPool,
    target: &Target,
    endpoint: Uuid,
    outbox_id: Uuid,
    status: Option<i32>,
    latency_ms: i32,
    response: &str,
    error: Option<&str>,
    ok: bool,
) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into webhook_attempts (id, org_id, endpoint_id, event_id, outbox_id, status_code,
                                      latency_ms, response, error)
        values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
        "#,
        Uuid::now_v7(),
        target.org_id as _,
        endpoint,
        target.event_id,
        outbox_id,
        status,
        latency_ms,
        response,
        error,
    )
    .execute(&mut *tx)
    .await?;
    let disabled = if ok {
        // language=PostgreSQL
        sqlx::query!(
            "update webhook_endpoints set failing_since = null where id = $1 and failing_since is not null",
            endpoint
        )
        .execute(&mut *tx)
        .await?;
        false
    } else {
        // language=PostgreSQL
        let now_disabled = sqlx::query_scalar!(
            r#"
            update webhook_endpoints
            set failing_since = coalesce(failing_since, now()),
                disabled_at = case when disabled_at is not null then disabled_at
                                   when failing_since <= now() - make_interval(secs => $2)
                                   then now() end,
                disabled_reason = case when disabled_at is not null then disabled_reason
                                       when failing_since <= now() - make_interval(secs => $2)
                                       then 'failing' end
            where id = $1
            returning coalesce(disabled_reason = 'failing', false) as "disabled!"
            "#,
            endpoint,
            RETRY_WINDOW.num_seconds() as f64,
        )
        .fetch_one(&mut *tx)
        .await?;
        if now_disabled {
            disable(&mut tx, target.org_id.into(), endpoint, &target.url).await?;
        }
        now_disabled
    };
    tx.commit().await?;
    Ok(disabled)
}

/// What follows an endpoint's disabling, once (the email is keyed by the endpoint): its deliveries
/// given up, and an email to each owner of the org.
async fn disable(
    tx: &mut sqlx::PgConnection,
    org: OrgId,
    endpoint: Uuid,
    url: &str,
) -> sqlx::Result<()> {
    super::stop_pending(
        tx,
        endpoint,
        "the endpoint was disabled after three days of failures",
    )
    .await?;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into outbox (id, org_id, kind, payload)
        select gen_random_uuid(), $1, 'webhook_disabled',
               jsonb_build_object('to', u.email, 'url', $3::text,
                                  'dedupe', 'webhook_disabled:' || $2::uuid || ':' || u.id)
        from memberships m join users u on u.id = m.user_id
        where m.org_id = $1 and m.role = 'owner'
        on conflict do nothing
        "#,
        org as _,
        endpoint,
        url,
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::{Arc, Mutex};

    fn target(url: &str) -> Target {
        Target {
            event_id: Uuid::now_v7(),
            org_id: Uuid::now_v7(),
            body: "{}".to_owned(),
            url: url.to_owned(),
            secret: super::super::new_secret(),
            previous_secret: None,
            previous_secret_until: None,
            usable: true,
            queued_at: Utc::now(),
        }
    }

    /// The fields of every event this crate logs, one line each.
    #[derive(Clone, Default)]
    struct Logged(Arc<Mutex<Vec<String>>>);

    struct Line<'a>(&'a mut String);

    impl tracing::field::Visit for Line<'_> {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            self.0.push_str(&format!(" {}={value:?}", field.name()));
        }
    }

    impl tracing::Subscriber for Logged {
        fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
            metadata.target().starts_with("invoicer_core")
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let mut line = String::new();
            event.record(&mut Line(&mut line));
            self.0.lock().unwrap().push(line);
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn a_url_is_logged_without_its_path_or_query() {
        assert_eq!(
            origin("https://hooks.example.com/in/tok_123?key=abc#x"),
            "https://hooks.example.com:443"
        );
        assert_eq!(
            origin("http://127.0.0.1:8080/hook?secret=1"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(origin("http://[::1]/a/b"), "http://[::1]:80");
        assert_eq!(origin("not a url/with/a/path"), "(not a URL)");
    }

    #[tokio::test]
    async fn a_delivery_that_gets_no_answer_logs_its_endpoint_without_path_or_query() {
        // A port nobody listens on: bound, then let go.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/in/s3cret-path?token=s3cret-query");
        let logged = Logged::default();
        let _logging = tracing::subscriber::set_default(logged.clone());
        let client = guard::client(Policy::OPEN);
        let answer = call(&client, Policy::OPEN, &target(&url)).await;
        assert!(answer.is_err(), "{answer:?}");
        let lines = logged.0.lock().unwrap().join("\n");
        assert!(
            lines.contains(&format!("http://127.0.0.1:{port}")),
            "{lines}"
        );
        assert!(!lines.contains("s3cret"), "{lines}");
    }

    #[tokio::test]
    async fn a_metadata_address_is_never_called_where_private_targets_are_allowed() {
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[::ffff:169.254.169.254]/latest/meta-data/",
            "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/",
            "http://metadata.google.internal/computeMetadata/v1/",
        ] {
            let client = guard::client(Policy::OPEN);
            let answer = call(&client, Policy::OPEN, &target(url)).await;
            let why = answer.expect_err(url);
            assert!(why.contains("metadata"), "{url}: {why}");
        }
    }
}

//! One delivery: an outbox row of kind `webhook` (an event for an endpoint), sent by a worker under
//! its lease. The worker marks the row sent or failed afterwards, fenced by the lease, as it does an
//! email; here the call is made and what it got is logged. A crash after the call and before the
//! mark sends it again after the lease: at least once, with the same `webhook-id`, which is what the
//! receiver dedupes on.

use std::time::Instant;

use chrono::{DateTime, Utc};
use serde_json::Value as JsonValue;
use sqlx::PgPool;
use uuid::Uuid;

use super::guard::{self, Policy};
use crate::model::webhooks::message_id;

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
            tracing::info!(error = %e, url = %target.url, "webhook delivery: no answer");
            return Err(if e.is_timeout() {
                "no answer within 10 seconds".to_owned()
            } else if e.is_connect() {
                "could not connect (refused, unreachable, or not a public address)".to_owned()
            } else {
                "the request failed".to_owned()
            });
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
        target.org_id,
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
                disabled_at = case when failing_since <= now() - make_interval(secs => $2)
                                   then coalesce(disabled_at, now()) end
            where id = $1
            returning (disabled_at is not null) as "disabled!"
            "#,
            endpoint,
            RETRY_WINDOW.num_seconds() as f64,
        )
        .fetch_one(&mut *tx)
        .await?;
        if now_disabled {
            disable(&mut tx, target.org_id, endpoint, &target.url).await?;
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
    org: Uuid,
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
        org,
        endpoint,
        url,
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

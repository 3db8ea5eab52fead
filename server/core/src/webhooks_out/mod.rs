//! Webhooks out: the endpoints an org registers and what its changes tell them.
//!
//! Events are written by the database itself: a trigger on each table whose change is an event
//! (migrations/20261225000001_webhooks_out.sql) calls `webhook_emit`, in the transaction of the
//! change, and it writes the event once per change (`unique (org_id, source_key)`) and an outbox row
//! for every endpoint that wants it. So every surface that changes an invoice, a payment, a credit
//! note, a quote or a customer (forms, the API, Stripe's webhooks, scheduled runs, the CLI) tells the
//! endpoints without a line of its own, and a change rolled back tells nobody. The outbox workers
//! deliver the rows under their leases ([`deliver`]), signed as the Standard Webhooks specification
//! says ([`sign`]), and retry with backoff for three days.

pub mod deliver;
pub mod guard;

use base64::Engine;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use model::OrgId;
use sha2::Sha256;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use model::webhooks::{WebhookAttempt, WebhookEndpoint, WebhookEndpointInput, MAX_ENDPOINTS};

/// How long the previous secret keeps signing after a rotation.
pub const ROTATION_OVERLAP: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// A new signing secret: `whsec_` and 32 random bytes in base64.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    bytes[..16].copy_from_slice(Uuid::new_v4().as_bytes());
    bytes[16..].copy_from_slice(Uuid::new_v4().as_bytes());
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// The Standard Webhooks signature of `body` sent as message `id` at `timestamp` (Unix seconds):
/// `v1,` and the base64 HMAC-SHA256, keyed by the secret's bytes, of `id.timestamp.body`. None for a
/// secret that is not `whsec_<base64>`.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_")?)
        .ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    Some(format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(tag)
    ))
}

/// Why an endpoint was not registered.
#[derive(Debug)]
pub enum CreateError {
    /// The org has [`MAX_ENDPOINTS`] already.
    TooMany,
    Db(sqlx::Error),
}

impl From<sqlx::Error> for CreateError {
    fn from(e: sqlx::Error) -> Self {
        CreateError::Db(e)
    }
}

struct Row {
    id: Uuid,
    url: String,
    events: Vec<String>,
    description: String,
    secret: String,
    previous_secret_until: Option<DateTime<Utc>>,
    failing_since: Option<DateTime<Utc>>,
    disabled_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
}

impl Row {
    fn endpoint(self, with_secret: bool) -> WebhookEndpoint {
        WebhookEndpoint {
            id: self.id,
            url: self.url,
            events: self.events,
            description: self.description,
            status: if self.disabled_at.is_some() {
                "disabled"
            } else {
                "enabled"
            }
            .to_owned(),
            secret: with_secret.then_some(self.secret),
            previous_secret_until: self
                .previous_secret_until
                .filter(|until| *until > Utc::now()),
            failing_since: self.failing_since,
            created_at: self.created_at,
        }
    }
}

/// Who registered an endpoint: a member on the settings page, or an API key (counted to the member
/// who made it). A reset of that member's password disables what they registered lately.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisteredBy {
    User(Uuid),
    ApiKey(Uuid),
    /// The operator's tools and the fault harness: no member.
    Nobody,
}

/// Registers `input` (its URL checked by the caller) as endpoint `id` of `org`, in the caller's
/// transaction (the attempt's claim commits with it). The answer carries the secret.
pub async fn create(
    tx: &mut PgConnection,
    id: Uuid,
    org: OrgId,
    source_key: &str,
    input: &WebhookEndpointInput,
    by: RegisteredBy,
) -> Result<WebhookEndpoint, CreateError> {
    let (user, key) = match by {
        RegisteredBy::User(user) => (Some(user), None),
        RegisteredBy::ApiKey(key) => (None, Some(key)),
        RegisteredBy::Nobody => (None, None),
    };
    // The org's row, locked: two registrations at once count each other.
    // language=PostgreSQL
    sqlx::query!("select id from orgs where id = $1 for update", org as _)
        .fetch_one(&mut *tx)
        .await?;
    // language=PostgreSQL
    let count = sqlx::query_scalar!(
        r#"select count(*) as "n!" from webhook_endpoints where org_id = $1 and deleted_at is null"#,
        org as _
    )
    .fetch_one(&mut *tx)
    .await?;
    if count >= MAX_ENDPOINTS {
        return Err(CreateError::TooMany);
    }
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Row,
        r#"
        insert into webhook_endpoints (id, org_id, url, description, events, secret, source_key,
                                       created_by)
        values ($1, $2, $3, $4, $5, $6, $7,
                coalesce($8, (select created_by from api_keys where id = $9 and org_id = $2)))
        returning id, url, events, description, secret,
                  previous_secret_until as "previous_secret_until: DateTime<Utc>",
                  failing_since as "failing_since: DateTime<Utc>",
                  disabled_at as "disabled_at: DateTime<Utc>",
                  created_at as "created_at: DateTime<Utc>"
        "#,
        id,
        org as _,
        input.url.trim(),
        input.description.trim(),
        &input.events_sorted(),
        new_secret(),
        source_key,
        user,
        key,
    )
    .fetch_one(&mut *tx)
    .await?;
    Ok(row.endpoint(true))
}

/// Enables `org`'s disabled endpoint `id` again (an owner's one click), in the caller's
/// transaction: deliveries resume with the events from now on. False if there is no such disabled
/// endpoint.
pub async fn enable(
    tx: &mut PgConnection,
    org: OrgId,
    actor: &crate::accounts::audit::Actor,
    id: Uuid,
) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let url = sqlx::query_scalar!(
        r#"
        update webhook_endpoints
        set disabled_at = null, disabled_reason = null, failing_since = null
        where org_id = $1 and id = $2 and deleted_at is null and disabled_at is not null
        returning url
        "#,
        org as _,
        id
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(url) = url else { return Ok(false) };
    crate::accounts::audit::record(
        tx,
        org,
        actor,
        "webhook_endpoint.enabled",
        &url,
        serde_json::json!({"endpoint_id": id}),
    )
    .await?;
    Ok(true)
}

/// An endpoint a reset of its registrant's password disabled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disabled {
    pub org: OrgId,
    pub id: Uuid,
    pub url: String,
}

/// Disables every endpoint `user` registered (themselves or through one of their API keys) in the
/// last seven days, in the caller's transaction: what they are due is given up, and each is in its
/// org's audit log. An owner enables them again with one click.
pub async fn disable_registered_by(
    tx: &mut PgConnection,
    user: Uuid,
    actor: &crate::accounts::audit::Actor,
) -> sqlx::Result<Vec<Disabled>> {
    // language=PostgreSQL
    let disabled = sqlx::query_as!(
        Disabled,
        r#"
        update webhook_endpoints
        set disabled_at = now(), disabled_reason = 'credentials_reset'
        where created_by = $1 and deleted_at is null and disabled_at is null
          and created_at > now() - interval '7 days'
        returning org_id as org, id, url
        "#,
        user
    )
    .fetch_all(&mut *tx)
    .await?;
    for endpoint in &disabled {
        stop_pending(
            tx,
            endpoint.id,
            "the endpoint was disabled when its registrant's password was reset",
        )
        .await?;
        crate::accounts::audit::record(
            tx,
            endpoint.org,
            actor,
            "webhook_endpoint.disabled",
            &endpoint.url,
            serde_json::json!({"endpoint_id": endpoint.id, "because": "credentials_reset"}),
        )
        .await?;
    }
    Ok(disabled)
}

/// `org`'s endpoints (not deleted), oldest first, without their secrets.
pub async fn list(pool: &PgPool, org: OrgId) -> sqlx::Result<Vec<WebhookEndpoint>> {
    // language=PostgreSQL
    let rows = sqlx::query_as!(
        Row,
        r#"
        select id, url, events, description, secret,
               previous_secret_until as "previous_secret_until: DateTime<Utc>",
               failing_since as "failing_since: DateTime<Utc>",
               disabled_at as "disabled_at: DateTime<Utc>",
               created_at as "created_at: DateTime<Utc>"
        from webhook_endpoints
        where org_id = $1 and deleted_at is null
        order by created_at, id
        "#,
        org as _
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|r| r.endpoint(false)).collect())
}

/// `org`'s endpoint `id` (None: unknown, deleted, or another org's), its secret included when
/// `with_secret`.
pub async fn get(
    conn: &mut PgConnection,
    org: OrgId,
    id: Uuid,
    with_secret: bool,
) -> sqlx::Result<Option<WebhookEndpoint>> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Row,
        r#"
        select id, url, events, description, secret,
               previous_secret_until as "previous_secret_until: DateTime<Utc>",
               failing_since as "failing_since: DateTime<Utc>",
               disabled_at as "disabled_at: DateTime<Utc>",
               created_at as "created_at: DateTime<Utc>"
        from webhook_endpoints
        where org_id = $1 and id = $2 and deleted_at is null
        "#,
        org as _,
        id
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|r| r.endpoint(with_secret)))
}

/// Deletes `org`'s endpoint `id` in the caller's transaction; its deliveries still due are given
/// up. False when there is no such endpoint (already deleted).
pub async fn delete(tx: &mut PgConnection, org: OrgId, id: Uuid) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let deleted = sqlx::query!(
        "update webhook_endpoints set deleted_at = now() where org_id = $1 and id = $2 and deleted_at is null",
        org as _,
        id
    )
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    if deleted {
        stop_pending(tx, id, "the endpoint was deleted").await?;
    }
    Ok(deleted)
}

/// Gives up every delivery of endpoint `id` still due, saying `why`.
async fn stop_pending(tx: &mut PgConnection, id: Uuid, why: &str) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update outbox set dead_at = now(), last_error = $2
        where kind = 'webhook' and payload ->> 'endpoint_id' = $1::uuid::text
          and sent_at is null and dead_at is null
        "#,
        id,
        why
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// A new secret for `org`'s endpoint `id`, in the caller's transaction: the old one keeps signing
/// for [`ROTATION_OVERLAP`] beside it. None when there is no such endpoint.
pub async fn rotate(
    tx: &mut PgConnection,
    org: OrgId,
    id: Uuid,
) -> sqlx::Result<Option<WebhookEndpoint>> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Row,
        r#"
        update webhook_endpoints
        set previous_secret = secret, secret = $3,
            previous_secret_until = now() + make_interval(secs => $4)
        where org_id = $1 and id = $2 and deleted_at is null
        returning id, url, events, description, secret,
                  previous_secret_until as "previous_secret_until: DateTime<Utc>",
                  failing_since as "failing_since: DateTime<Utc>",
                  disabled_at as "disabled_at: DateTime<Utc>",
                  created_at as "created_at: DateTime<Utc>"
        "#,
        org as _,
        id,
        new_secret(),
        ROTATION_OVERLAP.num_seconds() as f64,
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(row.map(|r| r.endpoint(true)))
}

/// Delivers event `event` to `org`'s endpoint `endpoint` again, as a new delivery with the same
/// `webhook-id` (and a fresh three days of retries), in the caller's transaction. False when the
/// endpoint or the event is not the org's, or the endpoint is deleted or disabled.
pub async fn redeliver(
    tx: &mut PgConnection,
    org: OrgId,
    endpoint: Uuid,
    event: Uuid,
) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let queued = sqlx::query!(
        r#"
        insert into outbox (id, org_id, kind, payload, max_attempts)
        select $4, w.org_id, 'webhook',
               jsonb_build_object('event_id', e.id, 'endpoint_id', w.id, 'redelivery', true), 1000
        from webhook_endpoints w join webhook_events e on e.org_id = w.org_id
        where w.org_id = $1 and w.id = $2 and e.id = $3
          and w.deleted_at is null and w.disabled_at is null
        "#,
        org as _,
        endpoint,
        event,
        Uuid::now_v7(),
    )
    .execute(&mut *tx)
    .await?;
    Ok(queued.rows_affected() == 1)
}

/// The last `limit` delivery attempts to `org`'s endpoint `id`, newest first, and how many of its
/// deliveries wait for their next try.
pub async fn attempts(
    pool: &PgPool,
    org: OrgId,
    id: Uuid,
    limit: i64,
) -> sqlx::Result<(Vec<WebhookAttempt>, i64)> {
    // language=PostgreSQL
    let rows = sqlx::query_as!(
        WebhookAttempt,
        r#"
        select a.id, a.event_id, e.type as event_type, a.outbox_id as delivery_id,
               a.attempted_at as "attempted_at: DateTime<Utc>", a.status_code, a.latency_ms,
               a.response, a.error
        from webhook_attempts a join webhook_events e on e.id = a.event_id
        where a.org_id = $1 and a.endpoint_id = $2
        order by a.attempted_at desc, a.id desc
        limit $3
        "#,
        org as _,
        id,
        limit
    )
    .fetch_all(pool)
    .await?;
    // language=PostgreSQL
    let pending = sqlx::query_scalar!(
        r#"
        select count(*) as "n!" from outbox
        where kind = 'webhook' and payload ->> 'endpoint_id' = $2::uuid::text and org_id = $1
          and sent_at is null and dead_at is null
        "#,
        org as _,
        id
    )
    .fetch_one(pool)
    .await?;
    Ok((rows, pending))
}

/// Writes `invoice.overdue` for every invoice that fell due since the endpoints that want it were
/// registered (in the org's time zone, at most 30 days back), once per invoice and due date; at
/// most `limit` per call. Returns how many it wrote. The workers call it every poll: the event key
/// makes a second call write nothing.
pub async fn emit_overdue(pool: &PgPool, limit: i64) -> sqlx::Result<u64> {
    // language=PostgreSQL
    let written = sqlx::query_scalar!(
        r#"
        with wanting as (
            select w.org_id, min(w.created_at) as since
            from webhook_endpoints w
            where w.deleted_at is null and w.disabled_at is null and 'invoice.overdue' = any (w.events)
            group by w.org_id
        ), due as (
            select i.*
            from wanting w
            join orgs o on o.id = w.org_id
            cross join lateral (
                select i.org_id, i.id, i.due_date, webhook_invoice(i) as data
                from invoices i
                where i.org_id = w.org_id and i.status in ('open', 'uncollectible')
                  and i.due_date < (now() at time zone o.time_zone)::date
                  and i.due_date >= greatest((w.since at time zone o.time_zone)::date - 1,
                                             (now() at time zone o.time_zone)::date - 30)
                  and not exists (
                      select from webhook_events e
                      where e.org_id = i.org_id
                        and e.source_key = 'invoice.overdue:' || i.id || ':' || i.due_date)
                order by i.due_date, i.id
                limit $1
            ) i
        )
        select count(*) as "n!"
        from due d
        cross join lateral (
            select webhook_emit(d.org_id, 'invoice.overdue',
                                'invoice.overdue:' || d.id || ':' || d.due_date, d.data)
        ) emitted
        "#,
        limit
    )
    .fetch_one(pool)
    .await?;
    Ok(written as u64)
}

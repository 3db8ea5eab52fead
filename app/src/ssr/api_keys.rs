//! API keys: `ik_` + 64 hex characters of randomness, shown once, stored hashed.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

use crate::model::ApiKeySummary;

/// The API client a request acts as: one key of one org.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiClient {
    pub key_id: Uuid,
    pub org_id: Uuid,
}

pub struct NewApiKey {
    pub id: Uuid,
    /// The only time the whole key exists outside the client.
    pub plaintext: String,
}

const PREFIX_LEN: usize = 11; // "ik_" + 8

fn hash(key: &str) -> Vec<u8> {
    Sha256::digest(key.as_bytes()).to_vec()
}

pub async fn create(
    db: impl PgExecutor<'_>,
    org: Uuid,
    created_by: Option<Uuid>,
    name: &str,
) -> sqlx::Result<NewApiKey> {
    // Two v4 UUIDs: 244 random bits from the OS generator.
    let plaintext = format!("ik_{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
    let id = Uuid::new_v4();
    let name = match name.trim() {
        "" => "API key",
        n => n,
    };
    let name: String = name.chars().take(100).collect();
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into api_keys (id, org_id, created_by, name, prefix, hash)
        values ($1, $2, $3, $4, $5, $6)
        "#,
        id,
        org,
        created_by,
        name,
        &plaintext[..PREFIX_LEN],
        hash(&plaintext),
    )
    .execute(db)
    .await?;
    Ok(NewApiKey { id, plaintext })
}

/// The client behind a bearer token, if the key exists and is not revoked. Records when it was last
/// used (at most once a minute, so a busy client does not write on every request).
pub async fn authenticate(pool: &PgPool, token: &str) -> sqlx::Result<Option<ApiClient>> {
    if !token.starts_with("ik_") || token.len() > 100 {
        return Ok(None);
    }
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select id, org_id, last_used_at is null or last_used_at < now() - interval '1 minute' as "stale!"
        from api_keys
        where hash = $1 and revoked_at is null
        "#,
        hash(token)
    )
    .fetch_optional(pool)
    .await?;
    let Some(row) = row else { return Ok(None) };
    if row.stale {
        // language=PostgreSQL
        sqlx::query!(
            "update api_keys set last_used_at = now() where id = $1",
            row.id
        )
        .execute(pool)
        .await?;
    }
    Ok(Some(ApiClient {
        key_id: row.id,
        org_id: row.org_id,
    }))
}

pub async fn list(pool: &PgPool, org: Uuid) -> sqlx::Result<Vec<ApiKeySummary>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select id, name, prefix, created_at as "created_at: DateTime<Utc>",
               last_used_at as "last_used_at: DateTime<Utc>", revoked_at as "revoked_at: DateTime<Utc>"
        from api_keys
        where org_id = $1
        order by created_at desc
        "#,
        org
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| ApiKeySummary {
            id: r.id,
            name: r.name,
            prefix: r.prefix,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
            revoked_at: r.revoked_at,
        })
        .collect())
}

/// Revokes one of `org`'s keys; false if there is no such key (or it is another org's).
pub async fn revoke(pool: &PgPool, org: Uuid, id: Uuid) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "update api_keys set revoked_at = coalesce(revoked_at, now()) where id = $1 and org_id = $2",
        id,
        org
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The org of the user with this email (for `server admin create-api-key`).
pub async fn org_of_user(pool: &PgPool, email: &str) -> sqlx::Result<Option<(Uuid, Uuid)>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select u.id as user_id, m.org_id
        from users u join memberships m on m.user_id = u.id
        where lower(u.email) = lower($1)
        order by m.created_at
        limit 1
        "#,
        email
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| (r.user_id, r.org_id)))
}

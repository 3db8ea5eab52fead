//! API keys: `ik_` + 64 hex characters of randomness, shown once, stored hashed.

use chrono::{DateTime, Utc};
use model::OrgId;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

use crate::accounts::audit::{self, Actor};
use model::error::FieldErrors;
use model::{Action, ApiKeySummary, Role};

/// The API client a request acts as: one key of one org, with the role it acts with (its own, or
/// its creator's current role if that is lower).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiClient {
    pub key_id: Uuid,
    pub org_id: OrgId,
    pub role: Role,
    /// Whether the org issues e-invoices, read with the key (so a create asks no more).
    pub einvoicing: bool,
}

impl ApiClient {
    pub fn may(&self, action: Action) -> bool {
        self.role.may(action)
    }
}

pub struct NewApiKey {
    pub id: Uuid,
    /// The only time the whole key exists outside the client.
    pub plaintext: String,
}

impl NewApiKey {
    /// A fresh key: two v4 UUIDs, 244 random bits from the OS generator.
    pub fn generate() -> Self {
        NewApiKey {
            id: Uuid::now_v7(),
            plaintext: format!("ik_{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple()),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.plaintext[..PREFIX_LEN]
    }
}

/// What a member asks for.
#[derive(Debug, Clone)]
pub struct KeyRequest<'a> {
    pub name: &'a str,
    pub role: Role,
    pub expires_at: Option<DateTime<Utc>>,
}

#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The creator is not a member of the org, or asked for a role above their own.
    #[error("an API key cannot carry a role above its creator's")]
    RoleTooHigh,
    #[error("the expiry is in the past")]
    Expired,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The key form as submitted: a name, a role (empty: member, or the creator's own if lower), and
/// an expiry in days from 1 to 3650 (empty: none).
pub struct KeyForm<'a> {
    name: &'a str,
    role: Option<&'a str>,
    expires_in_days: Option<&'a str>,
}

impl<'a> KeyForm<'a> {
    pub fn new(name: &'a str, role: Option<&'a str>, expires_in_days: Option<&'a str>) -> Self {
        KeyForm {
            name,
            role: role.map(str::trim).filter(|r| !r.is_empty()),
            expires_in_days,
        }
    }

    /// What a repeat of the form must send again to be the same submit.
    pub fn content(&self) -> impl serde::Serialize + Sync + '_ {
        (self.name, self.role, self.expires_in_days)
    }

    /// The role asked for: `None` if none was, `Some(None)` if it names no role.
    fn role(&self) -> Option<Option<Role>> {
        self.role.map(Role::parse)
    }

    /// The days asked for: `None` if none were, `Some(None)` if not a number from 1 to 3650.
    fn days(&self) -> Option<Option<i64>> {
        let days = self
            .expires_in_days
            .map(str::trim)
            .filter(|d| !d.is_empty());
        days.map(|d| d.parse::<i64>().ok().filter(|d| (1..=3650).contains(d)))
    }

    /// The form's field errors, if any.
    pub fn check(&self) -> Result<(), FieldErrors> {
        let mut fields = FieldErrors::new();
        if let Some(None) = self.role() {
            fields.insert("role".into(), "Choose owner, member or viewer.".into());
        }
        if let Some(None) = self.days() {
            fields.insert(
                "expires_in_days".into(),
                "Enter a number of days from 1 to 3650, or leave it empty.".into(),
            );
        }
        model::error::fields_ok(fields)
    }

    /// What a creator whose role is `own` asks for with this form (the role asked, or member if
    /// none, never above `own` by default), expiring that many days from now.
    pub fn request(&self, own: Role) -> KeyRequest<'a> {
        KeyRequest {
            name: self.name,
            role: match self.role() {
                Some(Some(role)) => role,
                _ => Role::Member.min(own),
            },
            expires_at: self
                .days()
                .flatten()
                .map(|d| Utc::now() + chrono::Duration::days(d)),
        }
    }
}

const PREFIX_LEN: usize = 11; // "ik_" + 8

fn hash(key: &str) -> Vec<u8> {
    Sha256::digest(key.as_bytes()).to_vec()
}

/// Creates a key of `org` for `creator` with the role asked for (see [`insert`]), in one
/// transaction.
pub async fn create(
    pool: &PgPool,
    org: OrgId,
    creator: &Actor,
    request: &KeyRequest<'_>,
) -> Result<NewApiKey, CreateError> {
    let key = NewApiKey::generate();
    let mut tx = pool.begin().await?;
    save(&mut tx, org, creator, request, &key).await?;
    tx.commit().await?;
    Ok(key)
}

/// Writes `key` for `org` with the role asked for, if the creator's own role in the org is at
/// least that (checked in the insert itself, against the membership as it is then), and records it
/// in the audit log, on the caller's transaction.
pub async fn save(
    tx: &mut sqlx::PgConnection,
    org: OrgId,
    creator: &Actor,
    request: &KeyRequest<'_>,
    key: &NewApiKey,
) -> Result<(), CreateError> {
    if request.expires_at.is_some_and(|at| at <= Utc::now()) {
        return Err(CreateError::Expired);
    }
    let name = match request.name.trim() {
        "" => "API key",
        n => n,
    };
    let name: String = name.chars().take(100).collect();
    // language=PostgreSQL
    let made = sqlx::query_scalar!(
        r#"
        insert into api_keys (id, org_id, created_by, name, prefix, hash, role, expires_at)
        select $1, $2, m.user_id, $4, $5, $6, $7, $8
        from memberships m
        where m.user_id = $3 and m.org_id = $2 and role_rank(m.role) >= role_rank($7)
        returning id
        "#,
        key.id,
        org as _,
        creator.id,
        name,
        key.prefix(),
        hash(&key.plaintext),
        request.role.as_str(),
        request.expires_at as _,
    )
    .fetch_optional(&mut *tx)
    .await?;
    if made.is_none() {
        return Err(CreateError::RoleTooHigh);
    }
    audit::record(
        tx,
        org,
        creator,
        "api_key.created",
        &format!("{name} ({})", key.prefix()),
        serde_json::json!({"key_id": key.id, "role": request.role.as_str(), "expires_at": request.expires_at}),
    )
    .await?;
    Ok(())
}

/// The prefix of one of `org`'s keys (what a repeated creation form names).
pub async fn prefix_of(pool: &PgPool, org: OrgId, id: Uuid) -> sqlx::Result<Option<String>> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        "select prefix from api_keys where id = $1 and org_id = $2",
        id,
        org as _
    )
    .fetch_optional(pool)
    .await
}

/// A key without expiry made by `user` with their own role in `org` (the operator's command line,
/// tests, benchmarks).
pub async fn create_for_user(
    pool: &PgPool,
    org: OrgId,
    user: Uuid,
    name: &str,
) -> Result<NewApiKey, CreateError> {
    // language=PostgreSQL
    let member = sqlx::query!(
        r#"select u.email, m.role from users u join memberships m on m.user_id = u.id
           where u.id = $1 and m.org_id = $2"#,
        user,
        org as _
    )
    .fetch_optional(pool)
    .await?
    .ok_or(CreateError::RoleTooHigh)?;
    let email = member.email;
    let request = KeyRequest {
        name,
        role: Role::stored(&member.role),
        expires_at: None,
    };
    create(pool, org, &Actor::user(user, &email), &request).await
}

/// The client behind a bearer token, if the key exists, is neither revoked nor expired, and its
/// creator is still a member of its org. Records when it was last used (at most once a minute, so
/// a busy client does not write on every request).
pub async fn authenticate(pool: &PgPool, token: &str) -> sqlx::Result<Option<ApiClient>> {
    if !token.starts_with("ik_") || token.len() > 100 {
        return Ok(None);
    }
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select k.id, k.org_id, k.role as key_role, m.role as member_role, o.einvoicing,
               k.last_used_at is null or k.last_used_at < now() - interval '1 minute' as "stale!"
        from api_keys k
        join memberships m on m.user_id = k.created_by and m.org_id = k.org_id
        join orgs o on o.id = k.org_id
        where k.hash = $1 and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
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
        org_id: row.org_id.into(),
        role: Role::stored(&row.key_role).min(Role::stored(&row.member_role)),
        einvoicing: row.einvoicing,
    }))
}

pub async fn list(pool: &PgPool, org: OrgId) -> sqlx::Result<Vec<ApiKeySummary>> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        select k.id, k.name, k.prefix, k.role, k.created_by, u.email as "creator_email?",
               k.created_at as "created_at: DateTime<Utc>",
               k.last_used_at as "last_used_at: DateTime<Utc>",
               k.revoked_at as "revoked_at: DateTime<Utc>",
               k.expires_at as "expires_at: DateTime<Utc>"
        from api_keys k left join users u on u.id = k.created_by
        where k.org_id = $1
        order by k.created_at desc
        "#,
        org as _
    )
    .map(|r| ApiKeySummary {
        id: r.id,
        name: r.name,
        prefix: r.prefix,
        role: Role::stored(&r.role),
        created_by: r.created_by,
        creator_email: r.creator_email,
        created_at: r.created_at,
        last_used_at: r.last_used_at,
        revoked_at: r.revoked_at,
        expires_at: r.expires_at,
    })
    .fetch_all(pool)
    .await
}

/// Revokes one of `org`'s keys for `actor`: any key if `any` (an owner), else only one they
/// created; false if there is no such key they may revoke (or it is another org's). Recorded in the
/// audit log in the same transaction.
pub async fn revoke(
    pool: &PgPool,
    org: OrgId,
    actor: &Actor,
    any: bool,
    id: Uuid,
) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let revoked = sqlx::query!(
        r#"
        update api_keys set revoked_at = now()
        where id = $1 and org_id = $2 and revoked_at is null and ($3 or created_by = $4)
        returning name, prefix
        "#,
        id,
        org as _,
        any,
        actor.id
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(key) = revoked else {
        // Already revoked counts as done for whoever could have revoked it.
        // language=PostgreSQL
        let already = sqlx::query_scalar!(
            r#"select exists (select from api_keys where id = $1 and org_id = $2
                              and revoked_at is not null and ($3 or created_by = $4)) as "e!""#,
            id,
            org as _,
            any,
            actor.id
        )
        .fetch_one(&mut *tx)
        .await?;
        return Ok(already);
    };
    audit::record(
        &mut tx,
        org,
        actor,
        "api_key.revoked",
        &format!("{} ({})", key.name, key.prefix),
        serde_json::json!({"key_id": id}),
    )
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// The live keys `user` made, in every org, newest first.
pub async fn own_live(pool: &PgPool, user: Uuid) -> sqlx::Result<Vec<model::OwnApiKey>> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        select o.name as org_name, k.name, k.prefix,
               k.created_at as "created_at: chrono::DateTime<chrono::Utc>"
        from api_keys k join orgs o on o.id = k.org_id
        where k.created_by = $1 and k.revoked_at is null
          and (k.expires_at is null or k.expires_at > now())
        order by k.created_at desc
        limit 500
        "#,
        user
    )
    .map(|r| model::OwnApiKey {
        org_name: r.org_name,
        name: r.name,
        prefix: r.prefix,
        created_at: r.created_at,
    })
    .fetch_all(pool)
    .await
}

/// Revokes every live key `actor` made, in every org, in the caller's transaction; each one is
/// recorded in its org's audit log. Returns the org of each key revoked.
pub async fn revoke_all_own(tx: &mut sqlx::PgConnection, actor: &Actor) -> sqlx::Result<Vec<Uuid>> {
    // language=PostgreSQL
    let revoked = sqlx::query!(
        r#"
        update api_keys set revoked_at = now()
        where created_by = $1 and revoked_at is null
          and (expires_at is null or expires_at > now())
        returning id, org_id, name, prefix
        "#,
        actor.id
    )
    .fetch_all(&mut *tx)
    .await?;
    for key in &revoked {
        audit::record(
            tx,
            key.org_id.into(),
            actor,
            "api_key.revoked",
            &format!("{} ({})", key.name, key.prefix),
            serde_json::json!({"key_id": key.id, "all_of_account": true}),
        )
        .await?;
    }
    Ok(revoked.into_iter().map(|k| k.org_id).collect())
}

/// Who a change made with key `id` is recorded as: its creator, named with the key
/// (`API key ik_1a2b3c4d of ada@example.com`).
pub async fn actor(tx: &mut sqlx::PgConnection, id: Uuid) -> sqlx::Result<Actor> {
    // language=PostgreSQL
    let key = sqlx::query!(
        r#"select k.prefix, k.created_by, u.email as "email?"
           from api_keys k left join users u on u.id = k.created_by where k.id = $1"#,
        id
    )
    .fetch_one(&mut *tx)
    .await?;
    Ok(Actor {
        id: key.created_by,
        email: format!(
            "API key {} of {}",
            key.prefix,
            key.email.as_deref().unwrap_or("a former member")
        ),
    })
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

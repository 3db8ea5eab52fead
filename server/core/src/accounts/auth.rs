//! Sessions: axum-login over tower-sessions, users checked against Postgres. The org a request acts
//! for always comes from here (the session), never from what the browser sends.

use axum_login::{AuthUser, AuthnBackend};
use model::OrgId;
use sqlx::PgPool;
use uuid::Uuid;

use model::error::AppError;
use model::{Action, Role};

/// What the cookie's session holds: the user and their login's row in `user_sessions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SessionKey {
    pub user: Uuid,
    pub session: Uuid,
}

/// Sessions written before session rows held the bare user id: they read as a key with no row,
/// which finds nothing (logged out), instead of failing every request until the cookie expires.
impl<'de> serde::Deserialize<'de> for SessionKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Stored {
            Key { user: Uuid, session: Uuid },
            Bare(Uuid),
        }
        Ok(match Stored::deserialize(d)? {
            Stored::Key { user, session } => SessionKey { user, session },
            Stored::Bare(user) => SessionKey {
                user,
                session: Uuid::nil(),
            },
        })
    }
}

impl std::fmt::Display for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.user, self.session)
    }
}

/// A signed-in user as one request sees them: the org their session acts for and their role there.
#[derive(Clone, Debug)]
pub struct SessionUser {
    pub id: Uuid,
    /// This login's row in `user_sessions`.
    pub session_id: Uuid,
    pub email: String,
    pub email_verified: bool,
    pub org_id: OrgId,
    pub org_name: String,
    /// Whether the org issues e-invoices, read with the session (so the create form asks no more).
    pub org_einvoicing: bool,
    pub role: Role,
    password_hash: String,
}

impl SessionUser {
    /// The user, if their role in the session's org allows `action` (and their address is verified
    /// where the action needs it); else `Forbidden`, with what is missing.
    pub fn allowed(self, action: Action) -> Result<Self, AppError> {
        if !self.role.may(action) {
            return Err(AppError::Forbidden(format!(
                "Your role in {} ({}) cannot {}.",
                self.org_name,
                self.role.as_str(),
                action.describe()
            )));
        }
        if action.needs_verified_email() && !self.email_verified {
            return Err(AppError::Forbidden(format!(
                "Verify your email address first (the link we sent to {}) to {}.",
                self.email,
                action.describe()
            )));
        }
        Ok(self)
    }
}

impl AuthUser for SessionUser {
    type Id = SessionKey;

    fn id(&self) -> SessionKey {
        SessionKey {
            user: self.id,
            session: self.session_id,
        }
    }

    /// Sessions die when the password changes.
    fn session_auth_hash(&self) -> &[u8] {
        self.password_hash.as_bytes()
    }
}

#[derive(Clone, Debug)]
pub struct Credentials {
    pub email: String,
    pub password: String,
}

#[derive(Clone)]
pub struct Backend {
    pool: PgPool,
}

impl Backend {
    pub fn new(pool: PgPool) -> Self {
        Backend { pool }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error(transparent)]
    Hashing(#[from] crate::throttle::HashError),
    /// The password is right, but the user belongs to no org any more.
    #[error("the account belongs to no organisation")]
    NoOrg,
}

pub type AuthSession = axum_login::AuthSession<Backend>;

impl AuthnBackend for Backend {
    type User = SessionUser;
    type Credentials = Credentials;
    type Error = BackendError;

    /// The user these credentials name, ready to log in (a new session id, their first org).
    async fn authenticate(&self, creds: Credentials) -> Result<Option<SessionUser>, BackendError> {
        // language=PostgreSQL
        let user = sqlx::query!(
            "select id, password_hash from users where lower(email) = lower($1)",
            creds.email.trim()
        )
        .fetch_optional(&self.pool)
        .await?;
        // Verify even when the email is unknown, so timing does not tell which emails exist.
        let hash = user
            .as_ref()
            .map(|u| u.password_hash.clone())
            .unwrap_or_else(|| DUMMY_HASH.clone());
        let ok = crate::throttle::hashing(move || {
            password_auth::verify_password(creds.password, &hash).is_ok()
        })
        .await?;
        match user.filter(|_| ok) {
            None => Ok(None),
            Some(u) => Ok(Some(
                for_login(&self.pool, u.id, None)
                    .await?
                    .ok_or(BackendError::NoOrg)?,
            )),
        }
    }

    /// The user the request's session load already read (one statement for both, see
    /// [`load_cookie_session`]), else read here. Tried twice when the database was unreachable: a
    /// pooled connection cut by a failover fails its first query and is closed, and the second try
    /// gets a fresh one.
    async fn get_user(&self, key: &SessionKey) -> Result<Option<SessionUser>, BackendError> {
        let first = match take_loaded(*key) {
            Some(loaded) => seen(&self.pool, loaded).await,
            None => find_session(&self.pool, *key).await,
        };
        match first {
            Err(e) if model::error::is_unavailable(&e) => Ok(find_session(&self.pool, *key).await?),
            found => Ok(found?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_from_before_session_rows_reads_as_a_key_with_no_row() {
        let user = Uuid::now_v7();
        let old: SessionKey = serde_json::from_value(serde_json::json!(user)).unwrap();
        assert_eq!(
            old,
            SessionKey {
                user,
                session: Uuid::nil()
            }
        );
        let key = SessionKey {
            user,
            session: Uuid::now_v7(),
        };
        let again: SessionKey = serde_json::from_value(serde_json::to_value(key).unwrap()).unwrap();
        assert_eq!(again, key);
    }
}

// A real hash of nothing anyone knows, verified against on the unknown-email path.
static DUMMY_HASH: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| password_auth::generate_hash(Uuid::new_v4().to_string()));

/// The user of a row that selects a user, their org and role there (the columns `for_login` and
/// `find_session` share), under the session `session`.
macro_rules! session_user {
    ($row:expr, $session:expr) => {{
        let r = $row;
        SessionUser {
            id: r.id,
            session_id: $session,
            email: r.email,
            email_verified: r.verified,
            org_id: r.org_id.into(),
            org_name: r.org_name,
            org_einvoicing: r.einvoicing,
            role: Role::stored(&r.role),
            password_hash: r.password_hash,
        }
    }};
}

/// A user about to log in: a fresh session id, acting for `org` if they are a member of it, else
/// for their oldest membership. None if they belong to no org (or do not exist).
pub async fn for_login(
    pool: &PgPool,
    user: Uuid,
    org: Option<OrgId>,
) -> sqlx::Result<Option<SessionUser>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select u.id, u.email, u.password_hash, u.email_verified_at is not null as "verified!",
               o.id as org_id, o.name as org_name, o.einvoicing, m.role
        from users u
        join memberships m on m.user_id = u.id
        join orgs o on o.id = m.org_id
        where u.id = $1
        order by m.org_id = $2 desc nulls last, m.created_at
        limit 1
        "#,
        user,
        org as _
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| session_user!(r, Uuid::now_v7())))
}

/// The user behind a live session row, with the org it acts for and their role there: being found
/// here *is* the membership check (a removed member, an ended session or a session of another user
/// finds nothing, and the request is logged out). Marks the row seen, at most once a minute.
async fn find_session(pool: &PgPool, key: SessionKey) -> sqlx::Result<Option<SessionUser>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select u.id, u.email, u.password_hash, u.email_verified_at is not null as "verified!",
               o.id as org_id, o.name as org_name, o.einvoicing, m.role,
               s.last_seen_at < now() - interval '1 minute' as "stale!"
        from user_sessions s
        join users u on u.id = s.user_id
        join memberships m on m.user_id = s.user_id and m.org_id = s.org_id
        join orgs o on o.id = s.org_id
        where s.id = $1 and s.user_id = $2 and s.ended_at is null
        "#,
        key.session,
        key.user
    )
    .fetch_optional(pool)
    .await?;
    let Some(r) = row else { return Ok(None) };
    let stale = r.stale;
    seen(
        pool,
        Loaded {
            key,
            user: Some(session_user!(r, key.session)),
            stale,
        },
    )
    .await
}

/// The session's user, its row marked seen when it was last marked over a minute ago.
async fn seen(pool: &PgPool, loaded: Loaded) -> sqlx::Result<Option<SessionUser>> {
    if loaded.stale && loaded.user.is_some() {
        // language=PostgreSQL
        sqlx::query!(
            "update user_sessions set last_seen_at = now() where id = $1",
            loaded.key.session
        )
        .execute(pool)
        .await?;
    }
    Ok(loaded.user)
}

/// Where axum-login keeps its data in the cookie's session (its default, named here because
/// [`load_cookie_session`]'s statement reads the session key under it).
pub const LOGIN_DATA_KEY: &str = "axum-login.data";

/// A cookie session's data: a JSON object, as tower-sessions keeps it.
pub type SessionData = sqlx::types::Json<std::collections::HashMap<String, serde_json::Value>>;

/// The cookie's session as its store reads it: its data and expiry.
pub struct CookieSession {
    pub data: SessionData,
    pub expiry: chrono::DateTime<chrono::Utc>,
}

/// What a request's session load read about the user its session names, for `get_user`.
struct Loaded {
    key: SessionKey,
    user: Option<SessionUser>,
    stale: bool,
}

tokio::task_local! {
    static LOADED: std::cell::RefCell<Option<Loaded>>;
}

/// Runs one request with room for what its session load reads about the user, so the auth layer
/// asks the database once for the session and its user. Outside it, `get_user` reads on its own.
pub async fn with_session_user<F: std::future::Future>(request: F) -> F::Output {
    LOADED.scope(std::cell::RefCell::new(None), request).await
}

/// The loaded user, if the session load of this request read the one `key` names.
fn take_loaded(key: SessionKey) -> Option<Loaded> {
    LOADED
        .try_with(|cell| {
            let mut cell = cell.borrow_mut();
            match cell.as_ref() {
                Some(loaded) if loaded.key == key => cell.take(),
                _ => None,
            }
        })
        .ok()
        .flatten()
}

/// The session store's load: the cookie's session, and in the same statement the user, org and
/// role its login names (`find_session`'s join, by the session key axum-login keeps in the data).
/// What it finds of the user (also nothing: an ended session, a removed member) waits for
/// `get_user` in this request. One statement and one connection check-out instead of two.
/// The `limit 1` (the session row is one by its key) keeps the user's part a subquery run for the
/// one session row, by its keys: without it the planner folds it into a join and may read every
/// live session to find it (measured: half the throughput of the two statements it replaces).
pub async fn load_cookie_session(pool: &PgPool, id: &str) -> sqlx::Result<Option<CookieSession>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select s.data as "data: SessionData",
               s.expiry_date,
               (s.data #>> '{axum-login.data,user_id,user}')::uuid as "key_user?",
               (s.data #>> '{axum-login.data,user_id,session}')::uuid as "key_session?",
               l.id as "id?", l.email as "email?", l.password_hash as "password_hash?",
               l.verified as "verified?", l.org_id as "org_id?", l.org_name as "org_name?",
               l.einvoicing as "einvoicing?", l.role as "role?", l.stale as "stale?"
        from cookie_sessions s
        left join lateral (
            select u.id, u.email, u.password_hash, u.email_verified_at is not null as verified,
                   o.id as org_id, o.name as org_name, o.einvoicing, m.role,
                   us.last_seen_at < now() - interval '1 minute' as stale
            from user_sessions us
            join users u on u.id = us.user_id
            join memberships m on m.user_id = us.user_id and m.org_id = us.org_id
            join orgs o on o.id = us.org_id
            where us.id = (s.data #>> '{axum-login.data,user_id,session}')::uuid
              and us.user_id = (s.data #>> '{axum-login.data,user_id,user}')::uuid
              and us.ended_at is null
            limit 1
        ) l on true
        where s.id = $1 and s.expiry_date > now()
        "#,
        id
    )
    .fetch_optional(pool)
    .await?;
    let Some(r) = row else { return Ok(None) };
    if let (Some(user), Some(session)) = (r.key_user, r.key_session) {
        let found = match (
            r.id,
            r.email,
            r.password_hash,
            r.verified,
            r.org_id,
            r.org_name,
            r.einvoicing,
            r.role,
        ) {
            (
                Some(id),
                Some(email),
                Some(password_hash),
                Some(email_verified),
                Some(org_id),
                Some(org_name),
                Some(org_einvoicing),
                Some(role),
            ) => Some(SessionUser {
                id,
                session_id: session,
                email,
                email_verified,
                org_id: org_id.into(),
                org_name,
                org_einvoicing,
                role: Role::stored(&role),
                password_hash,
            }),
            _ => None,
        };
        let loaded = Loaded {
            key: SessionKey { user, session },
            user: found,
            stale: r.stale.unwrap_or(false),
        };
        let _ = LOADED.try_with(|cell| *cell.borrow_mut() = Some(loaded));
    }
    Ok(Some(CookieSession {
        data: r.data,
        expiry: r.expiry_date,
    }))
}

/// Where a login comes from, for the sessions list.
#[derive(Debug, Clone, Default)]
pub struct LoginMeta {
    pub user_agent: String,
    pub address: String,
}

/// Logs `user` in: writes their session row, then the cookie's session with a new id, also over a
/// session that was already logged in (axum-login cycles the id only when nobody was), so an id
/// planted before login never becomes a login.
pub async fn log_in(
    pool: &PgPool,
    session: &mut AuthSession,
    user: &SessionUser,
    meta: &LoginMeta,
) -> Result<(), AppError> {
    let user_agent: String = meta.user_agent.chars().take(512).collect();
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into user_sessions (id, user_id, org_id, user_agent, address)
        values ($1, $2, $3, $4, $5)
        "#,
        user.session_id,
        user.id,
        user.org_id as _,
        user_agent,
        meta.address,
    )
    .execute(pool)
    .await?;
    session
        .login(user)
        .await
        .map_err(|e| AppError::internal("login", e))?;
    session
        .session
        .cycle_id()
        .await
        .map_err(|e| AppError::internal("login: new session id", e))
}

/// Logs the current session out and ends its row.
pub async fn log_out(pool: &PgPool, session: &mut AuthSession) -> Result<(), AppError> {
    if let Some(user) = &session.user {
        end_session(pool, user.id, user.session_id).await?;
    }
    session
        .logout()
        .await
        .map_err(|e| AppError::internal("logout", e))?;
    Ok(())
}

/// Ends one of `user`'s sessions; false if it is not theirs or already ended.
pub async fn end_session(pool: &PgPool, user: Uuid, session: Uuid) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "update user_sessions set ended_at = now() where id = $1 and user_id = $2 and ended_at is null",
        session,
        user
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// `user` as their session row now reads (after a password change: the new hash), to log the same
/// session in again.
pub async fn relogin(pool: &PgPool, user: &SessionUser) -> sqlx::Result<Option<SessionUser>> {
    find_session(pool, user.id()).await
}

/// Ends every session of `user` but `keep`; returns how many.
pub async fn end_other_sessions(pool: &PgPool, user: Uuid, keep: Uuid) -> sqlx::Result<u64> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "update user_sessions set ended_at = now() where user_id = $1 and id <> $2 and ended_at is null",
        user,
        keep
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

/// How long a session lives without requests (the cookie's inactivity expiry).
pub const SESSION_IDLE: chrono::Duration = chrono::Duration::days(7);

/// The user's live sessions (not ended, seen within the idle expiry), `current` first, then newest.
pub async fn sessions(
    pool: &PgPool,
    user: Uuid,
    current: Uuid,
) -> sqlx::Result<Vec<model::SessionSummary>> {
    use chrono::{DateTime, Utc};
    // language=PostgreSQL
    sqlx::query!(
        r#"
        select s.id, o.name as org_name, s.created_at as "created_at: DateTime<Utc>",
               s.last_seen_at as "last_seen_at: DateTime<Utc>", s.user_agent, s.address
        from user_sessions s join orgs o on o.id = s.org_id
        where s.user_id = $1 and s.ended_at is null
          and s.last_seen_at > now() - make_interval(secs => $3)
        order by s.id = $2 desc, s.created_at desc
        limit 100
        "#,
        user,
        current,
        SESSION_IDLE.num_seconds() as f64
    )
    .map(|r| model::SessionSummary {
        current: r.id == current,
        id: r.id,
        org_name: r.org_name,
        created_at: r.created_at,
        last_seen_at: r.last_seen_at,
        user_agent: r.user_agent,
        address: r.address,
    })
    .fetch_all(pool)
    .await
}

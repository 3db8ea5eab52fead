//! Sessions: axum-login over tower-sessions, users checked against Postgres. The org a request acts
//! for always comes from here (the session), never from what the browser sends.

use axum_login::{AuthUser, AuthnBackend, UserId};
use sqlx::PgPool;
use uuid::Uuid;

use crate::error::AppError;

#[derive(Clone, Debug)]
pub struct SessionUser {
    pub id: Uuid,
    pub email: String,
    pub org_id: Uuid,
    pub org_name: String,
    password_hash: String,
}

impl AuthUser for SessionUser {
    type Id = Uuid;

    fn id(&self) -> Uuid {
        self.id
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
    Hashing(#[from] crate::ssr::throttle::HashError),
}

pub type AuthSession = axum_login::AuthSession<Backend>;

impl AuthnBackend for Backend {
    type User = SessionUser;
    type Credentials = Credentials;
    type Error = BackendError;

    async fn authenticate(&self, creds: Credentials) -> Result<Option<SessionUser>, BackendError> {
        let user = find_user(&self.pool, UserLookup::Email(&creds.email)).await?;
        // Verify even when the email is unknown, so timing does not tell which emails exist.
        let hash = user
            .as_ref()
            .map(|u| u.password_hash.clone())
            .unwrap_or_else(|| DUMMY_HASH.clone());
        let ok = crate::ssr::throttle::hashing(move || {
            password_auth::verify_password(creds.password, &hash).is_ok()
        })
        .await?;
        Ok(user.filter(|_| ok))
    }

    async fn get_user(&self, id: &UserId<Self>) -> Result<Option<SessionUser>, BackendError> {
        Ok(find_user(&self.pool, UserLookup::Id(*id)).await?)
    }
}

// A real hash of nothing anyone knows, verified against on the unknown-email path.
static DUMMY_HASH: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| password_auth::generate_hash(Uuid::new_v4().to_string()));

enum UserLookup<'a> {
    Id(Uuid),
    Email(&'a str),
}

struct UserRow {
    id: Uuid,
    email: String,
    password_hash: String,
    org_id: Uuid,
    org_name: String,
}

/// A user with the org they act for (their oldest membership): being found here *is* the membership
/// check, so a removed member loses access on their next request. One statement per kind of lookup
/// (not `$1 is null or ...`): each keeps a generic plan that uses its index, so the lookup every
/// signed-in request makes is neither planned again each time nor a scan of all users.
async fn find_user(pool: &PgPool, lookup: UserLookup<'_>) -> sqlx::Result<Option<SessionUser>> {
    let row = match lookup {
        // language=PostgreSQL
        UserLookup::Id(id) => {
            sqlx::query_as!(
                UserRow,
                r#"
            select u.id, u.email, u.password_hash, o.id as org_id, o.name as org_name
            from users u
            join memberships m on m.user_id = u.id
            join orgs o on o.id = m.org_id
            where u.id = $1
            order by m.created_at
            limit 1
            "#,
                id
            )
            .fetch_optional(pool)
            .await?
        }
        // language=PostgreSQL
        UserLookup::Email(email) => {
            sqlx::query_as!(
                UserRow,
                r#"
            select u.id, u.email, u.password_hash, o.id as org_id, o.name as org_name
            from users u
            join memberships m on m.user_id = u.id
            join orgs o on o.id = m.org_id
            where lower(u.email) = lower($1)
            order by m.created_at
            limit 1
            "#,
                email
            )
            .fetch_optional(pool)
            .await?
        }
    };
    Ok(row.map(|r| SessionUser {
        id: r.id,
        email: r.email,
        org_id: r.org_id,
        org_name: r.org_name,
        password_hash: r.password_hash,
    }))
}

/// The logged-in user of the current server-function request, or `Unauthorized`.
pub async fn require_user() -> Result<SessionUser, AppError> {
    current_session()
        .await?
        .user
        .ok_or_else(|| AppError::Unauthorized.respond())
}

pub async fn current_session() -> Result<AuthSession, AppError> {
    leptos_axum::extract::<AuthSession>()
        .await
        .map_err(|e| AppError::internal("auth session missing", e))
}

/// Logs `user` in with a new session id, also over a session that was already logged in (axum-login
/// cycles the id only when nobody was), so an id planted before login never becomes a login.
pub async fn log_in(session: &mut AuthSession, user: &SessionUser) -> Result<(), AppError> {
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

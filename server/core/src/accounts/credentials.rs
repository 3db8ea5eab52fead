//! What an account proves itself with: the one-time links emailed to it (verification, password
//! reset, address change), its password, and the notices sent when either changes.

use std::net::IpAddr;

use sqlx::PgPool;
use uuid::Uuid;
use validator::ValidateEmail;

use super::{by_email, queue_once_an_hour, MIN_PASSWORD_LEN};

/// A one-time link's secret: 244 random bits, hex. Only its SHA-256 is stored; the plaintext lives
/// in the email (and in the outbox row until it is sent).
pub fn new_token() -> (String, Vec<u8>) {
    let token = format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
    let hash = token_hash(&token);
    (token, hash)
}

pub fn token_hash(token: &str) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    Sha256::digest(token.as_bytes()).to_vec()
}

/// A token as it comes from a link: 64 hex digits, or nothing worth a lookup.
pub fn well_formed_token(token: &str) -> Option<&str> {
    let token = token.trim();
    (token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit())).then_some(token)
}

pub const VERIFY_TTL: chrono::Duration = chrono::Duration::days(7);
pub const RESET_TTL: chrono::Duration = chrono::Duration::hours(1);

/// Writes a verification token for `email` (the user's address, or the one they are changing to)
/// and its email, in the caller's transaction. `source_key` names the form attempt: a repeat of it
/// writes nothing (and sends nothing) again. Returns whether it wrote.
pub async fn queue_verification(
    tx: &mut sqlx::PgConnection,
    user: Uuid,
    email: &str,
    source_key: Option<&str>,
) -> sqlx::Result<bool> {
    queue_token(
        tx,
        user,
        email,
        source_key,
        "verify_email",
        crate::outbox::AccountKind::VerifyEmail,
        VERIFY_TTL,
    )
    .await
}

async fn queue_token(
    tx: &mut sqlx::PgConnection,
    user: Uuid,
    email: &str,
    source_key: Option<&str>,
    purpose: &str,
    kind: crate::outbox::AccountKind,
    ttl: chrono::Duration,
) -> sqlx::Result<bool> {
    let (token, hash) = new_token();
    // language=PostgreSQL
    let made = sqlx::query_scalar!(
        r#"
        insert into user_tokens (token_hash, user_id, purpose, email, source_key, expires_at)
        values ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))
        on conflict (user_id, purpose, source_key) do nothing
        returning true as "made!"
        "#,
        hash,
        user,
        purpose,
        email,
        source_key,
        ttl.num_seconds() as f64,
    )
    .fetch_optional(&mut *tx)
    .await?;
    if made.is_none() {
        return Ok(false);
    }
    crate::outbox::enqueue_account_email(
        tx,
        kind,
        serde_json::json!({"to": email, "token": token}),
    )
    .await?;
    Ok(true)
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("This link is not valid. Ask for a new one.")]
    Unknown,
    #[error("This link was already used.")]
    Used,
    #[error("This link has expired. Ask for a new one.")]
    Expired,
    #[error("A newer link was sent since this one: use the newest.")]
    Replaced,
    #[error("An account with this email already exists.")]
    EmailTaken,
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error(transparent)]
    Hashing(#[from] crate::throttle::HashError),
}

/// Why a token row cannot be used, when it cannot.
async fn token_refusal(
    tx: &mut sqlx::PgConnection,
    hash: &[u8],
    purpose: &str,
) -> sqlx::Result<TokenError> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select used_at is not null as "used!", expires_at <= now() as "expired!"
        from user_tokens where token_hash = $1 and purpose = $2
        "#,
        hash,
        purpose
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(match row {
        None => TokenError::Unknown,
        Some(r) if r.used => TokenError::Used,
        Some(r) if r.expired => TokenError::Expired,
        Some(_) => TokenError::Replaced,
    })
}

/// Takes a token for its one use in the caller's transaction: (user, email) if it exists, is unused
/// and unexpired. The row stays locked until the transaction ends, so a concurrent use of the same
/// link waits and then finds it used.
async fn use_token(
    tx: &mut sqlx::PgConnection,
    token: &str,
    purpose: &str,
) -> Result<(Uuid, String), TokenError> {
    let token = well_formed_token(token).ok_or(TokenError::Unknown)?;
    let hash = token_hash(token);
    // A verification link counts only while it is the user's newest pending one: asking for another
    // address (or resending the link) replaces it.
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        update user_tokens t set used_at = now()
        where t.token_hash = $1 and t.purpose = $2 and t.used_at is null and t.expires_at > now()
          and not exists (
              select from user_tokens newer
              where newer.user_id = t.user_id and newer.purpose = t.purpose
                and newer.used_at is null and newer.expires_at > now()
                and (newer.created_at, newer.token_hash) > (t.created_at, t.token_hash)
                and t.purpose = 'verify_email')
        returning t.user_id, t.email
        "#,
        hash,
        purpose
    )
    .fetch_optional(&mut *tx)
    .await?;
    match row {
        Some(r) => Ok((r.user_id, r.email)),
        None => Err(token_refusal(tx, &hash, purpose).await?),
    }
}

/// Whether `token` could be used now for `purpose` (unused, unexpired), without using it: what is
/// asked before spending a password hash on it.
async fn token_usable(pool: &PgPool, token: &str, purpose: &str) -> Result<(), TokenError> {
    let token = well_formed_token(token).ok_or(TokenError::Unknown)?;
    let hash = token_hash(token);
    let mut conn = pool.acquire().await?;
    // language=PostgreSQL
    let usable = sqlx::query_scalar!(
        r#"
        select exists (
            select from user_tokens
            where token_hash = $1 and purpose = $2 and used_at is null and expires_at > now()
        ) as "usable!"
        "#,
        hash,
        purpose
    )
    .fetch_one(&mut *conn)
    .await?;
    if usable {
        Ok(())
    } else {
        Err(token_refusal(&mut conn, &hash, purpose).await?)
    }
}

/// Marks every unused link of the user as used: after a reset, a password change or an address
/// change, no link asked for before it may act on the account.
async fn retire_tokens(tx: &mut sqlx::PgConnection, user: Uuid) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "update user_tokens set used_at = now() where user_id = $1 and used_at is null",
        user
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// What an account notice tells the address it goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    PasswordReset,
    PasswordChanged,
    EmailChanged,
}

impl Notice {
    pub fn as_str(self) -> &'static str {
        match self {
            Notice::PasswordReset => "password_reset",
            Notice::PasswordChanged => "password_changed",
            Notice::EmailChanged => "email_changed",
        }
    }
}

/// Queues a plain notice to `to` (the address the account had before the change): what changed,
/// when, from which client address, how many API keys the user made that still work, and what a
/// password reset or change took back.
async fn queue_notice(
    tx: &mut sqlx::PgConnection,
    user: Uuid,
    to: &str,
    notice: Notice,
    client: IpAddr,
    taken: Option<&super::recovery::TakenBack>,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    let keys = sqlx::query_scalar!(
        r#"
        select count(*) as "n!" from api_keys
        where created_by = $1 and revoked_at is null and (expires_at is null or expires_at > now())
        "#,
        user
    )
    .fetch_one(&mut *tx)
    .await?;
    let taken = taken.map(|t| {
        serde_json::json!({
            "api_keys": t.api_keys,
            "invitations": t.invitations,
            "endpoints": t.endpoints.iter().map(|e| &e.url).collect::<Vec<_>>(),
        })
    });
    crate::outbox::enqueue_account_email(
        tx,
        crate::outbox::AccountKind::AccountNotice,
        serde_json::json!({
            "to": to,
            "event": notice.as_str(),
            "at": chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
            "client": client.to_string(),
            "api_keys": keys,
            "taken_back": taken,
        }),
    )
    .await?;
    Ok(())
}

/// Follows a verification link: the address is the user's, verified (a change of address takes
/// effect here). Returns the user.
pub async fn verify_email(pool: &PgPool, token: &str, client: IpAddr) -> Result<Uuid, TokenError> {
    let mut tx = pool.begin().await?;
    let (user, email) = use_token(&mut tx, token, "verify_email").await?;
    // language=PostgreSQL
    let old = sqlx::query_scalar!("select email from users where id = $1 for update", user)
        .fetch_one(&mut *tx)
        .await?;
    // language=PostgreSQL
    let changed = sqlx::query!(
        "update users set email = $2, email_verified_at = now() where id = $1",
        user,
        email
    )
    .execute(&mut *tx)
    .await;
    if super::email_taken(changed)? {
        return Err(TokenError::EmailTaken);
    }
    if !old.eq_ignore_ascii_case(&email) {
        retire_tokens(&mut tx, user).await?;
        queue_notice(&mut tx, user, &old, Notice::EmailChanged, client, None).await?;
        let actor = crate::accounts::audit::Actor::user(user, &email);
        crate::accounts::audit::record_for_user(
            &mut tx,
            user,
            &actor,
            "user.email_changed",
            &format!("{old} → {email}"),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(user)
}

/// A new password is long enough (and not absurdly long: it is hashed).
pub fn check_password(password: &str) -> Result<(), TokenError> {
    if password.chars().count() < MIN_PASSWORD_LEN {
        return Err(TokenError::Invalid(format!(
            "The password needs at least {MIN_PASSWORD_LEN} characters."
        )));
    }
    if password.len() > 1024 {
        return Err(TokenError::Invalid("The password is too long.".into()));
    }
    Ok(())
}

async fn hash_password(password: &str) -> Result<String, crate::throttle::HashError> {
    let password = password.to_owned();
    crate::throttle::hashing(move || password_auth::generate_hash(password)).await
}

/// Asks for a password reset of the account with `email`, if there is one: a token and its email,
/// once per form attempt (`source_key`). The caller answers the same either way.
pub async fn request_reset(pool: &PgPool, email: &str, source_key: &str) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    let Some((user, address)) = by_email(&mut tx, email).await? else {
        // The same transaction's worth of work for an address without an account: it is told so
        // (once an hour at most), and the answer does not depend on it.
        let email = email.trim();
        if email.validate_email() && email.len() <= 254 {
            queue_once_an_hour(&mut tx, crate::outbox::AccountKind::NoAccount, email).await?;
            tx.commit().await?;
        }
        return Ok(false);
    };
    let made = queue_token(
        &mut tx,
        user,
        &address,
        Some(source_key),
        "reset_password",
        crate::outbox::AccountKind::ResetPassword,
        RESET_TTL,
    )
    .await?;
    tx.commit().await?;
    Ok(made)
}

/// Whether a reset link could be used now, without using it: what is asked before the shared
/// reset ceiling is spent on it.
pub async fn reset_link_usable(pool: &PgPool, token: &str) -> Result<(), TokenError> {
    token_usable(pool, token, "reset_password").await
}

/// Follows a reset link: a new password, every session of the user ended, what the account left
/// behind taken back ([`super::recovery`]), the change in the audit log of each of their orgs, all
/// in one transaction with the token's use. Returns the user.
pub async fn reset_password(
    pool: &PgPool,
    token: &str,
    password: &str,
    client: IpAddr,
) -> Result<Uuid, TokenError> {
    check_password(password)?;
    // A junk or spent link costs one indexed lookup, never a hash.
    token_usable(pool, token, "reset_password").await?;
    // Hashing before the transaction (it is slow): the token is taken and the password set in one
    // short transaction.
    let hash = hash_password(password).await?;
    let mut tx = pool.begin().await?;
    let (user, email) = use_token(&mut tx, token, "reset_password").await?;
    set_password(&mut tx, user, &hash, None).await?;
    retire_tokens(&mut tx, user).await?;
    // language=PostgreSQL
    let current = sqlx::query_scalar!("select email from users where id = $1", user)
        .fetch_one(&mut *tx)
        .await?;
    let actor = crate::accounts::audit::Actor::user(user, &email);
    let event = Notice::PasswordReset;
    let taken = super::recovery::take_back(&mut tx, user, &actor, event, client).await?;
    queue_notice(&mut tx, user, &current, event, client, Some(&taken)).await?;
    crate::accounts::audit::record_for_user(&mut tx, user, &actor, "user.password_reset", &email)
        .await?;
    tx.commit().await?;
    Ok(user)
}

/// Sets the password hash and ends every session of the user but `keep`.
async fn set_password(
    tx: &mut sqlx::PgConnection,
    user: Uuid,
    hash: &str,
    keep: Option<Uuid>,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "update users set password_hash = $2 where id = $1",
        user,
        hash
    )
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update user_sessions
        set ended_at = case when id = $2 then ended_at else now() end,
            authenticated_at = case when id = $2 then now() else authenticated_at end
        where user_id = $1 and ended_at is null
        "#,
        user,
        keep
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Checks `password` against the user's current one (for changes made from settings).
pub async fn password_matches(
    pool: &PgPool,
    user: Uuid,
    password: &str,
) -> Result<bool, TokenError> {
    // language=PostgreSQL
    let hash = sqlx::query_scalar!("select password_hash from users where id = $1", user)
        .fetch_one(pool)
        .await?;
    let password = password.to_owned();
    Ok(
        crate::throttle::hashing(move || password_auth::verify_password(password, &hash).is_ok())
            .await?,
    )
}

/// How long a session's proof of the password counts for the changes that ask for it again.
pub const RECENT_AUTH_MINUTES: i32 = 10;

/// Whether a session may make a change that asks for the password again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reauth {
    /// It proved the password within [`RECENT_AUTH_MINUTES`] (its login, or just now).
    Fresh,
    /// Too long ago, and no password was given.
    Needed,
    /// The password given is not the user's.
    Wrong,
}

/// Whether `session` of `user` proved the password within [`RECENT_AUTH_MINUTES`]; if not and
/// `password` is given, it is checked, and when right it counts as a fresh proof from now.
pub async fn reauthenticate(
    pool: &PgPool,
    user: Uuid,
    session: Uuid,
    password: Option<&str>,
) -> Result<Reauth, TokenError> {
    // language=PostgreSQL
    let fresh = sqlx::query_scalar!(
        r#"
        select authenticated_at > now() - make_interval(mins => $3) as "fresh!"
        from user_sessions where id = $1 and user_id = $2 and ended_at is null
        "#,
        session,
        user,
        RECENT_AUTH_MINUTES,
    )
    .fetch_optional(pool)
    .await?;
    if fresh == Some(true) {
        return Ok(Reauth::Fresh);
    }
    let Some(password) = password.filter(|p| !p.is_empty()) else {
        return Ok(Reauth::Needed);
    };
    if !password_matches(pool, user, password).await? {
        return Ok(Reauth::Wrong);
    }
    // language=PostgreSQL
    sqlx::query!(
        "update user_sessions set authenticated_at = now() where id = $1 and user_id = $2",
        session,
        user
    )
    .execute(pool)
    .await?;
    Ok(Reauth::Fresh)
}

/// Changes the password from settings (the current one checked by the caller): every other session
/// of the user ends; `session` (the one asking) stays, and what the account left behind is taken
/// back ([`super::recovery`]): whoever knew the old password may have made keys with it.
pub async fn change_password(
    pool: &PgPool,
    user: Uuid,
    email: &str,
    session: Uuid,
    password: &str,
    client: IpAddr,
) -> Result<(), TokenError> {
    check_password(password)?;
    let hash = hash_password(password).await?;
    let mut tx = pool.begin().await?;
    set_password(&mut tx, user, &hash, Some(session)).await?;
    retire_tokens(&mut tx, user).await?;
    let actor = crate::accounts::audit::Actor::user(user, email);
    let event = Notice::PasswordChanged;
    let taken = super::recovery::take_back(&mut tx, user, &actor, event, client).await?;
    queue_notice(&mut tx, user, email, event, client, Some(&taken)).await?;
    crate::accounts::audit::record_for_user(&mut tx, user, &actor, "user.password_changed", email)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// Asks to change the address to `new_email`: a verification link goes to the new address, and the
/// change takes effect when it is followed. Once per form attempt (`source_key`).
pub async fn request_email_change(
    pool: &PgPool,
    user: Uuid,
    new_email: &str,
    source_key: &str,
) -> Result<bool, TokenError> {
    let new_email = new_email.trim();
    if !new_email.validate_email() || new_email.len() > 254 {
        return Err(TokenError::Invalid("Enter a valid email address.".into()));
    }
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let taken = sqlx::query_scalar!(
        r#"select exists (select from users where lower(email) = lower($1) and id <> $2) as "t!""#,
        new_email,
        user
    )
    .fetch_one(&mut *tx)
    .await?;
    if taken {
        return Err(TokenError::EmailTaken);
    }
    let made = queue_verification(&mut tx, user, new_email, Some(source_key)).await?;
    tx.commit().await?;
    Ok(made)
}

//! Orgs and their users: sign-up and the `admin create-org` CLI share this.

pub mod api_keys;
pub mod audit;
pub mod auth;
pub mod invitations;
pub mod members;
pub mod orgs;

use model::OrgId;
use sqlx::PgPool;
use uuid::Uuid;
use validator::ValidateEmail;

mod credentials;
pub mod recovery;

/// Whether a write of a user's email was refused because another account has that address; any other
/// failure stays an error.
pub(crate) fn email_taken<T>(written: sqlx::Result<T>) -> sqlx::Result<bool> {
    match written {
        Err(sqlx::Error::Database(e)) if e.constraint() == Some("users_email_key") => Ok(true),
        other => other.map(|_| false),
    }
}
pub use credentials::{
    change_password, check_password, new_token, password_matches, queue_verification,
    reauthenticate, request_email_change, request_reset, reset_link_usable, reset_password,
    token_hash, verify_email, well_formed_token, Notice, Reauth, TokenError, RECENT_AUTH_MINUTES,
    RESET_TTL, VERIFY_TTL,
};

#[derive(Debug, thiserror::Error)]
pub enum SignupError {
    #[error("an account with this email already exists")]
    EmailTaken,
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error(transparent)]
    Hashing(#[from] crate::throttle::HashError),
}

pub const MIN_PASSWORD_LEN: usize = 8;

#[derive(Debug, Clone, Copy)]
pub struct NewAccount {
    pub org_id: OrgId,
    pub user_id: Uuid,
}

/// Creates an org and its owner in one transaction, the owner's address taken as verified and the
/// org allowed to take payments: the operator's command line (and tests) vouch for both.
pub async fn create_org_with_owner(
    pool: &PgPool,
    org_name: &str,
    email: &str,
    password: &str,
) -> Result<NewAccount, SignupError> {
    create_account(pool, org_name, email, password, true, true).await
}

/// What a sign-up did; the person signing up is told the same either way ("check your email").
#[derive(Debug, Clone, Copy)]
pub enum SignedUp {
    /// A new org and owner, and the link to confirm the address.
    New(NewAccount),
    /// The address has an account: it was emailed that someone tried to sign up with it.
    Existing,
}

/// Sign-up: an org and its owner, whose address is unverified until they follow the link emailed
/// to it (queued in the same transaction). The org takes card payments only once the operator
/// allows it (`payments`: false), but in development. An address that has an account gets an
/// email instead, after the same work (the password hashed, one email queued in one commit), so
/// neither the answer nor its time tells whether the address has an account.
pub async fn sign_up(
    pool: &PgPool,
    org_name: &str,
    email: &str,
    password: &str,
    payments: bool,
) -> Result<SignedUp, SignupError> {
    match create_account(pool, org_name, email, password, false, payments).await {
        Ok(account) => Ok(SignedUp::New(account)),
        Err(SignupError::EmailTaken) => {
            let mut tx = pool.begin().await?;
            let (_, to) = by_email(&mut tx, email)
                .await?
                .ok_or(sqlx::Error::RowNotFound)?;
            queue_once_an_hour(&mut tx, crate::outbox::AccountKind::AccountExists, &to).await?;
            tx.commit().await?;
            Ok(SignedUp::Existing)
        }
        Err(e) => Err(e),
    }
}

/// The account with the address `email` (in any case): its id and its address as stored.
async fn by_email(
    conn: &mut sqlx::PgConnection,
    email: &str,
) -> sqlx::Result<Option<(Uuid, String)>> {
    // language=PostgreSQL
    let found = sqlx::query!(
        "select id, email from users where lower(email) = lower($1)",
        email.trim()
    )
    .fetch_optional(conn)
    .await?;
    Ok(found.map(|u| (u.id, u.email)))
}

/// Queues an account email of `kind` to `to`, at most one of that kind per address and hour (a
/// double click, or someone asking again and again, sends one).
async fn queue_once_an_hour(
    tx: &mut sqlx::PgConnection,
    kind: crate::outbox::AccountKind,
    to: &str,
) -> sqlx::Result<()> {
    let dedupe = format!(
        "{}/{}",
        to.to_lowercase(),
        chrono::Utc::now().format("%Y-%m-%dT%H")
    );
    crate::outbox::enqueue_account_email(tx, kind, serde_json::json!({"to": to, "dedupe": dedupe}))
        .await?;
    Ok(())
}

/// `server admin allow-payments`: the org may take card payments from now on. False if there is no
/// such org.
pub async fn allow_payments(pool: &PgPool, org: OrgId) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "update orgs set payments_enabled = true where id = $1",
        org as _
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Whether `org` may take card payments, and its date today (in its time zone).
pub async fn payments_enabled(
    pool: &PgPool,
    org: OrgId,
) -> sqlx::Result<(bool, chrono::NaiveDate, bool)> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"select payments_enabled, (now() at time zone time_zone)::date as "today!: chrono::NaiveDate", einvoicing from orgs where id = $1"#,
        org as _
    )
    .fetch_one(pool)
    .await?;
    Ok((row.payments_enabled, row.today, row.einvoicing))
}

async fn create_account(
    pool: &PgPool,
    org_name: &str,
    email: &str,
    password: &str,
    verified: bool,
    payments: bool,
) -> Result<NewAccount, SignupError> {
    let org_name = org_name.trim();
    let email = email.trim();
    if org_name.is_empty() || org_name.chars().count() > 200 {
        return Err(SignupError::Invalid(
            "The organisation name needs 1 to 200 characters.".into(),
        ));
    }
    if !email.validate_email() || email.len() > 254 {
        return Err(SignupError::Invalid("Enter a valid email address.".into()));
    }
    if password.chars().count() < MIN_PASSWORD_LEN {
        return Err(SignupError::Invalid(format!(
            "The password needs at least {MIN_PASSWORD_LEN} characters."
        )));
    }
    let password = password.to_owned();
    let hash = crate::throttle::hashing(move || password_auth::generate_hash(password)).await?;

    let account = NewAccount {
        org_id: OrgId::from_uuid(Uuid::new_v4()),
        user_id: Uuid::new_v4(),
    };
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    sqlx::query!(
        "insert into orgs (id, name, payments_enabled) values ($1, $2, $3)",
        account.org_id as _,
        org_name,
        payments
    )
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    let inserted = sqlx::query!(
        "insert into users (id, email, password_hash, email_verified_at) values ($1, $2, $3, case when $4 then now() end)",
        account.user_id,
        email,
        hash,
        verified
    )
    .execute(&mut *tx)
    .await;
    if email_taken(inserted)? {
        return Err(SignupError::EmailTaken);
    }
    // language=PostgreSQL
    sqlx::query!(
        "insert into memberships (user_id, org_id, role) values ($1, $2, 'owner')",
        account.user_id,
        account.org_id as _
    )
    .execute(&mut *tx)
    .await?;
    if !verified {
        queue_verification(&mut tx, account.user_id, email, None).await?;
    }
    tx.commit().await?;
    Ok(account)
}

impl From<TokenError> for model::error::AppError {
    fn from(e: TokenError) -> Self {
        match e {
            TokenError::Db(e) => e.into(),
            TokenError::Hashing(e) => e.into(),
            e => model::error::AppError::BadRequest(e.to_string()),
        }
    }
}

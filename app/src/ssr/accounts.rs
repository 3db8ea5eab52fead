//! Orgs and their users: sign-up and the `admin create-org` CLI share this.

use sqlx::PgPool;
use uuid::Uuid;
use validator::ValidateEmail;

#[derive(Debug, thiserror::Error)]
pub enum SignupError {
    #[error("an account with this email already exists")]
    EmailTaken,
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error(transparent)]
    Hashing(#[from] crate::ssr::throttle::HashError),
}

pub const MIN_PASSWORD_LEN: usize = 8;

#[derive(Debug, Clone, Copy)]
pub struct NewAccount {
    pub org_id: Uuid,
    pub user_id: Uuid,
}

/// Creates an org and its owner in one transaction.
pub async fn create_org_with_owner(
    pool: &PgPool,
    org_name: &str,
    email: &str,
    password: &str,
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
    let hash =
        crate::ssr::throttle::hashing(move || password_auth::generate_hash(password)).await?;

    let account = NewAccount {
        org_id: Uuid::new_v4(),
        user_id: Uuid::new_v4(),
    };
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    sqlx::query!(
        "insert into orgs (id, name) values ($1, $2)",
        account.org_id,
        org_name
    )
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    let inserted = sqlx::query!(
        "insert into users (id, email, password_hash) values ($1, $2, $3)",
        account.user_id,
        email,
        hash
    )
    .execute(&mut *tx)
    .await;
    match inserted {
        Err(sqlx::Error::Database(e)) if e.constraint() == Some("users_email_key") => {
            return Err(SignupError::EmailTaken)
        }
        other => other?,
    };
    // language=PostgreSQL
    sqlx::query!(
        "insert into memberships (user_id, org_id, role) values ($1, $2, 'owner')",
        account.user_id,
        account.org_id
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(account)
}

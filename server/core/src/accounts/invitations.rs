//! Invitations: an owner invites an address with a role; the emailed link (single use, 7 days)
//! creates the account or adds an existing one, and joins the org. The invitation row and its
//! email are written in the invite form's claim transaction; the link's use, the account, the
//! membership and the audit row in one transaction of their own.

use chrono::{DateTime, Utc};
use model::OrgId;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;
use validator::ValidateEmail;

use crate::accounts::audit::{self, Actor};
use crate::accounts::{new_token, token_hash, well_formed_token, TokenError};
use crate::outbox;
use model::{InvitationState, InvitationSummary, Role};

pub const TTL: chrono::Duration = chrono::Duration::days(7);

#[derive(Debug, thiserror::Error)]
pub enum InviteError {
    #[error("Enter a valid email address.")]
    BadEmail,
    #[error("{0} is already a member.")]
    AlreadyMember(String),
    #[error("{0} already has an open invitation: resend it instead.")]
    AlreadyInvited(String),
    #[error("No such invitation.")]
    NotFound,
    #[error("This invitation was already accepted.")]
    Accepted,
    /// The mail gate refused its email.
    #[error(transparent)]
    Mail(#[from] crate::mail::gate::Refused),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The email's payload: what it says and its link.
fn payload(email: &str, org_name: &str, role: Role, by: &str, token: &str) -> serde_json::Value {
    serde_json::json!({
        "to": email, "org_name": org_name, "role": role.as_str(), "invited_by": by, "token": token,
    })
}

/// Writes an invitation of `email` to `org` with `role` and its email, in the caller's transaction
/// (the invite form's claim). Returns the invitation's id.
pub async fn invite(
    tx: &mut PgConnection,
    org: OrgId,
    actor: &Actor,
    email: &str,
    role: Role,
    source_key: &str,
    gate: crate::mail::gate::Gate,
) -> Result<Uuid, InviteError> {
    let email = email.trim();
    if !email.validate_email() || email.len() > 254 {
        return Err(InviteError::BadEmail);
    }
    // language=PostgreSQL
    let member = sqlx::query_scalar!(
        r#"select exists (select from memberships m join users u on u.id = m.user_id
                          where m.org_id = $1 and lower(u.email) = lower($2)) as "m!""#,
        org as _,
        email
    )
    .fetch_one(&mut *tx)
    .await?;
    if member {
        return Err(InviteError::AlreadyMember(email.to_owned()));
    }
    // An open invitation that has expired no longer blocks a new one.
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update invitations set revoked_at = now()
        where org_id = $1 and lower(email) = lower($2) and accepted_at is null
          and revoked_at is null and expires_at <= now()
        "#,
        org as _,
        email
    )
    .execute(&mut *tx)
    .await?;
    let (token, hash) = new_token();
    let id = Uuid::now_v7();
    // language=PostgreSQL
    let inserted = sqlx::query_scalar!(
        r#"
        insert into invitations (id, org_id, email, role, token_hash, invited_by, source_key, expires_at)
        values ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8))
        returning (select name from orgs where id = $2) as "org_name!"
        "#,
        id,
        org as _,
        email,
        role.as_str(),
        hash,
        actor.id,
        source_key,
        TTL.num_seconds() as f64,
    )
    .fetch_one(&mut *tx)
    .await;
    let org_name = match inserted {
        Err(sqlx::Error::Database(e)) if e.constraint() == Some("invitations_open_email_key") => {
            return Err(InviteError::AlreadyInvited(email.to_owned()))
        }
        other => other?,
    };
    let permit = gate.permit(tx, org, email).await??;
    outbox::enqueue_email(
        tx,
        permit,
        None,
        outbox::MailKind::Invitation,
        payload(email, &org_name, role, &actor.email, &token),
    )
    .await?;
    audit::record(
        tx,
        org,
        actor,
        "invitation.sent",
        email,
        serde_json::json!({"invitation_id": id, "role": role.as_str()}),
    )
    .await?;
    Ok(id)
}

/// Sends an open invitation again with a new link (the old link stops working) and a fresh 7 days,
/// in the caller's transaction (the resend button's claim), through the mail `gate`.
pub async fn resend(
    tx: &mut PgConnection,
    org: OrgId,
    actor: &Actor,
    id: Uuid,
    gate: crate::mail::gate::Gate,
) -> Result<Uuid, InviteError> {
    let (token, hash) = new_token();
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        update invitations i set token_hash = $3, expires_at = now() + make_interval(secs => $4)
        from orgs o
        where i.id = $1 and i.org_id = $2 and o.id = i.org_id
          and i.accepted_at is null and i.revoked_at is null
        returning i.email, i.role, o.name as org_name
        "#,
        id,
        org as _,
        hash,
        TTL.num_seconds() as f64,
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(InviteError::NotFound)?;
    let role = Role::stored(&row.role);
    let permit = gate.permit(tx, org, &row.email).await??;
    outbox::enqueue_email(
        tx,
        permit,
        None,
        outbox::MailKind::Invitation,
        payload(&row.email, &row.org_name, role, &actor.email, &token),
    )
    .await?;
    audit::record(
        tx,
        org,
        actor,
        "invitation.resent",
        &row.email,
        serde_json::json!({"invitation_id": id}),
    )
    .await?;
    Ok(id)
}

/// Revokes an open invitation (its link then explains that it was revoked), in the caller's
/// transaction. Revoking a revoked one is done already; an accepted one cannot be.
pub async fn revoke(
    tx: &mut PgConnection,
    org: OrgId,
    actor: &Actor,
    id: Uuid,
) -> Result<Uuid, InviteError> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select email, accepted_at is not null as "accepted!", revoked_at is not null as "revoked!"
        from invitations where id = $1 and org_id = $2 for update
        "#,
        id,
        org as _
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(InviteError::NotFound)?;
    if row.accepted {
        return Err(InviteError::Accepted);
    }
    if !row.revoked {
        // language=PostgreSQL
        sqlx::query!(
            "update invitations set revoked_at = now() where id = $1",
            id
        )
        .execute(&mut *tx)
        .await?;
        audit::record(
            tx,
            org,
            actor,
            "invitation.revoked",
            &row.email,
            serde_json::json!({"invitation_id": id}),
        )
        .await?;
    }
    Ok(id)
}

/// Withdraws every open invitation `inviter` sent, in every org, in the caller's transaction (their
/// links then say they were revoked); each is in its org's audit log. Returns the org of each.
pub async fn withdraw_sent_by(
    tx: &mut PgConnection,
    inviter: Uuid,
    actor: &Actor,
) -> sqlx::Result<Vec<Uuid>> {
    // language=PostgreSQL
    let withdrawn = sqlx::query!(
        r#"
        update invitations set revoked_at = now()
        where invited_by = $1 and accepted_at is null and revoked_at is null
        returning id, org_id, email
        "#,
        inviter
    )
    .fetch_all(&mut *tx)
    .await?;
    for invitation in &withdrawn {
        audit::record(
            tx,
            invitation.org_id.into(),
            actor,
            "invitation.revoked",
            &invitation.email,
            serde_json::json!({"invitation_id": invitation.id, "because": "credentials_reset"}),
        )
        .await?;
    }
    Ok(withdrawn.into_iter().map(|i| i.org_id).collect())
}

/// The org's invitations, newest first (the last 100).
pub async fn list(pool: &PgPool, org: OrgId) -> sqlx::Result<Vec<InvitationSummary>> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        select i.id, i.email, i.role, u.email as "invited_by?",
               i.created_at as "created_at: DateTime<Utc>", i.expires_at as "expires_at: DateTime<Utc>",
               i.accepted_at as "accepted_at: DateTime<Utc>", i.revoked_at as "revoked_at: DateTime<Utc>"
        from invitations i left join users u on u.id = i.invited_by
        where i.org_id = $1
        order by i.created_at desc, i.id desc
        limit 100
        "#,
        org as _
    )
    .map(|r| InvitationSummary {
        id: r.id,
        email: r.email,
        role: Role::stored(&r.role),
        invited_by: r.invited_by,
        created_at: r.created_at,
        expires_at: r.expires_at,
        accepted_at: r.accepted_at,
        revoked_at: r.revoked_at,
        state: InvitationState::at(Utc::now(), r.expires_at, r.accepted_at, r.revoked_at),
    })
    .fetch_all(pool)
    .await
}

/// What an invitation link shows before it is used.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Preview {
    pub org_name: String,
    pub email: String,
    pub role: Role,
    /// An account with this address exists: accepting asks for its password.
    pub existing_account: bool,
}

/// The invitation behind a link, or why it cannot be used.
pub async fn preview(pool: &PgPool, token: &str) -> Result<Preview, TokenError> {
    let token = well_formed_token(token).ok_or(TokenError::Unknown)?;
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select i.email, i.role, o.name as org_name,
               i.accepted_at is not null as "accepted!", i.revoked_at is not null as "revoked!",
               i.expires_at <= now() as "expired!",
               exists (select from users u where lower(u.email) = lower(i.email)) as "existing!"
        from invitations i join orgs o on o.id = i.org_id
        where i.token_hash = $1
        "#,
        token_hash(token)
    )
    .fetch_optional(pool)
    .await?
    .ok_or(TokenError::Unknown)?;
    if row.accepted {
        return Err(TokenError::Used);
    }
    if row.revoked {
        return Err(TokenError::Invalid(format!(
            "This invitation to {} was withdrawn. Ask an owner of {} for a new one.",
            row.org_name, row.org_name
        )));
    }
    if row.expired {
        return Err(TokenError::Expired);
    }
    Ok(Preview {
        org_name: row.org_name,
        email: row.email,
        role: Role::stored(&row.role),
        existing_account: row.existing,
    })
}

/// Who accepted, and where they now belong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepted {
    pub user: Uuid,
    pub org: OrgId,
    pub role: Role,
}

/// Accepts an invitation with `password`: the password of the existing account with the invited
/// address, or the new account's. The link's use, the account, the membership and the audit row
/// commit together; two uses of one link at once make one account and one membership (the second
/// waits on the invitation's row, then finds it accepted).
/// Whether the inviter of the invitation with `hash` may still grant its role.
async fn inviter_may_grant(pool: &PgPool, hash: &[u8]) -> sqlx::Result<bool> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"
        select exists (
            select from invitations i join memberships m
              on m.user_id = i.invited_by and m.org_id = i.org_id
            where i.token_hash = $1 and role_rank(m.role) >= role_rank(i.role)
        ) as "may!"
        "#,
        hash
    )
    .fetch_one(pool)
    .await
}

pub async fn accept(pool: &PgPool, token: &str, password: &str) -> Result<Accepted, TokenError> {
    let token = well_formed_token(token).ok_or(TokenError::Unknown)?;
    let hash = token_hash(token);
    let existing = preview(pool, token).await?;
    // The slow part (password hashing) before the transaction, so no row is locked while it runs:
    // the existing account's password checked against its hash as read now, or the new account's
    // password hashed.
    enum Who {
        Existing { id: Uuid, hash: String },
        New { hash: String },
    }
    let who = if existing.existing_account {
        // language=PostgreSQL
        let user = sqlx::query!(
            "select id, password_hash from users where lower(email) = lower($1)",
            existing.email
        )
        .fetch_optional(pool)
        .await?
        .ok_or_else(|| {
            TokenError::Invalid(
                "The account with this address was removed. Open the link again.".into(),
            )
        })?;
        let (password, stored) = (password.to_owned(), user.password_hash.clone());
        let ok = crate::throttle::hashing(move || {
            password_auth::verify_password(password, &stored).is_ok()
        })
        .await?;
        if !ok {
            return Err(TokenError::Invalid(format!(
                "That is not the password of the account {}.",
                existing.email
            )));
        }
        Who::Existing {
            id: user.id,
            hash: user.password_hash,
        }
    } else {
        crate::accounts::check_password(password)?;
        let password = password.to_owned();
        Who::New {
            hash: crate::throttle::hashing(move || password_auth::generate_hash(password)).await?,
        }
    };
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let invitation = sqlx::query!(
        r#"
        update invitations i set accepted_at = now()
        where i.token_hash = $1 and i.accepted_at is null and i.revoked_at is null
          and i.expires_at > now()
          -- The inviter may still grant the role: a member of the org ranked at least as high.
          and exists (
              select from memberships m
              where m.user_id = i.invited_by and m.org_id = i.org_id
                and role_rank(m.role) >= role_rank(i.role))
        returning i.id, i.org_id, i.email, i.role
        "#,
        hash
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(invitation) = invitation else {
        drop(tx);
        // Someone used it (or it was revoked) meanwhile, or its inviter lost the right: say which.
        return Err(match preview(pool, token).await {
            Ok(_) if !inviter_may_grant(pool, &hash).await? => TokenError::Invalid(
                "This invitation no longer holds: the person who sent it cannot grant this role \
                 any more. Ask an owner of the organisation for a new one."
                    .into(),
            ),
            Ok(_) => TokenError::Used,
            Err(e) => e,
        });
    };
    let user = match who {
        Who::Existing { id, hash } => {
            // Following the link proved the address. The password checked above must still be the
            // account's (it could have been reset meanwhile).
            // language=PostgreSQL
            let still = sqlx::query_scalar!(
                r#"
                update users set email_verified_at = coalesce(email_verified_at, now())
                where id = $1 and password_hash = $2
                returning id
                "#,
                id,
                hash
            )
            .fetch_optional(&mut *tx)
            .await?;
            still.ok_or_else(|| {
                TokenError::Invalid(
                    "The account's password changed meanwhile. Open the link again.".into(),
                )
            })?
        }
        Who::New { hash } => {
            let id = Uuid::now_v7();
            // language=PostgreSQL
            let made = sqlx::query!(
                "insert into users (id, email, password_hash, email_verified_at) values ($1, $2, $3, now())",
                id,
                invitation.email,
                hash
            )
            .execute(&mut *tx)
            .await;
            if crate::accounts::email_taken(made)? {
                // The account was made meanwhile (its own sign-up): accept with its password.
                return Err(TokenError::Invalid(
                    "An account with this address was just created. Open the link again and \
                     enter its password."
                        .into(),
                ));
            }
            id
        }
    };
    let role = Role::stored(&invitation.role);
    let role =
        crate::accounts::members::join(&mut tx, invitation.org_id.into(), user, role).await?;
    let actor = Actor::user(user, &invitation.email);
    audit::record(
        &mut tx,
        invitation.org_id.into(),
        &actor,
        "invitation.accepted",
        &invitation.email,
        serde_json::json!({"invitation_id": invitation.id, "role": role.as_str()}),
    )
    .await?;
    // language=PostgreSQL
    sqlx::query!(
        "update invitations set accepted_by = $2 where id = $1",
        invitation.id,
        user
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Accepted {
        user,
        org: invitation.org_id.into(),
        role,
    })
}

impl From<InviteError> for model::error::AppError {
    fn from(e: InviteError) -> Self {
        match e {
            InviteError::NotFound => model::error::AppError::NotFound,
            InviteError::BadEmail => {
                model::error::AppError::field("email", "Enter a valid email address.")
            }
            e @ (InviteError::AlreadyMember(_) | InviteError::AlreadyInvited(_)) => {
                model::error::AppError::field("email", &e.to_string())
            }
            e @ InviteError::Accepted => model::error::AppError::BadRequest(e.to_string()),
            InviteError::Db(e) => e.into(),
            InviteError::Mail(refused) => refused.into(),
        }
    }
}

//! An org's members: roles, removal, switching orgs. Every change takes the org's row lock first, so
//! changes to one org's members happen one at a time and the last-owner rule is checked against
//! the members as they are at commit: two owners demoting each other at once leave one owner.

use chrono::{DateTime, Utc};
use model::OrgId;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::accounts::audit::{self, Actor};
use model::{Member, Role};

#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    #[error("no such member")]
    NotFound,
    #[error("an org needs an owner: make someone else an owner first")]
    LastOwner,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The org's members, owners first, then by when they joined.
pub async fn list(pool: &PgPool, org: OrgId) -> sqlx::Result<Vec<Member>> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        select u.id, u.email, m.role, u.email_verified_at is not null as "verified!",
               m.created_at as "joined: DateTime<Utc>"
        from memberships m join users u on u.id = m.user_id
        where m.org_id = $1
        order by role_rank(m.role) desc, m.created_at, u.id
        "#,
        org as _
    )
    .map(|r| Member {
        role: Role::stored(&r.role),
        user_id: r.id,
        email: r.email,
        verified: r.verified,
        joined: r.joined,
    })
    .fetch_all(pool)
    .await
}

/// Takes `org`'s row lock for the rest of the transaction: membership changes of one org queue here.
async fn lock_org(tx: &mut PgConnection, org: OrgId) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!("select id from orgs where id = $1 for update", org as _)
        .fetch_optional(&mut *tx)
        .await?;
    Ok(())
}

/// The member's current role, and how many owners the org has, under the org's lock.
async fn role_and_owners(
    tx: &mut PgConnection,
    org: OrgId,
    user: Uuid,
) -> Result<(Role, i64), MemberError> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select m.role as "role!",
               (select count(*) from memberships o where o.org_id = $1 and o.role = 'owner') as "owners!"
        from memberships m where m.org_id = $1 and m.user_id = $2
        "#,
        org as _,
        user
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(MemberError::NotFound)?;
    Ok((Role::stored(&row.role), row.owners))
}

/// Gives `user` the role `role` in `org`; refuses to demote the last owner. Returns the email of
/// the member changed.
pub async fn change_role(
    tx: &mut PgConnection,
    org: OrgId,
    actor: &Actor,
    user: Uuid,
    role: Role,
) -> Result<String, MemberError> {
    lock_org(tx, org).await?;
    let (current, owners) = role_and_owners(tx, org, user).await?;
    if current == Role::Owner && role != Role::Owner && owners <= 1 {
        return Err(MemberError::LastOwner);
    }
    // language=PostgreSQL
    let email = sqlx::query_scalar!(
        r#"
        update memberships m set role = $3 from users u
        where m.org_id = $1 and m.user_id = $2 and u.id = m.user_id
        returning u.email
        "#,
        org as _,
        user,
        role.as_str()
    )
    .fetch_one(&mut *tx)
    .await?;
    if current != role {
        withdraw_invitations_above(tx, org, user, Some(role)).await?;
        audit::record(
            tx,
            org,
            actor,
            "member.role_changed",
            &email,
            serde_json::json!({"user_id": user, "from": current.as_str(), "to": role.as_str()}),
        )
        .await?;
    }
    Ok(email)
}

/// Withdraws the open invitations `inviter` sent in `org` for a role above `role` (every one when
/// they are no longer a member): nobody joins on the authority of someone who no longer has it.
async fn withdraw_invitations_above(
    tx: &mut PgConnection,
    org: OrgId,
    inviter: Uuid,
    role: Option<Role>,
) -> sqlx::Result<u64> {
    // language=PostgreSQL
    let withdrawn = sqlx::query!(
        r#"
        update invitations set revoked_at = now()
        where org_id = $1 and invited_by = $2 and accepted_at is null and revoked_at is null
          and ($3::text is null or role_rank(role) > role_rank($3))
        "#,
        org as _,
        inviter,
        role.map(Role::as_str)
    )
    .execute(&mut *tx)
    .await?;
    Ok(withdrawn.rows_affected())
}

/// Removes `user` from `org` (an owner removing a member, or a member leaving): refuses to remove
/// the last owner; ends the user's sessions acting for the org and revokes the API keys they made
/// there, in the same transaction. Returns the email of the member removed.
pub async fn remove(
    tx: &mut PgConnection,
    org: OrgId,
    actor: &Actor,
    user: Uuid,
) -> Result<String, MemberError> {
    lock_org(tx, org).await?;
    let (current, owners) = role_and_owners(tx, org, user).await?;
    if current == Role::Owner && owners <= 1 {
        return Err(MemberError::LastOwner);
    }
    // language=PostgreSQL
    let email = sqlx::query_scalar!(
        r#"
        with gone as (delete from memberships where org_id = $1 and user_id = $2 returning user_id)
        select u.email from users u join gone on gone.user_id = u.id
        "#,
        org as _,
        user
    )
    .fetch_one(&mut *tx)
    .await?;
    withdraw_invitations_above(tx, org, user, None).await?;
    // language=PostgreSQL
    sqlx::query!(
        "update user_sessions set ended_at = now() where user_id = $1 and org_id = $2 and ended_at is null",
        user,
        org as _
    )
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    sqlx::query!(
        "update api_keys set revoked_at = now() where created_by = $1 and org_id = $2 and revoked_at is null",
        user,
        org as _
    )
    .execute(&mut *tx)
    .await?;
    let action = if actor.id == Some(user) {
        "member.left"
    } else {
        "member.removed"
    };
    audit::record(
        tx,
        org,
        actor,
        action,
        &email,
        serde_json::json!({"user_id": user, "role": current.as_str()}),
    )
    .await?;
    Ok(email)
}

/// Adds `user` to `org` with `role` in the caller's transaction (an accepted invitation); an
/// existing membership keeps the higher of the two roles. Returns the role they end up with.
pub async fn join(tx: &mut PgConnection, org: OrgId, user: Uuid, role: Role) -> sqlx::Result<Role> {
    // language=PostgreSQL
    let role = sqlx::query_scalar!(
        r#"
        insert into memberships (user_id, org_id, role) values ($1, $2, $3)
        on conflict (user_id, org_id) do update
            set role = case when role_rank(excluded.role) > role_rank(memberships.role)
                            then excluded.role else memberships.role end
        returning role
        "#,
        user,
        org as _,
        role.as_str()
    )
    .fetch_one(&mut *tx)
    .await?;
    Ok(Role::stored(&role))
}

/// The orgs `user` belongs to, for the org switcher: (id, name, role), by name.
pub async fn orgs_of(pool: &PgPool, user: Uuid) -> sqlx::Result<Vec<(Uuid, String, Role)>> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        select o.id, o.name, m.role
        from memberships m join orgs o on o.id = m.org_id
        where m.user_id = $1
        order by o.name, o.id
        "#,
        user
    )
    .map(|r| (r.id, r.name, Role::stored(&r.role)))
    .fetch_all(pool)
    .await
}

/// Points the session `session` of `user` at `org`, if they are a member of it; false otherwise.
/// Every later request of the session acts for that org.
pub async fn switch_org(
    pool: &PgPool,
    user: Uuid,
    session: Uuid,
    org: OrgId,
) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        r#"
        update user_sessions s set org_id = $3
        where s.id = $1 and s.user_id = $2 and s.ended_at is null
          and exists (select from memberships m where m.user_id = $2 and m.org_id = $3)
        "#,
        session,
        user,
        org as _
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

impl From<MemberError> for model::error::AppError {
    fn from(e: MemberError) -> Self {
        match e {
            MemberError::NotFound => model::error::AppError::NotFound,
            MemberError::LastOwner => model::error::AppError::BadRequest(
                "An organisation needs an owner: make someone else an owner first.".into(),
            ),
            MemberError::Db(e) => e.into(),
        }
    }
}

//! The audit log: who changed membership, roles, API keys and passwords, and when. Rows are written
//! in the transaction of the change they record, so the log never shows a change that did not
//! happen or misses one that did.

use chrono::{DateTime, Utc};
use model::OrgId;
use serde_json::Value as JsonValue;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use model::AuditEntry;

/// Who did it.
#[derive(Debug, Clone)]
pub struct Actor {
    pub id: Option<Uuid>,
    pub email: String,
}

impl Actor {
    pub fn user(id: Uuid, email: &str) -> Self {
        Actor {
            id: Some(id),
            email: email.to_owned(),
        }
    }

    /// The operator's command line.
    pub fn operator() -> Self {
        Actor {
            id: None,
            email: "operator (server admin)".to_owned(),
        }
    }
}

/// One row in `org`'s log, in the caller's transaction.
pub async fn record(
    tx: &mut PgConnection,
    org: OrgId,
    actor: &Actor,
    action: &str,
    subject: &str,
    detail: JsonValue,
) -> sqlx::Result<()> {
    let subject: String = subject.chars().take(300).collect();
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into audit_events (id, org_id, actor_id, actor_email, action, subject, detail)
        values ($1, $2, $3, $4, $5, $6, $7)
        "#,
        Uuid::now_v7(),
        org as _,
        actor.id,
        actor.email,
        action,
        subject,
        detail
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// One row in the log of every org `user` belongs to (a change to the user's own account).
pub async fn record_for_user(
    tx: &mut PgConnection,
    user: Uuid,
    actor: &Actor,
    action: &str,
    subject: &str,
) -> sqlx::Result<()> {
    let subject: String = subject.chars().take(300).collect();
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into audit_events (id, org_id, actor_id, actor_email, action, subject)
        select gen_random_uuid(), m.org_id, $2, $3, $4, $5
        from memberships m where m.user_id = $1
        "#,
        user,
        actor.id,
        actor.email,
        action,
        subject
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// A page of `org`'s log, newest first, before the row `before` (a keyset cursor).
pub async fn page(
    pool: &PgPool,
    org: OrgId,
    before: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<AuditEntry>> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        select id, created_at as "at: DateTime<Utc>", actor_email, action, subject
        from audit_events
        where org_id = $1
          and ($2::uuid is null or (created_at, id) < (select created_at, id from audit_events
                                                         where id = $2 and org_id = $1))
        order by created_at desc, id desc
        limit $3
        "#,
        org as _,
        before,
        limit
    )
    .map(|r| AuditEntry {
        id: r.id,
        at: r.at,
        actor: r.actor_email,
        action: r.action,
        subject: r.subject,
    })
    .fetch_all(pool)
    .await
}

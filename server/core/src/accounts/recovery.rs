//! What a password reset or change takes back: whoever held the account before may have left keys
//! behind. In the transaction of the reset or change, every API key the user made is revoked, every
//! open invitation they sent is withdrawn, and every webhook endpoint they registered in the last
//! seven days is disabled; each is in its org's audit log, and every other owner of each org is
//! told what was taken back (with a link that enables an endpoint again).

use std::collections::BTreeMap;
use std::net::IpAddr;

use sqlx::PgConnection;
use uuid::Uuid;

use crate::accounts::audit::Actor;
use crate::webhooks_out::Disabled;

/// What was taken back, in all of the user's orgs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TakenBack {
    pub api_keys: usize,
    pub invitations: usize,
    pub endpoints: Vec<Disabled>,
}

/// Takes back what the account left behind, in the caller's transaction, and tells every other
/// owner of each of the user's orgs. `event` names what happened (`password_reset`,
/// `password_changed`).
pub async fn take_back(
    tx: &mut PgConnection,
    user: Uuid,
    actor: &Actor,
    event: super::Notice,
    client: IpAddr,
) -> sqlx::Result<TakenBack> {
    let keys = crate::accounts::api_keys::revoke_all_own(tx, actor).await?;
    let invitations = crate::accounts::invitations::withdraw_sent_by(tx, user, actor).await?;
    let endpoints = crate::webhooks_out::disable_registered_by(tx, user, actor).await?;
    // Per org: what was taken back there.
    let mut per_org: BTreeMap<Uuid, (usize, usize, Vec<&Disabled>)> = BTreeMap::new();
    for org in &keys {
        per_org.entry(*org).or_default().0 += 1;
    }
    for org in &invitations {
        per_org.entry(*org).or_default().1 += 1;
    }
    for endpoint in &endpoints {
        per_org
            .entry(endpoint.org.uuid())
            .or_default()
            .2
            .push(endpoint);
    }
    let at = chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string();
    // Every org of the user hears of it, whether or not anything was taken back there: an owner
    // learns that a member's password changed hands.
    // language=PostgreSQL
    let orgs = sqlx::query!(
        r#"select m.org_id, o.name from memberships m join orgs o on o.id = m.org_id
           where m.user_id = $1"#,
        user
    )
    .fetch_all(&mut *tx)
    .await?;
    for org in orgs {
        let (keys, invitations, disabled) = per_org.remove(&org.org_id).unwrap_or_default();
        let endpoints: Vec<_> = disabled
            .iter()
            .map(|e| serde_json::json!({"id": e.id, "url": e.url}))
            .collect();
        // language=PostgreSQL
        sqlx::query!(
            r#"
            insert into outbox (id, org_id, kind, payload)
            select gen_random_uuid(), $1, 'credentials_notice',
                   jsonb_build_object('to', u.email, 'member', $3::text, 'org_name', $4::text,
                                      'event', $5::text, 'at', $6::text, 'client', $7::text,
                                      'api_keys', $8::int, 'invitations', $9::int,
                                      'endpoints', $10::jsonb)
            from memberships m join users u on u.id = m.user_id
            where m.org_id = $1 and m.role = 'owner' and m.user_id <> $2
            "#,
            org.org_id as _,
            user,
            actor.email,
            org.name,
            event.as_str(),
            at,
            client.to_string(),
            keys as i32,
            invitations as i32,
            serde_json::Value::Array(endpoints),
        )
        .execute(&mut *tx)
        .await?;
    }
    Ok(TakenBack {
        api_keys: keys.len(),
        invitations: invitations.len(),
        endpoints,
    })
}

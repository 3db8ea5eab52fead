//! The one gate for email sent in an org's name (invoices, quotes, reminders, invitations): the
//! sender's address must be verified, the org may send so many an hour and one address receive so
//! many an hour, whichever org sends them. What passes gets a [`Permit`]: the outbox queues no
//! email in an org's name without one ([`crate::outbox::enqueue_email`]), so no surface can
//! forget the gate. The allowance is counted in Postgres, from the rows the gate let through, so
//! it holds across every process and worker.
//!
//! A member or an API key beyond the allowance is refused (429, with when to come back); the org's
//! own schedules and reminders are never refused for it: their email waits for its slot, the
//! first moment the hour allows it.

use model::OrgId;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

/// How much mail in an org's name may go out per hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowance {
    /// Emails one org may send per hour (EMAILS_PER_ORG_HOUR).
    pub per_org_hour: u32,
    /// Emails one address may receive per hour from all orgs together
    /// (EMAILS_PER_RECIPIENT_HOUR): nobody's inbox can be flooded through us.
    pub per_recipient_hour: u32,
}

impl Allowance {
    pub const DEFAULT: Allowance = Allowance {
        per_org_hour: 100,
        per_recipient_hour: 50,
    };

    /// The allowance the deployment's limits set.
    pub fn of(limits: &crate::throttle::Limits) -> Allowance {
        Allowance {
            per_org_hour: limits.emails_per_org_hour,
            per_recipient_hour: limits.emails_per_recipient_hour,
        }
    }
}

impl Default for Allowance {
    fn default() -> Self {
        Allowance::DEFAULT
    }
}

/// Who an email in an org's name is sent for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// A member, from a page: their own address must be verified.
    Member { verified: bool },
    /// An API key: the address of the member who made it must be verified.
    ApiKey(Uuid),
    /// The org's own automation (schedules, reminders, a quote's acceptance): one of its owners'
    /// addresses must be verified. Beyond the allowance their email waits for its slot.
    Automatic,
}

/// Why an email was not let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(
        "Verify your email address first (the link we sent you) to send email in your \
         organisation's name."
    )]
    Unverified,
    #[error("Your organisation has sent as much email as it may this hour (or this address has received as much as it may). Try again later.")]
    Allowance { retry_after: Duration },
}

/// Leave to queue one email in an org's name to one recipient. Only [`Gate::permit`] makes one, and
/// [`crate::outbox::enqueue_email`] takes it (used once).
#[derive(Debug)]
#[must_use = "a permit is spent by queueing its email"]
pub struct Permit {
    pub(crate) org: OrgId,
    pub(crate) recipient: String,
    /// When the email counts against the allowances, and may be sent: now, or its slot.
    pub(crate) at: DateTime<Utc>,
}

impl Permit {
    /// When the email may go out.
    pub fn at(&self) -> DateTime<Utc> {
        self.at
    }
}

/// The gate a sender passes, with the allowance in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    pub allowance: Allowance,
    pub sender: Sender,
    /// Beyond the allowance the email waits for its slot instead of being refused: the org's own
    /// automation, and an API write whose allowance was checked before its key was claimed (a
    /// refusal there could not be answered without storing it as the key's answer).
    wait: bool,
}

/// A recipient as the allowance counts it: trimmed, lowercased, at most 320 bytes.
fn recipient_key(to: &str) -> String {
    crate::throttle::email_key(to)
}

impl Gate {
    pub fn new(allowance: Allowance, sender: Sender) -> Gate {
        Gate {
            allowance,
            sender,
            wait: sender == Sender::Automatic,
        }
    }

    /// This gate, its emails waiting for their slot beyond the allowance instead of refused.
    pub fn waiting(self) -> Gate {
        Gate { wait: true, ..self }
    }

    /// What [`Gate::permit`] would say now, without holding anything: what an API write asks before
    /// it claims its key (so a refusal is not stored as the key's answer).
    pub async fn check(
        &self,
        conn: &mut PgConnection,
        org: OrgId,
        to: &str,
    ) -> sqlx::Result<Result<(), Refused>> {
        if !self.sender_verified(conn, org).await? {
            return Ok(Err(Refused::Unverified));
        }
        let (at, now) = self.slot(conn, org, &recipient_key(to)).await?;
        Ok(self.refusal(at, now).map_or(Ok(()), Err))
    }

    /// Beyond the allowance (the slot is later than now), for a gate that does not wait: refused,
    /// with when to come back.
    fn refusal(&self, at: DateTime<Utc>, now: DateTime<Utc>) -> Option<Refused> {
        (at > now && !self.wait).then(|| {
            let wait = (at - now).to_std().unwrap_or(Duration::from_secs(1));
            Refused::Allowance {
                retry_after: wait.max(Duration::from_secs(1)),
            }
        })
    }

    /// Lets one email of `org` to `to` through, in the caller's transaction (which queues it): the
    /// sender checked, then the org's and the recipient's last hour counted. Two sends at once are
    /// counted one after the other (the org, then the recipient, locked for the transaction).
    pub async fn permit(
        &self,
        tx: &mut PgConnection,
        org: OrgId,
        to: &str,
    ) -> sqlx::Result<Result<Permit, Refused>> {
        if !self.sender_verified(tx, org).await? {
            return Ok(Err(Refused::Unverified));
        }
        let recipient = recipient_key(to);
        // The org first, then the recipient, in two statements: always in this order.
        for lock in [format!("mail-org:{org}"), format!("mail-to:{recipient}")] {
            // language=PostgreSQL
            sqlx::query!(
                r#"select 1 as "locked!" from (select pg_advisory_xact_lock(hashtextextended($1, 0))) l"#,
                lock
            )
            .fetch_one(&mut *tx)
            .await?;
        }
        let (at, now) = self.slot(tx, org, &recipient).await?;
        if let Some(refused) = self.refusal(at, now) {
            return Ok(Err(refused));
        }
        Ok(Ok(Permit { org, recipient, at }))
    }

    /// The earliest moment at which the last hour holds fewer than the allowance, for the org and
    /// for the recipient: an hour after the allowance-th latest email of each (the slots of emails
    /// still waiting included, so waiting ones are spread out, not released at once); and now.
    async fn slot(
        &self,
        conn: &mut PgConnection,
        org: OrgId,
        recipient: &str,
    ) -> sqlx::Result<(DateTime<Utc>, DateTime<Utc>)> {
        // language=PostgreSQL
        let slot = sqlx::query!(
            r#"
            select greatest(
                       now(),
                       (select gated_at from outbox where org_id = $1 and gated_at is not null
                        order by gated_at desc offset $3 limit 1) + interval '1 hour',
                       (select gated_at from outbox where lower(recipient) = $2 and gated_at is not null
                        order by gated_at desc offset $4 limit 1) + interval '1 hour'
                   ) as "at!: DateTime<Utc>",
                   now() as "now!: DateTime<Utc>"
            "#,
            org as _,
            recipient,
            i64::from(self.allowance.per_org_hour.max(1)) - 1,
            i64::from(self.allowance.per_recipient_hour.max(1)) - 1,
        )
        .fetch_one(&mut *conn)
        .await?;
        Ok((slot.at, slot.now))
    }

    async fn sender_verified(&self, tx: &mut PgConnection, org: OrgId) -> sqlx::Result<bool> {
        match self.sender {
            Sender::Member { verified } => Ok(verified),
            Sender::ApiKey(key) => {
                // language=PostgreSQL
                sqlx::query_scalar!(
                    r#"
                    select exists (select from api_keys k join users u on u.id = k.created_by
                                   where k.id = $1 and k.org_id = $2
                                     and u.email_verified_at is not null) as "ok!"
                    "#,
                    key,
                    org as _
                )
                .fetch_one(&mut *tx)
                .await
            }
            Sender::Automatic => {
                // language=PostgreSQL
                sqlx::query_scalar!(
                    r#"
                    select exists (select from memberships m join users u on u.id = m.user_id
                                   where m.org_id = $1 and m.role = 'owner'
                                     and u.email_verified_at is not null) as "ok!"
                    "#,
                    org as _
                )
                .fetch_one(&mut *tx)
                .await
            }
        }
    }
}

impl From<Refused> for model::error::AppError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Unverified => model::error::AppError::Forbidden(refused.to_string()),
            Refused::Allowance { retry_after } => {
                model::error::AppError::Throttled(retry_after.as_secs().max(1))
            }
        }
    }
}

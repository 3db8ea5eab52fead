//! The claim: the one mechanism every surface (form, webhook, API, job) uses to make a repeat harmless.
//!
//! A claim is a row keyed `(surface, owner, key)`: the key names the *attempt* and is minted where the
//! attempt is born (the form at render, Stripe's event id, the client's Idempotency-Key, a job's run
//! id). Two shapes, one table:
//!
//! - [`claim`]: the claim commits with its work. It is inserted with `ON CONFLICT DO NOTHING` inside
//!   the caller's open transaction, the caller does its work in that same transaction, [`finish`]es,
//!   and commits. Claim and work commit together or not at all: claiming in one commit and working in
//!   another would turn a crash between them into a silent loss (the attempt looks done while nothing
//!   happened). Nobody else ever sees such a claim before it is done.
//! - [`lease`]: for work that leaves the database (email, a third party). The claim is committed
//!   `in_progress` with a lease before the side effect; a fresh lease answers `Busy`, a stale one is
//!   taken over. The [`Lease`] carries its fencing token, and only it can complete or release the
//!   claim: a holder whose lease was taken over can record nothing.
//!
//! At READ COMMITTED a concurrent insert of the same key waits for the first transaction and then sees
//! its committed row (or wins, if the first rolled back). Do not run claims at REPEATABLE READ or
//! SERIALIZABLE: there the loser gets a serialization failure instead of the winner's result.

use std::time::Duration;

use serde_json::Value as JsonValue;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// Where an attempt arrives: names claims, log events, metrics and the activity page alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// A form or button of the web app: `(org/form, key minted at render)`.
    Form,
    /// A Stripe webhook delivery: `(stripe account, event id)`.
    Webhook,
    /// The JSON API: `(api client id, Idempotency-Key)`.
    Api,
    /// A background job: `(queue, run id)`.
    Job,
    /// A call out to a third party: `(service/call, the attempt's stable key)`.
    Outbound,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Form => "form",
            Surface::Webhook => "webhook",
            Surface::Api => "api",
            Surface::Job => "job",
            Surface::Outbound => "outbound",
        }
    }
}

/// The forms whose keys are claimed. Each has its own namespace: a key minted for one form can never
/// be answered with another form's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    CreateInvoice,
    SendInvoice,
    /// A lifecycle button (finalize, void, ...), by the name its caller gives it: this module
    /// knows the buttons only by name.
    InvoiceAction(&'static str),
    DuplicateInvoice,
    EditDraft,
    CreateCustomer,
    EditCustomer,
    EditOrgSettings,
    AddTaxRate,
    ArchiveTaxRate,
    InviteMember,
    ResendInvitation,
    RevokeInvitation,
    ChangeRole,
    RemoveMember,
    LeaveOrg,
    CreateApiKey,
    /// "Revoke them all" on the account page: every live key the account made.
    RevokeOwnApiKeys,
}

impl Form {
    pub fn as_str(self) -> &'static str {
        match self {
            Form::CreateInvoice => "create_invoice",
            Form::SendInvoice => "send_invoice",
            Form::InvoiceAction(name) => name,
            Form::DuplicateInvoice => "duplicate_invoice",
            Form::EditDraft => "edit_draft",
            Form::CreateCustomer => "create_customer",
            Form::EditCustomer => "edit_customer",
            Form::EditOrgSettings => "edit_org_settings",
            Form::AddTaxRate => "add_tax_rate",
            Form::ArchiveTaxRate => "archive_tax_rate",
            Form::InviteMember => "invite_member",
            Form::ResendInvitation => "resend_invitation",
            Form::RevokeInvitation => "revoke_invitation",
            Form::ChangeRole => "change_role",
            Form::RemoveMember => "remove_member",
            Form::LeaveOrg => "leave_org",
            Form::CreateApiKey => "create_api_key",
            Form::RevokeOwnApiKeys => "revoke_own_api_keys",
        }
    }
}

/// Names one attempt, scoped to its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimKey {
    pub surface: Surface,
    pub owner: String,
    pub key: String,
}

impl ClaimKey {
    /// A form of `org`, keyed by the UUID minted when it was rendered.
    pub fn form(org: Uuid, form: Form, key: Uuid) -> Self {
        ClaimKey {
            surface: Surface::Form,
            owner: format!("{org}/{}", form.as_str()),
            key: key.to_string(),
        }
    }

    /// A Stripe event, keyed by its event id (never the object id: one charge has several events).
    pub fn webhook(account: &str, event_id: &str) -> Self {
        ClaimKey {
            surface: Surface::Webhook,
            owner: account.to_owned(),
            key: event_id.to_owned(),
        }
    }

    /// An API client's request, keyed by its `Idempotency-Key`.
    pub fn api(api_key_id: Uuid, idempotency_key: &str) -> Self {
        ClaimKey {
            surface: Surface::Api,
            owner: api_key_id.to_string(),
            key: idempotency_key.to_owned(),
        }
    }

    /// A call out to a third party (`stripe/checkout`), keyed by what names the attempt there (the
    /// invoice, the amount due and the session's generation).
    pub fn outbound(call: &str, key: &str) -> Self {
        ClaimKey {
            surface: Surface::Outbound,
            owner: call.to_owned(),
            key: key.to_owned(),
        }
    }

    /// A job run, keyed by its stable run id (an outbox row id, a retention period).
    pub fn job(queue: &str, run_id: &str) -> Self {
        ClaimKey {
            surface: Surface::Job,
            owner: queue.to_owned(),
            key: run_id.to_owned(),
        }
    }
}

/// A response stored with the claim so a replay can return it byte for byte.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    pub status: u16,
    pub headers: JsonValue,
    pub body: Vec<u8>,
}

/// What the first attempt produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub result_id: Option<Uuid>,
    pub response: Option<StoredResponse>,
}

impl Outcome {
    pub fn result(id: Uuid) -> Self {
        Outcome {
            result_id: Some(id),
            response: None,
        }
    }
}

/// How a claim that commits with its work treats repeats. Everything is optional.
#[derive(Debug, Clone, Copy, Default)]
pub struct Terms<'a> {
    /// Hash of what was asked: a reused key with another request is a `Mismatch`.
    pub fingerprint: Option<&'a [u8]>,
    /// A claim older than this is forgotten and its key may be used again (API keys' TTL).
    pub expires_after: Option<Duration>,
    /// Do not wait behind another open transaction holding the same key: answer `Busy` at once (an
    /// HTTP client is waiting, and blocking its connection for the other's whole transaction helps
    /// nobody). Uses a transaction-scoped advisory lock on the key.
    pub no_wait: bool,
    /// What the attempt will produce, when it is known before the work (the form mints its invoice's
    /// id): the claim is written with it and needs no `finish`.
    pub result_id: Option<Uuid>,
}

/// The answer to "may this transaction do the attempt?". Match every arm: that is the point.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Claimed {
    /// This transaction owns the attempt: do the work, `finish` (unless `Terms::result_id` said it
    /// already), commit.
    Won,
    /// An earlier attempt finished; here is what it produced. Do nothing again.
    Done(Outcome),
    /// The key was already used for a different request.
    Mismatch,
    /// Another attempt holds the key right now (`no_wait`, or a lease of work outside the database).
    Busy { retry_after: Duration },
}

/// Claims `key` inside the caller's transaction, for work done in that same transaction.
pub async fn claim(
    conn: &mut PgConnection,
    key: &ClaimKey,
    terms: &Terms<'_>,
) -> sqlx::Result<Claimed> {
    let ttl_secs = terms.expires_after.map(|d| d.as_secs_f64());
    // A few rounds at most: the row we collided with can expire or be swept before we read it.
    for _ in 0..3 {
        // One round trip: with `no_wait`, the key's transaction-scoped lock is tried first and the
        // insert runs only if it was free (taking it again in a later round is a no-op). The row is
        // written done at once: it commits with the work, so nobody sees it before it is.
        // language=PostgreSQL
        let claimed = sqlx::query!(
            r#"
            with lock as (
                select case when $6::bool then pg_try_advisory_xact_lock(hashtextextended($1 || '/' || $2 || '/' || $3, 0))
                            else true end as free
            ), won as (
                insert into claims (scope, owner, key, fingerprint, status, result_id, completed_at)
                select $1, $2, $3, $4::bytea, 'done', $5::uuid, now() from lock where free
                on conflict do nothing
                returning true
            )
            select free as "free!", exists (select from won) as "won!" from lock
            "#,
            key.surface.as_str(),
            key.owner,
            key.key,
            terms.fingerprint,
            terms.result_id,
            terms.no_wait,
        )
        .fetch_one(&mut *conn)
        .await?;
        if !claimed.free {
            return Ok(Claimed::Busy {
                retry_after: Duration::from_secs(1),
            });
        }
        if claimed.won {
            return Ok(Claimed::Won);
        }
        let Some(found) = existing(conn, key, ttl_secs).await? else {
            continue;
        };
        if found.expired {
            forget_expired(conn, key, ttl_secs).await?;
            continue;
        }
        if let (Some(asked), Some(stored)) = (terms.fingerprint, found.fingerprint.as_deref()) {
            if asked != stored {
                return Ok(Claimed::Mismatch);
            }
        }
        return Ok(match found.done {
            Some(outcome) => Claimed::Done(outcome),
            // A lease holds the key: its side effect may be under way, so never take it over here.
            None => Claimed::Busy {
                retry_after: found.retry_after(),
            },
        });
    }
    Err(sqlx::Error::Protocol(
        "claim kept changing under us; giving up".into(),
    ))
}

/// What a claim of `key` would answer now, without claiming: `None` when the key is free (or its
/// claim expired). For work that must happen before the claiming transaction (a call out), so a
/// replay or a reused key is answered before the work is done again.
pub async fn peek(
    conn: &mut PgConnection,
    key: &ClaimKey,
    terms: &Terms<'_>,
) -> sqlx::Result<Option<Claimed>> {
    let ttl_secs = terms.expires_after.map(|d| d.as_secs_f64());
    let Some(found) = existing(conn, key, ttl_secs).await? else {
        return Ok(None);
    };
    if found.expired {
        return Ok(None);
    }
    if let (Some(asked), Some(stored)) = (terms.fingerprint, found.fingerprint.as_deref()) {
        if asked != stored {
            return Ok(Some(Claimed::Mismatch));
        }
    }
    Ok(Some(match found.done {
        Some(outcome) => Claimed::Done(outcome),
        None => Claimed::Busy {
            retry_after: found.retry_after(),
        },
    }))
}

/// Settles a won claim in the transaction that did the work, before commit, in one statement:
/// records what the work produced (`outcome`; `None` when it was written with the claim) and writes
/// the won attempt's activity row, so both commit with the work or not at all.
pub async fn finish(
    conn: &mut PgConnection,
    key: &ClaimKey,
    outcome: Option<&Outcome>,
    won: &WonRow,
) -> sqlx::Result<()> {
    let response = outcome.and_then(|o| o.response.as_ref());
    // language=PostgreSQL
    let finished = sqlx::query_scalar!(
        r#"
        with finished as (
            update claims
            set result_id = $5, response_status = $6, response_headers = $7, response_body = $8
            where $4 and scope = $1 and owner = $2 and key = $3 and status = 'done'
            returning 1
        )
        insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
        values ($9, $10, $11, $12, 'won', $13, $14, $15)
        returning (select count(*) from finished) as "finished!"
        "#,
        key.surface.as_str(),
        key.owner,
        key.key,
        outcome.is_some(),
        outcome.and_then(|o| o.result_id),
        response.map(|r| r.status as i16),
        response.map(|r| r.headers.clone()),
        response.map(|r| r.body.as_slice()),
        won.org,
        won.surface.as_str(),
        won.owner,
        won.key,
        won.invoice,
        won.request_id,
        won.duration_ms,
    )
    .fetch_one(&mut *conn)
    .await?;
    if outcome.is_some() && finished != 1 {
        return Err(sqlx::Error::RowNotFound);
    }
    Ok(())
}

/// A won attempt's activity row, as [`finish`] writes it (see `observe::Attempt::won_row`).
#[derive(Debug, Clone)]
pub struct WonRow {
    pub org: Option<Uuid>,
    pub surface: Surface,
    pub owner: String,
    pub key: String,
    pub invoice: Option<Uuid>,
    pub request_id: Option<String>,
    pub duration_ms: f64,
}

/// The fencing token of a lease: when its current holder took it. A takeover changes it.
pub type LeaseToken = chrono::DateTime<chrono::Utc>;

/// A claim committed in progress before work that leaves the database. Only its holder can settle it,
/// and only while nobody took it over.
#[derive(Debug)]
#[must_use = "a lease is settled with `complete` or `release` (or left to expire and be taken over)"]
pub struct Lease {
    key: ClaimKey,
    token: LeaseToken,
}

/// The answer to "may I start this work that leaves the database?".
#[derive(Debug)]
#[must_use]
pub enum Leased {
    /// Ours until the lease runs out: do the work, then `complete` (or `release` to try again later).
    Acquired(Lease),
    /// Done before; here is what it produced.
    Done(Outcome),
    /// Another holder's lease is fresh.
    Busy { retry_after: Duration },
}

impl Leased {
    /// What the work produced, when it was done before.
    pub fn done(self) -> Option<Outcome> {
        match self {
            Leased::Done(outcome) => Some(outcome),
            Leased::Acquired(_) | Leased::Busy { .. } => None,
        }
    }
}

/// Whether a lease still held its claim when its holder settled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Fence {
    Held,
    /// The lease was taken over: someone else owns the attempt now, and nothing was recorded.
    TakenOver,
}

/// Leases `key` for `duration`. Commit (or use an autocommit connection) before the side effect.
pub async fn lease(
    conn: &mut PgConnection,
    key: &ClaimKey,
    duration: Duration,
) -> sqlx::Result<Leased> {
    let secs = duration.as_secs_f64();
    for _ in 0..3 {
        // language=PostgreSQL
        let token = sqlx::query_scalar!(
            r#"
            insert into claims (scope, owner, key, status, locked_until)
            values ($1, $2, $3, 'in_progress', now() + make_interval(secs => $4))
            on conflict do nothing
            returning claimed_at as "token: LeaseToken"
            "#,
            key.surface.as_str(),
            key.owner,
            key.key,
            secs,
        )
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(token) = token {
            return Ok(Leased::Acquired(Lease {
                key: key.clone(),
                token,
            }));
        }
        let Some(found) = existing(conn, key, None).await? else {
            continue;
        };
        if let Some(outcome) = found.done {
            return Ok(Leased::Done(outcome));
        }
        if found.lease_left > 0.0 {
            return Ok(Leased::Busy {
                retry_after: found.retry_after(),
            });
        }
        // A stale lease: its holder died or gave up. Take it over, unless someone else just did.
        // language=PostgreSQL
        let token = sqlx::query_scalar!(
            r#"
            update claims
            set claimed_at = clock_timestamp(), locked_until = now() + make_interval(secs => $4)
            where scope = $1 and owner = $2 and key = $3
              and status = 'in_progress' and locked_until <= now()
            returning claimed_at as "token: LeaseToken"
            "#,
            key.surface.as_str(),
            key.owner,
            key.key,
            secs,
        )
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(token) = token {
            metrics::counter!("invoicer_lease_takeovers_total", "surface" => key.surface.as_str())
                .increment(1);
            return Ok(Leased::Acquired(Lease {
                key: key.clone(),
                token,
            }));
        }
    }
    Err(sqlx::Error::Protocol(
        "lease kept changing under us; giving up".into(),
    ))
}

impl Lease {
    pub fn key(&self) -> &ClaimKey {
        &self.key
    }

    pub fn token(&self) -> LeaseToken {
        self.token
    }

    /// Marks the claim done with what the work produced, if this lease still holds it.
    pub async fn complete(self, conn: &mut PgConnection, outcome: &Outcome) -> sqlx::Result<Fence> {
        // language=PostgreSQL
        let done = sqlx::query!(
            r#"
            update claims
            set status = 'done', completed_at = now(), locked_until = null, result_id = $5
            where scope = $1 and owner = $2 and key = $3 and status = 'in_progress' and claimed_at = $4
            "#,
            self.key.surface.as_str(),
            self.key.owner,
            self.key.key,
            self.token as _,
            outcome.result_id,
        )
        .execute(&mut *conn)
        .await?;
        Ok(fence(done.rows_affected()))
    }

    /// Gives the claim up (the work failed and will be tried again), if this lease still holds it.
    pub async fn release(self, conn: &mut PgConnection) -> sqlx::Result<Fence> {
        // language=PostgreSQL
        let released = sqlx::query!(
            r#"
            delete from claims
            where scope = $1 and owner = $2 and key = $3 and status = 'in_progress' and claimed_at = $4
            "#,
            self.key.surface.as_str(),
            self.key.owner,
            self.key.key,
            self.token as _,
        )
        .execute(&mut *conn)
        .await?;
        Ok(fence(released.rows_affected()))
    }
}

fn fence(rows: u64) -> Fence {
    if rows == 1 {
        Fence::Held
    } else {
        Fence::TakenOver
    }
}

/// Deletes claims of `surface` older than `older_than`, `batch` rows per statement so no statement
/// holds many locks or runs long; returns how many were deleted.
pub async fn sweep_expired(
    pool: &PgPool,
    surface: Surface,
    older_than: Duration,
    batch: i64,
) -> sqlx::Result<u64> {
    let mut total = 0;
    loop {
        // language=PostgreSQL
        let deleted = sqlx::query!(
            r#"
            delete from claims
            where (scope, owner, key) in (
                select scope, owner, key from claims
                where scope = $1 and created_at < now() - make_interval(secs => $2)
                limit $3
            )
            "#,
            surface.as_str(),
            older_than.as_secs_f64(),
            batch,
        )
        .execute(pool)
        .await?
        .rows_affected();
        total += deleted;
        if deleted < batch as u64 {
            return Ok(total);
        }
    }
}

/// The committed claim a conflicting insert ran into.
struct Existing {
    /// `Some` once done.
    done: Option<Outcome>,
    fingerprint: Option<Vec<u8>>,
    lease_left: f64,
    expired: bool,
}

impl Existing {
    fn retry_after(&self) -> Duration {
        Duration::from_secs_f64(self.lease_left.ceil().max(1.0))
    }
}

async fn existing(
    conn: &mut PgConnection,
    key: &ClaimKey,
    ttl_secs: Option<f64>,
) -> sqlx::Result<Option<Existing>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select status, fingerprint, result_id, response_status, response_headers, response_body,
               extract(epoch from greatest(locked_until - now(), interval '0'))::float8 as "lease_left!",
               coalesce(created_at < now() - make_interval(secs => $4), false) as "expired!"
        from claims
        where scope = $1 and owner = $2 and key = $3
        "#,
        key.surface.as_str(),
        key.owner,
        key.key,
        ttl_secs,
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|row| {
        let response = match (row.response_status, row.response_body) {
            (Some(status), Some(body)) => Some(StoredResponse {
                status: status as u16,
                headers: row.response_headers.unwrap_or(JsonValue::Null),
                body,
            }),
            _ => None,
        };
        Existing {
            done: (row.status == "done").then_some(Outcome {
                result_id: row.result_id,
                response,
            }),
            fingerprint: row.fingerprint,
            lease_left: row.lease_left,
            expired: row.expired,
        }
    }))
}

/// Past its TTL a key names nothing any more: forget the old attempt so it can be claimed afresh.
async fn forget_expired(
    conn: &mut PgConnection,
    key: &ClaimKey,
    ttl_secs: Option<f64>,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        delete from claims
        where scope = $1 and owner = $2 and key = $3 and created_at < now() - make_interval(secs => $4)
        "#,
        key.surface.as_str(),
        key.owner,
        key.key,
        ttl_secs,
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

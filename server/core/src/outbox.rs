//! The transactional outbox: side effects (email) written in the transaction of the change that causes
//! them, and drained by workers. A worker's lease on a row is the three-state claim
//! `(job, outbox, row id)`: committed in progress with a lease before the send, done after it, taken
//! over when stale, and fenced (a holder whose lease was taken over cannot mark the row).

use std::time::Duration;

use serde_json::Value as JsonValue;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::claim::{self, ClaimKey, Fence, Lease, Leased as Claim, Outcome};
use model::{EmailRow, EmailStatus};

pub const QUEUE: &str = "outbox";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    InvoiceEmail,
    PaymentReceipt,
    Invitation,
    VerifyEmail,
    ResetPassword,
    AccountNotice,
    /// Sign-up with an address that has an account: that account is told.
    AccountExists,
    /// "Forgot password" for an address without an account: the address is told.
    NoAccount,
    /// Expire a Checkout session at Stripe (the invoice was voided, or a newer session replaced
    /// it): a call, not an email.
    ExpireCheckout,
    /// Make the refunds through Stripe a credit note planned: calls, not an email.
    StripeRefund,
    /// A payment reminder to the invoice's customer.
    Reminder,
    /// A quote to its customer.
    QuoteEmail,
    /// An event to a webhook endpoint (written by the database's triggers): a call, not an email.
    Webhook,
    /// A webhook endpoint was disabled: its org's owners are told.
    WebhookDisabled,
    /// Add the rows of a customer import, a batch at a time: work, not an email.
    CustomerImport,
    /// A member's password was reset or changed: the org's other owners are told what was taken
    /// back (API keys, invitations, webhook endpoints).
    CredentialsNotice,
    /// Where the org is paid, or who it is on its e-invoices, changed: every owner is told.
    OrgChangeNotice,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::InvoiceEmail => "invoice_email",
            Kind::PaymentReceipt => "payment_receipt",
            Kind::Invitation => "invitation",
            Kind::VerifyEmail => "verify_email",
            Kind::ResetPassword => "reset_password",
            Kind::AccountNotice => "account_notice",
            Kind::AccountExists => "account_exists",
            Kind::NoAccount => "no_account",
            Kind::ExpireCheckout => "expire_checkout",
            Kind::StripeRefund => "stripe_refund",
            Kind::Reminder => "reminder",
            Kind::QuoteEmail => "quote_email",
            Kind::Webhook => "webhook",
            Kind::WebhookDisabled => "webhook_disabled",
            Kind::CustomerImport => "customer_import",
            Kind::CredentialsNotice => "credentials_notice",
            Kind::OrgChangeNotice => "org_change_notice",
        }
    }
}

/// An email about an account, to the account's own address (a link, a notice): no org, no
/// invoice, and not in an org's name, so not through the gate.
pub async fn enqueue_account_email(
    tx: &mut PgConnection,
    kind: AccountKind,
    payload: JsonValue,
) -> sqlx::Result<()> {
    enqueue(tx, None, None, kind.into(), payload, None)
        .await
        .map(|_| ())
}

/// The emails about an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountKind {
    VerifyEmail,
    ResetPassword,
    AccountNotice,
    AccountExists,
    NoAccount,
}

impl From<AccountKind> for Kind {
    fn from(kind: AccountKind) -> Kind {
        match kind {
            AccountKind::VerifyEmail => Kind::VerifyEmail,
            AccountKind::ResetPassword => Kind::ResetPassword,
            AccountKind::AccountNotice => Kind::AccountNotice,
            AccountKind::AccountExists => Kind::AccountExists,
            AccountKind::NoAccount => Kind::NoAccount,
        }
    }
}

/// The emails sent in an org's name: only through the gate ([`enqueue_email`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailKind {
    InvoiceEmail,
    QuoteEmail,
    Reminder,
    Invitation,
}

impl From<MailKind> for Kind {
    fn from(kind: MailKind) -> Kind {
        match kind {
            MailKind::InvoiceEmail => Kind::InvoiceEmail,
            MailKind::QuoteEmail => Kind::QuoteEmail,
            MailKind::Reminder => Kind::Reminder,
            MailKind::Invitation => Kind::Invitation,
        }
    }
}

/// Work for the workers that is no email: calls to Stripe, an import's batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    ExpireCheckout,
    StripeRefund,
    CustomerImport,
}

impl From<JobKind> for Kind {
    fn from(kind: JobKind) -> Kind {
        match kind {
            JobKind::ExpireCheckout => Kind::ExpireCheckout,
            JobKind::StripeRefund => Kind::StripeRefund,
            JobKind::CustomerImport => Kind::CustomerImport,
        }
    }
}

/// Queues an email in its permit's org's name to its permit's recipient, in the caller's
/// transaction (the gate's): it counts against the allowances from its slot, and is not sent
/// before it. None if an equal row exists (one reminder per step).
pub async fn enqueue_email(
    tx: &mut PgConnection,
    permit: crate::mail_gate::Permit,
    invoice: Option<Uuid>,
    kind: MailKind,
    payload: JsonValue,
) -> sqlx::Result<Option<Uuid>> {
    let org = Some(permit.org);
    enqueue(tx, org, invoice, kind.into(), payload, Some(permit)).await
}

/// Queues work for the workers, in the caller's transaction. None if an equal row exists.
pub async fn enqueue_job(
    tx: &mut PgConnection,
    org: Uuid,
    kind: JobKind,
    payload: JsonValue,
) -> sqlx::Result<Option<Uuid>> {
    enqueue(tx, Some(org), None, kind.into(), payload, None).await
}

/// Writes a row in the caller's transaction; None if an equal row exists. Private: email in an
/// org's name comes only with a permit.
async fn enqueue(
    tx: &mut PgConnection,
    org: Option<Uuid>,
    invoice: Option<Uuid>,
    kind: Kind,
    payload: JsonValue,
    permit: Option<crate::mail_gate::Permit>,
) -> sqlx::Result<Option<Uuid>> {
    let (recipient, gated_at) = match permit {
        Some(p) => (Some(p.recipient), Some(p.at)),
        None => (None, None),
    };
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"
        insert into outbox (id, org_id, invoice_id, kind, payload, recipient, gated_at,
                            next_attempt_at)
        values ($1, $2, $3, $4, $5, $6, $7, greatest(now(), $7))
        on conflict do nothing
        returning id
        "#,
        Uuid::now_v7(),
        org,
        invoice,
        kind.as_str(),
        payload,
        recipient,
        gated_at,
    )
    .fetch_optional(&mut *tx)
    .await
}

/// A row this worker holds, through the lease on its claim.
#[derive(Debug)]
pub struct Leased {
    pub id: Uuid,
    pub org_id: Option<Uuid>,
    pub kind: String,
    pub payload: JsonValue,
    pub attempts: i32,
    pub max_attempts: i32,
    pub lease: Lease,
}

/// Leases up to `batch` due rows. `SKIP LOCKED` spreads rows over workers; the claim decides: a row
/// whose claim another worker holds with a fresh lease is skipped, a stale one is taken over.
pub async fn lease_due(
    pool: &PgPool,
    worker: &str,
    batch: i64,
    lease: Duration,
) -> sqlx::Result<Vec<Leased>> {
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let rows = sqlx::query_as!(
        Due,
        r#"
        select id, org_id, kind, payload, max_attempts
        from outbox
        where sent_at is null and dead_at is null and next_attempt_at <= now()
        order by next_attempt_at
        limit $1
        for update skip locked
        "#,
        batch
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut leased = Vec::with_capacity(rows.len());
    for row in rows {
        if let Some(held) = take(&mut tx, row, worker, lease).await? {
            leased.push(held);
        }
    }
    tx.commit().await?;
    Ok(leased)
}

/// The queues of the workers: each kind of work in its own, with its own places.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    /// Emails about accounts (links, notices, invitations): never behind anyone's backlog.
    Account,
    /// Emails to customers (invoices, receipts, reminders, quotes).
    Customer,
    /// Deliveries to webhook endpoints.
    Webhooks,
    /// Calls to Stripe and imports.
    Jobs,
}

impl Lane {
    pub const ALL: [Lane; 4] = [Lane::Account, Lane::Customer, Lane::Webhooks, Lane::Jobs];

    /// As the `outbox.lane` column (generated from the kind) names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Account => "account",
            Lane::Customer => "customer",
            Lane::Webhooks => "webhooks",
            Lane::Jobs => "jobs",
        }
    }
}

/// The orgs (`org_key`: the org, or the nil id for account emails) with a due row in `lane`, in
/// `org_key` order after `after` (from the first without it), at most `limit` of them. One index
/// probe per org with pending rows (a loose scan of `outbox_lane_due_idx`), however many rows each
/// holds, due or waiting for a retry.
pub async fn due_orgs(
    pool: &PgPool,
    lane: Lane,
    after: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<Uuid>> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"
        with recursive pending (org_key) as (
            (select org_key from outbox
             where lane = $1 and sent_at is null and dead_at is null
               and ($3::uuid is null or org_key > $3)
             order by org_key limit 1)
            union all
            select (select o.org_key from outbox o
                    where o.lane = $1 and o.sent_at is null and o.dead_at is null
                      and o.org_key > p.org_key
                    order by o.org_key limit 1)
            from pending p where p.org_key is not null
        )
        select p.org_key as "org_key!" from pending p
        where p.org_key is not null
          and (select min(o.next_attempt_at) from outbox o
               where o.lane = $1 and o.org_key = p.org_key
                 and o.sent_at is null and o.dead_at is null) <= now()
        limit $2
        "#,
        lane.as_str(),
        limit,
        after
    )
    .fetch_all(pool)
    .await
}

/// Leases the oldest due row of `org_key` in `lane`, if there is one nobody else holds, passing over
/// deliveries to the webhook endpoints in `busy` (one delivery at a time per endpoint: events reach
/// it in order, and a failing one is not tried in parallel).
pub async fn lease_next(
    pool: &PgPool,
    worker: &str,
    lane: Lane,
    org_key: Uuid,
    busy: &[String],
    lease: Duration,
) -> sqlx::Result<Option<Leased>> {
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Due,
        r#"
        select id, org_id, kind, payload, max_attempts
        from outbox
        where lane = $1 and org_key = $2 and sent_at is null and dead_at is null
          and next_attempt_at <= now()
          and not (kind = 'webhook' and (payload ->> 'endpoint_id') = any($3))
        order by next_attempt_at
        limit 1
        for update skip locked
        "#,
        lane.as_str(),
        org_key,
        busy
    )
    .fetch_optional(&mut *tx)
    .await?;
    let held = match row {
        Some(row) => take(&mut tx, row, worker, lease).await?,
        None => None,
    };
    tx.commit().await?;
    Ok(held)
}

/// A due row, locked by the caller's transaction.
struct Due {
    id: Uuid,
    org_id: Option<Uuid>,
    kind: String,
    payload: JsonValue,
    max_attempts: i32,
}

/// Takes `row`'s lease in the caller's transaction (which locks the row): the row, or None when
/// another worker holds a fresh lease on it, when it was sent already (marked now) or when it has
/// used up its attempts (marked dead).
async fn take(
    tx: &mut PgConnection,
    row: Due,
    worker: &str,
    lease: Duration,
) -> sqlx::Result<Option<Leased>> {
    let key = ClaimKey::job(QUEUE, &row.id.to_string());
    match claim::lease(&mut *tx, &key, lease).await? {
        Claim::Acquired(held) => {
            // Not due again until the lease runs out: other workers stop picking it, and a
            // crashed holder's row comes due exactly when it may be taken over.
            // language=PostgreSQL
            let attempts = sqlx::query_scalar!(
                r#"
                update outbox
                set attempts = attempts + 1, locked_by = $2,
                    next_attempt_at = now() + make_interval(secs => $3)
                where id = $1
                returning attempts
                "#,
                row.id,
                worker,
                lease.as_secs_f64(),
            )
            .fetch_one(&mut *tx)
            .await?;
            if attempts > row.max_attempts {
                // Every earlier holder lost its lease (crashed or hung) without recording a
                // failure: stop trying, show it as dead.
                // language=PostgreSQL
                sqlx::query!(
                    r#"
                    update outbox set dead_at = now(), locked_by = null,
                        last_error = 'gave up: the worker holding it stopped answering ' || ($2::int - 1) || ' times'
                    where id = $1
                    "#,
                    row.id,
                    attempts,
                )
                .execute(&mut *tx)
                .await?;
                let _ = held.release(&mut *tx).await?;
                return Ok(None);
            }
            Ok(Some(Leased {
                id: row.id,
                org_id: row.org_id,
                kind: row.kind,
                payload: row.payload,
                attempts,
                max_attempts: row.max_attempts,
                lease: held,
            }))
        }
        // Another worker is sending it right now.
        Claim::Busy { .. } => Ok(None),
        // Sent, but the row was not marked (a crash between the two commits): mark it now.
        Claim::Done(_) => {
            // language=PostgreSQL
            sqlx::query!(
                "update outbox set sent_at = coalesce(sent_at, now()), payload = payload - 'token' where id = $1",
                row.id
            )
            .execute(&mut *tx)
            .await?;
            Ok(None)
        }
    }
}

/// Marks a sent row, fenced by its lease: nothing is recorded if the lease was taken over meanwhile.
/// Lock order everywhere: the outbox row, then its claim (`lease_due` takes them in that order too;
/// the other order deadlocks against it).
pub async fn mark_sent(pool: &PgPool, row: Leased) -> sqlx::Result<Fence> {
    let mut tx = pool.begin().await?;
    // locked_by is kept: it names the worker that sent it. An account email's link (`token`) lives
    // in its inbox from now on, not here.
    // language=PostgreSQL
    sqlx::query!(
        "update outbox set sent_at = now(), last_error = null, payload = payload - 'token' where id = $1",
        row.id
    )
    .execute(&mut *tx)
    .await?;
    let fence = row
        .lease
        .complete(&mut tx, &Outcome::result(row.id))
        .await?;
    match fence {
        Fence::Held => tx.commit().await?,
        Fence::TakenOver => tx.rollback().await?,
    }
    Ok(fence)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Tried again after the delay.
    Retry(Duration),
    /// Out of attempts (or a permanent error): shown in the UI with a retry action.
    Dead,
    /// The lease was taken over: nothing recorded.
    Fenced,
}

/// Exponential backoff with jitter: `base · 2^(attempt−1)`, capped, times a random factor in
/// [0.75, 1]: delays still grow from one attempt to the next, and workers do not retry in lockstep.
pub fn backoff(attempt: i32, base: Duration, cap: Duration) -> Duration {
    let exp = base
        .saturating_mul(1u32 << (attempt.clamp(1, 20) - 1) as u32)
        .min(cap);
    exp.mul_f64(0.75 + 0.25 * fastrand::f64())
}

/// Records a failed send, fenced by its lease.
pub async fn mark_failed(
    pool: &PgPool,
    row: Leased,
    error: &str,
    permanent: bool,
    base: Duration,
    cap: Duration,
) -> sqlx::Result<Failure> {
    let mut tx = pool.begin().await?;
    let dead = permanent || row.attempts >= row.max_attempts;
    let delay = backoff(row.attempts, base, cap);
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update outbox
        set locked_by = null, last_error = $2,
            dead_at = case when $3 then now() end,
            next_attempt_at = now() + make_interval(secs => $4),
            -- A dead account email's link rests nowhere in plain text: the row cannot be revived.
            payload = case when $3 then payload - 'token' else payload end
        where id = $1
        "#,
        row.id,
        error,
        dead,
        delay.as_secs_f64(),
    )
    .execute(&mut *tx)
    .await?;
    if row.lease.release(&mut tx).await? == Fence::TakenOver {
        tx.rollback().await?;
        return Ok(Failure::Fenced);
    }
    tx.commit().await?;
    Ok(if dead {
        Failure::Dead
    } else {
        Failure::Retry(delay)
    })
}

/// The UI's "retry" on a dead invoice email or receipt of `org`: a fresh set of attempts, now,
/// through the mail `gate` (a retry is a send in the org's name like the first). Account emails
/// (invitations, links) are not revived: their link was dropped when they died, and sending an
/// invitation again is the owner's "resend". False if there is no such dead email.
pub async fn revive(
    pool: &PgPool,
    org: Uuid,
    id: Uuid,
    gate: crate::mail_gate::Gate,
) -> sqlx::Result<Result<bool, crate::mail_gate::Refused>> {
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let to = sqlx::query_scalar!(
        r#"
        select coalesce(o.recipient, i.customer_email, '') as "to!"
        from outbox o left join invoices i on i.id = o.invoice_id
        where o.id = $1 and o.org_id = $2 and o.dead_at is not null
          and o.kind in ('invoice_email', 'payment_receipt')
        for update of o
        "#,
        id,
        org
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(to) = to else { return Ok(Ok(false)) };
    let permit = match gate.permit(&mut tx, org, &to).await? {
        Ok(permit) => permit,
        Err(refused) => return Ok(Err(refused)),
    };
    // language=PostgreSQL
    let revived = sqlx::query!(
        r#"
        update outbox set dead_at = null, attempts = 0, next_attempt_at = greatest(now(), $3),
                          gated_at = $3, recipient = $4
        where id = $1 and org_id = $2
        "#,
        id,
        org,
        permit.at,
        permit.recipient,
    )
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    sqlx::query!("select pg_notify('outbox', '')")
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Ok(revived.rows_affected() == 1))
}

/// The emails of one invoice of `org`, oldest first, for its page.
pub async fn for_invoice(pool: &PgPool, org: Uuid, invoice: Uuid) -> sqlx::Result<Vec<EmailRow>> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        select id, kind, attempts, last_error, sent_at is not null as "sent!", dead_at is not null as "dead!"
        from outbox
        where org_id = $1 and invoice_id = $2
        order by created_at
        "#,
        org,
        invoice
    )
    .map(|r| EmailRow {
        id: r.id,
        kind: r.kind,
        status: if r.sent {
            EmailStatus::Sent
        } else if r.dead {
            EmailStatus::Dead
        } else if r.last_error.is_some() {
            EmailStatus::Retrying
        } else if r.attempts > 0 {
            EmailStatus::Sending
        } else {
            EmailStatus::Queued
        },
        attempts: r.attempts,
        last_error: r.last_error,
    })
    .fetch_all(pool)
    .await
}

/// What `/metrics` reports about the outbox.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gauges {
    pub pending: i64,
    /// How long the oldest due row has waited, in seconds (0 when none is due).
    pub oldest_due_seconds: f64,
    pub dead: i64,
}

/// The gauges count at most this many rows and then read one more: `GAUGE_CAP + 1` means "more than
/// that". Dead rows stay until retention trims them and a backlog can grow while the mail server is
/// down, so uncapped, a scrape's cost would grow with them; an alert only needs to see that there are
/// some, how many up to the cap, and how late the oldest is (which is exact at any size).
pub const GAUGE_CAP: i64 = 1000;
/// The gauges' one statement: the pending count and the oldest due row from `outbox_due_idx` (pending
/// rows only; the minimum is its first entry), the dead count from `outbox_dead_idx` (dead rows only),
/// each count reading at most `GAUGE_CAP + 1` index entries.
pub const GAUGES_SQL: &str = "select \
     (select count(*) from (select from outbox where sent_at is null and dead_at is null limit 1001) p), \
     coalesce(extract(epoch from now() - (select min(next_attempt_at) from outbox \
         where sent_at is null and dead_at is null and next_attempt_at <= now())), 0)::float8, \
     (select count(*) from (select from outbox where dead_at is not null limit 1001) d)";

/// Reads the gauges through indexes of pending and dead rows only, a bounded number of entries of
/// each: the cost of a scrape grows neither with the emails ever sent nor with a backlog.
pub async fn gauges(pool: &PgPool) -> sqlx::Result<Gauges> {
    let (pending, oldest_due_seconds, dead): (i64, f64, i64) =
        sqlx::query_as(GAUGES_SQL).fetch_one(pool).await?;
    Ok(Gauges {
        pending,
        oldest_due_seconds,
        dead,
    })
}

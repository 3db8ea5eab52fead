//! The transactional outbox: side effects (email) written in the transaction of the change that causes
//! them, and drained by workers. A worker's lease on a row is the three-state claim
//! `(job, outbox, row id)`: committed in progress with a lease before the send, done after it, taken
//! over when stale, and fenced (a holder whose lease was taken over cannot mark the row).

mod drain;

use model::InvoiceId;
use model::OrgId;
use serde_json::Value as JsonValue;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use model::{EmailRow, EmailStatus};

pub use drain::{
    backoff, due_orgs, lease_due, lease_next, mark_failed, mark_sent, Failure, Lane, Leased,
};

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
    /// The owner's link for a customer to save a payment method.
    PaymentMethodLink,
    /// A charge waits for the customer to confirm it (3-D Secure): the link to do so.
    ChargeAction,
    /// Let a removed saved method go at its provider: a call, not an email.
    DetachPaymentMethod,
    /// Send a document through the Peppol access point (queued by the database when an invoice of
    /// a buyer by Peppol is finalized): a call, not an email.
    PeppolSend,
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
            Kind::PaymentMethodLink => "payment_method_link",
            Kind::ChargeAction => "charge_action",
            Kind::DetachPaymentMethod => "detach_payment_method",
            Kind::PeppolSend => "peppol_send",
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
    PaymentMethodLink,
    ChargeAction,
}

impl From<MailKind> for Kind {
    fn from(kind: MailKind) -> Kind {
        match kind {
            MailKind::PaymentMethodLink => Kind::PaymentMethodLink,
            MailKind::ChargeAction => Kind::ChargeAction,
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
    DetachPaymentMethod,
}

impl From<JobKind> for Kind {
    fn from(kind: JobKind) -> Kind {
        match kind {
            JobKind::ExpireCheckout => Kind::ExpireCheckout,
            JobKind::StripeRefund => Kind::StripeRefund,
            JobKind::CustomerImport => Kind::CustomerImport,
            JobKind::DetachPaymentMethod => Kind::DetachPaymentMethod,
        }
    }
}

/// Queues an email in its permit's org's name to its permit's recipient, in the caller's
/// transaction (the gate's): it counts against the allowances from its slot, and is not sent
/// before it. None if an equal row exists (one reminder per step).
pub async fn enqueue_email(
    tx: &mut PgConnection,
    permit: crate::mail::gate::Permit,
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
    org: OrgId,
    kind: JobKind,
    payload: JsonValue,
) -> sqlx::Result<Option<Uuid>> {
    enqueue(tx, Some(org), None, kind.into(), payload, None).await
}

/// Writes a row in the caller's transaction; None if an equal row exists. Private: email in an
/// org's name comes only with a permit.
async fn enqueue(
    tx: &mut PgConnection,
    org: Option<OrgId>,
    invoice: Option<Uuid>,
    kind: Kind,
    payload: JsonValue,
    permit: Option<crate::mail::gate::Permit>,
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
        org as _,
        invoice as _,
        kind.as_str(),
        payload,
        recipient,
        gated_at,
    )
    .fetch_optional(&mut *tx)
    .await
}
/// The UI's "retry" on a dead invoice email or receipt of `org`: a fresh set of attempts, now,
/// through the mail `gate` (a retry is a send in the org's name like the first). Account emails
/// (invitations, links) are not revived: their link was dropped when they died, and sending an
/// invitation again is the owner's "resend". False if there is no such dead email.
pub async fn revive(
    pool: &PgPool,
    org: OrgId,
    id: Uuid,
    gate: crate::mail::gate::Gate,
) -> sqlx::Result<Result<bool, crate::mail::gate::Refused>> {
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
        org as _
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
        org as _,
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
pub async fn for_invoice(
    pool: &PgPool,
    org: OrgId,
    invoice: InvoiceId,
) -> sqlx::Result<Vec<EmailRow>> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        select id, kind, attempts, last_error, sent_at is not null as "sent!", dead_at is not null as "dead!"
        from outbox
        where org_id = $1 and invoice_id = $2
        order by created_at
        "#,
        org as _,
        invoice as _
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

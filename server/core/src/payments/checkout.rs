//! Paying an invoice: a Stripe Checkout session for the amount due, created at most once per
//! invoice, amount due and generation. The call to Stripe leaves the database, so it is claimed with
//! a lease (committed before the call, completed with the session in the transaction that stores
//! it), and the request carries an `Idempotency-Key` derived from the claim: a retry after a crash
//! between Stripe's answer and our commit gets *the same session* back from Stripe. A session is
//! reused while it is open and the amount due unchanged; an expired one (or one about to expire) is
//! replaced under the next generation's key.

use model::InvoiceId;
use model::OrgId;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::claim::{self, ClaimKey, Leased, Outcome};
use crate::payments::stripe::client::{NewSession, Stripe, StripeError};
use model::{InvoiceStatus, PaymentState};

/// A session is offered while it has at least this long to live.
const REUSE_MARGIN: chrono::TimeDelta = chrono::TimeDelta::minutes(10);
/// How long a new session lives (Stripe allows 30 minutes to 24 hours).
const SESSION_LIFETIME: chrono::TimeDelta = chrono::TimeDelta::hours(12);
/// The lease on the call to Stripe. Shorter than the client's worst case (four tries with timeouts):
/// a takeover while the first holder still waits is harmless, as both send the same Idempotency-Key
/// and Stripe answers both with the one session; it only bounds how long a crash delays the next Pay.
const LEASE: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OpenSession {
    pub id: String,
    pub url: String,
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checkout {
    /// Pay here.
    Session(OpenSession),
    /// Not open, nothing due (paid, void, a draft), or a delayed payment under way: nothing to pay.
    NothingDue {
        status: InvoiceStatus,
    },
    /// The org may not take card payments (yet): it signed itself up and waits for the operator.
    NotEnabled,
    NotFound,
}

#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    /// Another request is creating the session right now; it will be there shortly.
    #[error("the checkout session is being created by another request")]
    Busy(Duration),
    /// Every place for a call to Stripe is taken: nothing was claimed; try again shortly.
    #[error("too many calls to Stripe under way")]
    Saturated,
    #[error(transparent)]
    Stripe(#[from] StripeError),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// Where the customer comes back to: the invoice's public page.
pub struct Urls<'a> {
    pub public_base: &'a str,
}

/// The org and invoice of a public token (64 hex characters; anything else is none).
pub async fn by_token(pool: &PgPool, token: &str) -> sqlx::Result<Option<(Uuid, Uuid)>> {
    if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    // language=PostgreSQL
    let row = sqlx::query!(
        "select org_id, id from invoices where public_token = $1",
        token
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| (r.org_id, r.id)))
}

/// The open session for invoice `invoice` of `org` and its amount due: the one already created, or
/// a new one from Stripe. `Busy` while another request creates it.
pub async fn session(
    pool: &PgPool,
    stripe: &Stripe,
    urls: &Urls<'_>,
    org: OrgId,
    invoice: InvoiceId,
) -> Result<Checkout, CheckoutError> {
    // A few rounds at most: a claim can finish between our read and our lease.
    for _ in 0..4 {
        // language=PostgreSQL
        let Some(inv) = sqlx::query!(
            r#"
            select i.status as "status: InvoiceStatus", i.payment_state as "payment_state: PaymentState",
                   i.currency,
                   i.total_cents - i.amount_credited_cents - i.amount_paid_cents as "due!",
                   i.number_text, i.public_token, i.customer_email, o.name as org_name,
                   o.payments_enabled,
                   (select count(*) from checkout_sessions s
                    where s.invoice_id = i.id and s.amount_cents = i.total_cents - i.amount_credited_cents - i.amount_paid_cents
                      and not s.simulated) as "generation!"
            from invoices i join orgs o on o.id = i.org_id
            where i.id = $1 and i.org_id = $2
            "#,
            invoice as _,
            org as _
        )
        .fetch_optional(pool)
        .await?
        else {
            return Ok(Checkout::NotFound);
        };
        if !inv.payments_enabled {
            return Ok(Checkout::NotEnabled);
        }
        // Not while a delayed payment (a bank debit) is under way: it would be paid twice.
        let payable = matches!(
            inv.status,
            InvoiceStatus::Open | InvoiceStatus::Uncollectible
        ) && inv.payment_state != PaymentState::Processing;
        let (Some(token), true, true) = (inv.public_token, payable, inv.due > 0) else {
            return Ok(Checkout::NothingDue { status: inv.status });
        };
        if let Some(open) = reusable(pool, invoice, inv.due).await? {
            return Ok(Checkout::Session(open));
        }
        let Some(currency) = model::currency(&inv.currency) else {
            return Err(StripeError::Unreadable(format!("currency {}", inv.currency)).into());
        };
        let attempt = format!("{invoice}/{}/{}", inv.due, inv.generation);
        let key = ClaimKey::outbound("stripe/checkout", &attempt);
        // A place for the call first: refused here, nothing is claimed.
        let Some(_slot) = stripe.call_slot() else {
            return Err(CheckoutError::Saturated);
        };
        let mut conn = pool.acquire().await?;
        let lease = match claim::lease(&mut conn, &key, LEASE).await? {
            Leased::Acquired(lease) => lease,
            Leased::Busy { retry_after } => return Err(CheckoutError::Busy(retry_after)),
            // Stored meanwhile (or expired since): read again.
            Leased::Done(_) => continue,
        };
        // Everything sent is fixed by the attempt, so a retry under the same key sends the same
        // parameters (Stripe refuses a key reused with others): the expiry counts from the claim.
        let born = claimed_at(&mut conn, &key).await?;
        let number = inv.number_text.unwrap_or_default();
        let description = format!("Invoice {number} from {}", inv.org_name);
        let page = format!("{}/i/{token}", urls.public_base);
        let success = format!("{page}?paid=1");
        let new = NewSession {
            org,
            invoice: invoice.uuid(),
            amount: currency.to_stripe(inv.due),
            currency: currency.code,
            description: &description,
            customer_email: Some(&inv.customer_email),
            success_url: &success,
            cancel_url: &page,
            expires_at: (born + SESSION_LIFETIME).timestamp(),
        };
        let idempotency_key = format!("invoicer-checkout-{}", attempt.replace('/', "-"));
        // No pooled connection waits on Stripe: the lease is committed, the connection goes back
        // to the pool for the call, and one is taken again for what follows.
        drop(conn);
        let called = stripe.create_checkout_session(&new, &idempotency_key).await;
        let created = match called {
            Ok(created) => created,
            Err(e) => {
                // Given up: the next Pay tries again under the same key.
                let mut conn = pool.acquire().await?;
                let _ = lease.release(&mut conn).await?;
                return Err(e.into());
            }
        };
        crate::failpoint::hit_at("checkout", "after_stripe");
        let (Some(url), Some(expires_at)) = (
            created.url.clone(),
            DateTime::from_timestamp(created.expires_at, 0),
        ) else {
            let mut conn = pool.acquire().await?;
            let _ = lease.release(&mut conn).await?;
            return Err(
                StripeError::Unreadable(format!("session {} has no url", created.id)).into(),
            );
        };
        let mut tx = pool.begin().await?;
        // language=PostgreSQL
        sqlx::query!(
            r#"
            insert into checkout_sessions (id, org_id, invoice_id, amount_cents, currency, livemode,
                                           url, expires_at, idempotency_key)
            values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            on conflict (id) do nothing
            "#,
            created.id,
            org as _,
            invoice as _,
            inv.due,
            currency.code,
            created.livemode,
            url,
            expires_at as _,
            idempotency_key,
        )
        .execute(&mut *tx)
        .await?;
        // Only the newest session can be paid: the older ones of this invoice are expired at Stripe.
        expire_open_sessions(&mut tx, org, invoice, Some(&created.id)).await?;
        // Taken over meanwhile: the other holder got the same session from Stripe (same key) and
        // stores the same row; ours is as good.
        let _ = lease
            .complete(
                &mut tx,
                &Outcome {
                    result_id: None,
                    response: None,
                },
            )
            .await?;
        tx.commit().await?;
        return Ok(Checkout::Session(OpenSession {
            id: created.id,
            url,
            expires_at,
        }));
    }
    Err(CheckoutError::Busy(Duration::from_secs(1)))
}

/// Queues the expiry at Stripe of every open session of `invoice` but `except`, in the caller's
/// transaction (a worker makes the calls, each under its own Idempotency-Key): after a void nobody
/// can pay the invoice through an old page, and after a new session only the newest can be paid.
/// Returns how many were queued (a session already queued is not queued again).
pub async fn expire_open_sessions(
    tx: &mut sqlx::PgConnection,
    org: OrgId,
    invoice: InvoiceId,
    except: Option<&str>,
) -> sqlx::Result<u64> {
    // language=PostgreSQL
    let open = sqlx::query_scalar!(
        r#"
        select id from checkout_sessions
        where invoice_id = $1 and not simulated and completed_at is null and expires_at > now()
          and ($2::text is null or id <> $2)
        "#,
        invoice as _,
        except
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut queued = 0;
    for id in open {
        let payload = serde_json::json!({"session_id": id, "dedupe": format!("expire/{id}")});
        let kind = crate::outbox::JobKind::ExpireCheckout;
        let row = crate::outbox::enqueue_job(tx, org, kind, payload).await?;
        queued += u64::from(row.is_some());
    }
    Ok(queued)
}

/// A worker's call for an `expire_checkout` row: done when Stripe expired the session, or says it
/// is not open any more (completed or expired meanwhile: nothing left to stop). Err: (shown, detail,
/// permanent).
pub async fn expire_at_stripe(
    stripe: Option<&Stripe>,
    payload: &serde_json::Value,
) -> Result<(), (String, String, bool)> {
    let Some(id) = payload["session_id"].as_str() else {
        return Err((
            "no session to expire".into(),
            "payload has no session_id".into(),
            true,
        ));
    };
    let Some(stripe) = stripe.filter(|s| s.configured()) else {
        // Without Stripe there is no session there to expire.
        return Ok(());
    };
    match stripe
        .expire_checkout_session(id, &format!("invoicer-expire-{id}"))
        .await
    {
        Ok(_) => Ok(()),
        Err(StripeError::Api { status, .. }) if status == 400 || status == 404 => Ok(()),
        Err(e) => Err((
            "Stripe could not be reached".into(),
            e.to_string(),
            !e.retryable(),
        )),
    }
}

/// As [`session`], waiting (up to `within`) while another request creates the session: a double
/// click on Pay ends on the one session.
pub async fn session_waiting(
    pool: &PgPool,
    stripe: &Stripe,
    urls: &Urls<'_>,
    org: OrgId,
    invoice: InvoiceId,
    within: Duration,
) -> Result<Checkout, CheckoutError> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match session(pool, stripe, urls, org, invoice).await {
            Err(CheckoutError::Busy(retry_after)) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(retry_after.min(Duration::from_millis(100))).await;
            }
            other => return other,
        }
    }
}

/// The newest session for `invoice` and `amount` with time left, made by a call to Stripe.
async fn reusable(
    pool: &PgPool,
    invoice: InvoiceId,
    amount: i64,
) -> sqlx::Result<Option<OpenSession>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select id, url, expires_at as "expires_at: DateTime<Utc>"
        from checkout_sessions
        where invoice_id = $1 and amount_cents = $2 and not simulated and completed_at is null
          and expires_at > $3
        order by created_at desc
        limit 1
        "#,
        invoice as _,
        amount,
        (Utc::now() + REUSE_MARGIN) as _,
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| OpenSession {
        id: r.id,
        url: r.url,
        expires_at: r.expires_at,
    }))
}

/// When the attempt named by `key` was first claimed (a takeover keeps it).
async fn claimed_at(conn: &mut sqlx::PgConnection, key: &ClaimKey) -> sqlx::Result<DateTime<Utc>> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"select created_at as "created_at: DateTime<Utc>" from claims where scope = $1 and owner = $2 and key = $3"#,
        key.surface.as_str(),
        key.owner,
        key.key
    )
    .fetch_one(&mut *conn)
    .await
}

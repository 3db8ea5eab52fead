//! Sending a document over Peppol, exactly once. Finalizing the invoice (or issuing the credit
//! note) of a buyer by Peppol queued, in its own transaction, a transmission row and an outbox job
//! (`peppol_queue()` in the migrations). A worker leasing that job takes the claim
//! `(job, peppol, <document>:<version>)` with a lease, submits the document under the SBDH
//! instance id derived from the document and its version, and records the transmission `sent` and
//! the claim done in one transaction. A crash after the submission leaves the claim in progress; the
//! lease runs out, another worker takes it over and submits again under the same instance id, which
//! the access point recognises as the transmission it already has: one transmission, never none.
//! Afterwards the access point's status query moves it to `delivered` or `failed`.

use std::time::Duration;

use model::OrgId;
use sqlx::PgPool;
use uuid::Uuid;

use super::access_point::{AccessPoint, ApError, Status, Submission};
use crate::claim::{self, ClaimKey, Fence, Leased, Outcome};
use crate::documents::einvoice::{self, Profile, Syntax};
use crate::failpoint;
use crate::observe::{Attempt, AttemptOutcome, Surface};
use crate::outbox;

/// The claim queue of Peppol submissions.
pub const QUEUE: &str = "peppol";

/// The Peppol document type ids (without their scheme) and the process.
pub fn document_type(profile: Profile, credit_note: bool) -> String {
    let (root, ns) = if credit_note {
        (
            "CreditNote",
            "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2",
        )
    } else {
        (
            "Invoice",
            "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
        )
    };
    format!("{ns}::{root}##{}::2.1", profile.customization())
}

type Failed = (String, String, bool);

fn db(e: sqlx::Error) -> Failed {
    (
        "temporary error while sending by Peppol".to_owned(),
        e.to_string(),
        false,
    )
}

/// The outbox job of one transmission: see the module's documentation. A failure is what the
/// worker's retry needs: (what the invoice page shows, the whole text, permanent?).
pub async fn transmit<A: AccessPoint>(
    pool: &PgPool,
    access_point: Option<&A>,
    row: &outbox::Leased,
    lease_for: Duration,
) -> Result<(), Failed> {
    let mut seen = None;
    let result = transmit_once(pool, access_point, row, lease_for, &mut seen).await;
    // The activity page shows each try: `(job, peppol, <document>:<version>)` and how it ended.
    if let Some((attempt, invoice, outcome)) = seen {
        let outcome = match (&result, outcome) {
            (Err(_), AttemptOutcome::Won) => AttemptOutcome::Failed,
            (_, outcome) => outcome,
        };
        let concerns = crate::observe::Concerns {
            org: attempt.org(),
            invoice: Some(invoice),
        };
        crate::observe::log_and_count(&attempt, outcome);
        if let Err(e) = crate::surfaces::record::store(pool, &attempt, outcome, concerns).await {
            tracing::warn!(error = %e, "could not store a transmission for the activity page");
        }
    }
    result
}

async fn transmit_once<A: AccessPoint>(
    pool: &PgPool,
    access_point: Option<&A>,
    row: &outbox::Leased,
    lease_for: Duration,
    seen: &mut Option<(Attempt, Uuid, AttemptOutcome)>,
) -> Result<(), Failed> {
    let Some(id) = row.payload["transmission_id"]
        .as_str()
        .and_then(|s| s.parse::<Uuid>().ok())
    else {
        return Err((
            "nothing to send".into(),
            "payload has no transmission_id".into(),
            true,
        ));
    };
    // language=PostgreSQL
    let Some(t) = sqlx::query!(
        r#"
        select t.org_id, t.invoice_id, t.credit_note_id, t.version, t.instance_id, t.profile,
               t.sender, t.receiver, t.state, coalesce(i.seller -> 'address' ->> 'country', '') as "country!"
        from peppol_transmissions t join invoices i on i.id = t.invoice_id
        where t.id = $1
        "#,
        id
    )
    .fetch_optional(pool)
    .await
    .map_err(db)?
    else {
        return Ok(());
    };
    if t.state != "queued" {
        return Ok(());
    }
    let document = t.credit_note_id.unwrap_or(t.invoice_id);
    let key = ClaimKey::job(QUEUE, &format!("{document}:{}", t.version));
    let attempt = Attempt::new(Surface::Job, key.key.clone(), None);
    attempt.identify(QUEUE, Some(OrgId::from(t.org_id)));
    *seen = Some((attempt, t.invoice_id, AttemptOutcome::Won));
    let lease = {
        let mut conn = pool.acquire().await.map_err(db)?;
        match claim::lease(&mut conn, &key, lease_for).await.map_err(db)? {
            Leased::Acquired(lease) => lease,
            Leased::Done(_) => {
                if let Some(seen) = seen {
                    seen.2 = AttemptOutcome::Replay;
                }
                return Ok(());
            }
            Leased::Busy { .. } => {
                if let Some(seen) = seen {
                    seen.2 = AttemptOutcome::InFlight;
                }
                return Err((
                    "being sent by another worker".into(),
                    format!("{key:?} is held"),
                    false,
                ));
            }
        }
    };
    let Some(access_point) = access_point else {
        let _ = lease.release(&mut *pool.acquire().await.map_err(db)?).await;
        return Err((
            "no Peppol access point is configured".into(),
            "PEPPOL_AP_URL is unset".into(),
            false,
        ));
    };
    let profile = Profile::parse(&t.profile).unwrap_or(Profile::Peppol);
    let org = OrgId::from(t.org_id);
    let made = {
        let mut conn = pool.acquire().await.map_err(db)?;
        match t.credit_note_id {
            Some(note) => einvoice::credit_note_document(&mut conn, org, note).await,
            None => einvoice::invoice_document(&mut conn, org, t.invoice_id).await,
        }
    };
    let xml = match made {
        Ok(d) => d.with_profile(profile).xml(Syntax::Ubl),
        Err(einvoice::InvoiceDocumentError::Db(e)) => {
            let _ = lease.release(&mut *pool.acquire().await.map_err(db)?).await;
            return Err(db(e));
        }
        Err(e) => {
            let reason = format!("the document could not be made: {e}");
            settle(pool, lease, id, "failed", Some(&reason)).await?;
            return Ok(());
        }
    };
    let submission = Submission {
        sender: &t.sender,
        receiver: &t.receiver,
        document_type: &document_type(profile, t.credit_note_id.is_some()),
        process: einvoice::BILLING_PROCESS,
        country: &t.country,
        instance_id: t.instance_id,
        xml: &xml,
    };
    match access_point.submit(&submission).await {
        Ok(()) => {
            // Submitted; a crash here resubmits after the lease under the same instance id.
            failpoint::hit("peppol.after_submit");
            settle(pool, lease, id, "sent", None).await
        }
        Err(ApError::Refused(reason)) => {
            if let Some(seen) = seen {
                seen.2 = AttemptOutcome::Failed;
            }
            settle(pool, lease, id, "failed", Some(&reason)).await
        }
        Err(ApError::Unreachable(reason)) => {
            let mut conn = pool.acquire().await.map_err(db)?;
            // language=PostgreSQL
            sqlx::query!(
                "update peppol_transmissions set attempts = attempts + 1, reason = $2, updated_at = now() where id = $1",
                id,
                reason
            )
            .execute(&mut *conn)
            .await
            .map_err(db)?;
            let _ = lease.release(&mut conn).await;
            Err((
                "the access point could not be reached".into(),
                reason,
                false,
            ))
        }
    }
}

/// Records the transmission `state` and its claim done in one transaction, fenced by the lease.
async fn settle(
    pool: &PgPool,
    lease: claim::Lease,
    id: Uuid,
    state: &str,
    reason: Option<&str>,
) -> Result<(), Failed> {
    let mut tx = pool.begin().await.map_err(db)?;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update peppol_transmissions
        set state = $2, reason = $3, attempts = attempts + 1, updated_at = now(),
            sent_at = case when $2 = 'sent' then now() end,
            poll_at = case when $2 = 'sent' then now() + interval '2 seconds' end
        where id = $1 and state = 'queued'
        "#,
        id,
        state,
        reason
    )
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    match lease
        .complete(&mut tx, &Outcome::result(id))
        .await
        .map_err(db)?
    {
        Fence::Held => {
            tx.commit().await.map_err(db)?;
            Ok(())
        }
        Fence::TakenOver => Err((
            "another worker took the transmission over".into(),
            "the peppol lease was taken over; nothing recorded".into(),
            false,
        )),
    }
}

/// Asks the access point how up to `limit` sent transmissions fared, and records it: delivered and
/// failed are final, anything else is asked again later (backing off to an hour).
pub async fn poll_due<A: AccessPoint>(
    pool: &PgPool,
    access_point: Option<&A>,
    limit: i64,
) -> sqlx::Result<usize> {
    let Some(access_point) = access_point else {
        return Ok(0);
    };
    // language=PostgreSQL
    let due = sqlx::query!(
        r#"
        update peppol_transmissions t set poll_at = now() + interval '30 seconds'
        where t.id in (select id from peppol_transmissions
                       where poll_at <= now() order by poll_at limit $1
                       for update skip locked)
        returning t.id, t.instance_id, t.sent_at
        "#,
        limit
    )
    .fetch_all(pool)
    .await?;
    let polled = due.len();
    for t in due {
        let status = match access_point.status(t.instance_id).await {
            Ok(status) => status,
            Err(e) => {
                tracing::warn!(transmission = %t.id, error = %e, "peppol: status query failed; will ask again");
                continue;
            }
        };
        let (state, reason) = match status {
            Status::Delivered => ("delivered", None),
            Status::Failed(reason) => ("failed", Some(reason)),
            Status::Sent => ("sent", None),
            Status::Pending => ("sent", None),
            Status::Unknown => (
                "sent",
                Some("the access point does not know it (yet)".into()),
            ),
        };
        let last = state != "sent";
        // language=PostgreSQL
        sqlx::query!(
            r#"
            update peppol_transmissions
            set state = $2, reason = coalesce($3, reason), updated_at = now(),
                poll_at = case when $4 then null
                               else now() + least(interval '1 hour',
                                                  (now() - coalesce(sent_at, now())) / 2 + interval '2 seconds')
                          end
            where id = $1 and state in ('sent', 'queued')
            "#,
            t.id,
            state,
            reason,
            last
        )
        .execute(pool)
        .await?;
    }
    Ok(polled)
}

/// The transmissions of invoice `invoice` (and of its credit notes), oldest first.
pub async fn transmissions(
    conn: &mut sqlx::PgConnection,
    invoice: Uuid,
) -> sqlx::Result<Vec<model::peppol::Transmission>> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        select state, instance_id, reason, profile, updated_at as "at: chrono::DateTime<chrono::Utc>",
               credit_note_id is not null as "credit_note!"
        from peppol_transmissions where invoice_id = $1
        order by created_at, id
        "#,
        invoice
    )
    .map(|r| model::peppol::Transmission {
        network: "peppol".into(),
        state: r.state,
        instance_id: r.instance_id,
        reason: r.reason,
        document: if r.credit_note { "credit_note" } else { "invoice" }.into(),
        profile: r.profile,
        at: r.at,
    })
    .fetch_all(&mut *conn)
    .await
}

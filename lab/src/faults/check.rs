//! The checker: after the drain, what the database and the SMTP sink hold against what the clients
//! were told.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::PgPool;
use uuid::Uuid;

use lab::harness::Fixture;

use super::load::{Ledger, Op};
use super::report::Report;

/// Waits until `org`'s outbox has no unsent row, it made no progress for `idle`, or `within` passed
/// (then the check reports what is unsent). Prints how the wait ended and, when rows are left, what
/// they are (lane, kind, how many, their attempts, when the next is due).
pub(crate) async fn outbox_drained(
    pool: &PgPool,
    org: model::OrgId,
    within: Duration,
    idle: Duration,
) -> sqlx::Result<()> {
    let started = Instant::now();
    let deadline = started + within;
    // Progress is a row sent or an attempt made: a last row that keeps failing (the receiver's
    // random 500s) is still being worked on, not stuck.
    let (mut last, mut progressed) = ((i64::MAX, -1), Instant::now());
    let ended = loop {
        let (left, attempts) = unsent(pool, org).await?;
        if left == 0 {
            break "empty";
        }
        if left < last.0 || attempts > last.1 {
            (last, progressed) = ((left, attempts), Instant::now());
        }
        if Instant::now() >= deadline {
            break "deadline";
        }
        if progressed.elapsed() >= idle {
            break "idle";
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!(
        "outbox drain: {ended} after {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if ended != "empty" {
        // language=PostgreSQL
        let rows: Vec<(String, String, i64, i64, Option<f64>)> = sqlx::query_as(
            "select lane, kind, count(*), max(attempts)::int8,                     extract(epoch from min(next_attempt_at) - now())::float8              from outbox where org_id = $1 and sent_at is null and dead_at is null              group by lane, kind order by lane, kind",
        )
        .bind(org)
        .fetch_all(pool)
        .await?;
        for (lane, kind, n, attempts, next) in rows {
            println!(
                "  left in lane {lane}: {n} {kind}, at most {attempts} attempts, next due in {:.1} s",
                next.unwrap_or(0.0)
            );
        }
    }
    Ok(())
}

/// Rows not sent yet, and the attempts made on them so far.
async fn unsent(pool: &PgPool, org: model::OrgId) -> sqlx::Result<(i64, i64)> {
    // language=PostgreSQL
    sqlx::query_as(
        "select count(*), coalesce(sum(attempts), 0)::int8 from outbox \
         where org_id = $1 and sent_at is null and dead_at is null",
    )
    .bind(org)
    .fetch_one(pool)
    .await
}
pub(crate) async fn check(
    pool: &PgPool,
    fixture: &Fixture,
    ledger: &Ledger,
    sink: &Path,
    unanswered: usize,
) -> anyhow::Result<Report> {
    let ops = ledger.ops.lock().unwrap().clone();
    let mut r = Report {
        unanswered,
        ..Report::default()
    };
    let org = fixture.org;

    // Events: each acknowledged one has its stored event and exactly one payment made by it.
    // language=PostgreSQL
    let payments: HashMap<String, (i64, Option<String>)> = sqlx::query!(
        r#"
        select p.provider_payment_id, count(*) as "n!", min(p.event_id) as event_id
        from payments p where p.org_id = $1 group by p.provider_payment_id
        "#,
        org as _
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|row| (row.provider_payment_id, (row.n, row.event_id)))
    .collect();
    // language=PostgreSQL
    let stored: HashMap<String, i64> = sqlx::query!(
        r#"select id, count(*) as "n!" from stripe_events where org_id = $1 group by id"#,
        org as _
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|row| (row.id, row.n))
    .collect();
    for op in &ops {
        if let Op::Event {
            id,
            payment_intent,
            acks,
            ..
        } = op
        {
            if *acks == 0 {
                continue;
            }
            r.events_acked += 1;
            match (payments.get(payment_intent), stored.get(id)) {
                (Some((1, Some(by))), Some(1)) if by == id => r.events_applied_once += 1,
                (None, _) | (_, None) => r.events_lost += 1,
                _ => r.payments_duplicated += 1,
            }
        }
    }
    r.payments_duplicated += payments.values().filter(|(n, _)| *n > 1).count();
    // Every invoice's paid amount is the sum of its payments: nothing was applied twice.
    // language=PostgreSQL
    r.invoices_overpaid = sqlx::query_scalar!(
        r#"
        select count(*) as "n!" from invoices i
        where i.org_id = $1
          and i.amount_paid_cents <> coalesce((select sum(amount_cents) from payments p where p.invoice_id = i.id), 0)
        "#,
        org as _
    )
    .fetch_one(pool)
    .await? as usize;

    // API keys and form keys: exactly one invoice each, the one every answer named.
    // language=PostgreSQL
    let invoices: HashMap<Uuid, Option<String>> = sqlx::query!(
        // The schedules phase's invoices are checked by its own checker.
        "select id, source_key from invoices where org_id = $1 and number > $2 \
         and coalesce(source_key, '') not like 'schedule:%'",
        org as _,
        fixture.invoices.len() as i32
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|row| (row.id, row.source_key))
    .collect();
    // The key -> invoice map the API claims hold.
    // language=PostgreSQL
    let api_claims: HashMap<String, Option<Uuid>> = sqlx::query!(
        "select key, result_id from claims where scope = 'api' and owner = $1",
        fixture.api_key_id.to_string()
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|row| (row.key, row.result_id))
    .collect();
    let mut answered_for = std::collections::HashSet::new();
    for op in &ops {
        match op {
            Op::Api {
                key, invoices: ids, ..
            } if !ids.is_empty() => {
                r.api_acked += 1;
                r.api_answers_differ += usize::from(ids.iter().any(|id| *id != ids[0]));
                let claimed = api_claims.get(key).copied().flatten();
                if claimed == Some(ids[0])
                    && invoices.contains_key(&ids[0])
                    && answered_for.insert(ids[0])
                {
                    r.api_one_invoice += 1;
                } else {
                    r.api_lost_or_duplicated += 1;
                }
            }
            Op::Form {
                key, invoices: ids, ..
            } if !ids.is_empty() => {
                r.form_acked += 1;
                r.form_answers_differ += usize::from(ids.iter().any(|id| *id != ids[0]));
                let by_key: Vec<_> = invoices
                    .iter()
                    .filter(|(_, source)| source.as_deref() == Some(&format!("form:{key}")))
                    .map(|(id, _)| *id)
                    .collect();
                if by_key == [ids[0]] && answered_for.insert(ids[0]) {
                    r.form_one_invoice += 1;
                } else {
                    r.form_lost_or_duplicated += 1;
                }
            }
            _ => {}
        }
    }
    // The charges and Peppol phases' invoices (their own keys) are checked by their own checkers.
    let charged: std::collections::HashSet<Uuid> = api_claims
        .iter()
        .filter(|(key, _)| key.starts_with("faults-charge-") || key.starts_with("faults-peppol-"))
        .filter_map(|(_, id)| *id)
        .collect();
    r.orphan_invoices = invoices
        .keys()
        .filter(|id| !answered_for.contains(*id) && !charged.contains(*id))
        .count() as i64;

    // Emails of every kind (receipts, invoices, reminders, quotes, invitations, account emails),
    // each by its row: sent, and its Message-ID (the row's id) arrived; a dead or pending row is
    // a failure. One receipt per payment.
    // language=PostgreSQL
    let outbox = sqlx::query!(
        r#"
        select id, kind, sent_at is not null as "sent!", dead_at is not null as "dead!"
        from outbox
        where (org_id = $1 or org_id is null)
          and kind not in ('webhook', 'expire_checkout', 'stripe_refund', 'customer_import',
                           'detach_payment_method', 'peppol_send')
        "#,
        org as _
    )
    .fetch_all(pool)
    .await?;
    let receipts = outbox
        .iter()
        .filter(|row| row.kind == "payment_receipt")
        .count() as i64;
    r.emails_expected = receipts;
    r.emails_unsent = outbox.iter().filter(|row| !row.sent).count() as i64;
    if receipts != payments.len() as i64 {
        r.emails_unsent += (payments.len() as i64 - receipts).abs();
    }
    r.emails_dead = outbox.iter().filter(|row| row.dead).count();
    let arrivals = arrivals_by_message_id(sink)?;
    for row in &outbox {
        let kind = r.emails_by_kind.entry(row.kind.clone()).or_default();
        kind.0 += 1;
        if !row.sent {
            continue;
        }
        kind.1 += 1;
        match arrivals.get(&row.id) {
            None => r.emails_lost += 1,
            Some(n) => {
                kind.2 += 1;
                r.emails_duplicated += *n as usize - 1;
            }
        }
    }
    // language=PostgreSQL
    r.webhooks_undone = sqlx::query_scalar!(
        r#"select count(*) as "n!" from outbox where org_id = $1 and kind = 'webhook' and sent_at is null"#,
        org as _
    )
    .fetch_one(pool)
    .await?;
    Ok(r)
}

/// Message-ID `<uuid@invoicer>` → how many times it arrived at the SMTP sink.
fn arrivals_by_message_id(sink: &Path) -> anyhow::Result<HashMap<Uuid, u32>> {
    let mut counts = HashMap::new();
    for entry in std::fs::read_dir(sink).with_context(|| format!("reading {}", sink.display()))? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "eml") {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        let id = text
            .lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| {
                l.strip_prefix("Message-ID:")
                    .or_else(|| l.strip_prefix("Message-Id:"))
            })
            .and_then(|v| v.trim().trim_start_matches('<').split('@').next())
            .and_then(|v| Uuid::try_parse(v).ok());
        if let Some(id) = id {
            *counts.entry(id).or_default() += 1;
        }
    }
    Ok(counts)
}

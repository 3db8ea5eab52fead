//! A statement imported: its entries claimed by identity (`UNIQUE (org_id, account, entry_key)`)
//! in the import's transaction, and each new credit that names an invoice (its RF reference, else
//! its number) recorded as a payment of provider `bank` keyed by the entry, in the same
//! transaction. Importing the same file again, or a statement that overlaps it, adds nothing.

use std::collections::{BTreeMap, HashMap};

use model::{InvoiceId, OrgId};
use sqlx::PgConnection;
use uuid::Uuid;

use super::{keyed, Format, Parsed};
use crate::payments::derive;

/// What an import did: CONTRACT's `{id, format, account_iban, entries, new_entries, matched}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Imported {
    pub id: Uuid,
    pub format: String,
    pub account_iban: String,
    pub entries: usize,
    pub new_entries: usize,
    pub matched: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file reports on an account that is not one of the org's.
    #[error("the statement is for {0}, which is not one of the org's accounts")]
    NotOurs(String),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The org's accounts: its IBAN and `bank_accounts`.
pub async fn accounts(conn: &mut PgConnection, org: OrgId) -> sqlx::Result<Vec<String>> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"select array_remove(array_prepend(nullif(bank_iban, ''), bank_accounts), null) as "a!"
           from orgs where id = $1"#,
        org as _
    )
    .fetch_one(&mut *conn)
    .await
}

/// Imports `parsed` as statement `id` of `org`, in the caller's claimed transaction.
pub async fn import(
    tx: &mut PgConnection,
    org: OrgId,
    id: Uuid,
    parsed: &Parsed,
) -> Result<Imported, ImportError> {
    let ours = accounts(tx, org).await?;
    if let Some(other) = parsed.accounts.iter().find(|a| !ours.contains(a)) {
        return Err(ImportError::NotOurs(other.clone()));
    }
    let account_iban = parsed.accounts[0].clone();
    let keys = keyed(&parsed.entries);
    let e = &parsed.entries;
    let ids: Vec<Uuid> = e.iter().map(|_| Uuid::now_v7()).collect();
    // language=PostgreSQL
    sqlx::query!(
        "insert into bank_statements (id, org_id, format, account_iban, entries, new_entries, matched)
         values ($1, $2, $3, $4, $5, 0, 0)",
        id,
        org as _,
        parsed.format.as_str(),
        account_iban,
        e.len() as i32
    )
    .execute(&mut *tx)
    .await?;
    // Every entry in one statement; the ones already recorded (any earlier import) are skipped by
    // their identity, and only the new ones come back.
    // language=PostgreSQL
    let new = sqlx::query!(
        r#"
        insert into bank_entries (id, org_id, account, entry_key, statement_id, booked_on,
                                  amount_cents, currency, counterparty, remittance, bank_reference)
        select n.id, $1, n.account, n.entry_key, $2, n.booked_on, n.amount_cents, n.currency,
               n.counterparty, n.remittance, nullif(n.bank_reference, '')
        from unnest($3::uuid[], $4::text[], $5::text[], $6::date[], $7::bigint[], $8::text[],
                    $9::text[], $10::text[], $11::text[])
             as n (id, account, entry_key, booked_on, amount_cents, currency, counterparty,
                   remittance, bank_reference)
        where n.amount_cents <> 0
        on conflict (org_id, account, entry_key) do nothing
        returning id, amount_cents, remittance, currency
        "#,
        org as _,
        id,
        &ids,
        &e.iter().map(|x| x.account.clone()).collect::<Vec<_>>(),
        &keys,
        &e.iter().map(|x| x.booked_on).collect::<Vec<_>>(),
        &e.iter().map(|x| x.amount_cents).collect::<Vec<_>>(),
        &e.iter().map(|x| x.currency.clone()).collect::<Vec<_>>(),
        &e.iter().map(|x| x.counterparty.clone()).collect::<Vec<_>>(),
        &e.iter().map(|x| x.remittance.clone()).collect::<Vec<_>>(),
        &e.iter()
            .map(|x| x.bank_reference.clone().unwrap_or_default())
            .collect::<Vec<_>>(),
    )
    .fetch_all(&mut *tx)
    .await?;
    // The new credits, as the insert returned them: what matching reads.
    let credits: Vec<Credit> = new
        .iter()
        .filter(|r| r.amount_cents > 0)
        .map(|r| Credit {
            entry: r.id,
            remittance: &r.remittance,
            currency: &r.currency,
        })
        .collect();
    let matched = match_new(tx, org, &credits).await?;
    // language=PostgreSQL
    sqlx::query!(
        "update bank_statements set new_entries = $2, matched = $3 where id = $1",
        id,
        new.len() as i32,
        matched as i32
    )
    .execute(&mut *tx)
    .await?;
    Ok(Imported {
        id,
        format: parsed.format.as_str().to_owned(),
        account_iban,
        entries: e.len(),
        new_entries: new.len(),
        matched,
    })
}

/// A new credit, as the import's insert returned it.
struct Credit<'a> {
    entry: Uuid,
    remittance: &'a str,
    currency: &'a str,
}

/// What a word of a remittance text may be: an RF reference whose check digits hold (the better
/// kind), or a word with a digit that may be an invoice's number.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    Reference,
    Number,
}

/// The tokens of `remittance` that may name an invoice.
fn tokens(remittance: &str) -> Vec<(Kind, String)> {
    let mut out: Vec<(Kind, String)> = model::payment_reference::candidates(remittance)
        .into_iter()
        .map(|rf| (Kind::Reference, rf))
        .collect();
    for word in remittance.split_whitespace() {
        let word = word.trim_matches(|ch: char| !ch.is_alphanumeric());
        if word.len() >= 2 && word.len() <= 60 && word.bytes().any(|b| b.is_ascii_digit()) {
            out.push((Kind::Number, word.to_lowercase()));
        }
    }
    out
}

/// The invoice each new credit names, if exactly one invoice of the org (numbered, in the credit's
/// currency, taking payments) is named by its best kind of token: an RF reference before a number.
async fn match_new(
    tx: &mut PgConnection,
    org: OrgId,
    credits: &[Credit<'_>],
) -> sqlx::Result<usize> {
    if credits.is_empty() {
        return Ok(0);
    }
    let tokens: Vec<Vec<(Kind, String)>> = credits.iter().map(|c| tokens(c.remittance)).collect();
    let wanted = |kind: Kind| -> Vec<String> {
        let set: std::collections::BTreeSet<&String> = tokens
            .iter()
            .flatten()
            .filter(|(k, _)| *k == kind)
            .map(|(_, t)| t)
            .collect();
        set.into_iter().cloned().collect()
    };
    // The invoices any token names, each kind by its own index (invoices_payment_reference_idx,
    // invoices_org_number_prefix_idx) as one array lookup: the credits are paired with them here,
    // not by a join whose size the planner cannot see.
    // language=PostgreSQL
    let found = sqlx::query!(
        r#"
        select i.id as "id!", 0 as "kind!", i.payment_reference as "token!", upper(i.currency) as "currency!"
        from invoices i
        where i.org_id = $1 and i.payment_reference = any($2::text[])
          and i.status not in ('draft', 'void')
        union all
        select i.id, 1, lower(i.number_text), upper(i.currency)
        from invoices i
        where i.org_id = $1 and lower(i.number_text) = any($3::text[]) and i.number_text is not null
          and i.status not in ('draft', 'void')
        "#,
        org as _,
        &wanted(Kind::Reference),
        &wanted(Kind::Number)
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut named: HashMap<(Kind, &str), Vec<(Uuid, &str)>> = HashMap::new();
    for f in &found {
        let kind = if f.kind == 0 {
            Kind::Reference
        } else {
            Kind::Number
        };
        named
            .entry((kind, f.token.as_str()))
            .or_default()
            .push((f.id, f.currency.as_str()));
    }
    // One invoice each; locked in invoice order, so that two imports never wait on each other in
    // a circle.
    let mut chosen: BTreeMap<Uuid, Vec<Uuid>> = BTreeMap::new();
    for (credit, tokens) in credits.iter().zip(&tokens) {
        let mut best: Option<(Kind, Vec<Uuid>)> = None;
        for (kind, token) in tokens {
            for (invoice, currency) in named.get(&(*kind, token.as_str())).into_iter().flatten() {
                if *currency != credit.currency {
                    continue;
                }
                match &mut best {
                    Some((k, _)) if *kind > *k => {}
                    Some((k, list)) if *kind == *k => {
                        if !list.contains(invoice) {
                            list.push(*invoice);
                        }
                    }
                    _ => best = Some((*kind, vec![*invoice])),
                }
            }
        }
        if let Some((_, list)) = best {
            if let [invoice] = list.as_slice() {
                chosen.entry(*invoice).or_default().push(credit.entry);
            }
        }
    }
    let mut matched = 0;
    for (invoice, mut entries) in chosen {
        entries.sort();
        for entry in entries {
            if record(tx, org, entry, invoice).await? {
                matched += 1;
            }
        }
    }
    Ok(matched)
}

/// Records entry `entry` (a credit) as a payment of `invoice` and marks it matched; `false` when
/// it was matched already (its payment exists: a no-op) or is not an unmatched credit of `org` in
/// the invoice's currency.
pub async fn record(
    tx: &mut PgConnection,
    org: OrgId,
    entry: Uuid,
    invoice: Uuid,
) -> sqlx::Result<bool> {
    // The invoice's row lock first, as every payment of it takes it, then the entry's.
    // language=PostgreSQL
    let locked = sqlx::query_scalar!(
        "select id from invoices where id = $1 and org_id = $2 and status not in ('draft', 'void') for update",
        invoice,
        org as _
    )
    .fetch_optional(&mut *tx)
    .await?;
    if locked.is_none() {
        return Ok(false);
    }
    // language=PostgreSQL
    let done = sqlx::query_scalar!(
        r#"
        with entry as (
            update bank_entries e set state = 'matched', invoice_id = $3
            from invoices i
            where e.id = $1 and e.org_id = $2 and e.state = 'unmatched' and e.amount_cents > 0
              and i.id = $3 and upper(i.currency) = e.currency
            returning e.id, e.amount_cents, e.booked_on, i.currency,
                      left(coalesce(e.bank_reference, ''), 200) as reference
        )
        insert into payments (id, org_id, invoice_id, provider, provider_payment_id, amount_cents,
                              currency, event_id, status, method, paid_on, reference)
        select $4, $2, $3, 'bank', entry.id::text, entry.amount_cents, entry.currency,
               'bank:' || entry.id, 'succeeded', 'bank_transfer', entry.booked_on, entry.reference
        from entry
        on conflict (provider, provider_payment_id) do nothing
        returning true as "done!"
        "#,
        entry,
        org as _,
        invoice,
        Uuid::now_v7()
    )
    .fetch_optional(&mut *tx)
    .await?;
    if done.is_some() {
        derive(tx, InvoiceId::from(invoice)).await?;
    }
    Ok(done.is_some())
}

/// Sets an unmatched entry aside for good (a debit, a credit that pays nothing of ours); `false`
/// when it is not an unmatched entry of `org`.
pub async fn ignore(tx: &mut PgConnection, org: OrgId, entry: Uuid) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query_scalar!(
        r#"update bank_entries set state = 'ignored' where id = $1 and org_id = $2 and state = 'unmatched'
           returning true as "done!""#,
        entry,
        org as _
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(done.is_some())
}

impl Format {
    pub fn parse(text: &str) -> Option<Format> {
        [Format::Camt053, Format::Camt054, Format::Mt940]
            .into_iter()
            .find(|f| f.as_str() == text)
    }
}

//! Reading bank entries: by state for the lists, one for an action on it.

use chrono::NaiveDate;
use model::OrgId;
use sqlx::PgExecutor;
use uuid::Uuid;

/// An entry as the API and the pages show it.
pub type Row = model::BankEntry;

/// `org`'s entries in `state`, newest booking first, at most `limit`.
pub async fn list(
    db: impl PgExecutor<'_>,
    org: OrgId,
    state: &str,
    limit: i64,
) -> sqlx::Result<Vec<Row>> {
    // language=PostgreSQL
    sqlx::query_as!(
        Row,
        r#"select id, booked_on as "booked_on: NaiveDate", amount_cents, currency, counterparty,
                  remittance, bank_reference, state, invoice_id
           from bank_entries where org_id = $1 and state = $2
           order by booked_on desc, id desc limit $3"#,
        org as _,
        state,
        limit
    )
    .fetch_all(db)
    .await
}

/// `org`'s entry `id`.
pub async fn get(db: impl PgExecutor<'_>, org: OrgId, id: Uuid) -> sqlx::Result<Option<Row>> {
    // language=PostgreSQL
    sqlx::query_as!(
        Row,
        r#"select id, booked_on as "booked_on: NaiveDate", amount_cents, currency, counterparty,
                  remittance, bank_reference, state, invoice_id
           from bank_entries where org_id = $1 and id = $2"#,
        org as _,
        id
    )
    .fetch_optional(db)
    .await
}

/// How many unmatched entries the owner's page lists at once.
pub const PAGE_ENTRIES: i64 = 100;
/// How many invoices are suggested for one credit.
const SUGGESTIONS: i64 = 3;

/// `org`'s unmatched entries for its page, newest booking first (at most [`PAGE_ENTRIES`], and
/// whether there are more), each credit with the invoices it may pay: open in its currency, and
/// either asking exactly its amount or billed to the payer the bank names; both first.
pub async fn unmatched(
    db: &mut sqlx::PgConnection,
    org: OrgId,
) -> sqlx::Result<(Vec<(Row, Vec<model::BankSuggestion>)>, bool)> {
    let mut rows = list(&mut *db, org, "unmatched", PAGE_ENTRIES + 1).await?;
    let more = rows.len() as i64 > PAGE_ENTRIES;
    rows.truncate(PAGE_ENTRIES as usize);
    let credits: Vec<Uuid> = rows
        .iter()
        .filter(|r| r.amount_cents > 0)
        .map(|r| r.id)
        .collect();
    // language=PostgreSQL
    let found = sqlx::query!(
        r#"
        select e.id as entry, s.id as "invoice!", s.number as "number!", s.customer_name as "customer_name!",
               s.due as "due!", s.same_amount as "same_amount!", s.same_name as "same_name!"
        from bank_entries e
        cross join lateral (
            select i.id, i.number_text as number, i.customer_name, d.due,
                   d.due = e.amount_cents as same_amount,
                   (length(e.counterparty) >= 3 and length(i.customer_name) >= 3
                    and (strpos(lower(e.counterparty), lower(i.customer_name)) > 0
                         or strpos(lower(i.customer_name), lower(e.counterparty)) > 0)) as same_name
            from invoices i
            cross join lateral (
                select greatest(i.total_cents - i.amount_credited_cents - i.amount_paid_cents, 0) as due
            ) d
            where i.org_id = $1 and i.status not in ('draft', 'void') and i.number_text is not null
              and upper(i.currency) = e.currency and d.due > 0
        ) s
        where e.id = any($2) and e.org_id = $1 and (s.same_amount or s.same_name)
        order by e.id, (s.same_amount and s.same_name) desc, s.same_amount desc, s.number
        "#,
        org as _,
        &credits
    )
    .fetch_all(&mut *db)
    .await?;
    let mut out: Vec<(Row, Vec<model::BankSuggestion>)> =
        rows.into_iter().map(|r| (r, Vec::new())).collect();
    for f in found {
        if let Some((_, list)) = out.iter_mut().find(|(r, _)| r.id == f.entry) {
            if (list.len() as i64) < SUGGESTIONS {
                list.push(model::BankSuggestion {
                    invoice_id: f.invoice,
                    number: f.number,
                    customer_name: f.customer_name,
                    due_cents: f.due,
                    same_amount: f.same_amount,
                    same_name: f.same_name,
                });
            }
        }
    }
    Ok((out, more))
}

/// What `org`'s import `id` did.
pub async fn import_summary(
    db: impl PgExecutor<'_>,
    org: OrgId,
    id: Uuid,
) -> sqlx::Result<Option<model::BankImportSummary>> {
    // language=PostgreSQL
    sqlx::query_as!(
        model::BankImportSummary,
        "select id, format, account_iban, entries, new_entries, matched
         from bank_statements where org_id = $1 and id = $2",
        org as _,
        id
    )
    .fetch_optional(db)
    .await
}

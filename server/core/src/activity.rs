//! The activity log: every attempt of an org, newest first, with what it produced.

use chrono::{DateTime, Utc};
use model::OrgId;
use sqlx::PgPool;
use uuid::Uuid;

use model::{ActivityCount, ActivityPage, ActivityRow};

pub const PAGE_SIZE: i64 = 50;

#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub surface: Option<String>,
    pub outcome: Option<String>,
    /// Part of a key / event id, or an invoice number.
    pub search: Option<String>,
    pub invoice: Option<Uuid>,
}

/// Where a page starts: strictly older than this attempt. Written in links as `<micros>.<id>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub created_at: DateTime<Utc>,
    pub id: i64,
}

impl Cursor {
    pub fn encode(self) -> String {
        format!("{}.{}", self.created_at.timestamp_micros(), self.id)
    }

    pub fn parse(text: &str) -> Option<Cursor> {
        let (micros, id) = text.split_once('.')?;
        Some(Cursor {
            created_at: DateTime::from_timestamp_micros(micros.parse().ok()?)?,
            id: id.parse().ok()?,
        })
    }
}

/// Longest search considered; keys are at most 255 characters.
pub const MAX_SEARCH: usize = 255;

/// What a search asks for: an invoice by its number (`INV-000042`, `42`), or attempts whose key
/// starts with the text (an event id, an Idempotency-Key, a form key). Both are answered from an
/// index, so a search costs the same whatever the size of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Search {
    InvoiceNumber(i32),
    KeyPrefix(String),
}

impl Search {
    pub fn parse(text: &str) -> Option<Search> {
        let text = text.trim();
        if text.is_empty() || text.len() > MAX_SEARCH {
            return None;
        }
        let digits = text
            .strip_prefix("INV-")
            .or_else(|| text.strip_prefix("inv-"))
            .unwrap_or(text);
        if !digits.is_empty() && digits.len() <= 12 && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(n) = digits.parse::<i32>() {
                return Some(Search::InvoiceNumber(n));
            }
        }
        Some(Search::KeyPrefix(crate::search::like_prefix(text)))
    }
}

impl Filter {
    /// Whether its statement carries a `like` pattern (a key search): see [`rows`].
    pub fn has_pattern(&self) -> bool {
        matches!(
            self.search.as_deref().and_then(Search::parse),
            Some(Search::KeyPrefix(_))
        )
    }
}

/// The activity page: one page of `org`'s attempts (see [`rows`]) and the last 24 hours' counts,
/// read side by side on two connections.
pub async fn list(
    pool: &PgPool,
    org: OrgId,
    filter: &Filter,
    before: Option<Cursor>,
) -> sqlx::Result<ActivityPage> {
    let ((rows, next_cursor), counts) =
        tokio::try_join!(rows(pool, org, filter, before), counts(pool, org))?;
    Ok(ActivityPage {
        rows,
        counts,
        next_cursor,
    })
}

/// One page of `org`'s attempts, older than `before` (newest first without it), and the cursor of
/// the next. Pages by key (created_at, id), never by offset: page 10 000 costs what page 1 does.
pub async fn rows(
    db: impl sqlx::PgExecutor<'_>,
    org: OrgId,
    filter: &Filter,
    before: Option<Cursor>,
) -> sqlx::Result<(Vec<ActivityRow>, Option<String>)> {
    let (mut q, pattern) = statement("", org, filter, before);
    // With a `like` pattern, unprepared: planned with its pattern every time. A generic plan
    // cannot see that `like $n` is a prefix, so it would not use the prefix index and would scan
    // the org's rows: fast at 1,000 invoices, slow at 100,000. Without one, prepared and sent in
    // one round trip (an unprepared statement costs a round trip to describe it and a plan on every
    // request); the caller runs it on `AppState::read_pool`, where it is planned once per
    // connection.
    let rows = q.build().persistent(!pattern).fetch_all(db).await?;
    page_of(rows)
}

/// The statement of [`rows`] after `prefix` (`""`, or `"explain "` for the tests that read its
/// plan), and whether it holds a `like` pattern.
pub fn statement<'a>(
    prefix: &str,
    org: OrgId,
    filter: &'a Filter,
    before: Option<Cursor>,
) -> (sqlx::QueryBuilder<'a, sqlx::Postgres>, bool) {
    let mut q = sqlx::QueryBuilder::new(prefix);
    q.push(
        r#"
        select a.id, a.created_at, a.surface, a.key, a.outcome, a.invoice_id,
               (select i.number_text from invoices i where i.id = a.invoice_id) as number_text,
               a.duration_ms, a.request_id,
               case a.surface
                   when 'webhook' then (select e.payload::text from stripe_events e
                                        -- The attempt's owner is `stripe/<account>`: the
                                        -- event's whole key, so its primary key finds it.
                                        where e.account = substr(a.owner, 8) and e.id = a.key
                                          and e.org_id = a.org_id)
                   when 'api' then (select convert_from(c.response_body, 'UTF8') from claims c
                                    where c.scope = 'api' and c.owner = a.owner and c.key = a.key)
               end as detail
        -- The page's rows are found first; each row's invoice number and detail are looked up
        -- for those rows only (a search that matches thousands must not join them all).
        from attempts a
        where a.org_id = "#,
    );
    q.push_bind(org);
    if let Some(surface) = &filter.surface {
        q.push(" and a.surface = ").push_bind(surface);
    }
    if let Some(outcome) = &filter.outcome {
        q.push(" and a.outcome = ").push_bind(outcome);
    }
    if let Some(invoice) = filter.invoice {
        q.push(" and a.invoice_id = ").push_bind(invoice);
    }
    let search = filter.search.as_deref().and_then(Search::parse);
    let pattern = matches!(search, Some(Search::KeyPrefix(_)));
    match search {
        Some(Search::InvoiceNumber(n)) => {
            // Numbers that restart yearly repeat their sequence number: any of them.
            q.push(" and a.invoice_id in (select id from invoices where org_id = ")
                .push_bind(org)
                .push(" and number = ")
                .push_bind(n)
                .push(")");
        }
        Some(Search::KeyPrefix(pattern)) => {
            q.push(" and a.key like ").push_bind(pattern);
        }
        None => {}
    }
    if let Some(cursor) = before {
        q.push(" and (a.created_at, a.id) < (")
            .push_bind(cursor.created_at)
            .push(", ")
            .push_bind(cursor.id)
            .push(")");
    }
    q.push(" order by a.created_at desc, a.id desc limit ")
        .push_bind(PAGE_SIZE + 1);
    (q, pattern)
}

/// The page and its next cursor, from up to `PAGE_SIZE + 1` rows of [`statement`].
fn page_of(rows: Vec<sqlx::postgres::PgRow>) -> sqlx::Result<(Vec<ActivityRow>, Option<String>)> {
    use sqlx::Row;
    let has_more = rows.len() as i64 > PAGE_SIZE;
    let mut next_cursor = None;
    let mut page = Vec::with_capacity(rows.len().min(PAGE_SIZE as usize));
    for r in rows.into_iter().take(PAGE_SIZE as usize) {
        let created_at: DateTime<Utc> = r.try_get("created_at")?;
        next_cursor = Some(Cursor {
            created_at,
            id: r.try_get("id")?,
        });
        page.push(ActivityRow {
            created_at,
            surface: r.try_get("surface")?,
            key: r.try_get("key")?,
            outcome: r.try_get("outcome")?,
            invoice_id: r.try_get("invoice_id")?,
            invoice_number: r.try_get("number_text")?,
            duration_ms: r.try_get("duration_ms")?,
            request_id: r.try_get("request_id")?,
            detail: r.try_get("detail")?,
        });
    }
    let next_cursor = if has_more {
        next_cursor.map(Cursor::encode)
    } else {
        None
    };
    Ok((page, next_cursor))
}

/// The org's attempts of the last 24 hours, by surface and outcome.
async fn counts(pool: &PgPool, org: OrgId) -> sqlx::Result<Vec<ActivityCount>> {
    // language=PostgreSQL
    let counts = sqlx::query!(
        r#"
        select surface, outcome, count(*) as "count!"
        from attempts
        where org_id = $1 and created_at > now() - interval '24 hours'
        group by surface, outcome
        order by surface, outcome
        "#,
        org as _
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|r| ActivityCount {
        surface: r.surface,
        outcome: r.outcome,
        count: r.count,
    })
    .collect();
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searches_are_invoice_numbers_or_key_prefixes() {
        assert_eq!(Search::parse("INV-000042"), Some(Search::InvoiceNumber(42)));
        assert_eq!(Search::parse(" 42 "), Some(Search::InvoiceNumber(42)));
        assert_eq!(
            Search::parse("evt_1"),
            Some(Search::KeyPrefix("evt\\_1%".into()))
        );
        assert_eq!(
            Search::parse("50%"),
            Some(Search::KeyPrefix("50\\%%".into()))
        );
        assert_eq!(Search::parse(""), None);
        assert_eq!(Search::parse(&"k".repeat(MAX_SEARCH + 1)), None);
        assert_eq!(
            Search::parse("99999999999999999999"),
            Some(Search::KeyPrefix("99999999999999999999%".into()))
        );
    }

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let c = Cursor {
            created_at: DateTime::from_timestamp_micros(1_764_600_000_123_456).unwrap(),
            id: 42,
        };
        assert_eq!(Cursor::parse(&c.encode()), Some(c));
        for bad in [
            "",
            "x.1",
            "1.x",
            "1",
            "99999999999999999999.1",
            "4294967295",
        ] {
            assert_eq!(Cursor::parse(bad), None, "{bad}");
        }
    }
}

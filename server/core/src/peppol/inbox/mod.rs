//! The inbox: e-invoices addressed to the org, uploaded (UBL, CII, or a Factur-X PDF) or delivered
//! by the access point (its inbound webhook, claimed like Stripe's events). Each file is read within
//! limits ([`tree`], [`pdf`]), as EN 16931's terms ([`read`]), checked against the rules its
//! specification names ([`rules`]), and kept once: the same bytes twice are one document
//! (`unique (org_id, sha256)`); the same seller and number with other bytes are kept and point at
//! the first (`duplicate_of`).

pub mod pdf;
pub mod read;
pub mod rules;
pub mod tree;

use std::sync::{Arc, LazyLock};

use chrono::{DateTime, NaiveDate, Utc};
use model::OrgId;
use sha2::{Digest, Sha256};
use sqlx::PgConnection;
use tokio::sync::Semaphore;
use uuid::Uuid;

pub use model::peppol::{FailedRule, Received, ReceivedDetail, ReceivedDocument};

/// A received file has at most 10 MB.
pub const MAX_FILE_BYTES: usize = 10 * 1024 * 1024;

/// A file read and checked, not yet stored.
#[derive(Debug, Clone)]
pub struct Opened {
    pub original: Vec<u8>,
    /// `xml` or `pdf`.
    pub original_type: &'static str,
    pub xml: Vec<u8>,
    pub received: Received,
    pub failed: Vec<rules::Failed>,
    pub sha256: [u8; 32],
}

/// Why a file is not an e-invoice we keep.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("A received e-invoice has at most 10 MB.")]
    TooLarge,
    #[error(
        "The PDF carries no e-invoice XML (factur-x.xml, zugferd-invoice.xml or xrechnung.xml)."
    )]
    PdfWithoutXml,
    #[error("Not an e-invoice: {0}")]
    Unreadable(String),
}

/// Reads `bytes` (XML, or a PDF carrying it): CPU work, run it with [`open_bounded`].
pub fn open(bytes: Vec<u8>) -> Result<Opened, Refused> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(Refused::TooLarge);
    }
    let (original_type, xml) = if pdf::is_pdf(&bytes) {
        (
            "pdf",
            pdf::embedded_xml(&bytes).ok_or(Refused::PdfWithoutXml)?,
        )
    } else {
        ("xml", bytes.clone())
    };
    let root = tree::parse(&xml).map_err(|e| Refused::Unreadable(e.0))?;
    // A PDF is its bytes; XML is its document element, with or without the SBD around it and
    // whatever comes before the root: the same invoice uploaded and delivered is one document.
    let sha256: [u8; 32] = if original_type == "pdf" {
        Sha256::digest(&bytes).into()
    } else {
        Sha256::digest(document_bytes(
            &xml,
            root.name == "StandardBusinessDocument",
        ))
        .into()
    };
    let received = read::read(&root).map_err(|e| Refused::Unreadable(e.0))?;
    let failed = rules::check(&received);
    Ok(Opened {
        original: bytes,
        original_type,
        xml,
        received,
        failed,
        sha256,
    })
}

/// The bytes of the document element (inside the SBD when `sbd`), trimmed.
fn document_bytes(xml: &[u8], sbd: bool) -> &[u8] {
    let find = |from: usize, needle: &[u8]| {
        xml.get(from..)?
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|p| p + from)
    };
    // The first `<` that opens an element (not `<?`, `<!`).
    let element_from = |mut at: usize| {
        while let Some(lt) = find(at, b"<") {
            match xml.get(lt + 1) {
                Some(b'?' | b'!') => at = lt + 1,
                Some(_) => return Some(lt),
                None => return None,
            }
        }
        None
    };
    let (start, end) = if sbd {
        let header_end = xml
            .windows(b"StandardBusinessDocumentHeader>".len())
            .rposition(|w| w == b"StandardBusinessDocumentHeader>")
            .map(|p| p + b"StandardBusinessDocumentHeader>".len());
        let close = xml.windows(2).rposition(|w| w == b"</");
        match (header_end.and_then(element_from), close) {
            (Some(start), Some(end)) if start < end => (start, end),
            _ => (0, xml.len()),
        }
    } else {
        (element_from(0).unwrap_or(0), xml.len())
    };
    xml[start..end].trim_ascii()
}

/// Files read at once: one per core, each on the blocking pool.
static READS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    Arc::new(Semaphore::new(
        std::thread::available_parallelism().map_or(2, |n| n.get()),
    ))
});

/// [`open`] off the request's thread, at most one per core at once; Err(Busy) when no slot frees
/// within [`crate::bank::READ_WAIT`].
pub async fn open_bounded(
    bytes: Vec<u8>,
) -> Result<Result<Opened, Refused>, crate::throttle::Bounded> {
    crate::throttle::bounded(&READS, crate::bank::READ_WAIT, move || open(bytes)).await
}

fn date(text: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()
}

struct Row {
    id: Uuid,
    source: String,
    syntax: String,
    original_type: String,
    seller_name: String,
    seller_id: String,
    number: String,
    issue_date: Option<NaiveDate>,
    due_date: Option<NaiveDate>,
    currency: String,
    total_cents: i64,
    due_cents: i64,
    valid: bool,
    failed_rules: serde_json::Value,
    duplicate_of: Option<Uuid>,
    paid_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    content: serde_json::Value,
}

impl Row {
    fn detail(self) -> ReceivedDetail {
        let content: Received = serde_json::from_value(self.content).unwrap_or_default();
        ReceivedDetail {
            document: ReceivedDocument {
                id: self.id,
                source: self.source,
                syntax: self.syntax,
                original_type: self.original_type,
                seller_name: self.seller_name,
                seller_id: self.seller_id,
                number: self.number,
                issue_date: self.issue_date,
                due_date: self.due_date,
                currency: self.currency,
                total_cents: self.total_cents,
                due_cents: self.due_cents,
                valid: self.valid,
                rule_set: rules::rule_set(&content).to_owned(),
                failed_rules: serde_json::from_value(self.failed_rules).unwrap_or_default(),
                duplicate_of: self.duplicate_of,
                paid_at: self.paid_at,
                created_at: self.created_at,
            },
            content,
        }
    }
}

/// Keeps `opened` for `org` in the caller's transaction: (the document, whether this call stored
/// it). The same bytes are the document stored before.
pub async fn store(
    tx: &mut PgConnection,
    org: OrgId,
    opened: &Opened,
    source: &str,
    instance_id: Option<&str>,
) -> sqlx::Result<(ReceivedDetail, bool)> {
    let r = &opened.received;
    let seller_id = if r.seller_endpoint.is_empty() {
        r.seller_vat_id.clone()
    } else {
        r.seller_endpoint.clone()
    };
    // One seller's number is looked up and written by one transaction at a time, so two
    // conflicting files arriving at once still point one at the other.
    // language=PostgreSQL
    sqlx::query!(
        "select pg_advisory_xact_lock(hashtextextended($1::text || '/' || $2::text, 61))",
        org.uuid().to_string(),
        r.number
    )
    .execute(&mut *tx)
    .await?;
    // language=PostgreSQL
    let first = sqlx::query_scalar!(
        r#"
        select id from received_documents
        where org_id = $1 and number = $2 and sha256 <> $3 and duplicate_of is null
          and ((seller_id <> '' and seller_id = $4) or seller_name = $5)
        order by created_at, id limit 1
        "#,
        org as _,
        r.number,
        &opened.sha256[..],
        seller_id,
        r.seller_name
    )
    .fetch_optional(&mut *tx)
    .await?;
    let failed: Vec<FailedRule> = opened
        .failed
        .iter()
        .map(|(rule, text)| FailedRule {
            rule: rule.clone(),
            text: text.clone(),
        })
        .collect();
    // language=PostgreSQL
    let stored = sqlx::query_scalar!(
        r#"
        insert into received_documents (id, org_id, sha256, source, syntax, original, original_type,
                                        xml, seller_name, seller_id, number, issue_date, due_date,
                                        currency, total_cents, due_cents, content, valid,
                                        failed_rules, duplicate_of, instance_id)
        values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
                $19, $20, $21)
        on conflict (org_id, sha256) do nothing
        returning id
        "#,
        Uuid::now_v7(),
        org as _,
        &opened.sha256[..],
        source,
        r.syntax,
        opened.original,
        opened.original_type,
        opened.xml,
        r.seller_name,
        seller_id,
        r.number,
        date(&r.issue_date),
        date(&r.due_date),
        r.currency,
        r.total_cents,
        r.due_cents,
        serde_json::to_value(r).unwrap_or_default(),
        failed.is_empty(),
        serde_json::to_value(&failed).unwrap_or_default(),
        first,
        instance_id,
    )
    .fetch_optional(&mut *tx)
    .await?;
    let created = stored.is_some();
    // language=PostgreSQL
    let id = match stored {
        Some(id) => id,
        None => {
            sqlx::query_scalar!(
                "select id from received_documents where org_id = $1 and sha256 = $2",
                org as _,
                &opened.sha256[..]
            )
            .fetch_one(&mut *tx)
            .await?
        }
    };
    let detail = get(&mut *tx, org, id)
        .await?
        .ok_or(sqlx::Error::RowNotFound)?;
    Ok((detail, created))
}

/// `org`'s received document `id`, or None (also for another org's).
pub async fn get(
    db: impl sqlx::PgExecutor<'_>,
    org: OrgId,
    id: Uuid,
) -> sqlx::Result<Option<ReceivedDetail>> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        Row,
        r#"
        select id, source, syntax, original_type, seller_name, seller_id, number,
               issue_date as "issue_date: NaiveDate", due_date as "due_date: NaiveDate", currency,
               total_cents, due_cents, valid, failed_rules, duplicate_of,
               paid_at as "paid_at: DateTime<Utc>", created_at as "created_at: DateTime<Utc>",
               content
        from received_documents where org_id = $1 and id = $2
        "#,
        org as _,
        id
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(Row::detail))
}

/// `org`'s received documents, newest first (at most `limit`).
pub async fn list(
    db: impl sqlx::PgExecutor<'_>,
    org: OrgId,
    limit: i64,
) -> sqlx::Result<Vec<ReceivedDocument>> {
    // language=PostgreSQL
    let rows = sqlx::query_as!(
        Row,
        r#"
        select id, source, syntax, original_type, seller_name, seller_id, number,
               issue_date as "issue_date: NaiveDate", due_date as "due_date: NaiveDate", currency,
               total_cents, due_cents, valid, failed_rules, duplicate_of,
               paid_at as "paid_at: DateTime<Utc>", created_at as "created_at: DateTime<Utc>",
               jsonb_build_object('customization', content -> 'customization') as "content!"
        from received_documents where org_id = $1
        order by created_at desc, id desc
        limit $2
        "#,
        org as _,
        limit
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| r.detail().document).collect())
}

/// The file as it came (XML or PDF) and its type, for download.
pub async fn original(
    db: impl sqlx::PgExecutor<'_>,
    org: OrgId,
    id: Uuid,
) -> sqlx::Result<Option<(Vec<u8>, String, String)>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        "select original, original_type, number from received_documents where org_id = $1 and id = $2",
        org as _,
        id
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| (r.original, r.original_type, r.number)))
}

/// Marks document `id` paid (a conditional transition: once); false when it was already, or is
/// not `org`'s.
pub async fn mark_paid(tx: &mut PgConnection, org: OrgId, id: Uuid) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "update received_documents set paid_at = now() where org_id = $1 and id = $2 and paid_at is null",
        org as _,
        id
    )
    .execute(&mut *tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The org whose Peppol id a delivered document is addressed to.
pub async fn org_by_peppol_id(
    db: impl sqlx::PgExecutor<'_>,
    peppol_id: &str,
) -> sqlx::Result<Option<OrgId>> {
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"select id as "id: OrgId" from orgs where peppol_id = $1"#,
        peppol_id
    )
    .fetch_optional(db)
    .await
}

/// The inbox as CSV: one row per document, newest first.
pub fn csv(documents: &[ReceivedDocument]) -> Vec<u8> {
    let mut out = csv::Writer::from_writer(Vec::new());
    let _ = out.write_record([
        "id",
        "source",
        "seller_name",
        "seller_id",
        "number",
        "issue_date",
        "due_date",
        "currency",
        "total",
        "due",
        "valid",
        "failed_rules",
        "duplicate_of",
        "paid_at",
        "received_at",
    ]);
    for d in documents {
        let currency = d.currency.to_ascii_lowercase();
        let amount = |minor: i64| model::plain_amount(minor, &currency);
        let rules: Vec<&str> = d.failed_rules.iter().map(|r| r.rule.as_str()).collect();
        let _ = out.write_record([
            d.id.to_string(),
            d.source.clone(),
            crate::reports::exports::cell(&d.seller_name).into_owned(),
            crate::reports::exports::cell(&d.seller_id).into_owned(),
            crate::reports::exports::cell(&d.number).into_owned(),
            d.issue_date.map(|x| x.to_string()).unwrap_or_default(),
            d.due_date.map(|x| x.to_string()).unwrap_or_default(),
            d.currency.clone(),
            amount(d.total_cents),
            amount(d.due_cents),
            d.valid.to_string(),
            rules.join(" "),
            d.duplicate_of.map(|x| x.to_string()).unwrap_or_default(),
            d.paid_at.map(|x| x.to_rfc3339()).unwrap_or_default(),
            d.created_at.to_rfc3339(),
        ]);
    }
    out.into_inner().unwrap_or_default()
}

/// How a delivery by the access point ended.
#[derive(Debug)]
pub enum Delivered {
    /// This delivery stored the document (or found the same bytes stored): its id.
    Stored(Uuid),
    /// An earlier delivery of the same instance id did.
    Already,
    /// Another delivery of it is being stored right now.
    Busy(std::time::Duration),
}

/// Stores a document the access point delivered as SBDH instance `instance`, claimed
/// `(webhook, peppol, instance)` in the same transaction as the document: a repeat of a delivery
/// (the access point retries until it gets a 2xx) stores nothing twice.
pub async fn deliver(
    pool: &sqlx::PgPool,
    attempt: &crate::observe::Attempt,
    org: OrgId,
    instance: &str,
    opened: &Opened,
) -> sqlx::Result<Delivered> {
    let key = crate::claim::ClaimKey::webhook("peppol", instance);
    let ran = crate::surfaces::once(pool, attempt, &key, &Default::default(), || {
        async |tx| {
            let (detail, _) = store(tx, org, opened, "peppol", Some(instance)).await?;
            crate::failpoint::hit("peppol.after_receive");
            let id = detail.document.id;
            Ok::<_, sqlx::Error>(crate::surfaces::Work::Commit {
                answer: id,
                outcome: crate::claim::Outcome::result(id),
                concerns: crate::observe::Concerns {
                    org: Some(org),
                    invoice: None,
                },
            })
        }
    })
    .await?;
    Ok(match ran {
        crate::surfaces::Once::Ran(id) => Delivered::Stored(id),
        crate::surfaces::Once::Done(_) | crate::surfaces::Once::Mismatch => Delivered::Already,
        crate::surfaces::Once::Busy { retry_after } => Delivered::Busy(retry_after),
    })
}

/// Verifies a delivery's Standard Webhooks signature (`webhook-id`, `webhook-timestamp`,
/// `webhook-signature`) with `secret`, within five minutes of now: one MAC whatever the header
/// holds (at most 4 signatures are compared).
pub fn verify(
    secret: &str,
    id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now: i64,
) -> Result<(), &'static str> {
    if id.is_empty() || id.len() > 200 {
        return Err("a missing or overlong webhook-id");
    }
    let t: i64 = timestamp
        .parse()
        .map_err(|_| "an unreadable webhook-timestamp")?;
    if (now - t).abs() > 300 {
        return Err("a webhook-timestamp more than five minutes from now");
    }
    let expected = crate::webhooks_out::sign(secret, id, t, body).ok_or("no usable secret")?;
    let expected = expected.as_bytes();
    let matched = signatures.split_whitespace().take(4).any(|s| {
        use subtle::ConstantTimeEq;
        s.len() == expected.len() && bool::from(s.as_bytes().ct_eq(expected))
    });
    if matched {
        Ok(())
    } else {
        Err("no signature matches")
    }
}

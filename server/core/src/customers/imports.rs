//! Importing customers from a CSV file. The upload is read, bounded and checked row by row into a
//! preview (`customer_imports`, one per file: its SHA-256 within the org is the import's key, so the
//! same file uploaded again is the same import and adds nothing). Applying it is a conditional state
//! change (previewed → applying) that queues one outbox row; a worker then adds the rows in batches,
//! each batch's customers and the advance of `applied` committed together, so a worker killed
//! mid-file leaves whole batches behind and the next one (after the lease) carries on from the
//! counter. Every customer is keyed by the file and its row (`customers.source_key`), the business
//! write's own second line of defence.

use model::OrgId;
use serde_json::{json, Value as JsonValue};
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use model::CustomerInput;

pub use model::imports::{ImportView, RowError, COLUMNS, MAX_BYTES, MAX_ROWS};

/// Customers added per transaction.
pub const BATCH: i64 = 250;
/// Row errors kept for the preview.
const MAX_ERRORS: usize = 200;

/// A file read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub sha256: String,
    pub total: usize,
    pub valid: Vec<(usize, CustomerInput)>,
    pub errors: Vec<RowError>,
}

/// Reads `bytes` as a CSV of customers (UTF-8, a header first): each row checked as the customer
/// form checks it. Err: why the file as a whole is refused.
pub fn parse(bytes: &[u8]) -> Result<Parsed, String> {
    if bytes.len() > MAX_BYTES {
        return Err(format!(
            "The file is larger than {} MB.",
            MAX_BYTES / 1024 / 1024
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "The file is not UTF-8 text.".to_owned())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(|_| "The file's first line is not a CSV header.".to_owned())?
        .iter()
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    if let Some(unknown) = header.iter().find(|h| !COLUMNS.contains(&h.as_str())) {
        return Err(format!(
            "Unknown column {unknown:.40}: the columns are {}.",
            COLUMNS.join(", ")
        ));
    }
    if !header.iter().any(|h| h == "name") || !header.iter().any(|h| h == "email") {
        return Err("The header needs at least name and email.".into());
    }
    let mut parsed = Parsed {
        sha256: hex::encode(Sha256::digest(bytes)),
        total: 0,
        valid: Vec::new(),
        errors: Vec::new(),
    };
    for (n, record) in reader.records().enumerate() {
        let row = n + 2;
        parsed.total += 1;
        if parsed.total > MAX_ROWS {
            return Err(format!(
                "The file has more than {MAX_ROWS} customers: split it."
            ));
        }
        let record = match record {
            Ok(r) => r,
            Err(_) => {
                push_error(
                    &mut parsed.errors,
                    row,
                    "row",
                    "This line is not valid CSV.",
                );
                continue;
            }
        };
        if record.len() != header.len() {
            push_error(
                &mut parsed.errors,
                row,
                "row",
                &format!("{} cells, not {}.", record.len(), header.len()),
            );
            continue;
        }
        let cell = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .map(|i| record[i].trim().to_owned())
                .unwrap_or_default()
        };
        let locale = cell("locale");
        let value = json!({
            "name": cell("name"),
            "email": cell("email"),
            "address": {
                "line1": cell("address_line1"), "line2": cell("address_line2"),
                "postal_code": cell("postal_code"), "city": cell("city"),
                "region": cell("region"), "country": cell("country").to_ascii_uppercase(),
            },
            "vat_id": Some(cell("vat_id")).filter(|v| !v.is_empty()),
            "buyer_reference": cell("buyer_reference"),
            "locale": Some(locale).filter(|l| !l.is_empty()),
            "notes": cell("notes"),
        });
        let input: CustomerInput = match serde_json::from_value(value) {
            Ok(input) => input,
            Err(_) => {
                push_error(
                    &mut parsed.errors,
                    row,
                    "locale",
                    "Use en, de, fr, es or nl, or leave it empty.",
                );
                continue;
            }
        };
        match input.check() {
            Ok(()) => parsed.valid.push((row, input)),
            Err(fields) => {
                for (field, message) in fields {
                    push_error(&mut parsed.errors, row, &field, &message);
                }
            }
        }
    }
    Ok(parsed)
}

fn push_error(errors: &mut Vec<RowError>, row: usize, field: &str, message: &str) {
    if errors.len() < MAX_ERRORS {
        errors.push(RowError {
            row,
            field: field.to_owned(),
            message: message.to_owned(),
        });
    }
}

/// Stores the preview of `parsed` for `org`, or finds the import of the same file: its id either way.
pub async fn store(
    pool: &PgPool,
    org: OrgId,
    user: Option<Uuid>,
    file_name: &str,
    parsed: &Parsed,
) -> sqlx::Result<Uuid> {
    let rows: Vec<JsonValue> = parsed
        .valid
        .iter()
        .map(|(row, input)| json!([row, input]))
        .collect();
    let name: String = file_name.chars().take(200).collect();
    // language=PostgreSQL
    let id = sqlx::query_scalar!(
        r#"
        with new as (
            insert into customer_imports (id, org_id, file_sha256, file_name, total, valid, rows,
                                          errors, created_by)
            values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            on conflict (org_id, file_sha256) do nothing
            returning id
        )
        select id as "id!" from new
        union all
        select id from customer_imports where org_id = $2 and file_sha256 = $3
        limit 1
        "#,
        Uuid::now_v7(),
        org as _,
        parsed.sha256,
        name,
        parsed.total as i32,
        parsed.valid.len() as i32,
        JsonValue::Array(rows),
        serde_json::to_value(&parsed.errors).unwrap_or_default(),
        user,
    )
    .fetch_one(pool)
    .await?;
    Ok(id)
}

/// `org`'s import `id`.
pub async fn get(pool: &PgPool, org: OrgId, id: Uuid) -> sqlx::Result<Option<ImportView>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select id, file_name, total, valid, applied, status, errors,
               (select coalesce(jsonb_agg(r), '[]') from
                    (select r from jsonb_array_elements(rows) r limit 20) s) as "sample!"
        from customer_imports where org_id = $1 and id = $2
        "#,
        org as _,
        id
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| ImportView {
        id: r.id,
        file_name: r.file_name,
        total: r.total,
        valid: r.valid,
        applied: r.applied,
        status: r.status,
        errors: serde_json::from_value(r.errors).unwrap_or_default(),
        sample: r
            .sample
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|r| {
                        (
                            r[0].as_i64().unwrap_or(0),
                            r[1]["name"].as_str().unwrap_or("").to_owned(),
                            r[1]["email"].as_str().unwrap_or("").to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        form_key: model::form_key(org),
    }))
}

/// Starts applying `org`'s import `id` in the caller's transaction (the form's claim commits with
/// it): previewed → applying, and the job queued. False when it was already started or is not the
/// org's (the conditional move is the business write's own second line of defence).
pub async fn start(tx: &mut PgConnection, org: OrgId, id: Uuid) -> sqlx::Result<bool> {
    // language=PostgreSQL
    let started = sqlx::query!(
        r#"
        update customer_imports set status = case when valid = 0 then 'done' else 'applying' end,
               finished_at = case when valid = 0 then now() end
        where org_id = $1 and id = $2 and status = 'previewed'
        returning valid
        "#,
        org as _,
        id
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(started) = started else {
        return Ok(false);
    };
    if started.valid > 0 {
        crate::outbox::enqueue_job(
            tx,
            org,
            crate::outbox::JobKind::CustomerImport,
            json!({ "import_id": id, "dedupe": format!("customer_import:{id}") }),
        )
        .await?;
    }
    Ok(true)
}

/// Adds the next batch of import `id`: its customers and the counter's advance in one transaction
/// (the import's row locked, so two workers take turns). Returns whether rows are left.
pub async fn apply_batch(pool: &PgPool, id: Uuid) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    // language=PostgreSQL
    let import = sqlx::query!(
        r#"
        select org_id, file_sha256, applied, valid, status,
               (select coalesce(jsonb_agg(r), '[]') from
                    (select r from jsonb_array_elements(rows) with ordinality e(r, n)
                     where n > applied order by n limit $2) s) as "batch!"
        from customer_imports where id = $1
        for update
        "#,
        id,
        BATCH
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(import) = import else {
        return Ok(false);
    };
    if import.status != "applying" {
        return Ok(false);
    }
    let batch = import.batch.as_array().cloned().unwrap_or_default();
    for entry in &batch {
        let row = entry[0].as_i64().unwrap_or(0);
        let Ok(input) = serde_json::from_value::<CustomerInput>(entry[1].clone()) else {
            continue;
        };
        let key = format!("import:{}:{row}", import.file_sha256);
        insert_once(&mut tx, import.org_id.into(), &key, &input).await?;
    }
    let applied = import.applied + batch.len() as i32;
    let done = applied >= import.valid || batch.is_empty();
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update customer_imports
        set applied = $2, status = case when $3 then 'done' else status end,
            finished_at = case when $3 then now() end
        where id = $1
        "#,
        id,
        applied.min(import.valid),
        done,
    )
    .execute(&mut *tx)
    .await?;
    crate::failpoint::hit("import.after_batch");
    tx.commit().await?;
    Ok(!done)
}

/// A customer of the import, unless its key already made one.
async fn insert_once(
    tx: &mut PgConnection,
    org: OrgId,
    key: &str,
    input: &CustomerInput,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    let exists = sqlx::query_scalar!(
        r#"select exists (select 1 from customers where org_id = $1 and source_key = $2) as "e!""#,
        org as _,
        key
    )
    .fetch_one(&mut *tx)
    .await?;
    if !exists {
        crate::customers::create(
            tx,
            model::CustomerId::from(Uuid::now_v7()),
            org,
            Some(key),
            input,
        )
        .await?;
    }
    Ok(())
}

/// The worker's job for an outbox row of kind `customer_import`: every batch left. A crash leaves
/// whole batches; the next holder of the row carries on from the counter.
pub async fn apply(pool: &PgPool, payload: &JsonValue) -> Result<(), (String, String, bool)> {
    let Some(id) = payload["import_id"]
        .as_str()
        .and_then(|v| Uuid::try_parse(v).ok())
    else {
        return Err((
            "the job names no import".into(),
            "no import_id".into(),
            true,
        ));
    };
    loop {
        match apply_batch(pool, id).await {
            Ok(true) => continue,
            Ok(false) => return Ok(()),
            Err(e) => {
                return Err((
                    "temporary error while importing".into(),
                    e.to_string(),
                    false,
                ))
            }
        }
    }
}

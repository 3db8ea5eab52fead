//! An org's settings: read and saved.

use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::error::AppError;
use crate::model::{BankDetails, OrgSettings};

pub async fn settings(db: impl PgExecutor<'_>, org: Uuid) -> sqlx::Result<OrgSettings> {
    // language=PostgreSQL
    let row = sqlx::query!(
        "select address, time_zone, number_format, number_reset, credit_note_format from orgs where id = $1",
        org
    )
    .fetch_one(db)
    .await?;
    Ok(OrgSettings {
        address: row.address,
        time_zone: row.time_zone,
        number_format: row.number_format,
        number_reset: row.number_reset,
        credit_note_format: row.credit_note_format,
    })
}

/// Saves `org`'s settings (checked by [`OrgSettings::check`] first). The time zone must be one
/// Postgres knows, checked in the same statement. New numbers follow the new format; numbers
/// already given keep theirs.
pub async fn save_settings(
    tx: &mut PgConnection,
    org: Uuid,
    settings: &OrgSettings,
) -> Result<(), AppError> {
    // language=PostgreSQL
    let saved = sqlx::query_scalar!(
        r#"
        update orgs
        set address = $2, time_zone = $3, number_format = $4, number_reset = $5,
            credit_note_format = coalesce(nullif($6, ''), $7)
        where id = $1 and exists (select from pg_timezone_names where name = $3)
        returning true as "saved!"
        "#,
        org,
        settings.address.trim(),
        settings.time_zone.trim(),
        settings.number_format.trim(),
        settings.number_reset,
        settings.credit_note_format.trim(),
        crate::model::DEFAULT_CREDIT_NOTE_FORMAT,
    )
    .fetch_optional(&mut *tx)
    .await?;
    match saved {
        Some(_) => Ok(()),
        None => Err(AppError::field(
            "time_zone",
            "Unknown time zone: enter one such as Europe/Amsterdam, America/New_York or UTC.",
        )),
    }
}

/// How `org` is paid by transfer.
pub async fn bank_details(db: impl PgExecutor<'_>, org: Uuid) -> sqlx::Result<BankDetails> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select bank_account_holder, bank_iban, bank_bic, bank_other, payment_reference
        from orgs where id = $1
        "#,
        org
    )
    .fetch_one(db)
    .await?;
    Ok(BankDetails {
        holder: row.bank_account_holder,
        iban: row.bank_iban,
        bic: row.bank_bic,
        other: row.bank_other,
        reference: row.payment_reference,
    })
}

/// Saves how `org` is paid by transfer: `bank` normalized and checked ([`BankDetails::check`]) first.
pub async fn save_bank_details(
    tx: &mut PgConnection,
    org: Uuid,
    bank: &BankDetails,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update orgs
        set bank_account_holder = $2, bank_iban = $3, bank_bic = $4, bank_other = $5,
            payment_reference = $6
        where id = $1
        "#,
        org,
        bank.holder,
        bank.iban,
        bank.bic,
        bank.other,
        bank.reference,
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

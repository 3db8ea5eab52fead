//! An org's settings: read and saved.

use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::error::AppError;
use crate::model::{Address, BankDetails, OrgDetails, OrgSettings};

pub async fn settings(db: impl PgExecutor<'_>, org: Uuid) -> sqlx::Result<OrgSettings> {
    // language=PostgreSQL
    let row = sqlx::query!(
        "select time_zone, number_format, number_reset, credit_note_format from orgs where id = $1",
        org
    )
    .fetch_one(db)
    .await?;
    Ok(OrgSettings {
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
        set time_zone = $2, number_format = $3, number_reset = $4,
            credit_note_format = coalesce(nullif($5, ''), $6)
        where id = $1 and exists (select from pg_timezone_names where name = $2)
        returning true as "saved!"
        "#,
        org,
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

/// Who issues `org`'s invoices.
pub async fn details(db: impl PgExecutor<'_>, org: Uuid) -> sqlx::Result<OrgDetails> {
    // language=PostgreSQL
    let r = sqlx::query!(
        r#"
        select legal_name, address_line1, address_line2, city, postal_code, region,
               coalesce(country, '') as "country!", vat_id, tax_registration_id, contact_email,
               contact_phone, einvoicing, locale
        from orgs where id = $1
        "#,
        org
    )
    .fetch_one(db)
    .await?;
    Ok(OrgDetails {
        legal_name: r.legal_name,
        address: Address {
            line1: r.address_line1,
            line2: r.address_line2,
            city: r.city,
            postal_code: r.postal_code,
            region: r.region,
            country: r.country,
        },
        vat_id: r.vat_id,
        tax_registration_id: r.tax_registration_id,
        email: r.contact_email,
        phone: r.contact_phone,
        einvoicing: r.einvoicing,
        locale: crate::model::Locale::parse(&r.locale).unwrap_or_default(),
    })
}

/// Saves who issues `org`'s invoices (normalized and checked by [`OrgDetails::check`] first).
/// Invoices already finalized keep the seller they were finalized with.
pub async fn save_details(tx: &mut PgConnection, org: Uuid, d: &OrgDetails) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update orgs
        set legal_name = $2, address_line1 = $3, address_line2 = $4, city = $5, postal_code = $6,
            region = $7, country = nullif($8, ''), vat_id = $9, tax_registration_id = $10,
            contact_email = $11, contact_phone = $12, einvoicing = $13, locale = $14
        where id = $1
        "#,
        org,
        d.legal_name,
        d.address.line1,
        d.address.line2,
        d.address.city,
        d.address.postal_code,
        d.address.region,
        d.address.country,
        d.vat_id,
        d.tax_registration_id,
        d.email,
        d.phone,
        d.einvoicing,
        d.locale.as_str(),
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
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

//! An org's settings: read and saved.

use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::error::AppError;
use crate::model::OrgSettings;

pub async fn settings(db: impl PgExecutor<'_>, org: Uuid) -> sqlx::Result<OrgSettings> {
    // language=PostgreSQL
    let row = sqlx::query!(
        "select address, time_zone, number_format, number_reset from orgs where id = $1",
        org
    )
    .fetch_one(db)
    .await?;
    Ok(OrgSettings {
        address: row.address,
        time_zone: row.time_zone,
        number_format: row.number_format,
        number_reset: row.number_reset,
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
        set address = $2, time_zone = $3, number_format = $4, number_reset = $5
        where id = $1 and exists (select from pg_timezone_names where name = $3)
        returning true as "saved!"
        "#,
        org,
        settings.address.trim(),
        settings.time_zone.trim(),
        settings.number_format.trim(),
        settings.number_reset,
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

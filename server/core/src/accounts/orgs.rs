//! An org's settings: read and saved.

use model::OrgId;
use sqlx::{PgConnection, PgExecutor};

use model::error::AppError;
use model::{Address, BankDetails, OrgDetails, OrgSettings};

pub async fn settings(db: impl PgExecutor<'_>, org: OrgId) -> sqlx::Result<OrgSettings> {
    // language=PostgreSQL
    let row = sqlx::query!(
        "select time_zone, number_format, number_reset, credit_note_format from orgs where id = $1",
        org as _
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
    org: OrgId,
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
        org as _,
        settings.time_zone.trim(),
        settings.number_format.trim(),
        settings.number_reset,
        settings.credit_note_format.trim(),
        model::DEFAULT_CREDIT_NOTE_FORMAT,
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
pub async fn details(db: impl PgExecutor<'_>, org: OrgId) -> sqlx::Result<OrgDetails> {
    // language=PostgreSQL
    let r = sqlx::query!(
        r#"
        select legal_name, address_line1, address_line2, city, postal_code, region,
               coalesce(country, '') as "country!", vat_id, tax_registration_id, contact_email,
               contact_phone, einvoicing, locale, coalesce(peppol_id, '') as "peppol_id!"
        from orgs where id = $1
        "#,
        org as _
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
        peppol_id: r.peppol_id,
        einvoicing: r.einvoicing,
        locale: model::Locale::parse(&r.locale).unwrap_or_default(),
    })
}

/// Whether another org has `peppol_id` (a participant id names one org: what it receives is
/// routed by it).
pub async fn peppol_id_taken(
    db: impl PgExecutor<'_>,
    org: OrgId,
    peppol_id: &str,
) -> sqlx::Result<bool> {
    if peppol_id.is_empty() {
        return Ok(false);
    }
    // language=PostgreSQL
    sqlx::query_scalar!(
        r#"select exists (select from orgs where peppol_id = $1 and id <> $2) as "taken!""#,
        peppol_id,
        org as _
    )
    .fetch_one(db)
    .await
}

/// What a form or the API says when another org has the Peppol id.
pub const PEPPOL_ID_TAKEN: &str =
    "Another organisation here receives as this Peppol id: each id names one organisation.";

/// One field of where the org is paid, or of who it is on its e-invoices, as it was and is now (an
/// IBAN masked to its last four characters).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    pub field: &'static str,
    pub old: String,
    pub new: String,
}

/// `iban` as the audit log and emails show it: its last four characters.
pub fn mask_iban(iban: &str) -> String {
    let chars: Vec<char> = iban.chars().collect();
    match chars.len() {
        0 => String::new(),
        n if n <= 4 => "…".repeat(n),
        n => format!("…{}", chars[n - 4..].iter().collect::<String>()),
    }
}

/// What differs in where customers are told to pay: the holder, the IBAN, the BIC, the other
/// scheme's details (the reference format moves no money).
pub fn bank_changes(old: &BankDetails, new: &BankDetails) -> Vec<Change> {
    let mut changes = Vec::new();
    let mut differ = |field, old: &str, new: &str, shown: fn(&str) -> String| {
        if old != new {
            changes.push(Change {
                field,
                old: shown(old),
                new: shown(new),
            });
        }
    };
    differ("bank.holder", &old.holder, &new.holder, str::to_owned);
    differ("bank.iban", &old.iban, &new.iban, mask_iban);
    differ("bank.bic", &old.bic, &new.bic, str::to_owned);
    differ("bank.text", &old.other, &new.other, str::to_owned);
    changes
}

/// What differs in who the org is on its e-invoices: its legal name, VAT and tax registration
/// ids, its electronic address, and whether it issues e-invoices at all.
pub fn identity_changes(old: &OrgDetails, new: &OrgDetails) -> Vec<Change> {
    let mut changes = Vec::new();
    let mut differ = |field, old: &str, new: &str| {
        if old != new {
            changes.push(Change {
                field,
                old: old.to_owned(),
                new: new.to_owned(),
            });
        }
    };
    differ("legal_name", &old.legal_name, &new.legal_name);
    differ("vat_id", &old.vat_id, &new.vat_id);
    differ(
        "tax_registration_id",
        &old.tax_registration_id,
        &new.tax_registration_id,
    );
    differ("email", &old.email, &new.email);
    differ("peppol_id", &old.peppol_id, &new.peppol_id);
    differ(
        "einvoicing",
        &old.einvoicing.to_string(),
        &new.einvoicing.to_string(),
    );
    changes
}

/// Records `changes` (if any) in `org`'s audit log as `action` and tells every owner by email, in
/// the caller's transaction: a change of where the org is paid is never silent, whoever made it.
async fn record_changes(
    tx: &mut PgConnection,
    org: OrgId,
    actor: &crate::accounts::audit::Actor,
    action: &str,
    changes: &[Change],
) -> sqlx::Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let fields: Vec<&str> = changes.iter().map(|c| c.field).collect();
    crate::accounts::audit::record(
        tx,
        org,
        actor,
        action,
        &fields.join(", "),
        serde_json::json!({ "changes": changes }),
    )
    .await?;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into outbox (id, org_id, kind, payload)
        select gen_random_uuid(), $1, 'org_change_notice',
               jsonb_build_object('to', u.email, 'org_name', o.name, 'by', $2::text,
                                  'at', $3::text, 'changes', $4::jsonb)
        from memberships m join users u on u.id = m.user_id join orgs o on o.id = m.org_id
        where m.org_id = $1 and m.role = 'owner'
        "#,
        org as _,
        actor.email,
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
        serde_json::to_value(changes).expect("changes serialise"),
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Locks `org`'s row for a change of its details, and reads what they are.
async fn locked(tx: &mut PgConnection, org: OrgId) -> sqlx::Result<(OrgDetails, BankDetails)> {
    // language=PostgreSQL
    sqlx::query!("select id from orgs where id = $1 for update", org as _)
        .fetch_one(&mut *tx)
        .await?;
    Ok((
        details(&mut *tx, org).await?,
        bank_details(&mut *tx, org).await?,
    ))
}

/// Saves who issues `org`'s invoices (normalized and checked by [`OrgDetails::check`] first).
/// Invoices already finalized keep the seller they were finalized with. A change of its
/// e-invoicing identity is in the audit log and emailed to every owner.
pub async fn save_details(
    tx: &mut PgConnection,
    org: OrgId,
    actor: &crate::accounts::audit::Actor,
    d: &OrgDetails,
) -> sqlx::Result<()> {
    let (before, _) = locked(tx, org).await?;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update orgs
        set legal_name = $2, address_line1 = $3, address_line2 = $4, city = $5, postal_code = $6,
            region = $7, country = nullif($8, ''), vat_id = $9, tax_registration_id = $10,
            contact_email = $11, contact_phone = $12, einvoicing = $13, locale = $14,
            peppol_id = nullif($15, '')
        where id = $1
        "#,
        org as _,
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
        d.peppol_id,
    )
    .execute(&mut *tx)
    .await?;
    let changes = identity_changes(&before, d);
    record_changes(tx, org, actor, "org.identity_changed", &changes).await
}

/// How `org` is paid by transfer.
pub async fn bank_details(db: impl PgExecutor<'_>, org: OrgId) -> sqlx::Result<BankDetails> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select bank_account_holder, bank_iban, bank_bic, bank_other, payment_reference
        from orgs where id = $1
        "#,
        org as _
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
/// A change of where the money goes is in the audit log and emailed to every owner.
pub async fn save_bank_details(
    tx: &mut PgConnection,
    org: OrgId,
    actor: &crate::accounts::audit::Actor,
    bank: &BankDetails,
) -> sqlx::Result<()> {
    let (_, before) = locked(tx, org).await?;
    // language=PostgreSQL
    sqlx::query!(
        r#"
        update orgs
        set bank_account_holder = $2, bank_iban = $3, bank_bic = $4, bank_other = $5,
            payment_reference = $6
        where id = $1
        "#,
        org as _,
        bank.holder,
        bank.iban,
        bank.bic,
        bank.other,
        bank.reference,
    )
    .execute(&mut *tx)
    .await?;
    let changes = bank_changes(&before, bank);
    record_changes(tx, org, actor, "org.bank_details_changed", &changes).await
}

/// The org's retry days and late fees.
pub async fn collection(
    conn: &mut PgConnection,
    org: OrgId,
) -> sqlx::Result<(model::collection::RetryDays, model::collection::LateFees)> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"select retry_days as "retry_days!: Vec<i16>", late_fees from orgs where id = $1"#,
        org as _
    )
    .fetch_one(&mut *conn)
    .await?;
    let days = model::collection::RetryDays(row.retry_days.iter().map(|d| *d as u32).collect());
    // Written only through `save_settings`, checked: anything else reads as no fee.
    let fees = serde_json::from_value(row.late_fees).unwrap_or_default();
    Ok((days, fees))
}

/// The org's other accounts whose statements it imports (beside its IBAN).
pub async fn bank_accounts(conn: &mut PgConnection, org: OrgId) -> sqlx::Result<Vec<String>> {
    // language=PostgreSQL
    sqlx::query_scalar!("select bank_accounts from orgs where id = $1", org as _)
        .fetch_one(&mut *conn)
        .await
}

/// Saves the org's other accounts ([`model::check_bank_accounts`] by the caller).
pub async fn save_bank_accounts(
    tx: &mut PgConnection,
    org: OrgId,
    accounts: &[String],
) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "update orgs set bank_accounts = $2 where id = $1",
        org as _,
        accounts
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Saves the org's retry days and late fees (checked by the caller).
pub async fn save_collection(
    tx: &mut PgConnection,
    org: OrgId,
    days: &model::collection::RetryDays,
    fees: &model::collection::LateFees,
) -> sqlx::Result<()> {
    let days: Vec<i16> = days.0.iter().map(|d| *d as i16).collect();
    // language=PostgreSQL
    sqlx::query!(
        "update orgs set retry_days = $2, late_fees = $3 where id = $1",
        org as _,
        &days,
        serde_json::to_value(fees).expect("late fees serialise")
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

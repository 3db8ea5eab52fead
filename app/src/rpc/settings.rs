//! Server functions of the org settings page: the settings and the tax rates.

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use uuid::Uuid;

use model::error::{AppError, FormError};

#[cfg(feature = "ssr")]
use super::{form::SettingsForm, state};

/// The org settings page: the settings, the tax rates, and fresh keys for its forms.
#[server(prefix = "/rpc", endpoint = "get_org_settings")]
pub async fn get_org_settings() -> Result<model::OrgSettingsPage, AppError> {
    let user = super::require(model::Action::Read).await?;
    invoicer_core::pages::org_settings(&state()?, &user)
        .await
        .map_err(AppError::respond)
}

/// Saves the accent colour and the footer, once per rendered form.
#[server(prefix = "/rpc", endpoint = "save_branding")]
pub async fn save_branding(
    idempotency_key: Option<String>,
    branding: model::BrandingForm,
) -> Result<(), FormError<model::BrandingForm>> {
    use invoicer_core::surfaces::forms::Form;
    let parsed = branding.parse();
    SettingsForm {
        form: Form::EditBranding,
        action: model::Action::ManageOrg,
        back: "/settings/org",
        idempotency_key,
        content: &branding,
        check: parsed.as_ref().map(|_| ()).map_err(Clone::clone),
    }
    .run_refilling(async |tx, user| {
        let (colour, footer) = parsed.clone().map_err(AppError::invalid)?;
        invoicer_core::documents::branding::save(tx, user.org_id, colour.as_deref(), &footer)
            .await?;
        Ok(user.org_id.uuid())
    })
    .await
}

/// Removes the logo, once per rendered button.
#[server(prefix = "/rpc", endpoint = "remove_logo")]
pub async fn remove_logo(idempotency_key: Option<String>) -> Result<(), AppError> {
    use invoicer_core::surfaces::forms::Form;
    SettingsForm {
        form: Form::RemoveLogo,
        action: model::Action::ManageOrg,
        back: "/settings/org",
        idempotency_key,
        content: &(),
        check: Ok(()),
    }
    .run(async |tx, user| {
        invoicer_core::documents::branding::remove_logo(tx, user.org_id).await?;
        Ok(user.org_id.uuid())
    })
    .await
}

/// Saves the payment reminders' steps (rows with no days are left out), once per rendered form.
#[server(prefix = "/rpc", endpoint = "save_reminders")]
pub async fn save_reminders(
    idempotency_key: Option<String>,
    steps: Option<Vec<model::ReminderStepForm>>,
) -> Result<(), FormError<Vec<model::ReminderStepForm>>> {
    use invoicer_core::surfaces::forms::Form;
    let rows = steps.unwrap_or_default();
    let parsed = model::ReminderStepForm::parse(&rows);
    SettingsForm {
        form: Form::EditReminders,
        action: model::Action::ManageOrg,
        back: "/settings/org?saved=reminders",
        idempotency_key,
        content: &rows,
        check: parsed.as_ref().map(|_| ()).map_err(Clone::clone),
    }
    .run_refilling(async |tx, user| {
        let steps = parsed.clone().map_err(AppError::invalid)?;
        invoicer_core::jobs::reminders::save_steps(tx, user.org_id, &steps).await?;
        Ok(user.org_id.uuid())
    })
    .await
}

/// Saves the org's retry days and late fees, once per rendered form; the fee's tax rate must be
/// one of the org's that is not archived.
#[server(prefix = "/rpc", endpoint = "save_collection")]
pub async fn save_collection(
    idempotency_key: Option<String>,
    collection: model::collection::CollectionForm,
) -> Result<(), FormError<model::collection::CollectionForm>> {
    use invoicer_core::surfaces::forms::Form;
    let parsed = collection.parse();
    SettingsForm {
        form: Form::EditCollection,
        action: model::Action::ManageOrg,
        back: "/settings/org?saved=collection",
        idempotency_key,
        content: &collection,
        check: parsed.as_ref().map(|_| ()).map_err(Clone::clone),
    }
    .run_refilling(async |tx, user| {
        let (days, fees) = parsed.clone().map_err(AppError::invalid)?;
        if let Some(rate) = fees.tax_rate_id {
            if !invoicer_core::invoicing::tax_rates::is_active(&mut *tx, user.org_id, rate).await? {
                let why = "Choose one of your tax rates that is not archived.";
                return Err(AppError::invalid(
                    [("fee_tax_rate_id".to_owned(), why.to_owned())].into(),
                ));
            }
        }
        invoicer_core::accounts::orgs::save_collection(tx, user.org_id, &days, &fees).await?;
        Ok(user.org_id.uuid())
    })
    .await
}

/// Saves the org's settings, once per rendered form.
#[server(prefix = "/rpc", endpoint = "save_org_settings")]
pub async fn save_org_settings(
    idempotency_key: Option<String>,
    settings: model::OrgSettings,
) -> Result<(), FormError<model::OrgSettings>> {
    use invoicer_core::surfaces::forms::Form;
    SettingsForm {
        form: Form::EditOrgSettings,
        action: model::Action::ManageOrg,
        back: "/settings/org",
        idempotency_key,
        content: &settings,
        check: settings.check(),
    }
    .run_refilling(async |tx, user| {
        invoicer_core::accounts::orgs::save_settings(tx, user.org_id, &settings).await?;
        Ok(user.org_id.uuid())
    })
    .await
}

/// Saves who issues the org's invoices (its legal details), once per rendered form; a change of its
/// e-invoicing identity asks for the password again after 10 minutes.
#[server(prefix = "/rpc", endpoint = "save_org_details")]
pub async fn save_org_details(
    idempotency_key: Option<String>,
    details: model::OrgDetails,
    password: Option<String>,
) -> Result<(), FormError<model::OrgDetails>> {
    use invoicer_core::surfaces::forms::Form;
    let details = details.normalized();
    let user = super::require(model::Action::ManageOrg).await?;
    let now = invoicer_core::accounts::orgs::details(&state()?.pool, user.org_id)
        .await
        .map_err(AppError::from)?;
    let changed = !invoicer_core::accounts::orgs::identity_changes(&now, &details).is_empty();
    password_again_if(changed, &idempotency_key, password.as_deref())
        .await
        .map_err(|e| FormError::refilling(e, &details))?;
    let mut check = details.check();
    if invoicer_core::accounts::orgs::peppol_id_taken(
        &state()?.pool,
        user.org_id,
        &details.peppol_id,
    )
    .await
    .map_err(AppError::from)?
    {
        let taken = invoicer_core::accounts::orgs::PEPPOL_ID_TAKEN.to_owned();
        match &mut check {
            Err(fields) => {
                fields.insert("peppol_id".into(), taken);
            }
            Ok(()) => check = Err([("peppol_id".to_owned(), taken)].into()),
        }
    }
    SettingsForm {
        form: Form::EditOrgDetails,
        action: model::Action::ManageOrg,
        back: "/settings/org",
        idempotency_key,
        content: &details,
        check,
    }
    .run_refilling(async |tx, user| {
        let actor = super::actor(user);
        invoicer_core::accounts::orgs::save_details(tx, user.org_id, &actor, &details).await?;
        Ok(user.org_id.uuid())
    })
    .await
}

/// Saves how the org is paid by transfer (shown on its invoices), once per rendered form; a change
/// of where the money goes asks for the password again after 10 minutes.
#[server(prefix = "/rpc", endpoint = "save_bank_details")]
pub async fn save_bank_details(
    idempotency_key: Option<String>,
    bank: model::BankDetails,
    password: Option<String>,
) -> Result<(), FormError<model::BankDetails>> {
    use invoicer_core::surfaces::forms::Form;
    let bank = bank.normalized();
    let user = super::require(model::Action::ManageOrg).await?;
    let now = invoicer_core::accounts::orgs::bank_details(&state()?.pool, user.org_id)
        .await
        .map_err(AppError::from)?;
    let changed = !invoicer_core::accounts::orgs::bank_changes(&now, &bank).is_empty();
    password_again_if(changed, &idempotency_key, password.as_deref())
        .await
        .map_err(|e| FormError::refilling(e, &bank))?;
    SettingsForm {
        form: Form::EditBankDetails,
        action: model::Action::ManageOrg,
        back: "/settings/org",
        idempotency_key,
        content: &bank,
        check: bank.check(),
    }
    .run_refilling(async |tx, user| {
        let actor = super::actor(user);
        invoicer_core::accounts::orgs::save_bank_details(tx, user.org_id, &actor, &bank).await?;
        Ok(user.org_id.uuid())
    })
    .await
}

/// Adds a tax rate, once per rendered form.
#[server(prefix = "/rpc", endpoint = "add_tax_rate")]
pub async fn add_tax_rate(
    idempotency_key: Option<String>,
    name: String,
    percent: String,
    category: Option<String>,
    exemption_reason: Option<String>,
) -> Result<(), FormError<(String, String, String, String)>> {
    use invoicer_core::surfaces::forms::Form;
    let (category, reason) = (
        category.unwrap_or_default(),
        exemption_reason.unwrap_or_default(),
    );
    let parsed = model::TaxRateInput::parse(&name, &percent, &category, &reason);
    let check = || parsed.clone().map(|_| ());
    let content = (
        name.clone(),
        percent.clone(),
        category.clone(),
        reason.clone(),
    );
    let source_key = format!(
        "form:{}",
        idempotency_key.as_deref().unwrap_or_default().trim()
    );
    SettingsForm {
        form: Form::AddTaxRate,
        action: model::Action::ManageOrg,
        back: "/settings/org",
        idempotency_key,
        content: &content,
        check: check(),
    }
    .run_refilling(async |tx, user| {
        let input = parsed.as_ref().map_err(|f| AppError::invalid(f.clone()))?;
        let rate = invoicer_core::invoicing::tax_rates::add(
            tx,
            Uuid::now_v7(),
            user.org_id,
            &source_key,
            input,
        )
        .await?;
        Ok(rate.id)
    })
    .await
}

/// Archives a tax rate (lines that have it keep it), once per rendered button.
#[server(prefix = "/rpc", endpoint = "archive_tax_rate")]
pub async fn archive_tax_rate(idempotency_key: Option<String>, id: String) -> Result<(), AppError> {
    use invoicer_core::surfaces::forms::Form;
    let rate = Uuid::try_parse(id.trim()).map_err(|_| AppError::NotFound.respond())?;
    SettingsForm {
        form: Form::ArchiveTaxRate,
        action: model::Action::ManageOrg,
        back: "/settings/org",
        idempotency_key,
        content: &rate,
        check: Ok(()),
    }
    .run(async |tx, user| {
        match invoicer_core::invoicing::tax_rates::archive(tx, user.org_id, rate).await? {
            true => Ok(rate),
            false => Err(AppError::NotFound),
        }
    })
    .await
}

/// A change of where the org is paid, or of who it is on its e-invoices, asks for the password
/// again 10 minutes after the last login.
#[cfg(feature = "ssr")]
async fn password_again_if(
    changed: bool,
    idempotency_key: &Option<String>,
    password: Option<&str>,
) -> Result<(), AppError> {
    if !changed {
        return Ok(());
    }
    super::form::recently_authenticated(
        model::Action::ManageOrg,
        idempotency_key,
        password,
        "changing where you are paid, or who you are on your e-invoices,",
    )
    .await
}

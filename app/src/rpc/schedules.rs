//! Server functions of recurring invoices: the list, one schedule, the new-schedule form, and its
//! Pause/Resume button (each form and button once per rendering).

#[cfg(feature = "ssr")]
use super::Respond;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use uuid::Uuid;

use model::error::AppError;
use model::{InvoiceForm, NewSchedulePage, Schedule, ScheduleEdit, ScheduleForm, SchedulePage};

#[cfg(feature = "ssr")]
use super::{form::SettingsForm, state};

/// The session org's schedules, newest first.
#[server(prefix = "/rpc", endpoint = "list_schedules")]
pub async fn list_schedules() -> Result<Vec<Schedule>, AppError> {
    let user = super::require(model::Action::Read).await?;
    let state = state()?;
    let mut conn = state.reads.acquire().await?;
    Ok(invoicer_core::jobs::schedules::list(&mut conn, user.org_id).await?)
}

/// One schedule with its next dates and runs, and the key of its Pause/Resume button.
#[server(prefix = "/rpc", endpoint = "get_schedule")]
pub async fn get_schedule(id: String) -> Result<SchedulePage, AppError> {
    let user = super::require(model::Action::Read).await?;
    let id = super::form::parse_id(&id)?;
    invoicer_core::pages::schedule(&state()?, &user, id)
        .await
        .map_err(AppError::respond)
}

/// What the new-schedule form is rendered with.
#[server(prefix = "/rpc", endpoint = "new_schedule_form")]
pub async fn new_schedule_form() -> Result<NewSchedulePage, AppError> {
    // A read: the form's submit is what needs the right to make invoices.
    let user = super::require(model::Action::Read).await?;
    invoicer_core::pages::new_schedule(&state()?, &user)
        .await
        .map_err(AppError::respond)
}

/// Creates a schedule (the invoice every run issues, and when), once per rendered form.
#[server(prefix = "/rpc", endpoint = "create_schedule")]
pub async fn create_schedule(
    idempotency_key: Option<String>,
    input: InvoiceForm,
    schedule: ScheduleForm,
) -> Result<(), AppError> {
    use invoicer_core::surfaces::forms::Form;
    let parsed = input.parse().and_then(|invoice| {
        schedule
            .parse()
            .map(|schedule| model::ScheduleInput { invoice, schedule })
    });
    let source_key = format!(
        "form:{}",
        idempotency_key.as_deref().unwrap_or_default().trim()
    );
    let content = (&input, &schedule);
    let saved = SettingsForm {
        form: Form::CreateSchedule,
        action: model::Action::EditInvoices,
        back: "/schedules",
        idempotency_key,
        content: &content,
        check: parsed.as_ref().map(|_| ()).map_err(Clone::clone),
    }
    .saved(async |tx, user| {
        let input = parsed.clone().map_err(AppError::invalid)?;
        let today =
            invoicer_core::jobs::schedules::org_today(&mut *tx, user.org_id, chrono::Utc::now())
                .await?;
        let id = Uuid::now_v7();
        invoicer_core::jobs::schedules::create(tx, user.org_id, id, &source_key, &input, today)
            .await
            .map(|s| s.id)
            .map_err(refused)
    })
    .await?;
    // The new schedule's page, with or without JavaScript (a repeat lands on the same one).
    leptos_axum::redirect(&format!("/schedules/{}", saved.id));
    Ok(())
}

#[cfg(feature = "ssr")]
fn refused(e: invoicer_core::jobs::schedules::ScheduleError) -> AppError {
    use invoicer_core::jobs::schedules::ScheduleError;
    match e {
        ScheduleError::Invalid(fields) => AppError::invalid(fields),
        ScheduleError::NotFound => AppError::NotFound,
        ScheduleError::Db(e) => AppError::from(e),
    }
}

/// A schedule's template as its edit form shows it, and the form's key.
#[server(prefix = "/rpc", endpoint = "edit_schedule_form")]
pub async fn edit_schedule_form(id: String) -> Result<ScheduleEdit, AppError> {
    let user = super::require(model::Action::Read).await?;
    let state = state()?;
    let id = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    let mut conn = state.reads.acquire().await?;
    let schedule = invoicer_core::jobs::schedules::get(&mut conn, user.org_id, id)
        .await?
        .ok_or_else(|| AppError::NotFound.respond())?;
    Ok(ScheduleEdit {
        id,
        key: model::form_key(user.org_id),
        form: InvoiceForm::from_input(&schedule.template),
    })
}

/// Replaces a schedule's template (later runs issue the edited invoice; its cadence stays), once
/// per rendered form.
#[server(prefix = "/rpc", endpoint = "update_schedule")]
pub async fn update_schedule(
    schedule_id: String,
    idempotency_key: Option<String>,
    input: InvoiceForm,
) -> Result<(), AppError> {
    use invoicer_core::surfaces::forms::Form;
    let schedule = Uuid::try_parse(&schedule_id).map_err(|_| AppError::NotFound.respond())?;
    let parsed = input
        .parse()
        .and_then(|template| model::ScheduleInput::template_errors(&template).map(|()| template));
    let back = format!("/schedules/{schedule}");
    SettingsForm {
        form: Form::EditSchedule,
        action: model::Action::EditInvoices,
        back: &back,
        idempotency_key,
        content: &(schedule, &input),
        check: parsed.as_ref().map(|_| ()).map_err(Clone::clone),
    }
    .run(async |tx, user| {
        let template = parsed.clone().map_err(AppError::invalid)?;
        invoicer_core::jobs::schedules::edit_template(tx, user.org_id, schedule, &template)
            .await
            .map(|s| s.id)
            .map_err(refused)
    })
    .await?;
    // Back to the schedule's page, with or without JavaScript.
    leptos_axum::redirect(&back);
    Ok(())
}

/// Pauses (`pause` = "true") or resumes a schedule, once per rendered button.
#[server(prefix = "/rpc", endpoint = "pause_schedule")]
pub async fn pause_schedule(
    id: String,
    idempotency_key: Option<String>,
    pause: String,
) -> Result<(), AppError> {
    use invoicer_core::surfaces::forms::Form;
    let schedule = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    let paused = pause == "true";
    let back = format!("/schedules/{schedule}");
    SettingsForm {
        form: Form::PauseSchedule,
        action: model::Action::EditInvoices,
        back: &back,
        idempotency_key,
        content: &(schedule, paused),
        check: Ok(()),
    }
    .run(async |tx, user| {
        let today =
            invoicer_core::jobs::schedules::org_today(&mut *tx, user.org_id, chrono::Utc::now())
                .await?;
        invoicer_core::jobs::schedules::set_paused(tx, user.org_id, schedule, paused, today)
            .await
            .map(|s| s.id)
            .map_err(|e| match e {
                invoicer_core::jobs::schedules::ScheduleError::Db(e) => AppError::from(e),
                _ => AppError::NotFound,
            })
    })
    .await
}

/// Turns payment reminders off (`off` = "true") or on again for one invoice (`what` = "invoice")
/// or all of a customer's (`customer`), once per rendered button.
#[server(prefix = "/rpc", endpoint = "set_reminders")]
pub async fn set_reminders(
    what: String,
    id: String,
    idempotency_key: Option<String>,
    off: String,
) -> Result<(), AppError> {
    use invoicer_core::surfaces::forms::Form;
    let target = Uuid::try_parse(&id).map_err(|_| AppError::NotFound.respond())?;
    let off = off == "true";
    let (customer, back) = match what.as_str() {
        "invoice" => (false, format!("/invoices/{target}")),
        "customer" => (true, format!("/customers/{target}")),
        _ => return Err(AppError::NotFound.respond()),
    };
    SettingsForm {
        form: Form::ToggleReminders,
        action: model::Action::EditInvoices,
        back: &back,
        idempotency_key,
        content: &(&what, target, off),
        check: Ok(()),
    }
    .run(async |tx, user| {
        let found = if customer {
            invoicer_core::jobs::reminders::set_customer_off(
                tx,
                user.org_id,
                model::CustomerId::from(target),
                off,
            )
            .await?
        } else {
            invoicer_core::jobs::reminders::set_invoice_off(
                tx,
                user.org_id,
                model::InvoiceId::from(target),
                off,
            )
            .await?
        };
        if found {
            Ok(target)
        } else {
            Err(AppError::NotFound)
        }
    })
    .await
}

//! What each of the owner's pages reads, one function a page: a server function authorizes and
//! calls one of these. Each names the keys its buttons and forms are submitted with (minted now,
//! for this rendering and the session's org) and what the user's role lets the page offer.
//! Another org's id, or one that does not exist, is `NotFound` alike.

use crate::accounts::auth::SessionUser;
use crate::AppState;
use model::error::AppError;
use model::{form_key, Action, CustomerId, InvoiceForm, InvoiceId, QuoteForm};
use sqlx::pool::PoolConnection;
use sqlx::Postgres;
use uuid::Uuid;

/// What the invoice, quote and schedule forms offer: the org's newest customers, its tax rates
/// (archived ones too: a draft saved with one keeps it) and the currency a form starts with.
pub async fn invoice_form(
    state: &AppState,
    user: &SessionUser,
) -> Result<model::InvoiceFormOptions, AppError> {
    let org = user.org_id;
    let (customers, tax_rates, org_currency) = tokio::try_join!(
        crate::customers::list(&state.reads, org, None, 100),
        crate::invoicing::tax_rates::list(&state.reads, org, true),
        crate::customers::org_currency(&state.reads, org),
    )?;
    // The customers' latest invoices, for the customers the form offers.
    let ids: Vec<Uuid> = customers.iter().map(|c| c.id).collect();
    let by_customer = crate::customers::latest_currencies(&state.reads, org, &ids).await?;
    Ok(model::InvoiceFormOptions {
        customers,
        tax_rates,
        currencies: model::CurrencyDefaults {
            org: org_currency,
            by_customer,
        },
    })
}

/// An invoice with what happened to it: emails, payments, history, credit notes, and the keys of
/// its buttons.
pub async fn invoice(
    state: &AppState,
    user: &SessionUser,
    id: InvoiceId,
) -> Result<model::InvoicePage, AppError> {
    let org = user.org_id;
    let base = &state.settings.public_url;
    let invoice = {
        let mut conn = state.reads.acquire().await?;
        crate::invoicing::invoices::get(&mut conn, org, id, base)
            .await?
            .ok_or(AppError::NotFound)?
    };
    let only_this = crate::activity::Filter {
        invoice: Some(id.uuid()),
        ..Default::default()
    };
    // Independent reads, side by side on their own connections.
    let (
        emails,
        (history, _),
        (payments, anomalies),
        (payments_enabled, today, einvoicing),
        reminders_off,
    ) = tokio::try_join!(
        crate::outbox::for_invoice(&state.reads, org, id),
        crate::activity::rows(&state.reads, org, &only_this, None),
        crate::payments::for_invoice(&state.reads, org, id),
        crate::accounts::payments_enabled(&state.reads, org),
        crate::jobs::reminders::off(&state.reads, org, id.uuid(), false),
    )?;
    // Only an invoice with credit notes reads them (most have none).
    let credit_notes = if invoice.credit_notes.is_empty() {
        Vec::new()
    } else {
        crate::invoicing::credit_notes::for_invoice(&state.reads, org, id, base).await?
    };
    let may_apply = invoice.customer_id.is_some()
        && invoice.amount_due_cents > 0
        && matches!(
            invoice.status,
            model::InvoiceStatus::Open | model::InvoiceStatus::Uncollectible
        );
    let credit_available = if may_apply {
        let mut conn = state.reads.acquire().await?;
        crate::payments::credit_balance::available_for(&mut conn, org, id).await?
    } else {
        0
    };
    let delete_keys = payments.iter().map(|_| form_key(org)).collect();
    Ok(model::InvoicePage {
        invoice,
        simulate_payments: state.settings.dev_mode,
        send_key: form_key(org),
        action_key: form_key(org),
        emails,
        payments,
        anomalies,
        history,
        can_edit: user.role.may(Action::EditInvoices),
        payments_enabled,
        einvoicing,
        payment_forms: model::PaymentForms {
            key: form_key(org),
            today,
            delete_keys,
            can_delete: user.role.may(Action::DeletePayments),
            credit_key: form_key(org),
            credit_notes,
            apply_key: form_key(org),
            credit_available,
            reminders_off,
            reminders_key: form_key(org),
        },
    })
}

/// A customer with their credit notes, credit balance, statement link and reminder setting.
pub async fn customer(
    state: &AppState,
    user: &SessionUser,
    id: CustomerId,
) -> Result<model::CustomerPage, AppError> {
    let org = user.org_id;
    let base = &state.settings.public_url;
    let customer = crate::customers::get(&state.reads, org, id)
        .await?
        .ok_or(AppError::NotFound)?;
    let (credit_notes, reminders_off) = tokio::try_join!(
        crate::invoicing::credit_notes::for_customer(&state.reads, org, id, base),
        crate::jobs::reminders::off(&state.reads, org, id.uuid(), true),
    )?;
    let mut conn = state.reads.acquire().await?;
    let credit_balance = crate::payments::credit_balance::of_customer(&mut conn, org, id).await?;
    let link = crate::customers::statements::link(&mut conn, org, id)
        .await?
        .ok_or(AppError::NotFound)?;
    let payment_methods = crate::payments::saved::list(&mut conn, org, id)
        .await?
        .unwrap_or_default();
    Ok(model::CustomerPage {
        payment_methods,
        link_key: form_key(org),
        customer,
        key: form_key(org),
        credit_notes,
        credit_balance,
        reminders_off,
        reminders_key: form_key(org),
        statement_url: link
            .token
            .map(|t| crate::customers::statements::link_url(base, &t)),
        archived_at: link.archived_at,
        action_key: form_key(org),
        can_edit: user.role.may(Action::EditInvoices),
    })
}

/// A quote, the invoice it proposes (as it would be issued today), and the number of the invoice
/// an accepted quote made.
pub async fn quote(
    state: &AppState,
    user: &SessionUser,
    id: Uuid,
) -> Result<model::QuotePage, AppError> {
    let org = user.org_id;
    let (mut conn, quote, today) = quote_of(state, org, id).await?;
    let preview = crate::invoicing::quotes::preview(&mut conn, org, &quote, today).await?;
    let invoice_number = match quote.invoice_id {
        Some(invoice) => crate::invoicing::invoices::numbers(&mut conn, org, &[invoice])
            .await?
            .remove(&invoice),
        None => None,
    };
    Ok(model::QuotePage {
        quote,
        preview,
        send_key: form_key(org),
        invoice_number,
        can_edit: user.role.may(Action::EditInvoices),
    })
}

/// A draft quote's edit form, filled with what it proposes.
pub async fn quote_edit(
    state: &AppState,
    user: &SessionUser,
    id: Uuid,
) -> Result<model::QuoteEdit, AppError> {
    let org = user.org_id;
    let (_, quote, today) = quote_of(state, org, id).await?;
    Ok(model::QuoteEdit {
        id,
        key: form_key(org),
        form: InvoiceForm::from_input(&quote.template),
        quote: QuoteForm {
            expires_on: quote.expires_on.to_string(),
            on_accept: quote.on_accept.as_str().to_owned(),
        },
        today,
    })
}

/// `org`'s quote `id` and the org's today, read on one connection (handed on for more reads).
async fn quote_of(
    state: &AppState,
    org: model::OrgId,
    id: Uuid,
) -> Result<(PoolConnection<Postgres>, model::Quote, chrono::NaiveDate), AppError> {
    let mut conn = state.reads.acquire().await?;
    let quote = crate::invoicing::quotes::get(&mut conn, org, id, &state.settings.public_url)
        .await?
        .ok_or(AppError::NotFound)?;
    let today = crate::jobs::schedules::org_today(&mut conn, org, chrono::Utc::now()).await?;
    Ok((conn, quote, today))
}

/// The new-quote form: its key and the org's today (the default expiry counts from it).
pub async fn new_quote(
    state: &AppState,
    user: &SessionUser,
) -> Result<model::NewQuotePage, AppError> {
    let mut conn = state.reads.acquire().await?;
    let today =
        crate::jobs::schedules::org_today(&mut conn, user.org_id, chrono::Utc::now()).await?;
    Ok(model::NewQuotePage {
        key: form_key(user.org_id),
        today,
    })
}

/// A schedule, its runs, and the numbers of the invoices they issued.
pub async fn schedule(
    state: &AppState,
    user: &SessionUser,
    id: Uuid,
) -> Result<model::SchedulePage, AppError> {
    let org = user.org_id;
    let mut conn = state.reads.acquire().await?;
    let schedule = crate::jobs::schedules::get(&mut conn, org, id)
        .await?
        .ok_or(AppError::NotFound)?;
    let ids: Vec<Uuid> = schedule.runs.iter().filter_map(|r| r.invoice_id).collect();
    let numbers = crate::invoicing::invoices::numbers(&mut conn, org, &ids)
        .await?
        .into_iter()
        .collect();
    Ok(model::SchedulePage {
        schedule,
        toggle_key: form_key(org),
        numbers,
        can_edit: user.role.may(Action::EditInvoices),
    })
}

/// The new-schedule form: its key, the customers to pick from, and the org's today.
pub async fn new_schedule(
    state: &AppState,
    user: &SessionUser,
) -> Result<model::NewSchedulePage, AppError> {
    let org = user.org_id;
    let customers = crate::customers::list(&state.reads, org, None, 100)
        .await?
        .into_iter()
        .map(|c| (c.id, c.name))
        .collect();
    let mut conn = state.reads.acquire().await?;
    let today = crate::jobs::schedules::org_today(&mut conn, org, chrono::Utc::now()).await?;
    Ok(model::NewSchedulePage {
        key: form_key(org),
        customers,
        today,
    })
}

/// The org's settings page: numbering, details, bank, tax rates, reminders and branding, each
/// form with its key.
pub async fn org_settings(
    state: &AppState,
    user: &SessionUser,
) -> Result<model::OrgSettingsPage, AppError> {
    let org = user.org_id;
    let settings = crate::accounts::orgs::settings(&state.reads, org).await?;
    let details = crate::accounts::orgs::details(&state.reads, org).await?;
    let bank = crate::accounts::orgs::bank_details(&state.reads, org).await?;
    let tax_rates = crate::invoicing::tax_rates::list(&state.reads, org, true).await?;
    let mut conn = state.reads.acquire().await?;
    let reminders = crate::jobs::reminders::steps(&mut conn, org).await?;
    let branding = crate::documents::branding::of(&mut conn, org).await?;
    let (retry_days, late_fees) = crate::accounts::orgs::collection(&mut conn, org).await?;
    let year = chrono::Datelike::year(&chrono::Utc::now());
    Ok(model::OrgSettingsPage {
        next_number: settings.preview(1, year),
        settings,
        archive_keys: tax_rates.iter().map(|_| form_key(org)).collect(),
        tax_rates,
        settings_key: form_key(org),
        details,
        details_key: form_key(org),
        bank,
        bank_key: form_key(org),
        tax_rate_key: form_key(org),
        can_manage: user.role.may(Action::ManageOrg),
        reminders,
        reminders_key: form_key(org),
        branding,
        branding_key: form_key(org),
        logo_key: form_key(org),
        remove_logo_key: form_key(org),
        collection: model::collection::CollectionForm::of(&retry_days, &late_fees),
        collection_key: form_key(org),
    })
}

/// The team page: the members, and the open invitations for those who may manage members.
pub async fn team(state: &AppState, user: &SessionUser) -> Result<model::MembersPage, AppError> {
    let org = user.org_id;
    let members = crate::accounts::members::list(&state.reads, org).await?;
    let invitations = if user.role.may(Action::ManageMembers) {
        crate::accounts::invitations::list(&state.reads, org).await?
    } else {
        Vec::new()
    };
    let keys = |n: usize| -> Vec<(Uuid, Uuid)> {
        (0..n).map(|_| (form_key(org), form_key(org))).collect()
    };
    Ok(model::MembersPage {
        member_keys: keys(members.len()),
        invitation_keys: keys(invitations.len()),
        me: user.id,
        my_role: user.role,
        org_name: user.org_name.clone(),
        members,
        invitations,
        invite_key: form_key(org),
    })
}

/// A webhook endpoint (its secret shown to those who manage the org) and its latest deliveries.
pub async fn webhook_endpoint(
    state: &AppState,
    user: &SessionUser,
    id: Uuid,
) -> Result<model::webhooks::WebhookEndpointPage, AppError> {
    let org = user.org_id;
    let owner = user.role.may(Action::ManageOrg);
    let endpoint = {
        let mut conn = state.reads.acquire().await?;
        crate::webhooks_out::get(&mut conn, org, id, owner)
            .await?
            .ok_or(AppError::NotFound)?
    };
    let (attempts, pending) = crate::webhooks_out::attempts(&state.reads, org, id, 50).await?;
    let redeliver_keys = attempts.iter().map(|_| form_key(org)).collect();
    Ok(model::webhooks::WebhookEndpointPage {
        endpoint,
        attempts,
        pending,
        form_key: form_key(org),
        redeliver_keys,
    })
}

/// The tax report of a period (`from`..`to`, by default the org's current quarter).
pub async fn tax_report(
    state: &AppState,
    user: &SessionUser,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<model::reports::TaxReport, AppError> {
    let mut conn = state.reads.acquire().await?;
    let today = crate::customers::statements::org_today(&mut conn, user.org_id).await?;
    let period = crate::reports::tax_period(from, to, today).map_err(AppError::BadRequest)?;
    Ok(crate::reports::tax(&mut conn, user.org_id, period).await?)
}

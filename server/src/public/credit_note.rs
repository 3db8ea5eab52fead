//! A credit note's customer page, `/c/{token}`, and its PDF, `/c/{token}/pdf`: the rules of the
//! invoice's page (an unguessable token, throttled, plain HTML with no script, never indexed).

use axum::extract::{Path, State};
use axum::response::Response;
use invoicer_core::documents::i18n::Tr;
use invoicer_core::AppState;
use leptos::prelude::*;
use model::Words;

use super::{attachment, drawn, look, throttled, unavailable, Client, PageToken};

/// A credit note's customer page, `/c/{token}`: what was credited on which invoice, and why.
pub(super) async fn page(
    State(state): State<AppState>,
    PageToken(token, ceiling): PageToken,
) -> Response {
    let found = invoicer_core::invoicing::credit_notes::by_token(
        &state.pool,
        &token,
        &state.settings.public_url,
    )
    .await;
    let (note, org_name, einvoicing, org) = match drawn(ceiling, "public credit note page", found) {
        Ok(found) => (
            found.note,
            found.org_name,
            found.einvoicing,
            found.org_id.into(),
        ),
        Err(answer) => return answer,
    };
    let (branding, locale) = match look_of(&state, org, note.invoice_id).await {
        Ok(found) => found,
        Err(e) => return unavailable("public credit note page", e),
    };
    let tr = Tr::new(locale);
    let amount = tr.money(note.total_cents, &note.currency);
    let body = view! {
        <main class="public credit-note">
            {look::header(&org_name, "", &branding)}
            <h1>{tr.t("credit-note")} " " <span class="number">{note.number.clone()}</span></h1>
            <p>
                <a class="button pdf" href=format!("/c/{token}/pdf")>{tr.t("download-pdf")}</a>
                {einvoicing.then(|| view! {
                    " " <a class="einvoice" href=format!("/c/{token}/einvoice.xml")>{tr.t("einvoice-xml")}</a>
                })}
            </p>
            <dl>
                <dt>{tr.t("for-invoice")}</dt>
                <dd class="invoice-number">{note.invoice_number.clone()}</dd>
                <dt>{tr.t("issued")}</dt>
                <dd>{tr.date(note.created_at.date_naive())}</dd>
                <dt>{tr.t("reason")}</dt>
                <dd class="reason">{note.reason.clone()}</dd>
                <dt>{tr.t("credited")}</dt>
                <dd class="amount">{amount}</dd>
            </dl>
            {look::footer(&branding)}
        </main>
    }
    .to_html();
    let title = tr.t_args(
        "credit-note-title",
        &[("number", &note.number), ("org", &org_name)],
    );
    look::page(&title, body, &branding, "", locale)
}

/// The org's look and the language of the credited invoice's customer.
async fn look_of(
    state: &AppState,
    org: model::OrgId,
    invoice: uuid::Uuid,
) -> sqlx::Result<(model::Branding, model::Locale)> {
    let mut conn = state.reads.acquire().await?;
    let branding = invoicer_core::documents::branding::of(&mut conn, org).await?;
    let locale = invoicer_core::documents::i18n::locale_of_invoice(&mut conn, invoice).await?;
    Ok((branding, locale))
}

/// A credit note's PDF, `/c/{token}/pdf`: throttled and rendered like the invoice's.
pub(super) async fn pdf(
    State(state): State<AppState>,
    Client(client): Client,
    Path(token): Path<String>,
) -> Response {
    let ceiling = match state.throttle.pdf(&token, client) {
        Ok(ceiling) => ceiling,
        Err(t) => return throttled(t),
    };
    let found = invoicer_core::invoicing::credit_notes::by_token(
        &state.pool,
        &token,
        &state.settings.public_url,
    )
    .await;
    let found = match drawn(ceiling, "public credit note pdf", found) {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let (branding, locale) = match look_of(&state, found.org_id.into(), found.note.invoice_id).await
    {
        Ok(found) => found,
        Err(e) => return unavailable("public credit note pdf", e),
    };
    let name = format!("credit-note-{}", found.note.number);
    // An e-invoicing org's credit note is a Factur-X PDF (type 381) when its data allows.
    let wait = std::time::Duration::from_secs(5);
    match crate::pdf::stored::credit_note(&state.pool, found, branding, locale, wait).await {
        Ok(bytes) => attachment(bytes, &name),
        Err(e) => unavailable("public credit note pdf", e),
    }
}

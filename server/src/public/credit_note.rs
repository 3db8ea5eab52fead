//! A credit note's customer page, `/c/{token}`, and its PDF, `/c/{token}/pdf`: the rules of the
//! invoice's page (an unguessable token, throttled, plain HTML with no script, never indexed).

use app::model::format_money;
use app::ssr::AppState;
use axum::extract::{Path, State};
use axum::response::Response;
use leptos::prelude::*;

use super::{attachment, look, not_found, throttled, unavailable, Client, PageToken, RENDERS};
use crate::pdf::Paper;

/// A credit note's customer page, `/c/{token}`: what was credited on which invoice, and why.
pub(super) async fn page(State(state): State<AppState>, PageToken(token): PageToken) -> Response {
    let found =
        app::ssr::credit_notes::by_token(&state.pool, &token, &state.settings.public_url).await;
    let (note, org_name, einvoicing, org) = match found {
        Ok(Some(found)) => (found.note, found.org_name, found.einvoicing, found.org_id),
        Ok(None) => return not_found(),
        Err(e) => return unavailable("public credit note page", e),
    };
    let branding = match state.reads.acquire().await {
        Ok(mut conn) => app::ssr::branding::of(&mut conn, org).await,
        Err(e) => Err(e),
    };
    let branding = match branding {
        Ok(branding) => branding,
        Err(e) => return unavailable("public credit note page", e),
    };
    let amount = format_money(note.total_cents, &note.currency);
    let body = view! {
        <main class="public credit-note">
            {look::header(&org_name, "", &branding)}
            <h1>"Credit note " <span class="number">{note.number.clone()}</span></h1>
            <p>
                <a class="button pdf" href=format!("/c/{token}/pdf")>"Download PDF"</a>
                {einvoicing.then(|| view! {
                    " " <a class="einvoice" href=format!("/c/{token}/einvoice.xml")>"E-invoice (XML)"</a>
                })}
            </p>
            <dl>
                <dt>"For invoice"</dt>
                <dd class="invoice-number">{note.invoice_number.clone()}</dd>
                <dt>"Issued"</dt>
                <dd>{note.created_at.date_naive().to_string()}</dd>
                <dt>"Reason"</dt>
                <dd class="reason">{note.reason.clone()}</dd>
                <dt>"Credited"</dt>
                <dd class="amount">{amount}</dd>
            </dl>
            {look::footer(&branding)}
        </main>
    }
    .to_html();
    let title = format!("Credit note {} from {org_name}", note.number);
    look::page(&title, body, &branding, "")
}

/// A credit note's PDF, `/c/{token}/pdf`: throttled and rendered like the invoice's.
pub(super) async fn pdf(
    State(state): State<AppState>,
    Client(client): Client,
    Path(token): Path<String>,
) -> Response {
    if let Err(t) = state.throttle.pdf(&token, client) {
        return throttled(t);
    }
    let found =
        app::ssr::credit_notes::by_token(&state.pool, &token, &state.settings.public_url).await;
    let found = match found {
        Ok(Some(found)) => found,
        Ok(None) => return not_found(),
        Err(e) => return unavailable("public credit note pdf", e),
    };
    // An e-invoicing org's credit note is a Factur-X PDF (type 381) when its data allows.
    let cii = if found.einvoicing {
        use app::ssr::einvoice::{credit_note_document, InvoiceDocumentError, Syntax};
        let mut conn = match state.reads.acquire().await {
            Ok(conn) => conn,
            Err(e) => return unavailable("public credit note pdf", e),
        };
        match credit_note_document(&mut conn, found.org_id, found.note.id).await {
            Ok(d) if d.problems().is_empty() => Some(d.xml(Syntax::Cii)),
            Err(InvoiceDocumentError::Db(e)) => return unavailable("public credit note pdf", e),
            _ => None,
        }
    } else {
        None
    };
    let brand = match state.reads.acquire().await {
        Ok(mut conn) => match app::ssr::branding::of(&mut conn, found.org_id).await {
            Ok(branding) => crate::pdf::Brand::of(&mut conn, found.org_id, &branding).await,
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    let brand = match brand {
        Ok(brand) => brand,
        Err(e) => return unavailable("public credit note pdf", e),
    };
    let (note, org_name) = (found.note, found.org_name);
    let name = format!("credit-note-{}", note.number);
    let wait = std::time::Duration::from_secs(5);
    let rendered = app::ssr::throttle::bounded(&RENDERS, wait, move || {
        crate::pdf::credit_note::render(&note, &org_name, Paper::A4, cii, brand)
    })
    .await;
    match rendered {
        Ok(bytes) => attachment(bytes, &name),
        Err(app::ssr::throttle::Bounded::Busy) => {
            unavailable("public credit note pdf", "every renderer is busy")
        }
        Err(app::ssr::throttle::Bounded::Task(e)) => unavailable("rendering a pdf", e),
    }
}

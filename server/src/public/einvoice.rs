//! The e-invoice behind a customer's link: `/i/{token}/einvoice.xml` and `/c/{token}/einvoice.xml`
//! (`?syntax=cii`, the default, or `ubl`), for the customer's accounting software. Throttled like the
//! pages; a link that names no valid e-invoice answers 404 like an unknown one.

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use invoicer_core::documents::einvoice::{self, Document, InvoiceDocumentError, Profile, Syntax};
use invoicer_core::AppState;

use super::{drawn, not_found, private, throttled, unavailable, Client};

#[derive(Debug, serde::Deserialize)]
pub(super) struct SyntaxQuery {
    syntax: Option<String>,
    /// `en16931` (default), `peppol` (UBL only) or `xrechnung`.
    profile: Option<String>,
}

impl SyntaxQuery {
    fn parsed(&self) -> Option<(Syntax, Profile)> {
        let syntax = Syntax::parse(self.syntax.as_deref().unwrap_or("cii"))?;
        let profile = Profile::parse(self.profile.as_deref().unwrap_or("en16931"))?;
        (!(syntax == Syntax::Cii && profile == Profile::Peppol)).then_some((syntax, profile))
    }
}

fn answer(
    made: Result<Document, InvoiceDocumentError>,
    (syntax, profile): (Syntax, Profile),
    name: &str,
) -> Response {
    match made.map(|d| d.with_profile(profile)) {
        Ok(d) if d.problems().is_empty() => {
            let file = format!(
                "{}.xml",
                name.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "-")
            );
            private(
                (
                    [
                        (
                            header::CONTENT_TYPE,
                            "application/xml; charset=utf-8".to_owned(),
                        ),
                        (
                            header::CONTENT_DISPOSITION,
                            format!("attachment; filename=\"{file}\""),
                        ),
                    ],
                    d.xml(syntax),
                )
                    .into_response(),
            )
        }
        Err(InvoiceDocumentError::Db(e)) => unavailable("public e-invoice", e),
        _ => not_found(),
    }
}

pub(super) async fn invoice(
    State(state): State<AppState>,
    Client(client): Client,
    Path(token): Path<String>,
    Query(query): Query<SyntaxQuery>,
) -> Response {
    let Some(syntax) = query.parsed() else {
        return not_found();
    };
    let ceiling = match state.throttle.public_page(&token, client) {
        Ok(ceiling) => ceiling,
        Err(t) => return throttled(t),
    };
    let opened =
        invoicer_core::invoicing::public::open(&state.pool, &token, &state.settings.public_url)
            .await;
    let found = match drawn(ceiling, "public e-invoice", opened) {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let mut conn = match state.reads.acquire().await {
        Ok(conn) => conn,
        Err(e) => return unavailable("public e-invoice", e),
    };
    let made = einvoice::invoice_document(&mut conn, found.org_id.into(), found.invoice.id).await;
    let number = found.invoice.number.unwrap_or_default();
    answer(made, syntax, &format!("invoice-{number}"))
}

pub(super) async fn credit_note(
    State(state): State<AppState>,
    Client(client): Client,
    Path(token): Path<String>,
    Query(query): Query<SyntaxQuery>,
) -> Response {
    let Some(syntax) = query.parsed() else {
        return not_found();
    };
    let ceiling = match state.throttle.public_page(&token, client) {
        Ok(ceiling) => ceiling,
        Err(t) => return throttled(t),
    };
    let found = invoicer_core::invoicing::credit_notes::by_token(
        &state.pool,
        &token,
        &state.settings.public_url,
    )
    .await;
    let found = match drawn(ceiling, "public e-invoice", found) {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let mut conn = match state.reads.acquire().await {
        Ok(conn) => conn,
        Err(e) => return unavailable("public e-invoice", e),
    };
    let made = einvoice::credit_note_document(&mut conn, found.org_id.into(), found.note.id).await;
    answer(made, syntax, &format!("credit-note-{}", found.note.number))
}

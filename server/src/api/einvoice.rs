//! E-invoices through the API: a finalized invoice as EN 16931 XML, in CII (the Factur-X EN 16931
//! profile) or UBL (XRechnung 3).

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use invoicer_core::documents::einvoice::{self, Document, InvoiceDocumentError, Profile, Syntax};
use invoicer_core::AppState;
use serde::Deserialize;

use super::client::Client;
use super::documented::{CreditNoteId, InvoiceId, NotFound, Unauthorized};
use super::problem::{problem, Problem, ProblemResponse};
use super::query::{bad_query, ListQuery};

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EinvoiceQuery {
    /// `cii` (default; the XML a Factur-X PDF carries) or `ubl`.
    #[param(pattern = "^(cii|ubl)$")]
    pub syntax: Option<String>,
    /// The rules beyond EN 16931: `en16931` (default), `peppol` (Peppol BIS Billing 3.0, UBL only)
    /// or `xrechnung` (XRechnung 3.0, UBL or CII).
    #[param(pattern = "^(en16931|peppol|xrechnung)$")]
    pub profile: Option<String>,
}

pub(super) fn syntax(query: &EinvoiceQuery) -> Result<(Syntax, Profile), ProblemResponse> {
    let syntax = Syntax::parse(query.syntax.as_deref().unwrap_or("cii"))
        .ok_or_else(|| bad_query("syntax must be cii or ubl"))?;
    let profile = Profile::parse(query.profile.as_deref().unwrap_or("en16931"))
        .ok_or_else(|| bad_query("profile must be en16931, peppol or xrechnung"))?;
    if (syntax, profile) == (Syntax::Cii, Profile::Peppol) {
        return Err(bad_query("Peppol BIS Billing 3.0 is UBL: use syntax=ubl"));
    }
    Ok((syntax, profile))
}

fn not_found() -> ProblemResponse {
    problem(
        StatusCode::NOT_FOUND,
        "not-found",
        "Not found",
        "No such invoice.",
    )
}

/// Why a document cannot be made: 409 with the fields to fix.
pub(super) fn not_einvoice(detail: &str, fields: model::error::FieldErrors) -> ProblemResponse {
    let mut p = problem(
        StatusCode::CONFLICT,
        "not-an-einvoice",
        "Not a valid e-invoice",
        detail,
    );
    if !fields.is_empty() {
        p.problem.errors = Some(fields.into_iter().collect());
    }
    p
}

pub(super) fn xml(body: Vec<u8>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/xml; charset=utf-8")],
        body,
    )
        .into_response()
}

/// A finalized invoice as an EN 16931 e-invoice (`application/xml`). A draft, an invoice finalized
/// before invoices recorded their parties, or one whose data the standard's rules refuse (a party
/// without a country, a line without a tax rate, ...) is 409 with what to fix.
#[utoipa::path(
    get, path = "/api/v1/invoices/{id}/einvoice", tag = "invoices", params(InvoiceId, EinvoiceQuery),
    responses(
        (status = 200, description = "The e-invoice", content_type = "application/xml", body = String),
        (status = 400, description = "A syntax other than cii or ubl, a profile other than en16931, peppol or xrechnung, or peppol in CII", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
        NotFound,
        (status = 409, description = "A draft, or data the standard refuses (the fields to fix in `errors`)", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn get_invoice_einvoice(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
    ListQuery(query): ListQuery<EinvoiceQuery>,
) -> Result<Response, ProblemResponse> {
    let syntax = syntax(&query)?;
    let id = uuid::Uuid::try_parse(&id).map_err(|_| not_found())?;
    let mut conn = state.reads.acquire().await?;
    let made = einvoice::invoice_document(&mut conn, client.org_id, id).await;
    answer(made, syntax, not_found)
}

/// A credit note as an EN 16931 credit note (type 381, naming its invoice), `application/xml`; 409
/// when its invoice's data does not make a valid e-invoice.
#[utoipa::path(
    get, path = "/api/v1/credit_notes/{id}/einvoice", tag = "credit_notes", params(CreditNoteId, EinvoiceQuery),
    responses(
        (status = 200, description = "The e-invoice (a credit note)", content_type = "application/xml", body = String),
        (status = 400, description = "A syntax other than cii or ubl, a profile other than en16931, peppol or xrechnung, or peppol in CII", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
        NotFound,
        (status = 409, description = "Data the standard refuses (the fields to fix in `errors`)", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn get_credit_note_einvoice(
    State(state): State<AppState>,
    Client(client): Client,
    Path(id): Path<String>,
    ListQuery(query): ListQuery<EinvoiceQuery>,
) -> Result<Response, ProblemResponse> {
    let syntax = syntax(&query)?;
    let no_such = || {
        problem(
            StatusCode::NOT_FOUND,
            "not-found",
            "Not found",
            "No such credit note.",
        )
    };
    let id = uuid::Uuid::try_parse(&id).map_err(|_| no_such())?;
    let mut conn = state.reads.acquire().await?;
    let made = einvoice::credit_note_document(&mut conn, client.org_id, id).await;
    answer(made, syntax, no_such)
}

fn answer(
    made: Result<Document, InvoiceDocumentError>,
    (syntax, profile): (Syntax, Profile),
    missing: impl Fn() -> ProblemResponse,
) -> Result<Response, ProblemResponse> {
    let document = match made {
        Ok(d) => d,
        Err(InvoiceDocumentError::NotFound) => return Err(missing()),
        Err(InvoiceDocumentError::Draft) => {
            return Err(not_einvoice(
                "A draft has no number or date yet: finalize it first.",
                Default::default(),
            ))
        }
        Err(InvoiceDocumentError::NoParties) => {
            return Err(not_einvoice(
                "This invoice was finalized before invoices recorded their seller and buyer; e-invoices are made for invoices finalized since.",
                Default::default(),
            ))
        }
        Err(InvoiceDocumentError::Db(e)) => return Err(e.into()),
    };
    let document = document.with_profile(profile);
    let problems = document.problems();
    if !problems.is_empty() {
        return Err(not_einvoice(
            match profile {
                Profile::En16931 => "The data does not make a valid EN 16931 e-invoice.",
                Profile::Peppol => "The data does not make a valid Peppol BIS Billing 3.0 invoice.",
                Profile::Xrechnung => "The data does not make a valid XRechnung.",
            },
            problems,
        ));
    }
    Ok(xml(document.xml(syntax)))
}

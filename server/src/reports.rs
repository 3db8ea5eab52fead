//! The reports as files, for the owner's session: `GET /reports/aging.csv` and
//! `GET /reports/tax.csv?from=&to=`.

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use invoicer_core::accounts::auth::AuthSession;
use invoicer_core::AppState;
use model::reports::TaxDocuments;
use serde::Deserialize;

use crate::csv_out::{amount, download, file};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/reports/aging.csv", get(aging_csv))
        .route("/reports/tax.csv", get(tax_csv))
}

fn unavailable(context: &str, e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "{context}");
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "5")],
        "The report could not be read. Try again in a moment.",
    )
        .into_response()
}

fn csv_file(records: Vec<Vec<String>>, name: &str) -> Response {
    match file(records) {
        Ok(bytes) => download(bytes, name),
        Err(e) => unavailable("csv", e),
    }
}

async fn aging_csv(State(state): State<AppState>, session: AuthSession) -> Response {
    let Some(user) = session.user.clone() else {
        return (StatusCode::UNAUTHORIZED, "Please log in.").into_response();
    };
    let read = async {
        let mut conn = state.reads.acquire().await?;
        invoicer_core::reports::aging(
            &mut conn,
            user.org_id,
            Some(invoicer_core::reports::MAX_ROWS),
        )
        .await
    };
    let report = match read.await {
        Ok(report) => report,
        Err(e) => return unavailable("aging csv", e),
    };
    let header = [
        "customer",
        "email",
        "currency",
        "current",
        "1-30 days",
        "31-60 days",
        "61-90 days",
        "over 90 days",
        "total",
        "invoices",
    ];
    let mut records = vec![header.map(String::from).to_vec()];
    for r in &report.data {
        let c = &r.currency;
        records.push(vec![
            r.name.clone(),
            r.email.clone(),
            c.to_uppercase(),
            amount(r.current_cents, c),
            amount(r.days_1_30_cents, c),
            amount(r.days_31_60_cents, c),
            amount(r.days_61_90_cents, c),
            amount(r.over_90_cents, c),
            amount(r.total_cents, c),
            r.invoices.to_string(),
        ]);
    }
    csv_file(records, &format!("aging-{}.csv", report.today))
}

#[derive(Deserialize)]
struct PeriodQuery {
    from: Option<String>,
    to: Option<String>,
}

async fn tax_csv(
    State(state): State<AppState>,
    session: AuthSession,
    Query(query): Query<PeriodQuery>,
) -> Response {
    let Some(user) = session.user.clone() else {
        return (StatusCode::UNAUTHORIZED, "Please log in.").into_response();
    };
    let read = async {
        let mut conn = state.reads.acquire().await?;
        let today = invoicer_core::customers::statements::org_today(&mut conn, user.org_id).await?;
        let period =
            invoicer_core::reports::tax_period(query.from.as_deref(), query.to.as_deref(), today);
        match period {
            Ok(period) => invoicer_core::reports::tax(&mut conn, user.org_id, period)
                .await
                .map(Ok),
            Err(why) => Ok(Err(why)),
        }
    };
    let report = match read.await {
        Ok(Ok(report)) => report,
        Ok(Err(why)) => return (StatusCode::BAD_REQUEST, why).into_response(),
        Err(e) => return unavailable("tax csv", e),
    };
    let header = [
        "currency",
        "documents",
        "category",
        "rate %",
        "tax names",
        "taxable",
        "tax",
        "count",
    ];
    let mut records = vec![header.map(String::from).to_vec()];
    for r in &report.data {
        let c = &r.currency;
        records.push(vec![
            c.to_uppercase(),
            match r.documents {
                TaxDocuments::Invoices => "invoices",
                TaxDocuments::CreditNotes => "credit notes",
            }
            .to_owned(),
            r.category.clone().unwrap_or_default(),
            model::Thousandths(r.percent_milli).to_string(),
            r.names.join("; "),
            amount(r.taxable_cents, c),
            amount(r.tax_cents, c),
            r.count.to_string(),
        ]);
    }
    for n in &report.net {
        let c = &n.currency;
        records.push(vec![
            c.to_uppercase(),
            "net".to_owned(),
            String::new(),
            String::new(),
            String::new(),
            amount(n.taxable_cents, c),
            amount(n.tax_cents, c),
            String::new(),
        ]);
    }
    csv_file(
        records,
        &format!("tax-{}-to-{}.csv", report.from, report.to),
    )
}

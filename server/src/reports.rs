//! The reports as files, for the owner's session: `GET /reports/aging.csv`.

use app::ssr::auth::AuthSession;
use app::ssr::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::csv_out::{amount, cell, download};

pub fn routes() -> Router<AppState> {
    Router::new().route("/reports/aging.csv", get(aging_csv))
}

async fn aging_csv(State(state): State<AppState>, session: AuthSession) -> Response {
    let Some(user) = session.user.clone() else {
        return (StatusCode::UNAUTHORIZED, "Please log in.").into_response();
    };
    let read = async {
        let mut conn = state.reads.acquire().await?;
        app::ssr::reports::aging(&mut conn, user.org_id, Some(app::ssr::reports::MAX_ROWS)).await
    };
    let report = match read.await {
        Ok(report) => report,
        Err(e) => {
            tracing::error!(error = %e, "aging csv");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(axum::http::header::RETRY_AFTER, "5")],
                "The report could not be read. Try again in a moment.",
            )
                .into_response();
        }
    };
    let mut out = csv::Writer::from_writer(Vec::new());
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
    let mut rows = vec![out.write_record(header)];
    for r in &report.data {
        let c = &r.currency;
        rows.push(out.write_record([
            cell(&r.name).as_ref(),
            cell(&r.email).as_ref(),
            &c.to_uppercase(),
            &amount(r.current_cents, c),
            &amount(r.days_1_30_cents, c),
            &amount(r.days_31_60_cents, c),
            &amount(r.days_61_90_cents, c),
            &amount(r.over_90_cents, c),
            &amount(r.total_cents, c),
            &r.invoices.to_string(),
        ]));
    }
    let bytes = match (
        rows.into_iter().collect::<Result<(), _>>(),
        out.into_inner(),
    ) {
        (Ok(()), Ok(bytes)) => bytes,
        _ => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    };
    download(bytes, &format!("aging-{}.csv", report.today))
}

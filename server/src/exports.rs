//! Streamed CSV exports: `GET /exports/{kind}.csv` for the owner's session and
//! `GET /api/v1/exports/{kind}.csv` for API keys (kinds: invoices, lines, payments, credit_notes,
//! customers). The body is written a page at a time ([`invoicer_core::reports::exports::page`]): each page is
//! read with a connection checked out for that page alone, turned into CSV and sent before the next
//! is read, so memory stays flat however many rows there are, and a slow reader holds no
//! connection. A database error mid-file ends the body without its last chunk: the client sees a
//! broken transfer, never a short file that looks whole.

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use chrono::NaiveDate;
use invoicer_core::accounts::auth::AuthSession;
use invoicer_core::invoicing::invoices::{check_filter, ListFilter};
use invoicer_core::reports::exports::{self, Cursor, Filter, Kind};
use invoicer_core::AppState;
use serde::Deserialize;

pub fn routes() -> Router<AppState> {
    Router::new().route("/exports/{file}", get(session_export))
}

/// The filters an export takes: the invoice list's (`status`, `payment_state`, `q`) for invoices
/// and lines, `from`/`to` (the org's dates) for payments and credit notes, `q` for customers.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// Invoices and lines: draft | open | paid | void | uncollectible | refunded | overdue.
    pub status: Option<String>,
    /// Invoices and lines: unpaid | processing | partially_paid | paid | partially_refunded |
    /// refunded | disputed.
    pub payment_state: Option<String>,
    /// Invoices and lines: the start of a number or customer name; customers: of a name or email.
    #[param(max_length = 200)]
    pub q: Option<String>,
    /// Payments (paid on) and credit notes (issued on): the first day, `YYYY-MM-DD`.
    pub from: Option<String>,
    /// Payments and credit notes: the last day, included.
    pub to: Option<String>,
}

/// The export `file` names (`invoices.csv`, ...); None for any other name.
pub fn kind(file: &str) -> Option<Kind> {
    file.strip_suffix(".csv").and_then(Kind::parse)
}

/// The filter `query` asks for, or what is wrong with it (a 400's text).
pub fn filter(query: ExportQuery) -> Result<Filter, String> {
    let text = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
    let invoices = ListFilter {
        status: text(query.status),
        payment_state: text(query.payment_state),
        q: text(query.q.clone()),
    };
    check_filter(&invoices)?;
    let date = |v: Option<String>| match text(v) {
        None => Ok(None),
        Some(v) => NaiveDate::parse_from_str(v.trim(), "%Y-%m-%d")
            .map(Some)
            .map_err(|_| format!("{v:.20} is not a date like 2027-01-31")),
    };
    let (from, to) = (date(query.from)?, date(query.to)?);
    if let (Some(from), Some(to)) = (from, to) {
        if from > to {
            return Err("the period ends before it begins".into());
        }
    }
    Ok(Filter {
        invoices,
        from,
        to,
        q: text(query.q),
    })
}

/// The export as a streamed CSV download.
pub fn download(state: AppState, org: model::OrgId, kind: Kind, filter: Filter) -> Response {
    enum Next {
        Header,
        Page(Option<Cursor>),
        Done,
    }
    let pages = futures::stream::unfold(Next::Header, move |next| {
        let (state, filter) = (state.clone(), filter.clone());
        async move {
            let after = match next {
                Next::Done => return None,
                Next::Header => {
                    let header = records(&[kind.header().iter().map(|h| h.to_string()).collect()]);
                    return Some((header, Next::Page(None)));
                }
                Next::Page(after) => after,
            };
            let read = async {
                let mut conn = state.reads.acquire().await?;
                exports::page(&mut conn, org, kind, &filter, after).await
            };
            match read.await {
                Ok((rows, more)) => {
                    let next = match more {
                        Some(cursor) => Next::Page(Some(cursor)),
                        None => Next::Done,
                    };
                    Some((records(&rows), next))
                }
                Err(e) => {
                    tracing::error!(error = %e, export = kind.name(), "export broken off");
                    Some((Err(std::io::Error::other("export broken off")), Next::Done))
                }
            }
        }
    });
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{}.csv\"", kind.name()),
            ),
            (header::CACHE_CONTROL, "private, no-store".to_owned()),
        ],
        // Fused: a reader may poll again after the end (the compression layer does), and `unfold`
        // would panic.
        Body::from_stream(futures::StreamExt::fuse(pages)),
    )
        .into_response()
}

fn records(rows: &[Vec<String>]) -> Result<Bytes, std::io::Error> {
    crate::csv_out::file(rows)
        .map(Bytes::from)
        .map_err(std::io::Error::other)
}

async fn session_export(
    State(state): State<AppState>,
    session: AuthSession,
    Path(file): Path<String>,
    Query(query): Query<ExportQuery>,
) -> Response {
    let Some(user) = session.user.clone() else {
        return (StatusCode::UNAUTHORIZED, "Please log in.").into_response();
    };
    let Some(kind) = kind(&file) else {
        return (StatusCode::NOT_FOUND, "No such export.").into_response();
    };
    match filter(query) {
        Ok(filter) => download(state, user.org_id, kind, filter),
        Err(why) => (StatusCode::BAD_REQUEST, why).into_response(),
    }
}

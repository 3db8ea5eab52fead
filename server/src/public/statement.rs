//! A customer's statement on their own page, `/s/{token}?from=..&to=..` (the period as the owner's
//! page has it; left out: the year up to today), and as a PDF, `/s/{token}/pdf`. The rules of the
//! invoice's page: an unguessable token, throttled, plain HTML with no script, never indexed.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use invoicer_core::customers::statements::{self, Period};
use invoicer_core::documents::i18n::Tr;
use invoicer_core::AppState;
use leptos::prelude::*;

use super::{
    attachment, document, drawn, not_found, private, throttled, unavailable, Client, PageToken,
};
use crate::pdf::stored::RENDERS;

#[derive(Debug, serde::Deserialize)]
pub(super) struct PeriodQuery {
    from: Option<String>,
    to: Option<String>,
}

/// The statement of the token's customer over the asked period, or the answer to give instead; the
/// shared `ceiling` is spent once the link is found.
async fn read(
    state: &AppState,
    token: &str,
    query: &PeriodQuery,
    ceiling: invoicer_core::throttle::Ceiling,
) -> Result<(model::Statement, String, model::Branding, model::OrgId, Tr), Response> {
    let context = "public statement";
    let mut conn = state
        .reads
        .acquire()
        .await
        .map_err(|e| unavailable(context, e))?;
    let (org, customer) = drawn(
        ceiling,
        context,
        statements::by_token(&mut conn, token).await,
    )?;
    let org = model::OrgId::from(org);
    let today = statements::org_today(&mut conn, org)
        .await
        .map_err(|e| unavailable(context, e))?;
    let period =
        Period::parse(query.from.as_deref(), query.to.as_deref(), today).map_err(bad_period)?;
    let found = statements::statement(&mut conn, org, model::CustomerId::from(customer), period)
        .await
        .map_err(|e| unavailable(context, e))?;
    let (statement, _) = found.ok_or_else(not_found)?;
    let url = statements::public_url("", token, period);
    let branding = invoicer_core::documents::branding::of(&mut conn, org)
        .await
        .map_err(|e| unavailable(context, e))?;
    let locale = invoicer_core::documents::i18n::locale_for(&mut conn, org, Some(customer))
        .await
        .map_err(|e| unavailable(context, e))?;
    Ok((statement, url, branding, org, Tr::new(locale)))
}

fn bad_period(why: String) -> Response {
    let body = document(
        "Statement",
        view! {
            <main class="public">
                <h1>"This period cannot be shown"</h1>
                <p>{why}</p>
            </main>
        }
        .to_html(),
    );
    private((StatusCode::BAD_REQUEST, axum::response::Html(body)).into_response())
}

pub(super) async fn page(
    State(state): State<AppState>,
    PageToken(token, ceiling): PageToken,
    Query(query): Query<PeriodQuery>,
) -> Response {
    let (statement, url, branding, _, tr) = match read(&state, &token, &query, ceiling).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let title = tr.t_args(
        "statement-title",
        &[
            ("customer", &statement.customer_name),
            ("org", &statement.org_name),
        ],
    );
    let body = view! {
        <main class="public statement">
            {super::look::header(&statement.org_name, "", &branding)}
            <h1>{tr.t("statement")} " " <span class="customer">{statement.customer_name.clone()}</span></h1>
            <p>
                <a class="button pdf" href=app::statement_pdf_url(&url)>{tr.t("download-pdf")}</a>
            </p>
            {app::statement_tables(statement, &tr)}
            {super::look::footer(&branding)}
        </main>
    }
    .to_html();
    super::look::page(&title, body, &branding, "", tr.locale)
}

pub(super) async fn pdf(
    State(state): State<AppState>,
    Client(client): Client,
    axum::extract::Path(token): axum::extract::Path<String>,
    Query(query): Query<PeriodQuery>,
) -> Response {
    let ceiling = match state.throttle.pdf(&token, client) {
        Ok(ceiling) => ceiling,
        Err(t) => return throttled(t),
    };
    let (statement, _, branding, org, tr) = match read(&state, &token, &query, ceiling).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let brand = match state.reads.acquire().await {
        Ok(mut conn) => crate::pdf::Brand::of(&mut conn, org, &branding).await,
        Err(e) => Err(e),
    };
    let brand = match brand {
        Ok(brand) => brand,
        Err(e) => return unavailable("public statement pdf", e),
    };
    let name = format!("statement-{}-{}", statement.from, statement.to);
    let wait = std::time::Duration::from_secs(5);
    let rendered = invoicer_core::throttle::bounded(&RENDERS, wait, move || {
        crate::pdf::statement::render(&statement, crate::pdf::Paper::A4, brand, tr)
    })
    .await;
    match rendered {
        Ok(bytes) => attachment(bytes, &name),
        Err(invoicer_core::throttle::Bounded::Busy) => {
            unavailable("public statement pdf", "every renderer is busy")
        }
        Err(invoicer_core::throttle::Bounded::Task(e)) => unavailable("rendering a pdf", e),
    }
}

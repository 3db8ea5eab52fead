//! A list endpoint's query string: parsed into the handler's type, or a 400 `bad-query` problem.

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::problem::{problem, ProblemResponse};

/// The query as a `T`; one that does not parse is answered 400 `bad-query` with axum's reason.
pub(super) struct ListQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ListQuery<T> {
    type Rejection = ProblemResponse;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Query(query) = Query::<T>::from_request_parts(parts, state)
            .await
            .map_err(|e| bad_query(e.body_text()))?;
        Ok(Self(query))
    }
}

/// 400 `bad-query` saying what is wrong with the query.
pub(super) fn bad_query(detail: impl Into<String>) -> ProblemResponse {
    problem(StatusCode::BAD_REQUEST, "bad-query", "Bad query", detail)
}

/// A page size: 1..100, 20 when absent.
pub(super) fn page_limit(limit: Option<i64>) -> Result<i64, ProblemResponse> {
    let limit = limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(bad_query("limit must be 1..100"));
    }
    Ok(limit)
}

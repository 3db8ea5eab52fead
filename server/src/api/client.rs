//! Bearer authentication: the API client behind `Authorization: Bearer ik_...`.

use app::ssr::api_keys::{self, ApiClient};
use app::ssr::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, StatusCode};

use super::problem::{internal, problem, ProblemResponse};

/// The API client behind `Authorization: Bearer ik_...`.
pub struct Client(pub ApiClient);

impl FromRequestParts<AppState> for Client {
    type Rejection = ProblemResponse;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, ProblemResponse> {
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let unauthorized = |detail: &str| {
            problem(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Unauthorized",
                detail,
            )
        };
        let Some(token) = token else {
            return Err(unauthorized(
                "Send your API key as `Authorization: Bearer ik_...`.",
            ));
        };
        match api_keys::authenticate(&state.pool, token).await {
            Ok(Some(client)) => Ok(Client(client)),
            Ok(None) => Err(unauthorized("The API key is unknown or revoked.")),
            Err(e) => Err(internal("authenticating an API key", e)),
        }
    }
}

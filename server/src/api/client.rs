//! Bearer authentication: the API client behind `Authorization: Bearer ik_...`.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, Method, StatusCode};
use invoicer_core::accounts::api_keys::{self, ApiClient};
use invoicer_core::AppState;
use model::Action;

use super::problem::{internal, problem, ProblemResponse};

/// The API client behind `Authorization: Bearer ik_...`, allowed what the request's method asks:
/// reading (GET, HEAD) needs any role, anything else at least `member` (403 otherwise). Handlers
/// that need more ask [`Client::require`].
pub struct Client(pub ApiClient);

impl Client {
    /// 403 unless the key's role (capped by its creator's) allows `action`.
    pub fn require(&self, action: Action) -> Result<(), ProblemResponse> {
        if self.0.may(action) {
            return Ok(());
        }
        Err(problem(
            StatusCode::FORBIDDEN,
            "forbidden",
            "Forbidden",
            format!(
                "This API key acts as {} and cannot {}.",
                self.0.role.as_str(),
                action.describe()
            ),
        ))
    }
}

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
            Ok(Some(client)) => {
                let client = Client(client);
                let reading = parts.method == Method::GET || parts.method == Method::HEAD;
                client.require(if reading {
                    Action::Read
                } else {
                    Action::EditInvoices
                })?;
                Ok(client)
            }
            Ok(None) => Err(unauthorized(
                "The API key is unknown, revoked or expired, or its creator left the organisation.",
            )),
            Err(e) => Err(internal("authenticating an API key", e)),
        }
    }
}

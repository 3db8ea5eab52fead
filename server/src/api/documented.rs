//! The problem answers that several operations document alike, each set named once for the
//! operations' `responses(...)`: every entry is a problem+json `Problem` with its status and
//! description, exactly as a `(status = …, description = …, body = Problem, content_type = …)` entry
//! would write it.

use std::collections::BTreeMap;

use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::ToSchema;

use super::problem::Problem;

fn answer(status: u16, description: &str) -> (String, RefOr<Response>) {
    let content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name(Problem::name())))
        .build();
    let response = ResponseBuilder::new()
        .description(description)
        .content("application/problem+json", content)
        .build();
    (status.to_string(), response.into())
}

macro_rules! problems {
    ($($(#[$doc:meta])* $name:ident { $($status:literal: $description:literal),+ $(,)? })+) => {$(
        $(#[$doc])*
        pub(super) struct $name;

        impl utoipa::IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                BTreeMap::from([$(answer($status, $description)),+])
            }
        }
    )+};
}

problems! {
    /// A key that is missing, unknown or revoked.
    Unauthorized { 401: "" }
    /// No such resource in the key's org.
    NotFound { 404: "" }
    /// A list's query that is not one, and the key.
    ListProblems { 400: "", 401: "" }
    /// A write whose key is still in flight.
    InFlight { 409: "The same key is still in flight" }
    /// A create's key, body and size.
    CreateProblems {
        400: "Missing or malformed Idempotency-Key, or a body that is not JSON",
        401: "Missing, unknown or revoked API key",
        413: "Body over 1 MiB",
    }
    /// An action on one resource: its key, its body (empty or an object) and a reused key.
    ActionProblems {
        400: "Missing or malformed Idempotency-Key, or a body that is neither empty nor a JSON object",
        401: "",
        422: "The key was used with a different request",
    }
}

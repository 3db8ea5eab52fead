//! What several operations document alike, each set named once: the problem answers for their
//! `responses(...)` (every entry a problem+json `Problem` with its status and description, exactly as
//! a `(status = …, description = …, body = Problem, content_type = …)` entry would write it), and the
//! id and Idempotency-Key parameters for their `params(...)` (exactly as the
//! `("id" = String, Path, …)` and `("Idempotency-Key" = String, Header, …)` entries would write them).

use std::collections::BTreeMap;

use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::{
    ContentBuilder, ObjectBuilder, Ref, RefOr, Required, Response, ResponseBuilder, Type,
};
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
        503: "The database is switching to another server: retry with the same key after Retry-After seconds",
    }
    /// An action on one resource: its key, its body (empty or an object) and a reused key.
    ActionProblems {
        400: "Missing or malformed Idempotency-Key, or a body that is neither empty nor a JSON object",
        401: "",
        422: "The key was used with a different request",
        503: "The database is switching to another server: retry with the same key after Retry-After seconds",
    }
}

/// The `{id}` of the path, a UUID.
fn id(description: &str) -> Parameter {
    path("id", description)
}

/// A UUID of the path named `name`.
fn path(name: &str, description: &str) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Path)
        .description(Some(description))
        .required(Required::True)
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
        .build()
}

/// The Idempotency-Key header: 1..255 visible ASCII characters.
fn key(description: &str) -> Parameter {
    let schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(255))
        .pattern(Some("^[!-~]+$"));
    ParameterBuilder::new()
        .name("Idempotency-Key")
        .parameter_in(ParameterIn::Header)
        .description(Some(description))
        .required(Required::True)
        .schema(Some(schema))
        .build()
}

const AS_FOR_CREATION: &str = "Names this attempt, as for creation.";

macro_rules! params {
    ($($(#[$doc:meta])* $name:ident [$($param:expr),+ $(,)?])+) => {$(
        $(#[$doc])*
        pub(super) struct $name;

        impl utoipa::IntoParams for $name {
            fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
                vec![$($param),+]
            }
        }
    )+};
}

params! {
    /// Creating an invoice: the key, described in full.
    NewInvoice [key("Names this attempt: 1..255 visible ASCII characters (a quoted structured-field string is accepted). Retries must reuse it. Keys expire after IDEMPOTENCY_KEY_TTL_HOURS (24).")]
    /// Creating anything else: the key, as for invoices.
    New [key("Names this attempt, as for invoices.")]
    /// Reading one invoice.
    InvoiceId [id("Invoice id (UUID)")]
    /// Reading one customer.
    CustomerId [id("Customer id (UUID)")]
    /// A write to one invoice.
    InvoiceWrite [id("Invoice id (UUID)"), key(AS_FOR_CREATION)]
    /// A write to one customer.
    CustomerWrite [id("Customer id (UUID)"), key(AS_FOR_CREATION)]
    /// Reading one credit note.
    CreditNoteId [id("Credit note id (UUID)")]
    /// Reading one schedule.
    ScheduleId [id("Schedule id (UUID)")]
    /// A write to one schedule.
    ScheduleWrite [id("Schedule id (UUID)"), key(AS_FOR_CREATION)]
    /// Reading one quote.
    QuoteId [id("Quote id (UUID)")]
    /// A write to one quote.
    QuoteWrite [id("Quote id (UUID)"), key(AS_FOR_CREATION)]
    /// Reading one webhook endpoint.
    EndpointId [id("Webhook endpoint id (UUID)")]
    /// A write to one webhook endpoint.
    EndpointWrite [id("Webhook endpoint id (UUID)"), key(AS_FOR_CREATION)]
    /// A write to one bank entry.
    BankEntryWrite [id("Bank entry id (UUID)"), key(AS_FOR_CREATION)]
    /// An action on one bank entry that is its own repeat (no key).
    BankEntryId [id("Bank entry id (UUID)")]
    /// Reading one payment of an invoice.
    PaymentId [id("Invoice id (UUID)"), path("payment_id", "Payment id (UUID)")]
}

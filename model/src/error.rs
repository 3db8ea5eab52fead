//! The one error type server functions return. It is serialisable (it crosses to the browser, and for
//! forms without JavaScript it travels in the redirect URL) and carries no internal text: anything
//! internal is logged on the server and becomes `Internal`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use server_fn::codec::JsonEncoding;
use server_fn::error::{FromServerFnError, ServerFnErrorErr};

/// Field path (`customer_email`, `lines[2].quantity`) → message shown next to that field.
pub type FieldErrors = BTreeMap<String, String>;

/// Ok when no field has an error; else the errors.
pub fn fields_ok(errors: FieldErrors) -> Result<(), FieldErrors> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// A keyed form's submission that was refused before anything was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rejected {
    /// The attempt's key, so a corrected resubmit (even without JavaScript) is the same attempt.
    pub idempotency_key: Option<String>,
    pub fields: FieldErrors,
}

/// The error of a form whose typed values go back with a refusal (the invoice forms): what the form
/// surface answers, so that a page sent back without JavaScript refills what was typed. The error
/// itself carries none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{error}")]
pub struct FormError<V> {
    pub error: AppError,
    /// What was typed, when the error brings the attempt back ([`AppError::attempt`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<V>,
}

impl<V: Clone> FormError<V> {
    /// `error`, with `values` when it brings the attempt back (a refusal, an unavailable database).
    pub fn refilling(error: AppError, values: &V) -> Self {
        let values = error.attempt().is_some().then(|| values.clone());
        FormError { error, values }
    }
}

/// A form's error is its [`AppError`] where only the error matters (banners, field messages).
impl<V> std::ops::Deref for FormError<V> {
    type Target = AppError;
    fn deref(&self) -> &AppError {
        &self.error
    }
}

impl<V> std::borrow::Borrow<AppError> for FormError<V> {
    fn borrow(&self) -> &AppError {
        &self.error
    }
}

impl<V> From<AppError> for FormError<V> {
    fn from(error: AppError) -> Self {
        FormError {
            error,
            values: None,
        }
    }
}

impl<V> FromServerFnError for FormError<V>
where
    V: std::fmt::Debug + Serialize + serde::de::DeserializeOwned + 'static,
{
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        AppError::from_server_fn_error(value).into()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    #[error("Please log in.")]
    Unauthorized,
    #[error("Not found.")]
    NotFound,
    /// Logged in, but the role (or an unverified address) does not allow this.
    #[error("{0}")]
    Forbidden(String),
    #[error("Please correct the highlighted fields.")]
    Invalid(Box<Rejected>),
    #[error("{0}")]
    BadRequest(String),
    #[error("Too many attempts. Please wait {0} seconds and try again.")]
    Throttled(u64),
    #[error("The server is busy. Please try again in a few seconds.")]
    Busy(u64),
    #[error("Something went wrong on our side. Nothing was saved twice; please try again.")]
    Internal,
    /// Postgres aborted the transaction (deadlock, serialization failure): like `Internal` for the
    /// client, but the surface runs the transaction again before answering.
    #[error("Something went wrong on our side. Nothing was saved twice; please try again.")]
    Contended,
    #[error("The request could not be processed: {0}")]
    Transport(String),
    /// The database cannot be reached or cannot take writes right now (between two primaries):
    /// nothing was half-written, and sending the same attempt again is safe. A keyed form's answer
    /// carries its key back, so that the page it returns to sends the same attempt.
    #[error("The database is switching to another server. Nothing was lost or done twice: please send this again in {after} seconds.")]
    Unavailable {
        after: u64,
        attempt: Option<Box<Rejected>>,
    },
}

impl AppError {
    pub fn invalid(fields: FieldErrors) -> Self {
        Self::rejected(None, fields)
    }

    /// A keyed form's submission refused before anything was written: the field errors, with the
    /// attempt's key so the corrected form is the same attempt.
    pub fn rejected(idempotency_key: Option<String>, fields: FieldErrors) -> Self {
        AppError::Invalid(Box::new(Rejected {
            idempotency_key,
            fields,
        }))
    }

    pub fn field(name: &str, message: &str) -> Self {
        Self::invalid(FieldErrors::from([(name.to_owned(), message.to_owned())]))
    }

    /// The attempt a refused or unanswered form submission brings back (its key): the form rendered
    /// from it sends the same attempt again.
    pub fn attempt(&self) -> Option<&Rejected> {
        match self {
            AppError::Invalid(r)
            | AppError::Unavailable {
                attempt: Some(r), ..
            } => Some(r),
            _ => None,
        }
    }

    /// A keyed form's refusal, or an unavailable database's answer to it, keeps the form's key: the
    /// form rendered from it sends the same attempt again.
    pub fn keeping(self, idempotency_key: Option<String>) -> Self {
        match self {
            AppError::Unavailable {
                after,
                attempt: None,
            } => AppError::Unavailable {
                after,
                attempt: Some(Box::new(Rejected {
                    idempotency_key,
                    fields: FieldErrors::new(),
                })),
            },
            AppError::Invalid(mut rejected) => {
                rejected.idempotency_key = rejected.idempotency_key.or(idempotency_key);
                AppError::Invalid(rejected)
            }
            other => other,
        }
    }

    /// A server function's error as its response body holds it: the error alone, or with a form's
    /// typed values ([`FormError`]).
    pub fn from_body(body: &[u8]) -> Option<AppError> {
        #[derive(Deserialize)]
        struct WithValues {
            error: AppError,
        }
        serde_json::from_slice::<AppError>(body)
            .or_else(|_| serde_json::from_slice::<WithValues>(body).map(|w| w.error))
            .ok()
    }

    pub fn field_errors(&self) -> Option<&FieldErrors> {
        match self {
            AppError::Invalid(rejected) => Some(&rejected.fields),
            _ => None,
        }
    }

    /// Logs an internal error with its whole chain and returns the opaque variant for the client;
    /// a database that cannot be reached is [`AppError::Unavailable`] instead (a retry, not a bug).
    #[cfg(feature = "server")]
    pub fn internal(context: &str, err: impl std::fmt::Display + 'static) -> Self {
        let any: &dyn std::any::Any = &err;
        if let Some(e) = any.downcast_ref::<sqlx::Error>() {
            if is_unavailable(e) {
                tracing::warn!(error = %e, "{context}: database unavailable");
                return AppError::unavailable();
            }
        }
        tracing::error!(error = %err, "{context}");
        AppError::Internal
    }

    /// The database cannot be reached now: try again in a couple of seconds.
    #[cfg(feature = "server")]
    pub fn unavailable() -> Self {
        AppError::Unavailable {
            after: UNAVAILABLE_RETRY_AFTER.as_secs(),
            attempt: None,
        }
    }
}

/// How long a client is asked to wait when the database is unavailable: about one Patroni loop and
/// one balancer check, the time a new primary takes to be found once it exists.
#[cfg(feature = "server")]
pub const UNAVAILABLE_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// The database cannot be reached or cannot take writes right now, as during a failover: the
/// connection failed or was cut (a balancer with no server to send it to accepts the connection and
/// closes it, which sqlx reads as a protocol error on its first message), no connection came free in
/// time, the server is shutting down or starting up (57P01-57P03), it is a read-only standby (25006)
/// or full (53300). A transaction that failed so committed nothing or everything (an attempt's key
/// tells which when it is sent again), so the answer is "try again" (503 with Retry-After), never a
/// 500.
#[cfg(feature = "server")]
pub fn is_unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(e) => e.code().is_some_and(|code| {
            code.starts_with("08")
                || matches!(&*code, "57P01" | "57P02" | "57P03" | "25006" | "53300")
        }),
        _ => false,
    }
}

/// Postgres aborted the transaction (a serialization failure or a deadlock): running it again from
/// its claim may succeed.
#[cfg(feature = "server")]
pub fn is_aborted(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(e) => matches!(e.code().as_deref(), Some("40001" | "40P01")),
        _ => false,
    }
}

/// A database error as the user-facing error: an aborted transaction is `Contended` (tried again
/// from its claim), an unreachable database `Unavailable`, anything else internal.
#[cfg(feature = "server")]
impl From<sqlx::Error> for AppError {
    fn from(err: sqlx::Error) -> Self {
        if is_aborted(&err) {
            tracing::warn!(error = %err, "database: transaction aborted");
            return AppError::Contended;
        }
        AppError::internal("database error", err)
    }
}

#[cfg(feature = "server")]
impl AppError {
    /// The HTTP status every surface answers this error with (the API, the server functions, the
    /// public pages): the only place one is chosen.
    pub fn status_code(&self) -> http::StatusCode {
        use http::StatusCode;
        match self {
            AppError::Unauthorized => StatusCode::UNAUTHORIZED,
            AppError::NotFound => StatusCode::NOT_FOUND,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            AppError::BadRequest(_) | AppError::Transport(_) => StatusCode::BAD_REQUEST,
            AppError::Throttled(_) => StatusCode::TOO_MANY_REQUESTS,
            AppError::Busy(_) | AppError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            AppError::Internal | AppError::Contended => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Seconds a client should wait before trying again, for `Retry-After`.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            AppError::Throttled(secs)
            | AppError::Busy(secs)
            | AppError::Unavailable { after: secs, .. } => Some(*secs),
            _ => None,
        }
    }
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            // Malformed form data (a missing or mistyped field) is the user's request, not our failure.
            // The parser's own words (field names, types, the input echoed back) stay in the log.
            ServerFnErrorErr::Args(msg) | ServerFnErrorErr::Deserialization(msg) => {
                #[cfg(feature = "server")]
                tracing::info!(error = %msg, "form data refused by the parser");
                #[cfg(not(feature = "server"))]
                let _ = msg;
                AppError::BadRequest(
                    "The form data could not be read. Reload the page and try again.".into(),
                )
            }
            other => AppError::Transport(other.to_string()),
        }
    }
}

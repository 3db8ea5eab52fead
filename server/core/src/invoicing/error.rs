//! Why an invoice input cannot be written; each surface answers it its own way (the JSON API as
//! problem+json, the server functions through [`AppError`]).

use model::error::{AppError, FieldErrors};

#[derive(Debug, thiserror::Error)]
pub enum InvoiceError {
    /// The JSON is not an invoice input (serde's reason).
    #[error("not an invoice input: {0}")]
    Unreadable(String),
    /// Field path → message.
    #[error("invalid invoice: {0:?}")]
    Invalid(FieldErrors),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

impl InvoiceError {
    pub fn field(name: &str, message: &str) -> Self {
        InvoiceError::Invalid(FieldErrors::from([(name.to_owned(), message.to_owned())]))
    }

    /// For an input stored after it passed its checks (a quote's or a schedule's template): a
    /// database failure as it is, and anything else, which would be a rule it passed then failing
    /// now, as a failure of the write.
    pub fn stored(self) -> sqlx::Error {
        match self {
            InvoiceError::Db(e) => e,
            other => sqlx::Error::Protocol(format!("a stored invoice input is refused: {other}")),
        }
    }

    /// The field errors of a template inside another write (a quote, a schedule), or the database
    /// failure; a body that did not read is a field error named `field`.
    pub fn fields_of(self, field: &str) -> Result<FieldErrors, sqlx::Error> {
        match self {
            InvoiceError::Invalid(fields) => Ok(fields),
            InvoiceError::Unreadable(why) => Ok(FieldErrors::from([(field.to_owned(), why)])),
            InvoiceError::Db(e) => Err(e),
        }
    }

    pub fn field_errors(&self) -> Option<&FieldErrors> {
        match self {
            InvoiceError::Invalid(fields) => Some(fields),
            _ => None,
        }
    }
}

impl From<InvoiceError> for AppError {
    fn from(err: InvoiceError) -> Self {
        match err {
            InvoiceError::Unreadable(reason) => AppError::BadRequest(reason),
            InvoiceError::Invalid(fields) => AppError::invalid(fields),
            InvoiceError::Db(e) => e.into(),
        }
    }
}

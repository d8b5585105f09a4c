//! The engine's one error type, classified by meaning rather than by origin.
//!
//! The HTTP layer maps each variant to a status and a JSON body; the MCP layer
//! turns user-fixable ones into tool results with `isError: true` and the rest
//! into protocol errors. Internal causes are logged where they happen and never
//! shown in full to a client.

use std::fmt;

/// What went wrong, in terms a caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The named thing does not exist (e.g. an instruction id).
    #[error("{0}")]
    NotFound(String),
    /// The request is valid but clashes with the current state
    /// (e.g. editing an instruction an agent has already consumed).
    #[error("{0}")]
    Conflict(String),
    /// The request itself is malformed or out of range.
    #[error("{0}")]
    Invalid(String),
    /// The request or one of its fields is larger than allowed.
    #[error("{0}")]
    TooLarge(String),
    /// A bearer token was required and missing or wrong.
    #[error("{0}")]
    Unauthorized(String),
    /// The request came from somewhere it must not (foreign Host or Origin).
    #[error("{0}")]
    Forbidden(String),
    /// Something broke on our side; the message is safe to show, the cause is logged.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// A stable, machine-readable code for the JSON error body.
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound(_) => "not_found",
            Error::Conflict(_) => "conflict",
            Error::Invalid(_) => "invalid_request",
            Error::TooLarge(_) => "payload_too_large",
            Error::Unauthorized(_) => "unauthorized",
            Error::Forbidden(_) => "forbidden",
            Error::Internal(_) => "internal",
        }
    }

    /// Wrap an internal failure: log the cause with context, keep the message bland.
    pub fn internal(context: &str, cause: impl fmt::Display) -> Self {
        tracing::error!(%cause, "{context}");
        Error::Internal(format!("{context}; see the server log"))
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::internal("database error", e)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

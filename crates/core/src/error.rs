//! The engine's one error type, classified by meaning rather than by origin.
//!
//! The HTTP layer maps each variant to a status and a JSON body; the MCP layer
//! turns user-fixable ones into tool results with `isError: true` and the rest
//! into protocol errors. An internal failure keeps its cause as the `source`
//! and is logged once, where it leaves the engine (an HTTP response, an MCP
//! answer, start-up) — never while it is being built, so nothing is logged
//! twice and nothing is logged for an error a caller handles.

/// A boxed cause, as `Internal` keeps it.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

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
    /// A file of a type that is not accepted (the message names what is).
    #[error("{0}")]
    Unsupported(String),
    /// The disk holding the database is full (HTTP 507). The message names
    /// the path and what to do; nothing acknowledged is lost.
    #[error("{0}")]
    NoSpace(String),
    /// The database cannot be written now: read-only, locked by another
    /// program, or gone (HTTP 503). The message names the path and what to do.
    #[error("{0}")]
    Unavailable(String),
    /// Another engine already serves this database (start-up only).
    #[error("{0}")]
    InUse(String),
    /// A bearer token was required and missing or wrong.
    #[error("{0}")]
    Unauthorized(String),
    /// The request came from somewhere it must not (foreign Host or Origin).
    #[error("{0}")]
    Forbidden(String),
    /// Too many attempts (wrong pairing codes): refused until the time the message names.
    #[error("{0}")]
    TooMany(String),
    /// Something broke on our side while serving. `context` is safe to show a
    /// client; `source` may name paths or internals and goes to the log only.
    #[error("{context}; see the server log")]
    Internal {
        context: String,
        #[source]
        source: Cause,
    },
    /// The engine could not start: the port, the database, the files it
    /// needs. Said in full, because the person at the terminal must fix it.
    #[error("{0}")]
    Startup(String),
}

impl Error {
    /// A stable, machine-readable code for the JSON error body.
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound(_) => "not_found",
            Error::Conflict(_) => "conflict",
            Error::Invalid(_) => "invalid_request",
            Error::TooLarge(_) => "payload_too_large",
            Error::Unsupported(_) => "unsupported_media_type",
            Error::NoSpace(_) => "insufficient_storage",
            Error::InUse(_) => "in_use",
            Error::Unavailable(_) => "storage_unavailable",
            Error::Unauthorized(_) => "unauthorized",
            Error::Forbidden(_) => "forbidden",
            Error::TooMany(_) => "too_many_requests",
            Error::Internal { .. } | Error::Startup(_) => "internal",
        }
    }

    /// Wrap an internal failure with what we were doing when it happened.
    pub fn internal(context: impl Into<String>, source: impl Into<Cause>) -> Self {
        Error::Internal {
            context: context.into(),
            source: source.into(),
        }
    }

    /// Whether the database cannot be written for a reason outside the
    /// program (disk full, read-only, locked, gone): it clears by itself.
    pub fn is_storage_fault(&self) -> bool {
        matches!(self, Error::NoSpace(_) | Error::Unavailable(_))
    }

    /// Whether the fault is ours (a 5xx, a protocol error) rather than the caller's.
    pub fn is_internal(&self) -> bool {
        matches!(self, Error::Internal { .. } | Error::Startup(_))
    }

    /// The same error again, for each of several callers that met it (the
    /// claims of a group that failed together). An internal error's cause
    /// is kept as its text.
    pub fn again(&self) -> Error {
        match self {
            Error::NotFound(m) => Error::NotFound(m.clone()),
            Error::Conflict(m) => Error::Conflict(m.clone()),
            Error::Invalid(m) => Error::Invalid(m.clone()),
            Error::TooLarge(m) => Error::TooLarge(m.clone()),
            Error::Unsupported(m) => Error::Unsupported(m.clone()),
            Error::NoSpace(m) => Error::NoSpace(m.clone()),
            Error::Unavailable(m) => Error::Unavailable(m.clone()),
            Error::InUse(m) => Error::InUse(m.clone()),
            Error::Unauthorized(m) => Error::Unauthorized(m.clone()),
            Error::Forbidden(m) => Error::Forbidden(m.clone()),
            Error::TooMany(m) => Error::TooMany(m.clone()),
            Error::Startup(m) => Error::Startup(m.clone()),
            Error::Internal { context, source } => Error::internal(context.clone(), source.to_string()),
        }
    }

    /// Log an internal failure with its whole cause chain; the edges call this
    /// once when an error leaves the engine. Caller mistakes are not logged.
    pub fn log(&self) {
        if let Error::Internal { context, source } = self {
            let mut chain = source.to_string();
            let mut next = source.source();
            while let Some(cause) = next {
                chain.push_str(": ");
                chain.push_str(&cause.to_string());
                next = cause.source();
            }
            tracing::error!(cause = %chain, "{context}");
        } else if let Error::Startup(message) = self {
            tracing::error!("{message}");
        } else if self.is_storage_fault() {
            tracing::warn!("{self}");
        }
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::internal("database error", e)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn internal_errors_keep_their_cause_but_show_only_the_context() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "/secret/path: denied");
        let e = Error::internal("writing the token file", io);
        assert_eq!(e.to_string(), "writing the token file; see the server log");
        assert!(e.source().unwrap().to_string().contains("/secret/path"));
        assert!(e.is_internal() && e.code() == "internal");
        assert!(!Error::Invalid("x".into()).is_internal());
    }
}

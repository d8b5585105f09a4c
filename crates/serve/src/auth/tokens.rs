//! The API token's life: fixed by `API_TOKEN` (flag, environment or config
//! file), or kept in a token file (owner-only) that the person can create,
//! regenerate or remove from the page's settings while the server runs.
//! A change takes effect at once (the security layer reads it per request)
//! and is published in the connection-info file, so the CLI and the stdio
//! bridge follow it; HTTP agents configured with the old token must be
//! updated by hand, which the page says.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::Credentials;
use crate::connection_info::{self, ConnectionInfo};
use crate::sync::MutexExt as _;
use crate::{paths, Error, Result};

/// Where the token comes from, with its file (what the page is told of it
/// is [`TokenSource`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenOrigin {
    /// `API_TOKEN` (flag, environment or config file): changed only there.
    Fixed,
    /// The token file: changeable from the page.
    File(PathBuf),
    /// Neither (embedded use, tests): no token, not changeable.
    Unmanaged,
}

impl TokenOrigin {
    /// Where the token comes from, per the configuration: `API_TOKEN` wins,
    /// then the token file; neither means no token and nothing to manage.
    pub fn from_config(api_token: Option<&str>, token_file: Option<&Path>) -> Result<(Option<String>, TokenOrigin)> {
        Ok(match (api_token, token_file) {
            (Some(t), _) => (Some(t.to_owned()), TokenOrigin::Fixed),
            (None, Some(path)) => (read_file(path)?, TokenOrigin::File(path.to_owned())),
            (None, None) => (None, TokenOrigin::Unmanaged),
        })
    }
}

/// Where the token comes from, as the page is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TokenSource {
    /// `API_TOKEN`.
    Environment,
    /// The token file.
    File,
    /// No token is managed.
    None,
}

/// What the page is told.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TokenState {
    pub required: bool,
    /// Whether the page may change it (false when API_TOKEN sets it).
    pub changeable: bool,
    pub source: TokenSource,
}

/// Read a token file: its trimmed content, or `None` when absent or blank.
pub fn read_file(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t.trim().to_owned()).filter(|t| !t.is_empty())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Invalid(format!(
            "cannot read the token file {}: {e}",
            path.display()
        ))),
    }
}

/// A new random token: 244 bits from the OS generator, URL- and header-safe.
pub fn generate() -> String {
    format!(
        "lmcp_{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

pub struct Tokens {
    origin: TokenOrigin,
    credentials: Arc<Credentials>,
    /// Served beyond loopback: a token may not be removed.
    exposed: bool,
    /// The published connection info, rewritten with the new token.
    connection: Mutex<Option<(Vec<PathBuf>, ConnectionInfo)>>,
}

impl Tokens {
    pub fn new(origin: TokenOrigin, credentials: Arc<Credentials>, exposed: bool) -> Tokens {
        Tokens {
            origin,
            credentials,
            exposed,
            connection: Mutex::new(None),
        }
    }

    pub fn publish_to(&self, paths: Vec<PathBuf>, info: ConnectionInfo) {
        *self.connection.lock_anyway() = Some((paths, info));
    }

    pub fn state(&self) -> TokenState {
        TokenState {
            required: self.credentials.token_required(),
            changeable: matches!(self.origin, TokenOrigin::File(_)),
            source: match self.origin {
                TokenOrigin::Fixed => TokenSource::Environment,
                TokenOrigin::File(_) => TokenSource::File,
                TokenOrigin::Unmanaged => TokenSource::None,
            },
        }
    }

    fn file(&self) -> Result<&Path> {
        match &self.origin {
            TokenOrigin::File(path) => Ok(path),
            TokenOrigin::Fixed => Err(Error::Conflict(
                "the token is set by API_TOKEN (flag, environment or config file); change it there".into(),
            )),
            TokenOrigin::Unmanaged => Err(Error::Conflict("this server has no token file to manage".into())),
        }
    }

    /// A new token (also how a token is first required). Returns it: the one
    /// time it is shown.
    pub fn regenerate(&self) -> Result<String> {
        let path = self.file()?;
        let token = generate();
        paths::write_private(path, format!("{token}\n").as_bytes())
            .map_err(|e| Error::internal("writing the token file", e))?;
        self.credentials.set_token(Some(token.clone()));
        self.republish(Some(&token));
        tracing::info!(path = %path.display(), "a new API token is in force");
        Ok(token)
    }

    /// Stop requiring a token.
    pub fn remove(&self) -> Result<()> {
        let path = self.file()?;
        if self.exposed {
            return Err(Error::Conflict(
                "this server is reachable from the network, so it always requires a token".into(),
            ));
        }
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::internal("removing the token file", e)),
        }
        self.credentials.set_token(None);
        self.republish(None);
        tracing::info!("no API token is required any more");
        Ok(())
    }

    fn republish(&self, token: Option<&str>) {
        let mut published = self.connection.lock_anyway();
        if let Some((paths, info)) = published.as_mut() {
            info.token = token.map(str::to_owned);
            for path in paths.iter() {
                if let Err(e) = connection_info::write(path, info) {
                    // Not fatal: the new token is in force; only discovery lags.
                    e.log();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regenerate_and_remove_through_the_file_and_the_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        let security = Arc::new(Credentials::new(None));
        let tokens = Tokens::new(TokenOrigin::File(file.clone()), security.clone(), false);
        assert!(!tokens.state().required && tokens.state().changeable);

        let first = tokens.regenerate().unwrap();
        assert!(first.starts_with("lmcp_") && first.len() == 5 + 64);
        assert_eq!(read_file(&file).unwrap().as_deref(), Some(first.as_str()));
        assert!(security.token_matches(&first));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let second = tokens.regenerate().unwrap();
        assert_ne!(first, second);
        assert!(!security.token_matches(&first), "the old token stops working at once");

        tokens.remove().unwrap();
        assert!(!security.token_required() && !file.exists());

        let fixed = Tokens::new(TokenOrigin::Fixed, security.clone(), false);
        assert!(matches!(fixed.regenerate(), Err(Error::Conflict(_))));
        let exposed = Tokens::new(TokenOrigin::File(file), security, true);
        exposed.regenerate().unwrap();
        assert!(matches!(exposed.remove(), Err(Error::Conflict(_))));
    }
}

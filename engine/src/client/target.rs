//! Where the running instance is: `--url` (and `--token`) when given,
//! otherwise the connection-info file it published. Plus the one HTTP client
//! the CLI and the bridge share.

use std::path::PathBuf;
use std::time::Duration;

use std::net::{IpAddr, SocketAddr};

use crate::{connection_info, peer};
use crate::{Error, Result};

/// How the CLI finds the server.
#[derive(Debug, Clone)]
pub enum Source {
    /// An explicit URL (base or `…/mcp`) and token.
    Fixed { url: String, token: Option<String> },
    /// The connection-info file; read again on every [`Source::resolve`], so a
    /// restarted app on another port is found.
    File(PathBuf),
}

/// A resolved server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Base URL without a trailing slash, e.g. `http://127.0.0.1:8000`.
    pub base: String,
    pub token: Option<String>,
}

impl Target {
    pub fn mcp_url(&self) -> String {
        self.queue_url(crate::model::DEFAULT_QUEUE)
    }

    /// The MCP endpoint for agents of `queue`.
    pub fn queue_url(&self, queue: &str) -> String {
        format!("{}{}", self.base, crate::model::mcp_path(queue))
    }

    pub fn api(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl Source {
    pub fn new(url: Option<String>, token: Option<String>, file: Option<PathBuf>) -> Result<Source> {
        match (url, file) {
            (Some(url), _) => Ok(Source::Fixed { url, token }),
            (None, Some(file)) => Ok(Source::File(file)),
            (None, None) => Err(Error::Invalid(
                "no platform config folder here to find the connection-info file in; pass --url".into(),
            )),
        }
    }

    /// The server to talk to — refused when another account of this machine
    /// runs it (it could be squatting on the port: it would read what we
    /// send and feed our agents).
    pub fn resolve(&self) -> Result<Target> {
        let target = match self {
            Source::Fixed { url, token } => Target {
                base: base_url(url)?,
                token: token.clone().filter(|t| !t.is_empty()),
            },
            Source::File(path) => {
                let info = connection_info::read(path)?;
                Target {
                    base: base_url(&info.url)?,
                    token: info.token,
                }
            }
        };
        same_account(&target.base)?;
        Ok(target)
    }
}

/// Refuse a loopback server that another account runs. A server that is not
/// there (yet) passes: connecting will say so, and a restart may bring ours.
fn same_account(base: &str) -> Result<()> {
    let Some(addr) = loopback_addr(base) else {
        return Ok(()); // a remote server: the token is what protects it
    };
    let (Ok(me), Ok(owner)) = (peer::me(), peer::listener_owner(addr)) else {
        return Ok(());
    };
    if owner == me {
        return Ok(());
    }
    Err(Error::Forbidden(format!(
        "the server at {base} is run by another account ({}), not by you: refusing to send it your \
         instructions or to relay its answers to your agent. Stop that server, or run yours on another \
         port (HTTP_PORT) and point your agents at it",
        peer::describe(owner)
    )))
}

/// `http://127.0.0.1:8000` → the socket address, when the host is this machine's loopback.
fn loopback_addr(base: &str) -> Option<SocketAddr> {
    let url = reqwest::Url::parse(base).ok()?;
    let port = url.port_or_known_default()?;
    let ip = match url.host()? {
        url::Host::Domain(d) if d.eq_ignore_ascii_case("localhost") => IpAddr::from([127, 0, 0, 1]),
        url::Host::Domain(_) => return None,
        url::Host::Ipv4(a) => IpAddr::V4(a),
        url::Host::Ipv6(a) => IpAddr::V6(a),
    };
    ip.is_loopback().then_some(SocketAddr::new(ip, port))
}

/// `http://h:p`, `http://h:p/` and `http://h:p/mcp` all name the same server.
fn base_url(url: &str) -> Result<String> {
    let trimmed = url.trim().trim_end_matches('/');
    let base = trimmed.strip_suffix(crate::model::MCP_PATH).unwrap_or(trimmed);
    if !(base.starts_with("http://") || base.starts_with("https://")) || base.len() <= "https://".len() {
        return Err(Error::Invalid(format!(
            "{url:?} is not an http:// URL of local-mcp, e.g. http://127.0.0.1:8000/mcp"
        )));
    }
    Ok(base.to_owned())
}

/// The HTTP client for talking to local-mcp: never through a proxy (the
/// server is on this machine), no overall timeout (MCP waits are long), a
/// short connect timeout (a dead server should be noticed at once).
pub fn http_client() -> Result<reqwest::Client> {
    // Not a browser, and not sent on any web page's behalf: `none` is what a
    // browser says for a request the person made themselves. The server gives
    // backups and exports only to such requests (or same-origin ones).
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("sec-fetch-site", reqwest::header::HeaderValue::from_static("none"));
    reqwest::Client::builder()
        .default_headers(headers)
        .no_proxy()
        .connect_timeout(Duration::from_secs(3))
        .tcp_nodelay(true)
        .build()
        .map_err(|e| Error::Startup(format!("cannot create an HTTP client: {e}")))
}

/// The innermost cause of an error: for a refused connection that is
/// "Connection refused", not reqwest's "error sending request".
pub fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_normalised_and_non_http_refused() {
        for url in [
            "http://127.0.0.1:8000",
            "http://127.0.0.1:8000/",
            "http://127.0.0.1:8000/mcp",
            " http://127.0.0.1:8000/mcp/ ",
        ] {
            assert_eq!(base_url(url).unwrap(), "http://127.0.0.1:8000", "{url}");
        }
        assert!(base_url("127.0.0.1:8000").is_err());
        assert!(base_url("http://").is_err());
        let fixed = Source::new(Some("http://[::1]:9/mcp".into()), Some(String::new()), None).unwrap();
        assert_eq!(
            fixed.resolve().unwrap(),
            Target {
                base: "http://[::1]:9".into(),
                token: None
            }
        );
    }
}

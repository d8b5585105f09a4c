//! Where the running instance is: `--url` (and `--token`) when given, a
//! connection-info file when one is named, otherwise the server of the
//! database this configuration names (`--db-path`, `DB_PATH`, the config
//! file, else the default one) among the running servers. Plus the one HTTP
//! client the CLI and the bridge share.

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::net::{IpAddr, SocketAddr};

use crate::connection_info::{self, ConnectionInfo, Registry};
use crate::peer;
use crate::{Error, Result};

/// How the CLI finds the server. Each is read again on every
/// [`Source::resolve`], so a restarted app on another port is found.
#[derive(Debug, Clone)]
pub enum Source {
    /// An explicit URL (base or `…/mcp`) and token.
    Fixed { url: String, token: Option<String> },
    /// A connection-info file named by `--connection-file`.
    File(PathBuf),
    /// The server of a database, among every running server of this account.
    Database {
        db: PathBuf,
        registry: Registry,
        /// `connection.json`, for the default database: what a server of an
        /// older version published (it knows no registry).
        legacy: Option<PathBuf>,
    },
}

/// A resolved server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Base URL without a trailing slash, e.g. `http://127.0.0.1:8000`.
    pub base: String,
    pub token: Option<String>,
    /// The database it serves, when known.
    pub db: Option<PathBuf>,
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
    /// `url` and `token` as given; else the connection-info `file` named;
    /// else the server of `db` among those `servers` lists (`legacy`: the
    /// default database's `connection.json`).
    pub fn new(
        url: Option<String>,
        token: Option<String>,
        file: Option<PathBuf>,
        db: PathBuf,
        servers: Option<PathBuf>,
        legacy: Option<PathBuf>,
    ) -> Result<Source> {
        match (url, file, servers) {
            (Some(url), _, _) => Ok(Source::Fixed { url, token }),
            (None, Some(file), _) => Ok(Source::File(file)),
            (None, None, Some(dir)) => Ok(Source::Database {
                db,
                registry: Registry::new(dir),
                legacy,
            }),
            (None, None, None) => Err(Error::Invalid(
                "no platform config folder here to find the running server in; pass --url".into(),
            )),
        }
    }

    /// The servers that run on other databases than the one this source
    /// names (none for a URL or a file).
    pub fn others(&self) -> Vec<ConnectionInfo> {
        match self {
            Source::Database { db, registry, .. } => {
                let mine = crate::paths::canonical(db);
                registry
                    .running()
                    .into_iter()
                    .filter(|s| s.db_path.as_deref() != Some(mine.as_path()))
                    .collect()
            }
            _ => Vec::new(),
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
                db: None,
            },
            Source::File(path) => target_of(connection_info::read(path)?)?,
            Source::Database { db, registry, legacy } => match registry.of(db) {
                Some(info) => target_of(info)?,
                None => match legacy.as_deref().map(connection_info::read) {
                    Some(Ok(info)) => target_of(info)?,
                    _ => return Err(not_running(db, &self.others())),
                },
            },
        };
        same_account(&target.base)?;
        Ok(target)
    }
}

fn target_of(info: ConnectionInfo) -> Result<Target> {
    Ok(Target {
        base: base_url(&info.url)?,
        token: info.token,
        db: info.db_path,
    })
}

/// Nothing serves `db`: say so, and which servers run instead and how to pick one.
fn not_running(db: &Path, others: &[ConnectionInfo]) -> Error {
    let db = crate::paths::canonical(db);
    if others.is_empty() {
        return Error::NotFound(format!(
            "local-mcp is not running on {}: start it with `local-mcp-server start` (or the desktop app, \
             `local-mcp`), or pass --url",
            db.display()
        ));
    }
    let list: Vec<String> = others
        .iter()
        .map(|s| {
            let other = s
                .db_path
                .as_deref()
                .map_or_else(|| "?".into(), |p| p.display().to_string());
            format!(
                "  {} at {} (pid {}): --db-path {}",
                other,
                s.url,
                s.pid,
                shell_word(&other)
            )
        })
        .collect();
    Error::NotFound(format!(
        "local-mcp is not running on {}, but {} on other databases:\n{}\nPick one with --db-path (or --url)",
        db.display(),
        if others.len() == 1 { "one runs" } else { "several run" },
        list.join("\n")
    ))
}

/// A path as one shell word, quoted when it needs to be.
fn shell_word(path: &str) -> String {
    if path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%".contains(c))
    {
        path.to_owned()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
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
         port (--port, LOCAL_MCP_PORT) and point your agents at it",
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
        let fixed = Source::new(
            Some("http://[::1]:9/mcp".into()),
            Some(String::new()),
            None,
            PathBuf::new(),
            None,
            None,
        )
        .unwrap();
        assert_eq!(
            fixed.resolve().unwrap(),
            Target {
                base: "http://[::1]:9".into(),
                token: None,
                db: None,
            }
        );
    }
}

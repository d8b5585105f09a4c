//! Typed configuration. Precedence: CLI flag > `LOCAL_MCP_*` environment
//! variable > the plain variable name > config file > default. The plain
//! names are the original plan's (`HTTP_PORT`, `DB_PATH`,
//! `DEFAULT_WAIT_SECONDS`, …), so its set-ups keep working; but they are
//! generic — tcsh exports `HOST=<the machine's name>`, and the server then
//! refused to start — so one that does not parse is left out with a warning
//! ([`ServeArgs::or_plain_environment`]), never fatal.
//!
//! The engine itself never reads the environment: binaries parse [`ServeArgs`]
//! (clap reads flags and variables) and hand the resolved [`Config`] to
//! `engine::start`. Runtime settings given here only seed the database on
//! first run; afterwards the stored settings (edited through the API) rule.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::model::{Settings, SettingsPatch, FIELDS};
use crate::{paths, Error, Result};

/// Everything `engine::start` needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub host: IpAddr,
    /// 0 picks a free port (tests).
    pub port: u16,
    /// When the port is taken, try the next few instead of failing.
    pub port_fallback: bool,
    pub db_path: PathBuf,
    /// First-run values for the runtime settings.
    pub settings: Settings,
    pub mcp_stateless: bool,
    /// Bearer token for `/api/*` and `/mcp`; `None` = no token required.
    pub api_token: Option<String>,
    /// Where to publish the connection-info file (`None`: don't).
    pub connection_file: Option<PathBuf>,
    /// Where every running server publishes itself, one file per database
    /// (`None`: not published there).
    pub servers_dir: Option<PathBuf>,
    /// The token file the page can manage when `api_token` is not set (`None`: no token management).
    pub token_file: Option<PathBuf>,
    /// Where the daily log files are written (shown in the status; `None`: not written).
    pub log_dir: Option<PathBuf>,
}

impl Config {
    /// Defaults with a given database, loopback and a free port: what tests and embedders start from.
    pub fn for_db(db_path: impl Into<PathBuf>) -> Config {
        Config {
            host: IpAddr::from([127, 0, 0, 1]),
            port: 0,
            port_fallback: false,
            db_path: db_path.into(),
            settings: Settings::default(),
            mcp_stateless: true,
            api_token: None,
            connection_file: None,
            servers_dir: None,
            token_file: None,
            log_dir: None,
        }
    }
}

/// The help heading of the flags that say which local-mcp a command means
/// (its database, config, connection file; `--url`, `--token`): listed apart
/// from each command's own.
pub const WHICH_SERVER: &str = "Which local-mcp";

/// Flags and environment variables shared by `local-mcp-server` and the tray app.
/// Every one is global: `--port 8123 start` and `start --port 8123` mean the
/// same, and `start --help` lists them.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    /// Address to bind. Anything but loopback requires an API token.
    #[arg(long, env = "LOCAL_MCP_HOST", global = true)]
    pub host: Option<String>,
    /// HTTP port for the page, the API and /mcp [default: 8000]
    #[arg(long = "port", env = "LOCAL_MCP_PORT", global = true)]
    pub http_port: Option<u16>,
    /// SQLite database file [default: local_mcp.sqlite3 in the platform data folder]
    #[arg(long, env = "LOCAL_MCP_DB_PATH", global = true, help_heading = WHICH_SERVER)]
    pub db_path: Option<PathBuf>,
    /// Log filter, e.g. info, debug, local_mcp=trace [default: info]
    #[arg(long, env = "LOCAL_MCP_LOG_LEVEL", global = true)]
    pub log_level: Option<String>,
    /// Folder for the daily log files (7 kept); `off` for none
    /// [default: logs in the platform state folder]
    #[arg(long, env = "LOCAL_MCP_LOG_DIR", global = true)]
    pub log_dir: Option<PathBuf>,
    /// First-run values of the runtime settings (one flag per `model::FIELDS` entry).
    #[command(flatten)]
    pub settings: SettingsPatch,
    /// Stateless MCP (true, survives restarts) or sessions (false) [default: true]
    #[arg(long, env = "LOCAL_MCP_STATELESS", value_parser = clap::builder::BoolishValueParser::new(), global = true)]
    pub mcp_stateless: Option<bool>,
    /// Require `Authorization: Bearer <token>` on /api and /mcp (empty = off)
    #[arg(long, env = "LOCAL_MCP_API_TOKEN", hide_env_values = true, global = true)]
    pub api_token: Option<String>,
    /// Fail instead of trying the next free port when --port is taken
    #[arg(long, global = true)]
    pub no_port_fallback: bool,
    /// TOML config file [default: config.toml in the platform config folder, if present]
    #[arg(long, env = "LOCAL_MCP_CONFIG", global = true, help_heading = WHICH_SERVER)]
    pub config: Option<PathBuf>,
    /// Connection-info file: written by a running instance, read by the CLI and
    /// the stdio bridge [default: the server of the default database writes
    /// connection.json in the platform config folder; each server also writes
    /// servers/<database>.json there, which the CLI finds by --db-path]
    #[arg(long, env = "LOCAL_MCP_CONNECTION_FILE", global = true, help_heading = WHICH_SERVER)]
    pub connection_file: Option<PathBuf>,
    /// Token file (owner-only) used when API_TOKEN is not set; the page's settings
    /// create, regenerate or remove it [default: token in the platform config folder]
    #[arg(long, env = "LOCAL_MCP_TOKEN_FILE", global = true)]
    pub token_file: Option<PathBuf>,
}

/// What a plain variable name is read as, leniently.
fn plain<T>(
    lookup: &dyn Fn(&str) -> Option<String>,
    warn: &mut dyn FnMut(String),
    name: &str,
    flag: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Option<T> {
    let raw = lookup(name)?;
    let parsed = parse(raw.trim());
    if parsed.is_none() {
        warn(format!(
            "ignoring {name}={raw:?}: not a value for --{flag} (another program may have set it; \
             set LOCAL_MCP_{} to be sure it is read)",
            name.strip_prefix("HTTP_").unwrap_or(name).replace("MCP_", "")
        ));
    }
    parsed
}

impl ServeArgs {
    /// `self` with what flags and `LOCAL_MCP_*` variables did not give taken
    /// from the plain names `lookup` finds (`HOST`, `HTTP_PORT`, `DB_PATH`,
    /// `LOG_LEVEL`, `MCP_STATELESS`, `API_TOKEN`, and each setting's);
    /// one that does not parse is left out, and `warn` is told why.
    pub fn or_plain_environment(
        mut self,
        lookup: &dyn Fn(&str) -> Option<String>,
        warn: &mut dyn FnMut(String),
    ) -> ServeArgs {
        if self.host.is_none() {
            // A plain HOST is only ever a loopback address here: shells and
            // tools set HOST for their own ends (tcsh: the host name; an
            // inherited 0.0.0.0 once put the server on the network with
            // nothing said). Another address takes --host or LOCAL_MCP_HOST.
            self.host = match lookup("HOST").map(|h| (parse_host(h.trim()), h)) {
                Some((Ok(ip), h)) if ip.is_loopback() => Some(h.trim().to_owned()),
                Some((Ok(_), h)) => {
                    warn(format!(
                        "ignoring HOST={h:?}: a plain HOST is read only as a loopback address (another \
                         program may have set it); to listen on {h} use --host or LOCAL_MCP_HOST"
                    ));
                    None
                }
                Some((Err(_), _)) => plain(lookup, warn, "HOST", "host", |_| None::<String>),
                None => None,
            };
        }
        if self.http_port.is_none() {
            self.http_port = plain(lookup, warn, "HTTP_PORT", "port", |p| p.parse().ok());
        }
        if self.db_path.is_none() {
            self.db_path = plain(lookup, warn, "DB_PATH", "db-path", |p| {
                (!p.is_empty()).then(|| PathBuf::from(p))
            });
        }
        if self.log_level.is_none() {
            self.log_level = plain(lookup, warn, "LOG_LEVEL", "log-level", |l| {
                tracing_subscriber::EnvFilter::try_new(log_filter(l))
                    .ok()
                    .map(|_| l.to_owned())
            });
        }
        if self.mcp_stateless.is_none() {
            self.mcp_stateless = plain(lookup, warn, "MCP_STATELESS", "mcp-stateless", |v| {
                <bool as crate::model::FromEnvironment>::parse(v)
            });
        }
        if self.api_token.is_none() {
            // Any text is a token; it is never shown.
            self.api_token = lookup("API_TOKEN");
        }
        self.settings = self.settings.or_plain_environment(lookup, warn);
        self
    }

    /// The connection-info file this instance publishes and the CLI reads:
    /// the one given, else `connection.json` for the default database.
    pub fn connection_file(&self) -> Option<PathBuf> {
        self.connection_file.clone().or_else(paths::default_connection_file)
    }

    /// Where a serving instance writes its log files (`None`: `off`, or no platform folder).
    pub fn log_dir(&self) -> Option<PathBuf> {
        match &self.log_dir {
            Some(dir) if dir.as_os_str() == "off" || dir.as_os_str().is_empty() => None,
            Some(dir) => Some(dir.clone()),
            None => paths::default_log_dir(),
        }
    }
}

/// The config file: the same keys as the environment variables, in lower
/// case. The runtime settings' keys are read into `settings`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub host: Option<String>,
    pub http_port: Option<u16>,
    pub db_path: Option<PathBuf>,
    pub log_level: Option<String>,
    pub mcp_stateless: Option<bool>,
    pub api_token: Option<String>,
    #[serde(skip)]
    pub settings: SettingsPatch,
}

fn read_file(path: &Path) -> Result<FileConfig> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Invalid(format!("cannot read config file {}: {e}", path.display())))?;
    let invalid = |e: &dyn std::fmt::Display| Error::Invalid(format!("config file {}: {e}", path.display()));
    let mut table: toml::Table = toml::from_str(&text).map_err(|e| invalid(&e))?;
    // serde's `flatten` cannot be combined with `deny_unknown_fields`, so the
    // settings' keys are split off by name and each part is read strictly.
    let mut settings = toml::Table::new();
    for name in FIELDS.iter().map(|f| f.name) {
        if let Some(v) = table.remove(name) {
            settings.insert(name.to_owned(), v);
        }
    }
    let mut file: FileConfig = table.try_into().map_err(|e| invalid(&e))?;
    file.settings = settings.try_into().map_err(|e| invalid(&e))?;
    Ok(file)
}

impl ServeArgs {
    /// Load the config file (if any) and merge: flag/env > file > default.
    pub fn resolve(&self) -> Result<(Config, String)> {
        let file = match &self.config {
            Some(path) => read_file(path)?,
            None => match paths::default_config_file() {
                Some(path) if path.is_file() => read_file(&path)?,
                _ => FileConfig::default(),
            },
        };
        let host_text = self.host.clone().or(file.host).unwrap_or_else(|| "127.0.0.1".into());
        let host = parse_host(&host_text)?;
        let settings = self.settings.clone().or(file.settings).apply(Settings::default());
        settings.validate()?;
        let mut config = Config {
            host,
            port: self.http_port.or(file.http_port).unwrap_or(8000),
            port_fallback: !self.no_port_fallback,
            db_path: self.db_path.clone().or(file.db_path).unwrap_or_else(paths::default_db),
            settings,
            mcp_stateless: self.mcp_stateless.or(file.mcp_stateless).unwrap_or(true),
            api_token: self
                .api_token
                .clone()
                .or(file.api_token)
                .filter(|t| !t.trim().is_empty()),
            connection_file: None,
            servers_dir: paths::default_servers_dir(),
            token_file: self.token_file.clone().or_else(paths::default_token_file),
            log_dir: self.log_dir(),
        };
        // `connection.json` is the default database's: a second server on a
        // database of its own must not overwrite it (or remove it on exit).
        config.connection_file = match &self.connection_file {
            Some(file) => Some(file.clone()),
            None if is_default_db(&config.db_path) => paths::default_connection_file(),
            None => None,
        };
        let log_level = self
            .log_level
            .clone()
            .or(file.log_level)
            .unwrap_or_else(|| "info".into());
        Ok((config, log_level))
    }
}

/// The database as the stdio bridge and the Stop hook must be told it
/// (`--db-path`): `None` for the default one, which they find by themselves.
pub fn named_database(db: &Path) -> Option<String> {
    (!is_default_db(db)).then(|| paths::canonical(db).display().to_string())
}

/// Whether `db` is the default database (however its path is written).
pub fn is_default_db(db: &Path) -> bool {
    paths::canonical(db) == paths::canonical(&paths::default_db())
}

/// The `tracing` filter for a `LOG_LEVEL` such as `info`. rmcp logs every
/// stateless request at info, which drowns our own lines, so it is held to
/// `warn` unless the filter names it.
pub fn log_filter(level: &str) -> String {
    let mut filter = level.to_owned();
    if !level.contains("rmcp") {
        filter.push_str(",rmcp=warn");
    }
    // A bare `debug` or `trace` is about local-mcp: the HTTP stack's own
    // (hyper, reqwest, h2…) would flood the terminal, a line per frame.
    if !level.contains('=') && matches!(level.trim(), "debug" | "trace") {
        filter.push_str(",hyper=info,hyper_util=info,reqwest=info,h2=info,rustls=info,tower=info,mio=info");
    }
    filter
}

fn parse_host(text: &str) -> Result<IpAddr> {
    if text.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::from([127, 0, 0, 1]));
    }
    text.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| Error::Invalid(format!("HOST must be an IP address such as 127.0.0.1 (got {text:?})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_debug_level_is_about_local_mcp_not_the_http_stack() {
        let debug = log_filter("debug");
        assert!(debug.starts_with("debug,") && debug.contains("hyper=info") && debug.contains("reqwest=info"));
        assert!(tracing_subscriber::EnvFilter::try_new(&debug).is_ok(), "{debug}");
        assert_eq!(log_filter("info"), "info,rmcp=warn");
        assert_eq!(
            log_filter("hyper=trace"),
            "hyper=trace,rmcp=warn",
            "asked for by name: kept"
        );
    }

    #[test]
    fn flags_beat_file_beats_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "http_port = 9100\ndefault_wait_seconds = 42\nhost = \"127.0.0.1\"\napi_token = \"\"\n",
        )
        .unwrap();
        let args = ServeArgs {
            config: Some(file),
            http_port: Some(9200),
            ..Default::default()
        };
        let (c, level) = args.resolve().unwrap();
        assert_eq!(c.port, 9200, "flag wins over file");
        assert_eq!(c.settings.default_wait_seconds, 42, "file wins over default");
        assert_eq!(c.settings.agent_stale_after_seconds, 30, "default when nobody says");
        assert_eq!(c.api_token, None, "an empty token means no token");
        assert_eq!(level, "info");
        assert!(c.mcp_stateless);
    }

    #[test]
    fn bad_values_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "htp_port = 1\n").unwrap();
        let err = ServeArgs {
            config: Some(file),
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert!(err.to_string().contains("htp_port"), "{err}");
        let err = ServeArgs {
            host: Some("example.com".into()),
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert!(err.to_string().contains("HOST"), "{err}");
        let err = ServeArgs {
            settings: SettingsPatch {
                default_wait_seconds: Some(90_000),
                ..Default::default()
            },
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert!(err.to_string().contains("default_wait_seconds"), "{err}");
        assert_eq!(parse_host("[::1]").unwrap(), "::1".parse::<IpAddr>().unwrap());
    }
}

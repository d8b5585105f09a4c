//! What a process of either binary sets up before it runs a command or
//! serves: logging (stderr, and daily files for a serving instance). SIGPIPE
//! and the descriptor limit are the operating system's (`crate::process`).

use std::path::Path;

use crate::config;

/// Logs to stderr, filtered by a `LOG_LEVEL` (an invalid one says so and
/// falls back to info) — and, for a serving instance, to daily files in
/// `log_dir` (`<program>.<date>.log`, the newest 7 kept), so a headless
/// server's history survives its terminal. Returns whether the files are
/// written (a folder that cannot be made is said on stderr, not fatal).
pub(super) fn init_logging(program: &str, level: &str, ansi: bool, log_dir: Option<&Path>) -> bool {
    let filter = tracing_subscriber::EnvFilter::try_new(config::log_filter(level)).unwrap_or_else(|_| {
        eprintln!("{program}: LOG_LEVEL {level:?} is not a valid filter; using info");
        tracing_subscriber::EnvFilter::new(config::log_filter("info"))
    });
    let files = log_dir.and_then(|dir| {
        // The logs name queues, agents and what they were told: the folder
        // is owner-only, made before the appender looks into it (on a first
        // run it would report the missing folder as an error).
        if let Err(e) = crate::private_fs::private_dir(dir).and_then(|()| crate::private_fs::make_files_private(dir)) {
            eprintln!("{program}: cannot write log files in {}: {e}", dir.display());
            return None;
        }
        tracing_appender::rolling::RollingFileAppender::builder()
            .rotation(tracing_appender::rolling::Rotation::DAILY)
            .filename_prefix(program)
            .filename_suffix("log")
            .max_log_files(LOG_FILES_KEPT)
            .build(dir)
            .map_err(|e| eprintln!("{program}: cannot write log files in {}: {e}", dir.display()))
            .ok()
    });
    let written = files.is_some();
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(ansi)
                .with_writer(std::io::stderr),
        )
        // The same lines in the files, never with terminal colours.
        .with(files.map(|f| tracing_subscriber::fmt::layer().with_ansi(false).with_writer(f)))
        .init();
    written
}

/// Daily log files kept (a week).
const LOG_FILES_KEPT: usize = 7;

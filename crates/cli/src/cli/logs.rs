//! `logs [-n N] [-f]`: the end of the newest log file, and with `-f` what
//! is written to it from then on (following the next day's file when the
//! day turns). The folder is the one the running instance says it writes
//! to (`server.log_dir` in its status), else this configuration's.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Failure;
use crate::client::target::Source;

/// How often `-f` looks for more.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

pub async fn logs(
    source: Option<Source>,
    configured: Option<PathBuf>,
    lines: usize,
    follow: bool,
) -> Result<(), Failure> {
    let dir = match running_log_dir(source).await {
        Some(dir) => dir,
        None => configured.ok_or_else(|| {
            Failure(
                "no log folder: local-mcp is not running here and LOCAL_MCP_LOG_DIR is off".into(),
                1,
            )
        })?,
    };
    let Some(mut file) = newest(&dir) else {
        return Err(Failure(format!("no log files in {}", dir.display()), 1));
    };
    let text = std::fs::read(&file).map_err(|e| Failure(format!("cannot read {}: {e}", file.display()), 1))?;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(last_lines(&text, lines));
    let _ = out.flush();
    drop(out);
    if !follow {
        return Ok(());
    }
    let mut at = text.len() as u64;
    loop {
        tokio::time::sleep(FOLLOW_EVERY).await;
        // The day turned: the next file takes over, from its start.
        if let Some(next) = newest(&dir).filter(|n| *n != file) {
            file = next;
            at = 0;
        }
        let Ok(mut f) = std::fs::File::open(&file) else {
            continue;
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(at);
        if len < at {
            at = 0; // replaced
        }
        if len > at && f.seek(SeekFrom::Start(at)).is_ok() {
            let mut more = Vec::new();
            if f.take(len - at).read_to_end(&mut more).is_ok() {
                at += more.len() as u64;
                let mut out = std::io::stdout().lock();
                if out.write_all(&more).and_then(|()| out.flush()).is_err() {
                    return Ok(()); // the reader went away (`| head`)
                }
            }
        }
    }
}

/// The log folder the running instance reports, if one answers.
async fn running_log_dir(source: Option<Source>) -> Option<PathBuf> {
    let client = super::commands::client(&source?).ok()?;
    client.status().await.ok()?.server.log_dir.map(PathBuf::from)
}

/// The most recently written `*.log` file in `dir`.
fn newest(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, path)| path)
}

/// The last `n` lines of `text`.
fn last_lines(text: &[u8], n: usize) -> &[u8] {
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let start = body
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'\n')
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i + 1);
    if n == 0 {
        return &text[text.len()..];
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::last_lines;

    #[test]
    fn the_last_lines_of_a_file() {
        let text = b"a\nb\nc\n";
        assert_eq!(last_lines(text, 2), b"b\nc\n");
        assert_eq!(last_lines(text, 10), b"a\nb\nc\n");
        assert_eq!(last_lines(text, 0), b"");
        assert_eq!(last_lines(b"x\ny", 1), b"y");
    }
}

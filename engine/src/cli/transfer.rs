//! Files in and out of a running server: `backup FILE`, `export` (to stdout
//! or a file; a bundle only to a file) and `import FILE [--dry-run]`.
//! Downloads land beside their file first and are renamed into place once
//! complete, so an interrupted one never leaves a half file under the name.

use std::path::{Path, PathBuf};

use futures::StreamExt as _;
use serde_json::Value;
use tokio::io::AsyncWriteExt as _;

use super::commands::send_text;
use super::target::{http_client, root_cause, Target};
use super::Failure;
use crate::export::Format;

/// `backup FILE`: the running server's archive.
pub async fn backup(target: &Target, file: &Path) -> Result<(), Failure> {
    let size = download(target, target.api("/api/backup"), file, "backup").await?;
    println!(
        "backup written to {} ({:.1} MiB)",
        file.display(),
        size as f64 / 1_048_576.0
    );
    Ok(())
}

/// `export`: the server's export, to stdout or a file.
pub async fn export(
    target: &Target,
    format: Format,
    queue: Option<String>,
    since: Option<String>,
    output: Option<PathBuf>,
) -> Result<(), Failure> {
    let mut url = reqwest::Url::parse(&target.api("/api/export")).map_err(|e| Failure(e.to_string(), 1))?;
    url.query_pairs_mut().append_pair("format", format.name());
    if let Some(q) = &queue {
        url.query_pairs_mut().append_pair("queue", q);
    }
    if let Some(s) = &since {
        url.query_pairs_mut().append_pair("since", s);
    }
    if format == Format::Bundle {
        let Some(path) = output else {
            return Err(Failure(
                "a bundle is an archive, not text: give --output FILE".into(),
                2,
            ));
        };
        let size = download(target, url.to_string(), &path, "export").await?;
        eprintln!(
            "bundle written to {} ({:.1} MiB)",
            path.display(),
            size as f64 / 1_048_576.0
        );
        return Ok(());
    }
    let body = send_text(target, http_client()?.get(url)).await?;
    match output {
        None => print!("{body}"),
        Some(path) => {
            crate::paths::write_private(&path, body.as_bytes())
                .map_err(|e| Failure(format!("cannot write {}: {e}", path.display()), 1))?;
            eprintln!("export written to {}", path.display());
        }
    }
    Ok(())
}

/// `import FILE [--dry-run]`: send an export (JSON or bundle) to the server.
pub async fn import(target: &Target, file: &Path, dry_run: bool, json: bool) -> Result<(), Failure> {
    let handle = tokio::fs::File::open(file)
        .await
        .map_err(|e| Failure(format!("cannot read {}: {e}", file.display()), 1))?;
    let mut head = [0u8; 262];
    let bundle = {
        use tokio::io::AsyncReadExt as _;
        let mut probe = tokio::fs::File::open(file)
            .await
            .map_err(|e| Failure(format!("cannot read {}: {e}", file.display()), 1))?;
        let n = probe.read(&mut head).await.unwrap_or(0);
        n == head.len() && &head[257..262] == b"ustar"
    };
    let mut url = reqwest::Url::parse(&target.api("/api/import")).map_err(|e| Failure(e.to_string(), 1))?;
    if dry_run {
        url.query_pairs_mut().append_pair("dry_run", "true");
    }
    let request = http_client()?
        .post(url)
        .header(
            reqwest::header::CONTENT_TYPE,
            if bundle {
                "application/x-tar"
            } else {
                "application/json"
            },
        )
        .body(reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::new(handle)));
    let text = send_text(target, request).await?;
    let summary: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if json {
        println!("{}", serde_json::to_string_pretty(&summary).unwrap_or_default());
        return Ok(());
    }
    println!("{}", describe(&summary));
    Ok(())
}

/// The import's summary, for a person.
fn describe(s: &Value) -> String {
    let n = |k: &str| s[k].as_u64().unwrap_or(0);
    let verb = if s["dry_run"].as_bool().unwrap_or(false) {
        "would import"
    } else {
        "imported"
    };
    let mut text = format!(
        "{verb} {} pending, {} delivered, {} reports, {} attachment files",
        n("pending"),
        n("delivered"),
        n("reports"),
        n("attachments")
    );
    if n("already_present") > 0 {
        text.push_str(&format!("; {} already here (skipped)", n("already_present")));
    }
    if n("new_ids") > 0 {
        text.push_str(&format!("; {} given new ids (theirs were taken)", n("new_ids")));
    }
    let queues: Vec<&str> = s["queues_created"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !queues.is_empty() {
        text.push_str(&format!("; new queues: {}", queues.join(", ")));
    }
    if n("attachments_not_in_file") > 0 {
        text.push_str(&format!(
            "\n{} attachments are listed without their files (a JSON export carries none): export --format bundle to move them",
            n("attachments_not_in_file")
        ));
    }
    text
}

/// Stream a GET's body to `file` (through `<file>.part`); returns its size.
async fn download(target: &Target, url: String, file: &Path, what: &str) -> Result<u64, Failure> {
    let mut request = http_client()?.get(url);
    if let Some(t) = &target.token {
        request = request.bearer_auth(t);
    }
    let response = request.send().await.map_err(|e| {
        Failure(
            format!("local-mcp is not running at {} ({})", target.base, root_cause(&e)),
            3,
        )
    })?;
    if !response.status().is_success() {
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let message = value["error"]["message"].as_str().unwrap_or(text.trim()).to_owned();
        return Err(Failure(
            format!("the server refused the {what} ({status}): {message}"),
            1,
        ));
    }
    // A new owner-only file under a random name beside it, renamed over it
    // when complete: a backup holds the whole history, and never a half one.
    let fail = |e: std::io::Error| Failure(format!("cannot write {}: {e}", file.display()), 1);
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let name = file.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let part = crate::private_fs::temp_file_in(dir, &format!(".{name}.")).map_err(fail)?;
    let mut out = tokio::fs::File::from_std(part.as_file().try_clone().map_err(fail)?);
    let mut body = response.bytes_stream();
    let mut size = 0u64;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| Failure(format!("the {what} was cut off: {e}"), 1))?;
        size += chunk.len() as u64;
        out.write_all(&chunk).await.map_err(fail)?;
    }
    out.sync_all().await.map_err(fail)?;
    drop(out);
    part.persist(file).map_err(|e| fail(e.error))?;
    Ok(size)
}

//! Files in and out of a running server: `backup FILE`, `export` (to stdout
//! or a file; a bundle only to a file) and `import FILE [--dry-run]`.
//! Downloads land beside their file first and are renamed into place once
//! complete, so an interrupted one never leaves a half file under the name.

use std::path::{Path, PathBuf};

use futures::StreamExt as _;
use tokio::io::AsyncWriteExt as _;

use super::Failure;
use crate::client::Client;
use crate::export::{Format, ImportSummary};

/// `backup FILE`: the running server's archive.
pub async fn backup(client: &Client, file: &Path) -> Result<(), Failure> {
    let size = download(client, "/api/backup".into(), file, "backup").await?;
    println!(
        "backup written to {} ({:.1} MiB)",
        file.display(),
        size as f64 / 1_048_576.0
    );
    Ok(())
}

/// `export`: the server's export, to stdout or a file.
pub async fn export(
    client: &Client,
    format: Format,
    queue: Option<String>,
    since: Option<String>,
    output: Option<PathBuf>,
) -> Result<(), Failure> {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.append_pair("format", format.name());
    if let Some(q) = &queue {
        query.append_pair("queue", q);
    }
    if let Some(s) = &since {
        query.append_pair("since", s);
    }
    let path = format!("/api/export?{}", query.finish());
    if format == Format::Bundle {
        let Some(file) = output else {
            return Err(Failure(
                "a bundle is an archive, not text: give --output FILE".into(),
                2,
            ));
        };
        let size = download(client, path, &file, "export").await?;
        eprintln!(
            "bundle written to {} ({:.1} MiB)",
            file.display(),
            size as f64 / 1_048_576.0
        );
        return Ok(());
    }
    let body = client.send_text(client.request(reqwest::Method::GET, &path)).await?;
    match output {
        None => print!("{body}"),
        Some(file) => {
            crate::paths::write_private(&file, body.as_bytes())
                .map_err(|e| Failure(format!("cannot write {}: {e}", file.display()), 1))?;
            eprintln!("export written to {}", file.display());
        }
    }
    Ok(())
}

/// What a file to import looks like from its first bytes: a tar archive
/// (a bundle, or a backup, which `restore` takes) or text (an export's JSON).
enum Kind {
    Empty,
    Json,
    Bundle,
    Backup,
}

fn kind_of(file: &Path) -> Result<Kind, Failure> {
    use std::io::Read as _;
    let unreadable = |e: std::io::Error| Failure(format!("cannot read {}: {e}", file.display()), 1);
    let mut handle = std::fs::File::open(file).map_err(unreadable)?;
    let mut head = [0u8; 512];
    let n = handle.read(&mut head).map_err(unreadable)?;
    if n == 0 {
        return Ok(Kind::Empty);
    }
    if n < head.len() || &head[257..262] != b"ustar" {
        return Ok(Kind::Json);
    }
    // A backup holds the database itself; a bundle holds export.json.
    let mut archive = tar::Archive::new(std::fs::File::open(file).map_err(unreadable)?);
    let backup = archive.entries().ok().is_some_and(|entries| {
        entries
            .flatten()
            .take(4)
            .any(|e| e.path().is_ok_and(|p| p.as_os_str() == crate::store::DB_ENTRY))
    });
    Ok(if backup { Kind::Backup } else { Kind::Bundle })
}

/// `import FILE [--dry-run]`: send an export (JSON or bundle) to the server.
pub async fn import(client: &Client, file: &Path, dry_run: bool, json: bool) -> Result<(), Failure> {
    let shown = file.display();
    let bundle = match kind_of(file)? {
        Kind::Empty => return Err(Failure(format!("{shown} is empty: there is nothing to import"), 1)),
        Kind::Backup => {
            return Err(Failure(
                format!(
                    "{shown} is a backup, not an export: to put it back, stop local-mcp and run \
                     `local-mcp-server restore {shown}` (what it replaces is kept aside)"
                ),
                1,
            ))
        }
        Kind::Bundle => true,
        Kind::Json => false,
    };
    let handle = tokio::fs::File::open(file)
        .await
        .map_err(|e| Failure(format!("cannot read {shown}: {e}"), 1))?;
    let path = if dry_run {
        "/api/import?dry_run=true"
    } else {
        "/api/import"
    };
    let request = client
        .request(reqwest::Method::POST, path)
        .header(
            reqwest::header::CONTENT_TYPE,
            if bundle {
                "application/x-tar"
            } else {
                "application/json"
            },
        )
        .body(reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::new(handle)));
    // The server calls what it was sent "the file": name the person's.
    let summary: ImportSummary = client.send(request).await.map_err(|e| match e {
        crate::client::Failure::Refused { message, .. } => Failure(
            match message.strip_prefix("the file ") {
                Some(rest) => format!("{shown} {rest}"),
                None => format!("cannot import {shown}: {message}"),
            },
            1,
        ),
        other => Failure::from(other),
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&summary).unwrap_or_default());
        return Ok(());
    }
    println!("{}", describe(&summary));
    Ok(())
}

/// The import's summary, for a person.
fn describe(s: &ImportSummary) -> String {
    let verb = if s.dry_run { "would import" } else { "imported" };
    let mut text = format!(
        "{verb} {} pending, {} delivered, {} reports, {} attachment files",
        s.pending, s.delivered, s.reports, s.attachments
    );
    if s.already_present > 0 {
        text.push_str(&format!("; {} already here (skipped)", s.already_present));
    }
    if s.new_ids > 0 {
        text.push_str(&format!("; {} given new ids (theirs were taken)", s.new_ids));
    }
    if !s.queues_created.is_empty() {
        text.push_str(&format!("; new queues: {}", s.queues_created.join(", ")));
    }
    if s.pending > 0 {
        text.push_str(&format!(
            "\nthe {} pending {} held: no agent gets {} until you release {} (`release --imported`, or the page)",
            s.pending,
            if s.pending == 1 { "one is" } else { "ones are" },
            if s.pending == 1 { "it" } else { "them" },
            if s.pending == 1 { "it" } else { "them" },
        ));
    }
    if s.attachments_not_in_file > 0 {
        text.push_str(&format!(
            "\n{} attachments are listed without their files (a JSON export carries none): export --format bundle to move them",
            s.attachments_not_in_file
        ));
    }
    text
}

/// Stream a GET's body to `file` (a new owner-only file under a random name
/// beside it, renamed over it when complete); returns its size.
async fn download(client: &Client, path: String, file: &Path, what: &str) -> Result<u64, Failure> {
    // Said before anything is asked of the server, and in the person's terms
    // (the temporary file it is written through is nobody's business).
    let folder = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !folder.is_dir() {
        return Err(Failure(
            format!(
                "cannot write {}: the folder {} does not exist",
                file.display(),
                folder.display()
            ),
            1,
        ));
    }
    let mut request = client.request(reqwest::Method::GET, &path);
    if let Some(t) = &client.target.token {
        request = request.bearer_auth(t);
    }
    let response = request.send().await.map_err(|e| {
        Failure(
            format!(
                "local-mcp is not running at {} ({})",
                client.target.base,
                crate::client::root_cause(&e)
            ),
            3,
        )
    })?;
    if !response.status().is_success() {
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        let message = value["error"]["message"].as_str().unwrap_or(text.trim()).to_owned();
        return Err(Failure(
            format!("the server refused the {what} ({status}): {message}"),
            1,
        ));
    }
    // A backup holds the whole history, and never a half one.
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

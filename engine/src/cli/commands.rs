//! `status`, `add`, `list`, `hold`, `release`, `stop`, `reports`, `reply`
//! and `config`: small JSON API calls, printed for people.

use std::io::Read;

use serde_json::{json, Value};

use super::target::{http_client, root_cause, Source, Target};
use super::Failure;
use crate::snippets::{self, Client, Endpoint};
use crate::Error;

/// Call the API; a JSON error body becomes its message.
pub(super) async fn call(
    target: &Target,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Result<Value, Failure> {
    let mut request = http_client()?.request(method, target.api(path));
    if let Some(body) = body {
        request = request.json(&body);
    }
    send(target, request).await
}

/// Send a request to the running instance (with its token) and read the JSON answer.
async fn send(target: &Target, request: reqwest::RequestBuilder) -> Result<Value, Failure> {
    let text = send_text(target, request).await?;
    Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Send a request to the running instance (with its token) and read the
/// answer's text; an error answer becomes its message.
pub(super) async fn send_text(target: &Target, mut request: reqwest::RequestBuilder) -> Result<String, Failure> {
    if let Some(token) = &target.token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.map_err(|e| {
        Failure(
            format!(
                "local-mcp is not answering at {} ({}). Is it running?",
                target.base,
                root_cause(&e)
            ),
            3,
        )
    })?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| Failure(format!("reading the answer failed: {e}"), 1))?;
    if status.is_success() {
        return Ok(text);
    }
    let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let message = value["error"]["message"].as_str().unwrap_or(text.trim());
    let hint = match status.as_u16() {
        401 => " (this local-mcp requires a token: pass --token, or run this where it wrote its connection-info file)",
        _ => "",
    };
    Err(Failure(format!("{message}{hint}"), 1))
}

fn print_json(value: &Value) {
    println!("{}", serde_json::to_string_pretty(value).unwrap_or_default());
}

/// `93784` → `1 d 2 h`, `3700` → `1 h 1 min`, `42` → `42 s`.
fn human_duration(seconds: u64) -> String {
    let (d, h, m) = (seconds / 86_400, seconds / 3600 % 24, seconds / 60 % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{seconds} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

/// A local process's resident memory (Linux: `/proc/<pid>/status`), when readable.
fn resident_mib(pid: u64) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

pub async fn status(target: &Target, only: Option<&str>, raw: bool) -> Result<(), Failure> {
    let only = only.map(crate::model::queue_name).transpose()?;
    let mut s = call(target, reqwest::Method::GET, "/api/status", None).await?;
    if let Some(q) = &only {
        for list in ["queues", "agents"] {
            if let Some(items) = s[list].as_array_mut() {
                items.retain(|i| i.get("queue").or(i.get("name")).and_then(Value::as_str) == Some(q));
            }
        }
        if s["queues"].as_array().is_some_and(Vec::is_empty) {
            return Err(Failure(format!("no queue named {q}"), 1));
        }
    }
    if raw {
        print_json(&s);
        return Ok(());
    }
    let server = &s["server"];
    println!(
        "local-mcp {} is running at {} (MCP: {}/mcp)",
        server["version"].as_str().unwrap_or("?"),
        server["url"].as_str().unwrap_or(&target.base),
        server["url"].as_str().unwrap_or(&target.base),
    );
    for q in s["queues"].as_array().cloned().unwrap_or_default() {
        let name = q["name"].as_str().unwrap_or("?");
        println!(
            "queue {name}: {} pending, {} delivered{} (MCP: {}{})",
            q["pending_count"],
            q["consumed_count"],
            if q["held"] == true { ", HELD" } else { "" },
            server["url"].as_str().unwrap_or(&target.base),
            crate::model::mcp_path(name),
        );
    }
    if let Some(fault) = server["storage_fault"].as_str() {
        println!("cannot write its database: {fault}");
    }
    match s["queue"]["in_doubt_count"].as_u64() {
        Some(0) | None => {}
        Some(n) => println!("deliveries in doubt: {n} (the answer was cut off; send them again from the page)"),
    }
    if let Some(pid) = server["pid"].as_u64().filter(|p| *p > 0) {
        let uptime = server["started_at"]
            .as_str()
            .and_then(crate::time::seconds_since)
            .map(|s| format!(", up {}", human_duration(s.max(0.0) as u64)))
            .unwrap_or_default();
        let memory = resident_mib(pid)
            .map(|m| format!(", {m:.1} MiB resident"))
            .unwrap_or_default();
        println!("process: pid {pid}{uptime}{memory}");
    }
    if let Some(dir) = server["log_dir"].as_str() {
        println!("log files: {dir}");
    }
    let agents = s["agents"].as_array().cloned().unwrap_or_default();
    if agents.is_empty() {
        println!("agents: none has called yet");
    }
    for a in agents {
        println!(
            "agent {} in {}: {}{}",
            a["agent_id"].as_str().unwrap_or("?"),
            a["queue"].as_str().unwrap_or("?"),
            a["state"].as_str().unwrap_or("?"),
            a["last_seen_at"]
                .as_str()
                .map(|t| format!(" (last seen {t})"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

/// The text of `add` or `reply`: the words, or stdin for "-".
fn text_of(words: &[String]) -> Result<String, Failure> {
    let content = if words == ["-"] {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure(format!("cannot read the instruction from stdin: {e}"), 1))?;
        // `echo … | add -` should not queue the shell's trailing newline.
        text.trim_end().to_owned()
    } else {
        words.join(" ")
    };
    if content.trim().is_empty() {
        return Err(Failure("the instruction is empty; nothing was queued".into(), 1));
    }
    Ok(content)
}

/// A file to attach: its name and bytes (read from disk, or a template's
/// fetched from the server: kept in memory, never written anywhere).
pub struct FilePart {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl FilePart {
    /// A file on disk, named as it is there.
    pub fn read(path: &std::path::Path) -> Result<FilePart, Failure> {
        let bytes = std::fs::read(path).map_err(|e| Failure(format!("cannot read {}: {e}", path.display()), 1))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(FilePart { name, bytes })
    }

    fn part(self) -> reqwest::multipart::Part {
        reqwest::multipart::Part::bytes(self.bytes).file_name(self.name)
    }
}

/// `add --template NAME [TEXT…]`: the template's text, then TEXT after a
/// blank line; and its files, fetched to attach again.
pub async fn from_template(
    target: &Target,
    name: &str,
    words: &[String],
) -> Result<(Vec<String>, Vec<FilePart>), Failure> {
    let path = format!("/api/templates/{}", urlencoding(name));
    let found = call(target, reqwest::Method::GET, &path, None).await?;
    let mut text = found["item"]["content"].as_str().unwrap_or_default().to_owned();
    if !words.is_empty() {
        text = format!("{}\n\n{}", text.trim_end(), text_of(words)?);
    }
    let mut fetched = Vec::new();
    for file in found["item"]["files"].as_array().into_iter().flatten() {
        let ordinal = file["ordinal"].as_u64().unwrap_or_default();
        let url = target.api(&format!("{path}/files/{ordinal}"));
        let mut request = http_client()?.get(url);
        if let Some(token) = &target.token {
            request = request.bearer_auth(token);
        }
        let bytes = request
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| {
                Failure(
                    format!("cannot fetch the template's file {ordinal}: {}", root_cause(&e)),
                    1,
                )
            })?
            .bytes()
            .await
            .map_err(|e| Failure(format!("cannot fetch the template's file {ordinal}: {e}"), 1))?;
        let name = crate::model::attachment_name(file["name"].as_str().unwrap_or("file"));
        fetched.push(FilePart {
            name,
            bytes: bytes.to_vec(),
        });
    }
    Ok((vec![text], fetched))
}

/// `templates [--save NAME TEXT [--attach FILE…] | --delete NAME] [--json]`.
pub async fn templates(
    target: &Target,
    save: Option<Vec<String>>,
    attach: &[std::path::PathBuf],
    delete: Option<String>,
    json: bool,
) -> Result<(), Failure> {
    if let Some(pair) = save {
        let (name, text) = (&pair[0], &pair[1]);
        let content = text_of(std::slice::from_ref(text))?;
        let path = format!("/api/templates/{}", urlencoding(name));
        let mut saved = call(target, reqwest::Method::PUT, &path, Some(json!({ "content": content }))).await?;
        if !attach.is_empty() {
            let mut form = reqwest::multipart::Form::new();
            for file in attach {
                form = form.part("files", FilePart::read(file)?.part());
            }
            let request = http_client()?
                .post(target.api(&format!("{path}/files")))
                .multipart(form);
            saved = send(target, request).await?;
        }
        let files = saved["item"]["files"].as_array().map_or(0, Vec::len);
        let note = match files {
            0 => String::new(),
            1 => " with 1 file".to_owned(),
            n => format!(" with {n} files"),
        };
        println!(
            "saved template {}{note}",
            saved["item"]["name"].as_str().unwrap_or(name)
        );
        return Ok(());
    }
    if let Some(name) = delete {
        let path = format!("/api/templates/{}", urlencoding(&name));
        call(target, reqwest::Method::DELETE, &path, None).await?;
        println!("deleted template {name}");
        return Ok(());
    }
    let list = call(target, reqwest::Method::GET, "/api/templates", None).await?;
    if json {
        print_json(&list["items"]);
        return Ok(());
    }
    let items = list["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        println!("no templates yet: templates --save NAME TEXT, or in the page's settings");
    }
    for t in items {
        let content = t["content"].as_str().unwrap_or_default();
        let first = content.lines().next().unwrap_or_default();
        let more = if content.lines().nth(1).is_some() { " …" } else { "" };
        println!("{:<20} {first}{more}", t["name"].as_str().unwrap_or_default());
    }
    Ok(())
}

pub async fn add(
    target: &Target,
    queue: Option<String>,
    to: Option<String>,
    words: &[String],
    attach: Vec<FilePart>,
) -> Result<(), Failure> {
    let created = if attach.is_empty() {
        let content = text_of(words)?;
        call(
            target,
            reqwest::Method::POST,
            "/api/instructions",
            Some(json!({ "content": content, "queue": queue, "target": to })),
        )
        .await?
    } else {
        // With files the text may be left out: the screenshot says it.
        let content = if words.is_empty() {
            String::new()
        } else {
            text_of(words)?
        };
        let mut form = reqwest::multipart::Form::new().text("content", content);
        if let Some(q) = queue {
            form = form.text("queue", q);
        }
        if let Some(t) = to {
            form = form.text("target", t);
        }
        for file in attach {
            form = form.part("files", file.part());
        }
        let request = http_client()?.post(target.api("/api/instructions")).multipart(form);
        send(target, request).await?
    };
    let item = &created["item"];
    let target_note = item["target"].as_str().map(|t| format!(" for {t}")).unwrap_or_default();
    let files = item["attachments"].as_array().map_or(0, Vec::len);
    let files_note = match files {
        0 => String::new(),
        1 => " with 1 attachment".to_owned(),
        n => format!(" with {n} attachments"),
    };
    println!(
        "queued {} in {}{target_note}{files_note}",
        item["id"].as_str().unwrap_or("?"),
        item["queue"].as_str().unwrap_or("?")
    );
    Ok(())
}

pub async fn list(target: &Target, queue: Option<&str>, all: bool, raw: bool) -> Result<(), Failure> {
    let mut path = if all {
        "/api/instructions?status=all&limit=20".to_owned()
    } else {
        "/api/instructions?status=pending".to_owned()
    };
    if let Some(q) = queue {
        path.push_str(&format!("&queue={}", crate::model::queue_name(q)?));
    }
    let listed = call(target, reqwest::Method::GET, &path, None).await?;
    if raw {
        print_json(&listed);
        return Ok(());
    }
    let items = listed["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        println!("the queue is empty");
    }
    for (n, item) in items.iter().enumerate() {
        let content = item["content"].as_str().unwrap_or_default();
        let first_line = content.lines().next().unwrap_or_default();
        let shown: String = first_line.chars().take(100).collect();
        let more = if shown.len() < content.trim_end().len() {
            " …"
        } else {
            ""
        };
        let state = match item["status"].as_str() {
            Some("consumed") => format!(
                "  [delivered to {}]",
                item["consumed_by_agent_id"].as_str().unwrap_or("?")
            ),
            _ => String::new(),
        };
        let place = match (queue, item["queue"].as_str(), item["target"].as_str()) {
            (None, Some(q), Some(t)) => format!("[{q} → {t}] "),
            (None, Some(q), None) if q != crate::model::DEFAULT_QUEUE => format!("[{q}] "),
            (Some(_), _, Some(t)) => format!("[→ {t}] "),
            _ => String::new(),
        };
        println!(
            "{:>3}. {place}{shown}{more}{state}  ({})",
            n + 1,
            item["id"].as_str().unwrap_or("?")
        );
    }
    Ok(())
}

/// `hold` / `release`: one queue, or all of them.
pub async fn hold(target: &Target, queue: Option<String>, held: bool) -> Result<(), Failure> {
    let path = if held { "/api/hold" } else { "/api/release" };
    let answer = call(target, reqwest::Method::POST, path, Some(json!({ "queue": queue }))).await?;
    let verb = if held { "held" } else { "released" };
    let changed: Vec<&str> = answer["changed"]
        .as_array()
        .map(|a| a.iter().filter_map(|q| q["name"].as_str()).collect())
        .unwrap_or_default();
    match (changed.is_empty(), queue) {
        (true, Some(q)) => println!("queue {q} was already {verb}"),
        (true, None) => println!("every queue was already {verb}"),
        (false, _) => println!("{verb}: {}", changed.join(", ")),
    }
    Ok(())
}

/// `reports`: newest first, the Markdown source as the agent wrote it.
pub async fn reports(
    target: &Target,
    agent: Option<String>,
    queue: Option<String>,
    count: u32,
    raw: bool,
) -> Result<(), Failure> {
    let mut path = format!("/api/reports?limit={}", count.min(500));
    if let Some(q) = queue {
        path.push_str(&format!("&queue={}", crate::model::queue_name(&q)?));
    }
    if let Some(a) = agent {
        path.push_str(&format!("&agent_id={}", urlencoding(&a)));
    }
    let listed = call(target, reqwest::Method::GET, &path, None).await?;
    if raw {
        print_json(&listed);
        return Ok(());
    }
    let items = listed["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        println!("no reports yet");
    }
    for r in items {
        println!(
            "── {} in {} · {}{}",
            r["agent_id"].as_str().unwrap_or("?"),
            r["queue"].as_str().unwrap_or("?"),
            r["created_at"].as_str().unwrap_or("?"),
            if r["instruction_id"].is_null() {
                ""
            } else {
                " · on an instruction"
            }
        );
        println!("{}", r["content"].as_str().unwrap_or_default().trim_end());
        let options: Vec<&str> = r["options"]
            .as_array()
            .map(|o| o.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !options.is_empty() {
            println!("options: {}", options.join(" | "));
        }
    }
    Ok(())
}

/// `reply <agent> <text>`: answer that agent's latest report.
pub async fn reply(target: &Target, agent: String, queue: Option<String>, words: &[String]) -> Result<(), Failure> {
    let content = text_of(words)?;
    let queue = crate::model::queue_or_default(queue.as_deref())?;
    let path = format!("/api/reports?queue={queue}&agent_id={}&limit=1", urlencoding(&agent));
    let latest = call(target, reqwest::Method::GET, &path, None).await?;
    let Some(id) = latest["items"][0]["id"].as_str() else {
        return Err(Failure(format!("{agent} has not reported anything in {queue} yet"), 1));
    };
    call(
        target,
        reqwest::Method::POST,
        &format!("/api/reports/{id}/reply"),
        Some(json!({ "content": content })),
    )
    .await?;
    println!("sent to {agent}: it is next in {queue}");
    Ok(())
}

/// Percent-encode a query value (agent ids may hold any printable character).
fn urlencoding(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// `stop <agent>`: end that agent's loop (once).
pub async fn stop(target: &Target, agent: String, queue: Option<String>) -> Result<(), Failure> {
    call(
        target,
        reqwest::Method::POST,
        "/api/agents/stop",
        Some(json!({ "agent_id": agent, "queue": queue })),
    )
    .await?;
    println!("asked {agent} to stop: its waiting call, or its next one, tells it to stop calling");
    Ok(())
}

/// Print `client`'s snippet for the running instance; if none is running,
/// for the default address, with a note on stderr.
/// The running server, or (said on stderr) the default address when none
/// runs: what a client should be configured with either way.
pub fn resolve_or_default(source: &Source) -> Result<Target, Failure> {
    match source.resolve() {
        Ok(t) => Ok(t),
        Err(Error::NotFound(message)) => {
            let default = Target {
                base: "http://127.0.0.1:8000".into(),
                token: None,
            };
            eprintln!(
                "note: {message}.\nnote: using the default address {}",
                default.mcp_url()
            );
            Ok(default)
        }
        Err(e) => Err(e.into()),
    }
}

pub fn config(source: &Source, queue: Option<&str>, client: Client) -> Result<(), Failure> {
    let queue = crate::model::queue_or_default(queue)?;
    let target = resolve_or_default(source)?;
    let program = snippets::bridge_program();
    let mcp_url = target.queue_url(&queue);
    let endpoint = Endpoint {
        mcp_url: &mcp_url,
        queue: (queue != crate::model::DEFAULT_QUEUE).then_some(queue.as_str()),
        token: target.token.as_deref(),
        bridge_program: &program,
    };
    eprintln!("{}: {}", client.name(), client.how());
    println!("{}", snippets::snippet(client, &endpoint).trim_end());
    Ok(())
}

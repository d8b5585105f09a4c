//! `status`, `add`, `list`, `search`, `templates`, `hold`, `release`,
//! `stop`, `reports`, `reply` and `config`: calls of the running instance
//! through [`crate::client::Client`], printed for people.

use std::io::Read;

use super::Failure;
use crate::client::{encode, Client, FilePart, NewInstruction, Source, Target};
use crate::model::{
    AgentState, AgentStatus, Attachment, Instruction, InstructionStatus, Report, StatusSnapshot, MAX_INSTRUCTION_BYTES,
};
use crate::snippets::{self, Endpoint};
use crate::Error;

/// The running instance's API, found through `source`.
pub fn client(source: &Source) -> Result<Client, Failure> {
    Ok(Client::new(source.resolve()?)?)
}

fn print_json(value: &impl serde::Serialize) {
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
fn resident_mib(pid: u32) -> Option<f64> {
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

/// An agent's state in words, loudest first in `status`.
fn state_words(a: &AgentStatus) -> String {
    let since = |t: &Option<String>| {
        t.as_deref()
            .and_then(crate::time::seconds_since)
            .map(|s| human_duration(s as u64))
    };
    match a.state {
        AgentState::NeedsYou => "NEEDS YOU: it asked a question and waits for your answer (reports, then reply)".into(),
        AgentState::Listening => "listening (waiting for an instruction)".into(),
        AgentState::Working => match since(&a.last_fetch_at) {
            Some(ago) => format!("working (took an instruction {ago} ago)"),
            None => "working".into(),
        },
        AgentState::Idle => "idle".into(),
        AgentState::Offline => match since(&a.last_seen_at) {
            Some(ago) => format!("gone (not heard from for {ago})"),
            None => "gone".into(),
        },
    }
}

/// " · Claude Code 2.1.330, waits up to 108 s", when its client is known.
fn client_words(a: &AgentStatus) -> String {
    a.client.as_ref().map_or_else(String::new, |c| {
        let version = c.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default();
        format!(" · {}{version}, waits up to {} s", c.name, c.wait_seconds)
    })
}

pub async fn status(client: &Client, only: Option<&str>, raw: bool) -> Result<(), Failure> {
    let only = only.map(crate::model::queue_name).transpose()?;
    let mut s: StatusSnapshot = client.status().await?;
    if let Some(q) = &only {
        s.queues.retain(|x| &x.name == q);
        s.agents.retain(|a| &a.queue == q);
        if s.queues.is_empty() {
            return Err(Failure(format!("no queue named {q}"), 1));
        }
    }
    if raw {
        print_json(&s);
        return Ok(());
    }
    let url = &s.server.url;
    // What needs the person comes first of all.
    for a in s.agents.iter().filter(|a| a.state == AgentState::NeedsYou) {
        println!(
            "{} in {} NEEDS YOU: it asked a question and waits (`reports --agent {}`, then `reply {} …`)",
            a.agent_id, a.queue, a.agent_id, a.agent_id
        );
    }
    println!(
        "local-mcp {} is running: the page at {url}/ · agents at {}",
        s.server.version,
        format!("{url}{}", crate::model::MCP_PATH)
    );
    for q in &s.queues {
        let listening = q.waiting_agents.len();
        let nobody = if q.pending_count > 0 && !s.agents.iter().any(|a| a.queue == q.name && a.connected) {
            " — no agent is there to take them"
        } else {
            ""
        };
        println!(
            "queue {}: {} pending, {} delivered{}{} (MCP: {url}{}){nobody}",
            q.name,
            q.pending_count,
            q.consumed_count,
            if q.held { ", HELD" } else { "" },
            match listening {
                0 => String::new(),
                n => format!(", {n} listening"),
            },
            crate::model::mcp_path(&q.name),
        );
    }
    if let Some(fault) = &s.server.storage_fault {
        println!("cannot write its database: {fault}");
    }
    if s.queue.in_doubt_count > 0 {
        println!(
            "deliveries in doubt: {} (the answer was cut off; send them again from the page)",
            s.queue.in_doubt_count
        );
    }
    if s.server.pid > 0 {
        let uptime = crate::time::seconds_since(&s.server.started_at)
            .map(|t| format!(", up {}", human_duration(t as u64)))
            .unwrap_or_default();
        let memory = resident_mib(s.server.pid)
            .map(|m| format!(", {m:.1} MiB resident"))
            .unwrap_or_default();
        println!("process: pid {}{uptime}{memory}", s.server.pid);
    }
    if let Some(dir) = &s.server.log_dir {
        println!("log files: {dir}");
    }
    if s.agents.is_empty() {
        println!("agents: none has called yet (`connect` sets one up)");
    }
    for a in &s.agents {
        println!(
            "agent {} in {}: {}{}",
            a.agent_id,
            a.queue,
            state_words(a),
            client_words(a)
        );
    }
    Ok(())
}

/// The text of `add` or `reply`: the words, or stdin for "-".
fn text_of(words: &[String]) -> Result<String, Failure> {
    let from_stdin = words == ["-"];
    let content = if from_stdin {
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
        let why = if from_stdin {
            "stdin was empty"
        } else {
            "the text is empty"
        };
        return Err(Failure(format!("{why}; nothing was queued"), 1));
    }
    if content.len() > MAX_INSTRUCTION_BYTES {
        return Err(Failure(
            format!(
                "the text is {} KiB; an instruction is at most {} KiB. Attach longer text as a file instead: \
                 add --attach FILE (a UTF-8 text file up to 20 MiB)",
                content.len().div_ceil(1024),
                MAX_INSTRUCTION_BYTES / 1024
            ),
            1,
        ));
    }
    Ok(content)
}

/// A file on disk to attach, named as it is there.
pub fn file_part(path: &std::path::Path) -> Result<FilePart, Failure> {
    let bytes = std::fs::read(path).map_err(|e| Failure(format!("cannot read {}: {e}", path.display()), 1))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(FilePart { name, bytes })
}

/// `add --template NAME [TEXT…]`: the template's text, then TEXT after a
/// blank line; and its files, fetched to attach again (kept in memory).
pub async fn from_template(
    client: &Client,
    name: &str,
    words: &[String],
) -> Result<(Vec<String>, Vec<FilePart>), Failure> {
    let template = client.template(name).await?;
    let mut text = template.content;
    if !words.is_empty() {
        text = format!("{}\n\n{}", text.trim_end(), text_of(words)?);
    }
    let mut files = Vec::new();
    for file in &template.files {
        files.push(FilePart {
            name: crate::model::attachment_name(&file.name),
            bytes: client.template_file(name, file.ordinal).await?,
        });
    }
    Ok((vec![text], files))
}

/// `templates [--save NAME TEXT [--attach FILE…] | --delete NAME] [--json]`.
pub async fn templates(
    client: &Client,
    save: Option<Vec<String>>,
    attach: &[std::path::PathBuf],
    delete: Option<String>,
    json: bool,
) -> Result<(), Failure> {
    if let Some(pair) = save {
        let (name, text) = (&pair[0], &pair[1]);
        let content = text_of(std::slice::from_ref(text))?;
        let files = attach.iter().map(|p| file_part(p)).collect::<Result<Vec<_>, _>>()?;
        let saved = client.save_template(name, &content, files).await?;
        let note = match saved.files.len() {
            0 => String::new(),
            1 => " with 1 file".to_owned(),
            n => format!(" with {n} files"),
        };
        println!("saved template {}{note}", saved.name);
        return Ok(());
    }
    if let Some(name) = delete {
        client.delete_template(&name).await?;
        println!("deleted template {name}");
        return Ok(());
    }
    let items = client.templates().await?;
    if json {
        print_json(&serde_json::json!({ "items": items }));
        return Ok(());
    }
    if items.is_empty() {
        println!("no templates yet: templates --save NAME TEXT, or in the page's settings");
    }
    for t in items {
        let first = t.content.lines().next().unwrap_or_default();
        let more = if t.content.lines().nth(1).is_some() { " …" } else { "" };
        println!("{:<20} {first}{more}", t.name);
    }
    Ok(())
}

pub async fn add(
    client: &Client,
    queue: Option<String>,
    to: Option<String>,
    words: &[String],
    files: Vec<FilePart>,
) -> Result<(), Failure> {
    // With files the text may be left out: the screenshot says it.
    let content = if files.is_empty() || !words.is_empty() {
        text_of(words)?
    } else {
        String::new()
    };
    let item = client
        .add(
            NewInstruction {
                content,
                queue,
                target: to,
            },
            files,
        )
        .await?;
    let target_note = item.target.as_deref().map(|t| format!(" for {t}")).unwrap_or_default();
    let files_note = match item.attachments.len() {
        0 => String::new(),
        1 => " with 1 attachment".to_owned(),
        n => format!(" with {n} attachments"),
    };
    println!("queued {} in {}{target_note}{files_note}", item.id, item.queue);
    Ok(())
}

/// An instruction's first line (at most 100 characters), with "…" when there is more.
fn first_line(content: &str) -> String {
    let line = content.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let shown: String = line.chars().take(100).collect();
    let more = if shown.len() < content.trim().len() { " …" } else { "" };
    format!("{shown}{more}")
}

/// "[image: shot.png, text: notes.txt]" for an instruction's files.
fn files_words(files: &[Attachment]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let names: Vec<String> = files.iter().map(|f| format!("{}: {}", f.kind, f.name)).collect();
    format!("[{}]", names.join(", "))
}

/// One instruction as a line: its text (or that it has none), its files,
/// who it is for, and who took it.
fn instruction_line(item: &Instruction) -> String {
    let text = if item.content.trim().is_empty() {
        "(no text)".to_owned()
    } else {
        first_line(&item.content)
    };
    let files = files_words(&item.attachments);
    let files = if files.is_empty() { files } else { format!(" {files}") };
    let target = item.target.as_deref().map(|t| format!(" [→ {t}]")).unwrap_or_default();
    let taken = match (item.status, item.consumed_by_agent_id.as_deref()) {
        (InstructionStatus::Consumed, Some(agent)) => format!("  [delivered to {agent}]"),
        _ => String::new(),
    };
    format!("{text}{files}{target}{taken}  ({})", item.id)
}

/// `list`: pending instructions by queue (numbered in delivery order within
/// each), with their files, and which queues are held.
pub async fn list(client: &Client, queue: Option<&str>, all: bool, raw: bool) -> Result<(), Failure> {
    let only = queue.map(crate::model::queue_name).transpose()?;
    let scope = only.as_deref().map(|q| format!("&queue={q}")).unwrap_or_default();
    let mut items = client.instructions(&format!("status=pending{scope}")).await?;
    if all {
        items.extend(client.instructions(&format!("status=consumed&limit=20{scope}")).await?);
    }
    if raw {
        print_json(&serde_json::json!({ "items": items }));
        return Ok(());
    }
    let status = client.status().await?;
    let mut queues: Vec<&crate::model::QueueInfo> = status
        .queues
        .iter()
        .filter(|q| only.as_deref().is_none_or(|o| q.name == o))
        .collect();
    // Queues with something to show, and every held one; `default` stays first.
    queues.retain(|q| q.held || items.iter().any(|i| i.queue == q.name));
    if items.is_empty() && queues.is_empty() {
        println!(
            "nothing is pending{}",
            only.map(|q| format!(" in {q}")).unwrap_or_default()
        );
        return Ok(());
    }
    for q in queues {
        let pending: Vec<&Instruction> = items
            .iter()
            .filter(|i| i.queue == q.name && i.status == InstructionStatus::Pending)
            .collect();
        let delivered: Vec<&Instruction> = items
            .iter()
            .filter(|i| i.queue == q.name && i.status == InstructionStatus::Consumed)
            .collect();
        println!(
            "{} — {} pending{}",
            q.name,
            pending.len(),
            if q.held {
                " · HELD: nothing is delivered until `release`"
            } else {
                ""
            }
        );
        for (n, item) in pending.iter().enumerate() {
            println!("{:>3}. {}", n + 1, instruction_line(item));
        }
        if !delivered.is_empty() {
            println!("     delivered recently:");
            for item in delivered {
                println!("     - {}", instruction_line(item));
            }
        }
    }
    Ok(())
}

/// `search WORDS`: delivered instructions whose text or report has every
/// word (as the page's ledger search does), newest first.
pub async fn search(client: &Client, words: &[String], queue: Option<&str>, raw: bool) -> Result<(), Failure> {
    let typed = words.join(" ");
    let scope = queue
        .map(crate::model::queue_name)
        .transpose()?
        .map(|q| format!("&queue={q}"))
        .unwrap_or_default();
    let found = client
        .instructions(&format!("status=consumed&limit=50&q={}{scope}", encode(&typed)))
        .await?;
    if raw {
        print_json(&serde_json::json!({ "items": found }));
        return Ok(());
    }
    if found.is_empty() {
        println!("nothing delivered matches {typed:?}");
    }
    for item in &found {
        let when = item.consumed_at.as_deref().unwrap_or("?");
        println!("{when} {} · {}", item.queue, instruction_line(item));
        if let Some(report) = &item.report {
            println!("      report: {}", first_line(&report.content));
        }
    }
    Ok(())
}

/// `hold` / `release`: one queue, or all of them.
pub async fn hold(client: &Client, queue: Option<String>, held: bool) -> Result<(), Failure> {
    let changed = client.hold(queue.as_deref(), held).await?;
    let verb = if held { "held" } else { "released" };
    let names: Vec<&str> = changed.iter().map(|q| q.name.as_str()).collect();
    match (names.is_empty(), queue) {
        (true, Some(q)) => println!("queue {q} was already {verb}"),
        (true, None) => println!("every queue was already {verb}"),
        (false, _) => println!("{verb}: {}", names.join(", ")),
    }
    Ok(())
}

/// `reports`: newest first, the Markdown as the agent wrote it, a question's
/// options numbered (`reply AGENT 2` picks the second).
pub async fn reports(
    client: &Client,
    agent: Option<String>,
    queue: Option<String>,
    count: u32,
    raw: bool,
) -> Result<(), Failure> {
    let mut query = format!("limit={}", count.min(500));
    if let Some(q) = queue {
        query.push_str(&format!("&queue={}", crate::model::queue_name(&q)?));
    }
    if let Some(a) = agent {
        query.push_str(&format!("&agent_id={}", encode(&a)));
    }
    let items = client.reports(&query).await?;
    if raw {
        print_json(&serde_json::json!({ "items": items }));
        return Ok(());
    }
    if items.is_empty() {
        println!("no reports yet");
    }
    for r in items {
        println!(
            "── {} in {} · {}{}",
            r.agent_id,
            r.queue,
            r.created_at,
            if r.instruction_id.is_some() {
                " · on an instruction"
            } else {
                ""
            }
        );
        println!("{}", r.content.trim_end());
        if !r.options.is_empty() {
            println!("answers (reply {} NUMBER picks one):", r.agent_id);
            for (n, option) in r.options.iter().enumerate() {
                println!("  {}. {option}", n + 1);
            }
        }
    }
    Ok(())
}

/// What a reply to `report` says: option N when the words are just a number
/// of one of its options, else the words.
fn answer_of(report: &Report, words: &[String]) -> Result<String, Failure> {
    if let [only] = words {
        if let Ok(n) = only.trim().parse::<usize>() {
            if !report.options.is_empty() {
                return report.options.get(n.wrapping_sub(1)).cloned().ok_or_else(|| {
                    Failure(
                        format!(
                            "the question has {} answers; pick 1 to {} (or write the answer in words)",
                            report.options.len(),
                            report.options.len()
                        ),
                        1,
                    )
                });
            }
        }
    }
    text_of(words)
}

/// `reply <agent> <text|N>`: answer that agent's latest report.
pub async fn reply(client: &Client, agent: String, queue: Option<String>, words: &[String]) -> Result<(), Failure> {
    let queue = crate::model::queue_or_default(queue.as_deref())?;
    let latest = client
        .reports(&format!("queue={queue}&agent_id={}&limit=1", encode(&agent)))
        .await?;
    let Some(report) = latest.into_iter().next() else {
        return Err(Failure(format!("{agent} has not reported anything in {queue} yet"), 1));
    };
    let answer = answer_of(&report, words)?;
    client.reply(&report.id, &answer).await?;
    println!("sent to {agent}: {answer:?} is next in {queue}");
    Ok(())
}

/// `stop <agent>`: end that agent's loop (once).
pub async fn stop(client: &Client, agent: String, queue: Option<String>) -> Result<(), Failure> {
    client.stop_agent(&agent, queue.as_deref()).await?;
    println!("asked {agent} to stop: its waiting call, or its next one, tells it to stop calling");
    Ok(())
}

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

/// Print `client`'s snippet for the running instance; if none is running,
/// for the default address, with a note on stderr.
pub fn config(source: &Source, queue: Option<&str>, client: snippets::Client) -> Result<(), Failure> {
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

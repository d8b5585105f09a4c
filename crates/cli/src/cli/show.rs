//! `status`, `list` and `search`: what the running instance holds —
//! its queues and agents, the pending instructions, the delivered ones that
//! match — printed for people (or as JSON).

use super::commands::print_json;
use super::Failure;
use crate::client::{encode, Client};
use crate::model::{AgentState, AgentStatus, Attachment, Instruction, InstructionStatus, StatusSnapshot};

/// When a moment was, as a person reads it: `12 min ago (2026-11-28
/// 14:03 UTC)`.
pub(super) fn when(moment: &crate::model::Timestamp) -> String {
    let then = moment.time();
    let at = format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        then.year(),
        u8::from(then.month()),
        then.day(),
        then.hour(),
        then.minute()
    );
    match moment.seconds_ago() {
        s if s < 60.0 => format!("just now ({at})"),
        s => format!("{} ago ({at})", human_duration(s as u64)),
    }
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
    let since = |t: &Option<crate::model::Timestamp>| t.as_ref().map(|t| human_duration(t.seconds_ago() as u64));
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

/// `status`; `others`: the servers that run on other databases, named last.
pub async fn status(
    client: &Client,
    only: Option<&str>,
    raw: bool,
    others: &[crate::connection_info::ConnectionInfo],
) -> Result<(), Failure> {
    let only = only.map(crate::model::QueueName::new).transpose()?;
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
        "local-mcp {} is running: the page at {url}/ · agents at {url}{}",
        s.server.version,
        crate::model::MCP_PATH
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
    if s.queue.held_count > 0 {
        println!(
            "held since an import or a restore: {} (no agent gets them until `release --imported`)",
            s.queue.held_count
        );
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
    for other in others {
        let db = other
            .db_path
            .as_deref()
            .map_or_else(|| "?".into(), |p| p.display().to_string());
        println!(
            "also running: local-mcp on {db} at {} (pid {}): `--db-path {db}` talks to it",
            other.url, other.pid
        );
    }
    Ok(())
}

/// An instruction's first line (at most 100 characters), with "…" when there is more.
pub(super) fn first_line(content: &str) -> String {
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
    // Delivered to the agent it was for: said once.
    let target = item
        .target
        .as_deref()
        .filter(|t| item.status == InstructionStatus::Pending || item.consumed_by_agent_id.as_deref() != Some(*t))
        .map(|t| format!(" [→ {t}]"))
        .unwrap_or_default();
    let taken = match (item.status, item.consumed_by_agent_id.as_deref()) {
        (InstructionStatus::Consumed, Some(agent)) => format!("  [delivered to {agent}]"),
        _ => String::new(),
    };
    format!("{text}{files}{target}{taken}  ({})", item.id)
}

/// `list`: pending instructions by queue (numbered in delivery order within
/// each), with their files, and which queues are held.
pub async fn list(client: &Client, queue: Option<&str>, all: bool, raw: bool) -> Result<(), Failure> {
    let only = queue.map(crate::model::QueueName::new).transpose()?;
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
    if let Some(q) = only.as_deref().filter(|q| !status.queues.iter().any(|x| x.name == *q)) {
        return Err(Failure(format!("no queue named {q}"), 1));
    }
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
        .map(crate::model::QueueName::new)
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
        let at = item.consumed_at.as_ref().map_or_else(|| "?".to_owned(), when);
        println!("{at} · {} · {}", item.queue, instruction_line(item));
        if let Some(report) = &item.report {
            println!("      report: {}", first_line(&report.content));
        }
    }
    Ok(())
}

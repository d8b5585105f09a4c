//! `add`, `hold`, `release`, `stop <agent>` and `config`, and what every
//! command shares: the client of the running instance
//! ([`crate::client::Client`]), the text of `add` or `reply`, a file to
//! attach, JSON output. The read-only commands are `show.rs`, reports and
//! replies `reports.rs`, templates `templates.rs`.

use crate::model::McpClient;
use std::io::Read;

use super::Failure;
use crate::client::{Client, FilePart, NewInstruction, Source, Target};
use crate::model::MAX_INSTRUCTION_BYTES;
use crate::snippets::{self, Endpoint};
use crate::Error;

/// The running instance's API, found through `source`.
pub fn client(source: &Source) -> Result<Client, Failure> {
    Ok(Client::new(source.resolve()?)?)
}

pub(super) fn print_json(value: &impl serde::Serialize) {
    println!("{}", serde_json::to_string_pretty(value).unwrap_or_default());
}

/// The text of `add` or `reply`: the words, or stdin for "-".
pub(super) fn text_of(words: &[String]) -> Result<String, Failure> {
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

/// `release --imported`: the pending instructions an import or a restore
/// brought in go to agents from now on.
pub async fn release_held(client: &Client, queue: Option<String>) -> Result<(), Failure> {
    let released = client.release_held(queue.as_deref()).await?;
    match released.len() {
        0 => println!("nothing was held from an import or a restore"),
        1 => println!("released 1 instruction: it goes to agents now"),
        n => println!("released {n} instructions: they go to agents now"),
    }
    Ok(())
}

/// `forget AGENT` / `forget --gone`: take agents off the lists.
pub async fn forget(client: &Client, agent: Option<String>, queue: Option<String>) -> Result<(), Failure> {
    let forgotten = client.forget_agents(agent.as_deref(), queue.as_deref()).await?;
    match forgotten.as_slice() {
        [] => println!("no agent to forget"),
        list => {
            let names: Vec<String> = list.iter().map(|a| format!("{} ({})", a.agent_id, a.queue)).collect();
            println!("forgot {}", names.join(", "));
        }
    }
    Ok(())
}

/// `token`: the token the server requires, or nothing; `--header-json`: the
/// header a client's helper command gives.
pub fn token(token: Option<&str>, header_json: bool) {
    match (token, header_json) {
        (Some(t), false) => println!("{t}"),
        (None, false) => eprintln!("this server requires no token"),
        (Some(t), true) => println!("{}", serde_json::json!({ "Authorization": format!("Bearer {t}") })),
        (None, true) => println!("{{}}"),
    }
}

/// `stop <agent>`: end that agent's loop (once).
pub async fn stop(client: &Client, agent: String, queue: Option<String>) -> Result<(), Failure> {
    client.stop_agent(&agent, queue.as_deref()).await?;
    println!("asked {agent} to stop: its waiting call, or its next one, tells it to stop calling");
    Ok(())
}

/// `config` without a client: which there are, and what each gets.
pub fn list_clients() {
    println!("Which client? `config <client>` prints what it needs:");
    for client in McpClient::ALL {
        println!("  {:<20} {}: {}", client.id(), client.name(), client.how());
    }
}

/// What to do once a client is configured: the sentence that starts the
/// agent's loop, and how to give it a first instruction.
pub fn next_step() -> String {
    format!(
        "Then, in the agent's chat, say:\n\n  {}\n\nand queue its first instruction on the page, or with `local-mcp-server add \"…\"`.",
        crate::snippets::START_SENTENCE
    )
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
                db: None,
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
pub fn config(source: &Source, queue: Option<&str>, client: McpClient) -> Result<(), Failure> {
    let queue = crate::model::queue_or_default(queue)?;
    let target = resolve_or_default(source)?;
    let program = snippets::bridge_program();
    let mcp_url = target.queue_url(&queue);
    let database = target.db.as_deref().and_then(crate::config::named_database);
    let endpoint = Endpoint {
        mcp_url: &mcp_url,
        queue: (queue != crate::model::DEFAULT_QUEUE).then_some(queue.as_str()),
        token: target.token.as_deref(),
        bridge_program: &program,
        database: database.as_deref(),
    };
    eprintln!("{}: {}", client.name(), client.how());
    println!("{}", snippets::snippet(client, &endpoint).trim_end());
    // On stderr: stdout is the snippet alone, for a pipe or a file.
    eprintln!("{}", next_step());
    Ok(())
}

//! The command line as a newcomer meets it (issue 25): a question's answers
//! are numbered and `reply AGENT 2` picks one, in the order given, and the
//! agent is told what it answers; flags go on either side of the command;
//! `list` groups by queue with files and held queues; `search`; errors that
//! name the person's own file and say what to do; a first run that prints
//! no error; `connect` that does not invent a client; files named for what
//! they are.

use crate::common;

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

/// `local-mcp-server ARGS` with `stdin`, against nothing in particular (the
/// arguments say where); its output.
fn run(args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_local-mcp-server"));
    c.args(args)
        .env_remove("LOCAL_MCP_URL")
        .env_remove("LOCAL_MCP_TOKEN")
        .env_remove("API_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_questions_answers_are_numbered_and_replies_arrive_in_order_saying_what_they_answer() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    s.add("something queued earlier").await;
    let agent = s.mcp().await;
    // The agent takes the earlier one, then asks with its next call.
    let first = common::get_user_request(&agent, Some("asker")).await;
    assert_eq!(first["instruction"]["content"], "something queued earlier");
    common::get_user_request_with(
        &agent,
        json!({ "agent_id": "asker", "report": "Which database should I use?\n\nBoth work.", "options": ["SQLite", "Postgres"] }),
    )
    .await;
    s.add("unrelated, queued before the answers").await;

    let (ok, out, err) = common::cli(&s, &["reports"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("  1. SQLite") && out.contains("  2. Postgres"), "{out}");
    assert!(out.contains("reply asker NUMBER"), "{out}");

    let (ok, out, err) = common::cli(&s, &["reply", "asker", "2"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("\"Postgres\""), "option 2 was sent: {out}");
    let (ok, _, err) = common::cli(&s, &["reply", "asker", "and", "turn", "on", "WAL"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = common::cli(&s, &["reply", "asker", "3"]).await;
    assert!(!ok && err.contains("pick 1 to 2"), "{err}");

    // Both answers first, in the order given, before what was queued earlier.
    let pending = s.get_json("/api/instructions?status=pending").await;
    let order: Vec<&str> = pending["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        ["Postgres", "and turn on WAL", "unrelated, queued before the answers"]
    );

    // The agent is told which question each answers.
    let answer = common::get_user_request(&agent, Some("asker")).await;
    assert_eq!(answer["instruction"]["content"], "Postgres");
    assert_eq!(
        answer["instruction"]["in_reply_to"]["question"],
        "Which database should I use?"
    );
    let second = common::get_user_request(&agent, Some("asker")).await;
    assert_eq!(second["instruction"]["content"], "and turn on WAL");
    assert!(second["instruction"]["in_reply_to"]["report_id"].is_string());
    let plain = common::get_user_request(&agent, Some("asker")).await;
    assert!(plain["instruction"].get("in_reply_to").is_none(), "{plain}");
    agent.cancel().await.unwrap();
    s.stop().await;
}

/// `reply AGENT N` as `status` and `reports` hint it — no queue named —
/// answers an agent of another queue (a newcomer's walk: it looked in
/// `default` only); a question the agent moved past offers nothing to pick.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_finds_the_agent_in_its_queue_and_only_open_questions_offer_answers() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let agent = s.mcp_at("/mcp/q/repo-b").await;
    common::get_user_request_with(
        &agent,
        json!({ "agent_id": "asker2", "report": "Branch?", "options": ["main", "dev"] }),
    )
    .await;
    let (ok, out, err) = common::cli(&s, &["reports", "--agent", "asker2"]).await;
    assert!(ok && out.contains("reply asker2 NUMBER"), "{out}{err}");
    let (ok, out, err) = common::cli(&s, &["reply", "asker2", "2"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("\"dev\" is next in repo-b"), "{out}");
    let answer = common::get_user_request(&agent, Some("asker2")).await;
    assert_eq!(answer["instruction"]["content"], "dev");
    // Asked again, then handed something else on that very call: moved past.
    common::get_user_request_with(
        &agent,
        json!({ "agent_id": "asker2", "report": "Squash?", "options": ["yes", "no"] }),
    )
    .await;
    s.add_to("an unrelated instruction", "repo-b", None).await;
    common::get_user_request(&agent, Some("asker2")).await;
    let (ok, out, err) = common::cli(&s, &["reports", "--agent", "asker2"]).await;
    assert!(ok, "{err}");
    assert!(!out.contains("reply asker2 NUMBER"), "{out}");
    assert!(out.contains("no longer open"), "{out}");
    agent.cancel().await.ok();
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_go_on_either_side_of_the_command() {
    let s = common::start(|_| {}).await;
    for args in [
        vec!["status", "--url", s.url.as_str()],
        vec!["--url", s.url.as_str(), "status"],
    ] {
        let out = run(&args, b"", &[]);
        assert!(out.status.success(), "{args:?}: {}", said(&out));
        let text = said(&out);
        assert!(text.contains(&format!("the page at {}/", s.url)), "{text}");
    }
    // `start --help` lists the serving flags, which go after the command too.
    let help = said(&run(&["start", "--help"], b"", &[]));
    for flag in ["--port", "--db-path", "--host", "--api-token", "--default-wait-seconds"] {
        assert!(help.contains(flag), "{flag} in start --help: {help}");
    }
    s.stop().await;

    // `--no-port-fallback` names the flag to change, once.
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.sqlite3");
    let out = run(
        &["--port", &port, "--no-port-fallback"],
        b"",
        &[
            ("DB_PATH", db.to_str().unwrap()),
            ("LOCAL_MCP_LOG_DIR", "off"),
            ("LOCAL_MCP_CONNECTION_FILE", dir.path().join("c.json").to_str().unwrap()),
        ],
    );
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success());
    assert_eq!(text.matches("already in use").count(), 1, "said once: {text}");
    assert!(text.contains("--port"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_groups_by_queue_with_files_and_held_queues_and_search_finds_history() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    s.add("first in default").await;
    s.add("second in default").await;
    s.add_to("first in repo-a", "repo-a", None).await;
    let png = engine::png_from_rgba(2, 2, vec![255; 16]).unwrap();
    let form = reqwest::multipart::Form::new()
        .text("content", "")
        .text("queue", "repo-a")
        .part("files", reqwest::multipart::Part::bytes(png).file_name("screen.png"));
    let (status, _) = s.upload(form).await;
    assert_eq!(status, 201);
    let (ok, _, err) = common::cli(&s, &["hold", "repo-a"]).await;
    assert!(ok, "{err}");

    let (ok, out, err) = common::cli(&s, &["list"]).await;
    assert!(ok, "{err}");
    let default_at = out.find("default — 2 pending").unwrap_or_else(|| panic!("{out}"));
    let repo_at = out.find("repo-a — 2 pending · HELD").unwrap_or_else(|| panic!("{out}"));
    assert!(default_at < repo_at, "{out}");
    // Numbered within each queue.
    let repo = &out[repo_at..];
    assert!(repo.contains("  1. first in repo-a"), "{out}");
    assert!(
        repo.contains("  2. (no text) [image: screen.png]"),
        "an image-only instruction: {out}"
    );

    // History search, as the page's ledger does it.
    let agent = s.mcp().await;
    common::get_user_request(&agent, Some("a")).await;
    common::get_user_request_with(
        &agent,
        json!({ "agent_id": "a", "report": "Refactored the parser module" }),
    )
    .await;
    agent.cancel().await.unwrap();
    let (ok, out, err) = common::cli(&s, &["search", "first"]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains("first in default") && out.contains("report: Refactored"),
        "{out}"
    );
    let (ok, out, _) = common::cli(&s, &["search", "parser"]).await;
    assert!(ok && out.contains("first in default"), "found by its report: {out}");
    let (ok, out, _) = common::cli(&s, &["search", "nothing-like-it"]).await;
    assert!(ok && out.contains("nothing delivered matches"), "{out}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_the_persons_file_and_say_what_to_do() {
    let s = common::start(|_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let url = s.url.clone();

    let not_export = dir.path().join("notes.json");
    std::fs::write(&not_export, r#"{"hello": "world"}"#).unwrap();
    let (ok, _, err) = common::cli(&s, &["import", not_export.to_str().unwrap()]).await;
    assert!(!ok);
    assert!(
        err.contains(not_export.to_str().unwrap()),
        "names the file given: {err}"
    );
    assert!(
        !err.contains("-work") && !err.contains("/tmp/local-mcp-import"),
        "no server path: {err}"
    );

    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let (ok, _, err) = common::cli(&s, &["import", empty.to_str().unwrap()]).await;
    assert!(!ok && err.contains("is empty"), "{err}");

    let backup = dir.path().join("backup.tar");
    let (ok, _, err) = common::cli(&s, &["backup", backup.to_str().unwrap()]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = common::cli(&s, &["import", backup.to_str().unwrap()]).await;
    assert!(
        !ok && err.contains("is a backup, not an export") && err.contains("restore"),
        "{err}"
    );

    // Text over the limit on stdin: the limit, and --attach.
    let long = vec![b'x'; 70 * 1024];
    let out = run(&["add", "-", "--url", &url], &long, &[]);
    let text = said(&out);
    assert!(!out.status.success());
    assert!(text.contains("64 KiB") && text.contains("--attach"), "{text}");
    let out = run(&["add", "-", "--url", &url], b"   \n", &[]);
    assert!(said(&out).contains("stdin was empty"), "{}", said(&out));

    // A damaged image: what is wrong, in words.
    let mut broken = engine::png_from_rgba(64, 64, vec![7; 64 * 64 * 4]).unwrap();
    broken.truncate(60);
    let shot = dir.path().join("shot.png");
    std::fs::write(&shot, &broken).unwrap();
    let out = run(
        &["add", "look", "--attach", shot.to_str().unwrap(), "--url", &url],
        b"",
        &[],
    );
    let text = said(&out);
    assert!(!out.status.success());
    assert!(text.contains("shot.png: not a readable PNG image"), "{text}");
    assert!(
        !text.contains("Format(") && !text.contains("IoError"),
        "no Rust debug text: {text}"
    );
    s.stop().await;
}

#[test]
fn a_first_run_prints_no_error() {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_local-mcp-server"))
        .args(["--port", "0"])
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_DATA_HOME", home.path().join(".local/share"))
        .env("XDG_STATE_HOME", home.path().join(".local/state"))
        .env_remove("DB_PATH")
        .env_remove("LOCAL_MCP_LOG_DIR")
        .env_remove("LOCAL_MCP_CONNECTION_FILE")
        .env_remove("LOG_LEVEL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let ready = line.starts_with("local-mcp-server ready");
        seen.push(line);
        if ready {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let text = seen.join("\n");
    assert!(text.contains("local-mcp-server ready"), "{text}");
    assert!(
        !text.contains("Error") && !text.contains("ERROR") && !text.contains("WARN"),
        "{text}"
    );
    assert!(
        home.path().join(".local/state/local-mcp/logs").is_dir(),
        "logs in the state folder"
    );
}

#[test]
fn connect_does_not_invent_a_client_and_disconnect_takes_away_what_it_made() {
    let home = tempfile::tempdir().unwrap();
    let env = |c: &mut Command| {
        // The same fresh home on Windows, where clients find theirs by these two.
        c.env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join(".config"))
            .env("USERPROFILE", home.path())
            .env("APPDATA", home.path().join(".config"))
            .env("PATH", "/usr/bin:/bin")
            .env("LOCAL_MCP_CONNECTION_FILE", home.path().join("none.json"));
    };
    let cli = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_local-mcp-server"));
        c.args(args);
        env(&mut c);
        c.output().unwrap()
    };
    let cursor = home.path().join(".cursor");
    let refused = cli(&["connect", "cursor"]);
    assert!(!refused.status.success());
    assert!(said(&refused).contains("does not seem to be installed") && said(&refused).contains("--force"));
    assert!(!cursor.exists(), "nothing was written");

    let forced = cli(&["connect", "cursor", "--force"]);
    assert!(forced.status.success(), "{}", said(&forced));
    assert!(cursor.join("mcp.json").is_file());
    // Our own folder is no sign that Cursor is installed.
    let table = cli(&["connect", "--json"]);
    let list: Value = serde_json::from_slice(&table.stdout).unwrap();
    let row = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "cursor")
        .unwrap()
        .clone();
    assert_eq!(row["installed"], false, "{row}");
    assert_eq!(row["state"], "connected", "{row}");

    let gone = cli(&["disconnect", "cursor"]);
    assert!(gone.status.success(), "{}", said(&gone));
    assert!(!cursor.exists(), "the file and the folder connect made are gone");

    // A file that was there before is only edited, never removed.
    std::fs::create_dir_all(&cursor).unwrap();
    std::fs::write(cursor.join("mcp.json"), "{\"mcpServers\": {}}\n").unwrap();
    assert!(cli(&["connect", "cursor"]).status.success());
    assert!(cli(&["disconnect", "cursor"]).status.success());
    assert!(cursor.join("mcp.json").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_file_named_like_an_image_is_delivered_under_a_name_that_fits() {
    let s = common::start(|c| c.settings.default_wait_seconds = 0).await;
    let form = reqwest::multipart::Form::new().text("content", "read this").part(
        "files",
        reqwest::multipart::Part::bytes(b"plain notes, not an image\n".to_vec()).file_name("notes.png"),
    );
    let (status, created) = s.upload(form).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["item"]["attachments"][0]["name"], "notes.png.txt");
    let agent = s.mcp().await;
    let r = common::get_user_request(&agent, Some("reader")).await;
    let file = &r["instruction"]["attachments"][0];
    assert_eq!(file["name"], "notes.png.txt");
    assert!(file["path"].as_str().unwrap().ends_with(".txt"), "{file}");
    agent.cancel().await.unwrap();
    s.stop().await;
}

//! A serving instance writes daily log files (`<program>.<date>.log`, the
//! newest 7 kept) in its log folder, says where in its status, and writes
//! none with `LOCAL_MCP_LOG_DIR=off`.

use crate::common;

use serde_json::Value;

async fn status(url: &str) -> Value {
    common::get_json_with(&reqwest::Client::new(), &format!("{url}/api/status")).await
}

#[tokio::test]
async fn the_server_logs_to_daily_files_and_keeps_a_week() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    // Nine older days, as a long-running install would have.
    for day in 1..=9 {
        let old = logs.join(format!("local-mcp-server.2026-10-0{day}.log"));
        std::fs::write(&old, format!("day {day}\n")).unwrap();
        // The appender ages files by their creation time: make it follow the days.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let db = dir.path().join("queue.sqlite3");
    let logs_s = logs.to_str().unwrap();
    let mut server = common::spawn_binary(&db, &[("LOCAL_MCP_LOG_DIR", logs_s), ("LOG_LEVEL", "info")]).await;

    assert_eq!(status(&server.url).await["server"]["log_dir"], logs_s);
    let today = format!("local-mcp-server.{}.log", &engine::time::now()[..10]);
    let text = std::fs::read_to_string(logs.join(&today)).expect("today's file");
    assert!(text.contains("starting local-mcp-server"), "{text}");
    assert!(!text.contains("\u{1b}["), "no terminal colours in the file");
    let kept: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(kept.len() <= 7, "a week is kept: {kept:?}");
    assert!(kept.contains(&today));
    assert!(
        !kept.iter().any(|n| n.ends_with("10-01.log")),
        "the oldest went first: {kept:?}"
    );
    server.child.kill().await.unwrap();
}

/// Every `.log` file under `dir`, at any depth.
fn log_files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(log_files_under(&path));
        } else if path.extension().is_some_and(|e| e == "log") {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn with_log_dir_off_no_files_are_written() {
    // The default log folder is under the account's state folder: here a
    // home of the test's own, so a log written anywhere by default is seen.
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let at = |sub: &str| home.join(sub).to_string_lossy().into_owned();
    let (state, data, config) = (at(".local/state"), at(".local/share"), at(".config"));
    let home_s = home.to_string_lossy().into_owned();
    let db = dir.path().join("queue.sqlite3");
    let home_env = [
        ("HOME", home_s.as_str()),
        ("XDG_STATE_HOME", state.as_str()),
        ("XDG_DATA_HOME", data.as_str()),
        ("XDG_CONFIG_HOME", config.as_str()),
        ("LOG_LEVEL", "info"),
    ];

    let mut off = home_env.to_vec();
    off.push(("LOCAL_MCP_LOG_DIR", "off"));
    let mut server = common::spawn_binary(&db, &off).await;
    assert_eq!(status(&server.url).await["server"]["log_dir"], Value::Null);
    // Something worth a log line: an instruction queued.
    let added = common::post_with(
        &reqwest::Client::new(),
        &format!("{}/api/instructions", server.url),
        serde_json::json!({"content": "logged?"}),
    )
    .await;
    assert!(added.0 < 300, "{added:?}");
    server.child.kill().await.unwrap();
    let written = log_files_under(dir.path());
    assert!(
        written.is_empty(),
        "log files written with LOCAL_MCP_LOG_DIR=off: {written:?}"
    );

    // The scan sees a log where one is written: the same home, logs on.
    let mut on = home_env.to_vec();
    on.push(("LOCAL_MCP_LOG_DIR", &state));
    let mut server = common::spawn_binary(&db, &on).await;
    server.child.kill().await.unwrap();
    let written = log_files_under(dir.path());
    assert_eq!(
        written.len(),
        1,
        "the day's log file, found by the same scan: {written:?}"
    );
}

/// `logs -n N` prints the end of today's file; `logs -f` keeps printing what is written.
#[tokio::test]
async fn the_logs_command_prints_and_follows_the_newest_file() {
    use tokio::io::AsyncBufReadExt;
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let db = dir.path().join("queue.sqlite3");
    let logs_s = logs.to_str().unwrap();
    let mut server = common::spawn_binary(&db, &[("LOCAL_MCP_LOG_DIR", logs_s), ("LOG_LEVEL", "info")]).await;
    let bin = env!("CARGO_BIN_EXE_local-mcp-server");

    // The folder comes from the running server's status (this command's own default differs).
    let out = std::process::Command::new(bin)
        .args(["logs", "-n", "2", "--url", &server.url])
        .env("LOCAL_MCP_LOG_DIR", "off")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    let today =
        std::fs::read_to_string(logs.join(format!("local-mcp-server.{}.log", &engine::time::now()[..10]))).unwrap();
    assert!(today.ends_with(&text), "the file's last two lines");

    let mut follower = tokio::process::Command::new(bin)
        .args(["logs", "-n", "0", "-f", "--url", &server.url])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(follower.stdout.take().unwrap()).lines();
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    reqwest::Client::new()
        .post(format!("{}/api/instructions", server.url))
        .json(&serde_json::json!({ "content": "logged as it happens" }))
        .send()
        .await
        .unwrap();
    let line = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            let line = lines.next_line().await.unwrap().expect("a line");
            if line.contains("instruction created") {
                return line;
            }
        }
    })
    .await
    .expect("the new line followed");
    assert!(line.contains("queue=default"), "{line}");
    follower.kill().await.unwrap();
    server.child.kill().await.unwrap();
}

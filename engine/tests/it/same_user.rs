//! Same user only (`docs/ARCHITECTURE.md`, "Security"): another account of
//! this machine, connecting over loopback, is refused unless it sends the
//! token; the CLI and the stdio bridge refuse a server another account runs;
//! a port held by another account is named.
//!
//! The other account is real: `nobody`, reached with `setpriv` (util-linux),
//! which needs root — as CI runs. Elsewhere these tests say so and stop.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

use crate::need_root;
use crate::other_account::{as_nobody, nobody_status};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"nobody","version":"0"}}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_account_is_refused_on_every_route_over_ipv4_and_ipv6_unless_it_sends_the_token() {
    need_root!();
    for host in ["127.0.0.1", "::1"] {
        let s = common::start(|c| c.host = host.parse().unwrap()).await;
        let add = r#"{"content":"rm -rf ~ (from another account)"}"#;
        for (method, path, body) in [
            ("GET", "/", None),
            ("POST", "/api/instructions", Some(add)),
            ("GET", "/api/events", None),
            ("POST", "/mcp", Some(INITIALIZE)),
        ] {
            let status = nobody_status(method, &s.api(path), body, None);
            assert_eq!(status, "403", "{method} {path} from another account over {host}");
        }
        // The owner is let in everywhere, and nothing of the stranger's was queued.
        assert_eq!(s.get_status("/", None, None).await, 200);
        let pending = s.get_json("/api/instructions?status=pending").await;
        assert_eq!(pending["items"], json!([]), "nothing queued by the other account");
        s.add("mine").await;
        s.stop().await;
    }

    // With a token, another account that sends it is let in (a deliberate second account).
    let s = common::start(|c| c.api_token = Some("s3cret".into())).await;
    let add = r#"{"content":"from the second account, with the token"}"#;
    assert_eq!(
        nobody_status("POST", &s.api("/api/instructions"), Some(add), None),
        "403"
    );
    assert_eq!(
        nobody_status("POST", &s.api("/api/instructions"), Some(add), Some("wrong")),
        "403"
    );
    assert_eq!(
        nobody_status("POST", &s.api("/api/instructions"), Some(add), Some("s3cret")),
        "201"
    );
    s.stop().await;

    // The setting turns the check off, for the rare set-up that needs it.
    let s = common::start(|_| {}).await;
    let fields = s.get_json("/api/config/fields").await;
    assert!(
        fields["fields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"] == "same_user_only"),
        "the page's settings show it"
    );
    s.set_config(json!({ "same_user_only": false })).await;
    let add = r#"{"content":"let in: the check is off"}"#;
    assert_eq!(
        nobody_status("POST", &s.api("/api/instructions"), Some(add), None),
        "201"
    );
    s.set_config(json!({ "same_user_only": true })).await;
    assert_eq!(
        nobody_status("POST", &s.api("/api/instructions"), Some(add), None),
        "403"
    );
    s.stop().await;
}

/// A folder and a copy of the server binary that `nobody` can use.
fn nobody_workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = dir.path().join("local-mcp-server");
    std::fs::copy(env!("CARGO_BIN_EXE_local-mcp-server"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, bin)
}

/// Start `local-mcp-server` as `nobody`; its URL once it is ready.
fn nobody_server(dir: &Path, bin: &Path) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = as_nobody(bin.to_str().unwrap(), &[])
        .env("DB_PATH", dir.join("theirs.sqlite3"))
        .env("HTTP_PORT", "0")
        .env("LOG_LEVEL", "warn")
        .env("LOCAL_MCP_CONNECTION_FILE", dir.join("theirs.json"))
        .env("LOCAL_MCP_TOKEN_FILE", dir.join("theirs.token"))
        .env_remove("LOCAL_MCP_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    for line in stderr.lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("local-mcp-server ready: ") {
            return (child, rest.split_whitespace().next().unwrap().to_owned());
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the other account's server did not start");
}

fn run_cli(args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_local-mcp-server"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_cli_and_the_bridge_refuse_a_server_another_account_runs() {
    need_root!();
    let (dir, bin) = nobody_workspace();
    let (mut theirs, url) = nobody_server(dir.path(), &bin);

    let status = run_cli(&["status", "--url", &url], "");
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(!status.status.success(), "status must refuse: {stderr}");
    assert!(stderr.contains("another account (nobody"), "{stderr}");

    let add = run_cli(&["add", "--url", &url, "my secret instruction"], "");
    assert!(!add.status.success());
    let theirs_pending = Command::new("curl")
        .args(["-s", &format!("{url}/api/instructions?status=pending")])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&theirs_pending.stdout).contains("my secret"),
        "nothing reached the stranger's server"
    );

    // The bridge answers the client's request with an error naming the reason, at once.
    let started = std::time::Instant::now();
    let bridged = run_cli(&["stdio", "--url", &format!("{url}/mcp")], &format!("{INITIALIZE}\n"));
    let stdout = String::from_utf8_lossy(&bridged.stdout);
    let answer: Value = serde_json::from_str(stdout.lines().next().unwrap_or("null")).unwrap_or(Value::Null);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("another account"),
        "{stdout} / {}",
        String::from_utf8_lossy(&bridged.stderr)
    );
    assert!(
        started.elapsed().as_secs() < 30,
        "refused, not retried until it gives up"
    );

    theirs.kill().unwrap();
    theirs.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_held_by_another_account_is_named_when_the_engine_falls_back() {
    need_root!();
    use std::io::BufRead;
    let mut holder = as_nobody(
        "/usr/bin/python3",
        &[
            "-c",
            "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen()\nprint(s.getsockname()[1],flush=True)\ntime.sleep(60)",
        ],
    )
    .stdout(Stdio::piped())
    .spawn()
    .expect("python3 runs as nobody");
    let mut line = String::new();
    std::io::BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().unwrap();

    let s = common::start(|c| {
        c.port = port;
        c.port_fallback = true;
    })
    .await;
    assert_eq!(s.engine.port_fallback_from, Some(port));
    let status = s.get_json("/api/status").await;
    let who = status["server"]["requested_port_holder"].as_str().unwrap_or_default();
    assert!(who.contains("nobody") && who.contains("65534"), "{status}");
    s.stop().await;

    // Our own server on the port is not another account's.
    let first = common::start(|_| {}).await;
    let taken = first.engine.addr.port();
    let second = common::start(|c| {
        c.port = taken;
        c.port_fallback = true;
    })
    .await;
    let status = second.get_json("/api/status").await;
    assert_eq!(status["server"]["requested_port"], json!(taken));
    assert!(status["server"].get("requested_port_holder").is_none(), "{status}");
    second.stop().await;
    first.stop().await;

    holder.kill().unwrap();
    holder.wait().unwrap();
}

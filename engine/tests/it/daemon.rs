//! The daemon commands end to end against the real binary: `start` detaches
//! and returns once the server answers, a second `start` is refused with
//! exit 4, `status` shows the process and the log folder, `logs` reads the
//! server's file, `restart` brings a new process, `stop` ends it gracefully
//! (the connection file goes, the lock is free) and a second `stop` says it
//! is not running (exit 3). `service install --no-start` writes a unit
//! `systemd-analyze verify` accepts, and `uninstall` removes it. A command
//! whose reader has gone (`… | head -1`) ends quietly, as other tools do.

use std::path::Path;
use std::process::{Command, Output};

struct Dirs {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    Dirs { _tmp: tmp, root }
}

fn run(d: &Dirs, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_local-mcp-server"))
        .args(args)
        .env("DB_PATH", d.root.join("q.sqlite3"))
        .env("LOCAL_MCP_CONNECTION_FILE", d.root.join("connection.json"))
        .env("LOCAL_MCP_TOKEN_FILE", d.root.join("token"))
        .env("LOCAL_MCP_LOG_DIR", d.root.join("logs"))
        .env("HTTP_PORT", "0")
        .env("HOME", d.root.join("home"))
        .env("XDG_CONFIG_HOME", d.root.join("home/.config"))
        .env_remove("LOCAL_MCP_URL")
        .env_remove("API_TOKEN")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn pid_of(o: &Output) -> u32 {
    let out = String::from_utf8_lossy(&o.stdout);
    let at = out.rfind("(pid ").expect("a pid") + 5;
    out[at..].split(')').next().unwrap().parse().unwrap()
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

#[cfg(target_os = "linux")]
#[test]
fn start_status_logs_restart_stop() {
    let d = dirs();
    let started = run(&d, &["start"]);
    assert!(started.status.success(), "{}", text(&started));
    let pid = pid_of(&started);
    assert!(text(&started).contains("http://127.0.0.1:"), "{}", text(&started));
    assert!(alive(pid));

    // Serving: the page answers at once, the connection file names it.
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.root.join("connection.json")).unwrap()).unwrap();
    assert_eq!(info["pid"], pid);

    let twice = run(&d, &["start"]);
    assert_eq!(twice.status.code(), Some(4), "{}", text(&twice));
    assert!(
        text(&twice).contains(&format!("already running (pid {pid}")),
        "{}",
        text(&twice)
    );

    let status = run(&d, &["status"]);
    let said = text(&status);
    assert!(said.contains(&format!("process: pid {pid}, up ")), "{said}");
    assert!(said.contains("MiB resident"), "{said}");
    assert!(
        said.contains(&format!("log files: {}", d.root.join("logs").display())),
        "{said}"
    );

    let logs = run(&d, &["logs", "-n", "20"]);
    assert!(text(&logs).contains("local-mcp engine serving"), "{}", text(&logs));

    let restarted = run(&d, &["restart"]);
    assert!(restarted.status.success(), "{}", text(&restarted));
    let new_pid = pid_of(&restarted);
    assert_ne!(new_pid, pid);
    assert!(!alive(pid), "the old server ended");

    let stopped = run(&d, &["stop"]);
    assert!(stopped.status.success(), "{}", text(&stopped));
    assert!(!alive(new_pid));
    assert!(
        !d.root.join("connection.json").exists(),
        "a graceful stop removes the connection file"
    );
    let again = run(&d, &["stop"]);
    assert_eq!(again.status.code(), Some(3), "{}", text(&again));

    // Stopping an agent is still `stop <agent>` (here: nothing runs, so exit 3).
    let agent = run(&d, &["stop", "claude"]);
    assert_eq!(agent.status.code(), Some(3), "{}", text(&agent));
}

#[test]
fn a_server_that_cannot_start_is_said() {
    let d = dirs();
    // The database path is a folder: the server refuses; `start` says why.
    std::fs::create_dir_all(d.root.join("q.sqlite3")).unwrap();
    let out = run(&d, &["start"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("did not start"), "{}", text(&out));
}

#[cfg(target_os = "linux")]
#[test]
fn service_install_writes_a_unit_systemd_accepts() {
    let d = dirs();
    let out = run(&d, &["service", "install", "--no-start"]);
    assert!(out.status.success(), "{}", text(&out));
    let unit_path = d.root.join("home/.config/systemd/user/local-mcp.service");
    let unit = std::fs::read_to_string(&unit_path).unwrap();
    assert!(
        unit.contains(&format!("ExecStart={}\n", env!("CARGO_BIN_EXE_local-mcp-server"))),
        "{unit}"
    );
    assert!(unit.contains("RestartPreventExitStatus=4") && unit.contains("WantedBy=default.target"));
    if let Ok(verify) = Command::new("systemd-analyze").arg("verify").arg(&unit_path).output() {
        assert!(verify.status.success(), "{}", text(&verify));
    }
    let out = run(&d, &["service", "uninstall", "--no-start"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!unit_path.exists());
    let out = run(&d, &["service", "uninstall", "--no-start"]);
    assert!(!out.status.success() && text(&out).contains("no service installed"));
}

/// `local-mcp-server completions bash | head -1`, with the reader gone before
/// the first line: the command ends by SIGPIPE, as other tools do, instead
/// of panicking in `println!` ("failed printing to stdout: Broken pipe").
#[cfg(unix)]
#[test]
fn a_command_whose_reader_has_gone_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_local-mcp-server"))
        .args(["completions", "bash"])
        .stdout(writer)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
}

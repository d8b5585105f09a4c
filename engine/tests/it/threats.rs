//! What another account of this machine, a web page and a hostile file can
//! try (`docs/RELIABILITY.md`, "Threats"): each finding of the security
//! review (issue 24), reproduced as it was found — with a second account
//! (`nobody`, through `setpriv`, as root: CI runs so), real symlinks, two
//! imports at once, a socket flood bounded in count and time — and refused
//! with nothing lost.

use crate::common;
use crate::need_root;
use crate::other_account::{as_nobody, nobody_curl, nobody_status, NOBODY};

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// `local-mcp-server ARGS` with its files under `root` and the environment given.
pub(crate) fn server_cli(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_local-mcp-server"));
    c.args(args)
        .env("DB_PATH", root.join("q.sqlite3"))
        .env("LOCAL_MCP_CONNECTION_FILE", root.join("connection.json"))
        .env("LOCAL_MCP_TOKEN_FILE", root.join("token"))
        .env("LOCAL_MCP_LOG_DIR", "off")
        .env("HTTP_PORT", "0")
        .env("HOME", root.join("home"))
        .env("XDG_CONFIG_HOME", root.join("home/.config"))
        .env_remove("LOCAL_MCP_URL")
        .env_remove("API_TOKEN")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

pub(crate) fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A folder `nobody` can write into (a shared project folder).
fn shared_folder(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// `ln -s target link`, as `nobody` where the test can switch accounts.
fn plant_link(target: &Path, link: &Path) {
    if crate::other_account::root() {
        let out = as_nobody("ln", &["-s", target.to_str().unwrap(), link.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", said(&out));
    } else {
        std::os::unix::fs::symlink(target, link).unwrap();
    }
}

// 1. `connect --project` wrote through another account's symlinks.
#[test]
fn connect_refuses_a_shared_project_folder_and_never_writes_through_a_planted_link() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("home")).unwrap();
    let project = shared_folder(root, "project");
    let config = project.join(".mcp.json");
    std::fs::write(&config, "{\"mcpServers\": {}}\n").unwrap();
    // What the other account aims at: a file of the owner's, and a place for a new one.
    let precious = root.join("precious");
    std::fs::write(&precious, "the owner's own file\n").unwrap();
    std::fs::set_permissions(&precious, std::fs::Permissions::from_mode(0o600)).unwrap();
    let planted_new = root.join("bash_profile");
    // The names the old code used: the next backup names (a UTC second each)
    // and the temporary name with the next process ids.
    let now = time::OffsetDateTime::now_utc();
    for s in 0..30 {
        let stamp = (now + time::Duration::seconds(s))
            .format(time::macros::format_description!(
                "[year][month][day]T[hour][minute][second]Z"
            ))
            .unwrap();
        plant_link(
            &planted_new,
            &project.join(format!(".mcp.json.local-mcp-backup-{stamp}")),
        );
    }
    let last_pid: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .map(|s| s.trim().parse().unwrap_or(0))
        .unwrap_or(0);
    for pid in last_pid + 1..last_pid + 200 {
        plant_link(&precious, &project.join(format!("..mcp.json.local-mcp-{pid}.tmp")));
    }
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();

    let project_arg = project.to_str().unwrap();
    let refused = server_cli(root, &["connect", "claude-code", "--project", project_arg], &[]);
    let text = said(&refused);
    assert!(!refused.status.success(), "a shared folder must be refused: {text}");
    assert!(
        text.contains(project_arg) && text.contains("every account can write"),
        "the refusal names the folder and why: {text}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "{\"mcpServers\": {}}\n");

    // The person insists: written, and never through a link.
    let written = server_cli(
        root,
        &[
            "connect",
            "claude-code",
            "--project",
            project_arg,
            "--allow-shared-folder",
        ],
        &[],
    );
    assert!(written.status.success(), "{}", said(&written));
    assert_eq!(
        std::fs::read_to_string(&precious).unwrap(),
        "the owner's own file\n",
        "a planted temporary name redirected the write"
    );
    assert_eq!(mode(&precious), 0o600);
    assert!(
        !planted_new.exists(),
        "a planted backup name created a file of the other account's choosing"
    );
    let meta = std::fs::symlink_metadata(&config).unwrap();
    assert!(
        meta.file_type().is_file(),
        ".mcp.json must stay a file, not become a link"
    );
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    assert!(value["mcpServers"]["local-mcp"].is_object(), "{value}");
    let backups: Vec<_> = std::fs::read_dir(&project)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_file() && e.file_name().to_string_lossy().contains("local-mcp-backup"))
        .collect();
    assert_eq!(backups.len(), 1, "one backup, at a name nobody planted");
    assert_eq!(mode(&backups[0].path()), 0o600);
    assert_eq!(
        std::fs::read_to_string(backups[0].path()).unwrap(),
        "{\"mcpServers\": {}}\n"
    );
}

// 2. The page's session cookie, replayed by another account, let it in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_cookie_never_lets_another_account_in() {
    need_root!();
    let s = common::start(|c| c.api_token = Some("s3cret".into())).await;
    let signed_in = s
        .http
        .post(s.api("/api/session"))
        .json(&json!({ "token": "s3cret" }))
        .send()
        .await
        .unwrap();
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    assert!(cookie.starts_with("local_mcp_session_"), "{cookie}");
    assert_eq!(
        s.get_status("/api/status", None, Some(&cookie)).await,
        200,
        "the owner's page is in"
    );
    let replay = [format!("Cookie: {cookie}")];
    let add = r#"{"content":"queued with a replayed cookie"}"#;
    assert_eq!(nobody_curl("GET", &s.api("/api/status"), None, &replay), "403");
    assert_eq!(
        nobody_curl("POST", &s.api("/api/instructions"), Some(add), &replay),
        "403"
    );
    // Even with other accounts allowed, only the bearer token counts for them.
    let off = s
        .http
        .patch(s.api("/api/config"))
        .bearer_auth("s3cret")
        .json(&json!({ "same_user_only": false }))
        .send()
        .await
        .unwrap();
    assert_eq!(off.status(), 200);
    assert_eq!(nobody_curl("GET", &s.api("/api/status"), None, &replay), "401");
    assert_eq!(nobody_status("GET", &s.api("/api/status"), None, Some("s3cret")), "200");
    let pending: Value = s
        .http
        .get(s.api("/api/instructions?status=pending"))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(pending["items"], json!([]), "nothing was queued with the cookie");
    s.stop().await;
}

// 3. Backups and bundle exports were world-readable in /tmp, and a page's <img> could ask for one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archives_are_built_in_a_private_folder_and_given_only_to_this_origin() {
    let s = common::start(|_| {}).await;
    s.add("in the backup").await;
    // A cross-site read (an <img>, a link) carries no Origin, but the browser says where it comes from.
    for (path, site) in [
        ("/api/backup", Some("cross-site")),
        ("/api/backup", Some("same-site")),
        ("/api/backup", None),
        ("/api/export?format=bundle", Some("cross-site")),
        ("/api/export", None),
    ] {
        let mut request = reqwest::Client::new().get(s.api(path));
        if let Some(site) = site {
            request = request.header("sec-fetch-site", site);
        }
        let status = request.send().await.unwrap().status().as_u16();
        assert_eq!(status, 403, "{path} with Sec-Fetch-Site {site:?}");
    }
    // This origin's page, and a program that says it is one (the CLI), get them.
    for site in ["same-origin", "none"] {
        let response = reqwest::Client::new()
            .get(s.api("/api/backup"))
            .header("sec-fetch-site", site)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{site}");
        // While the answer is on its way, the archive is in the database's private work folder.
        let work = s.db.with_file_name("queue.sqlite3-work");
        assert_eq!(mode(&work), 0o700);
        let inside: Vec<_> = std::fs::read_dir(&work).unwrap().flatten().collect();
        assert_eq!(inside.len(), 1, "one work folder while the answer is sent");
        assert_eq!(mode(&inside[0].path()), 0o700);
        for file in std::fs::read_dir(inside[0].path()).unwrap().flatten() {
            if file.file_type().unwrap().is_file() {
                assert_eq!(mode(&file.path()), 0o600, "{}", file.path().display());
            }
        }
        let body = response.bytes().await.unwrap();
        assert!(body.len() > 1024);
        assert!(
            common::eventually(Duration::from_secs(5), || std::fs::read_dir(&work)
                .unwrap()
                .next()
                .is_none())
            .await,
            "the work folder goes once the answer is sent"
        );
    }
    s.stop().await;

    // Never the shared temp folder: with it unwritable, backups and bundles still work.
    let tmp = tempfile::tempdir().unwrap();
    let locked = tmp.path().join("tmp");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let db = tmp.path().join("q.sqlite3");
    let mut server = common::spawn_binary(&db, &[("TMPDIR", locked.to_str().unwrap())]).await;
    let client = reqwest::Client::new();
    let add = client
        .post(format!("{}/api/instructions", server.url))
        .json(&json!({"content": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(add.status(), 201);
    for path in ["/api/backup", "/api/export?format=bundle"] {
        let r = client
            .get(format!("{}{path}", server.url))
            .header("sec-fetch-site", "none")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path} needs no shared temp folder");
        assert!(!r.bytes().await.unwrap().is_empty());
    }
    // `backup FILE` writes an owner-only archive.
    let out = tmp.path().join("mine.tar");
    let cli = Command::new(env!("CARGO_BIN_EXE_local-mcp-server"))
        .args(["backup", out.to_str().unwrap(), "--url", &server.url])
        .env("TMPDIR", &locked)
        .output()
        .unwrap();
    assert!(cli.status.success(), "{}", said(&cli));
    assert_eq!(mode(&out), 0o600);
    server.child.kill().await.unwrap();
}

/// The first attachment of the pending instruction whose text is `text`, fetched.
async fn attachment_status(s: &common::Server, text: &str) -> Vec<u16> {
    let pending = s.get_json("/api/instructions?status=pending").await;
    let item = pending["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["content"] == text)
        .unwrap_or_else(|| panic!("{text} imported: {pending}"))
        .clone();
    let mut statuses = Vec::new();
    for a in item["attachments"].as_array().unwrap() {
        let id = a["id"].as_str().unwrap();
        statuses.push(s.get_status(&format!("/api/attachments/{id}"), None, None).await);
    }
    statuses
}

// 4. Two imports of one bundle at once deleted the winner's attachment files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_imports_of_one_bundle_at_once_lose_no_file() {
    let from = common::start(|_| {}).await;
    let form = reqwest::multipart::Form::new().text("content", "with a file").part(
        "files",
        reqwest::multipart::Part::bytes(b"notes from the other side\n".to_vec()).file_name("notes.txt"),
    );
    let (status, _) = from.upload(form).await;
    assert_eq!(status, 201);
    let bundle = from
        .http
        .get(from.api("/api/export?format=bundle"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    from.stop().await;

    for _ in 0..3 {
        let to = common::start(|_| {}).await;
        let send = || {
            to.http
                .post(to.api("/api/import"))
                .header("content-type", "application/x-tar")
                .body(bundle.clone())
                .send()
        };
        let (a, b) = tokio::join!(send(), send());
        let (a, b) = (a.unwrap(), b.unwrap());
        let statuses = [a.status().as_u16(), b.status().as_u16()];
        let bodies = [a.text().await.unwrap(), b.text().await.unwrap()];
        assert_eq!(statuses, [200, 200], "{bodies:?}");
        assert_eq!(
            attachment_status(&to, "with a file").await,
            [200],
            "the files the rows name are there"
        );
        to.stop().await;
    }
}

/// A Python script, run as `nobody`, that opens `count` connections to
/// `port`, sends nothing, prints how many it got, and holds them for `hold` s.
const FLOOD: &str = "import socket,sys,time\nport,count,hold=int(sys.argv[1]),int(sys.argv[2]),float(sys.argv[3])\nsocks=[]\nfor _ in range(count):\n    try:\n        s=socket.create_connection(('127.0.0.1',port),timeout=2)\n        socks.append(s)\n    except OSError:\n        pass\nprint(len(socks),flush=True)\ntime.sleep(hold)\n";

// 5. Another account blocked the server by opening connections and sending nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_accounts_idle_connections_cannot_shut_the_owner_out() {
    need_root!();
    for token in [None, Some("s3cret")] {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("q.sqlite3");
        let mut env = vec![];
        if let Some(t) = token {
            env.push(("API_TOKEN", t));
        }
        // A descriptor limit a flood of 300 can pass.
        let mut server = common::spawn_binary_via(&["prlimit", "--nofile=256:256", "--"], &db, &env).await;
        let port = server.url.rsplit(':').next().unwrap().to_owned();
        let mut flood = as_nobody("/usr/bin/python3", &["-c", FLOOD, &port, "300", "8"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs as nobody");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(flood.stdout.take().unwrap()), &mut line).unwrap();
        let opened: usize = line.trim().parse().expect("the flood ran as nobody");
        assert!(opened >= 250, "the other account opened {opened} connections");
        // While the other account holds what it could open, the owner is served at once.
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(3))
            .build()
            .unwrap();
        for path in ["/healthz", "/", "/api/status"] {
            let mut request = client.get(format!("{}{path}", server.url));
            if let Some(t) = token {
                request = request.bearer_auth(t);
            }
            let status = request.send().await.map(|r| r.status().as_u16());
            assert_eq!(
                status.as_ref().ok(),
                Some(&200),
                "GET {path} while another account holds {} idle connections (token {token:?}): {status:?}",
                line.trim()
            );
        }
        let _ = flood.kill();
        let _ = flood.wait();
        server.child.kill().await.unwrap();
    }
}

// 5, continued: a connection that sends nothing is not kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_accounts_silent_connection_is_closed_within_seconds() {
    need_root!();
    let s = common::start(|c| c.api_token = Some("s3cret".into())).await;
    let port = s.engine.addr.port().to_string();
    let script = "import socket,sys,time\ns=socket.create_connection(('127.0.0.1',int(sys.argv[1])))\nt=time.time()\ns.settimeout(30)\ntry:\n    s.recv(1)\nexcept OSError:\n    pass\nprint(round(time.time()-t,1),flush=True)\n";
    let out = as_nobody("/usr/bin/python3", &["-c", script, &port]).output().unwrap();
    let closed_after: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(99.0);
    assert!(closed_after < 10.0, "closed after {closed_after} s");
    s.stop().await;
}

// 6. Far-future dates panicked a handler (and an import left its folder behind).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dates_past_the_end_of_time_are_refused_not_panicked_on() {
    let s = common::start(|_| {}).await;
    for query in [
        "/api/instructions?status=consumed&since=9999-12-31T23:00:00-05:00",
        "/api/instructions?status=consumed&until=9999-12-31T23:00:00-05:00",
        "/api/instructions?status=consumed&since=0000-01-01T00:30:00%2B01:00",
        "/api/export?since=9999-12-31T23:00:00-05:00",
    ] {
        let r = s
            .http
            .get(s.api(query))
            .send()
            .await
            .expect("an answer, not a dropped connection");
        assert_eq!(r.status(), 400, "{query}");
        let body: Value = r.json().await.unwrap();
        assert!(
            body["error"]["message"].as_str().unwrap().contains("out of range"),
            "{body}"
        );
    }
    let export = json!({
        "format": "local-mcp-export", "version": 1, "exported_at": "2026-11-25T00:00:00.000Z",
        "instructions": [{
            "id": "far", "content": "from the end of time", "status": "pending",
            "created_at": "9999-12-31T23:00:00-05:00", "updated_at": "9999-12-31T23:00:00-05:00",
            "position": 1, "queue": "default", "attachments": []
        }],
        "reports": []
    });
    let (status, body) = s.post("/api/import", export).await;
    assert_eq!(status, 400, "{body}");
    let work = s.db.with_file_name("queue.sqlite3-work");
    assert!(
        std::fs::read_dir(&work).map_or(true, |mut d| d.next().is_none()),
        "the import's folder is gone"
    );
    assert_eq!(s.get_status("/healthz", None, None).await, 200);
    s.stop().await;
}

// 7. Renaming or archiving a queue raced with adding to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_added_while_a_queue_is_renamed_or_archived_is_never_orphaned() {
    let s = common::start(|_| {}).await;
    for round in 0..60 {
        let name = format!("r{round}");
        let (status, _) = s.post("/api/queues", json!({ "name": name })).await;
        assert_eq!(status, 201);
        let change = if round % 2 == 0 {
            json!({ "name": format!("s{round}") })
        } else {
            json!({ "archived": true })
        };
        let path = format!("/api/queues/{name}");
        let patch = s.patch(&path, change);
        let add = s.post(
            "/api/instructions",
            json!({ "content": format!("for {name}"), "queue": name }),
        );
        let ((_, _), (added, _)) = tokio::join!(patch, add);
        assert_eq!(added, 201);
    }
    let queues = s.get_json("/api/queues").await;
    let live: Vec<&str> = queues["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["archived"] != json!(true))
        .map(|q| q["name"].as_str().unwrap())
        .collect();
    let pending = s.get_json("/api/instructions?status=pending&limit=1000").await;
    for item in pending["items"].as_array().unwrap() {
        let queue = item["queue"].as_str().unwrap();
        assert!(
            live.contains(&queue),
            "{} sits in {queue}, which the switcher does not show: {live:?}",
            item["content"]
        );
    }
    assert_eq!(pending["items"].as_array().unwrap().len(), 60);
    s.stop().await;
}

/// A backup archive of a server holding `text`, made by the real binary.
pub(crate) fn backup_holding(root: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(root.join("home")).unwrap();
    let started = server_cli(root, &["start"], &[]);
    assert!(started.status.success(), "{}", said(&started));
    let added = server_cli(root, &["add", text], &[]);
    assert!(added.status.success(), "{}", said(&added));
    let archive = root.join("backup.tar");
    let saved = server_cli(root, &["backup", archive.to_str().unwrap()], &[]);
    assert!(saved.status.success(), "{}", said(&saved));
    let stopped = server_cli(root, &["stop"], &[]);
    assert!(stopped.status.success(), "{}", said(&stopped));
    archive
}

// 8. Restore: moved-aside copies overwritten, 0644 files, links restored and then served.
#[test]
fn restore_keeps_every_replaced_copy_is_owner_only_and_refuses_links() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let archive = backup_holding(root, "in the backup");

    // Two restores within one second: each replaced database is kept.
    for _ in 0..2 {
        let restored = server_cli(root, &["restore", archive.to_str().unwrap()], &[]);
        assert!(restored.status.success(), "{}", said(&restored));
    }
    let aside: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(".replaced-"))
        .collect();
    assert_eq!(aside.len(), 2, "two restores, two kept copies: {aside:?}");
    for dir in &aside {
        let db = dir.join("q.sqlite3");
        assert!(db.is_file(), "{}", dir.display());
        assert_eq!(mode(&db), 0o600, "{}", db.display());
    }
    assert_eq!(
        mode(&root.join("q.sqlite3")),
        0o600,
        "the restored database is owner-only"
    );

    // An archive with a link inside: refused whole, nothing changed.
    let before = std::fs::read(root.join("q.sqlite3")).unwrap();
    let evil = root.join("evil.tar");
    {
        let mut builder = tar::Builder::new(std::fs::File::create(&evil).unwrap());
        let mut original = tar::Archive::new(std::fs::File::open(&archive).unwrap());
        for entry in original.entries().unwrap() {
            let mut entry = entry.unwrap();
            let mut header = entry.header().clone();
            let path = entry.path().unwrap().into_owned();
            builder.append_data(&mut header, path, &mut entry).unwrap();
        }
        let mut link = tar::Header::new_gnu();
        link.set_entry_type(tar::EntryType::Symlink);
        link.set_size(0);
        link.set_mode(0o777);
        builder
            .append_link(&mut link, "attachments/x/evil.txt", "/etc/passwd")
            .unwrap();
        builder.finish().unwrap();
    }
    let refused = server_cli(root, &["restore", evil.to_str().unwrap()], &[]);
    let text = said(&refused);
    assert!(!refused.status.success(), "{text}");
    assert!(
        text.contains("symbolic link") && text.contains("nothing was changed"),
        "{text}"
    );
    assert_eq!(std::fs::read(root.join("q.sqlite3")).unwrap(), before);
    assert!(!root.join("q.sqlite3-attachments/x/evil.txt").exists());
}

// 9. `start` wrote the daemon's stderr to a predictable name in /tmp.
#[test]
fn start_writes_nothing_into_the_shared_temp_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("home")).unwrap();
    // Another account could have planted any name here; we use none of them.
    let shared = root.join("tmp");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o555)).unwrap();
    let started = server_cli(root, &["start"], &[("TMPDIR", shared.to_str().unwrap())]);
    assert!(started.status.success(), "{}", said(&started));
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0);
    let stopped = server_cli(root, &["stop"], &[]);
    assert!(stopped.status.success(), "{}", said(&stopped));
    // A start that fails still says why (its early output went to an unnamed file).
    std::fs::write(root.join("q.sqlite3"), "not a database, and read-only").unwrap();
    std::fs::set_permissions(root.join("q.sqlite3"), std::fs::Permissions::from_mode(0o400)).unwrap();
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o500)).unwrap();
    let failed = server_cli(root, &["start"], &[("TMPDIR", shared.to_str().unwrap())]);
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700)).unwrap();
    if !crate::other_account::root() {
        // (root can write anyway; the message is checked where it cannot)
        assert!(!failed.status.success());
        assert!(said(&failed).contains("did not start"), "{}", said(&failed));
    } else if failed.status.success() {
        // As root the start went ahead: stop the server it left behind.
        let stopped = server_cli(root, &["stop"], &[]);
        assert!(stopped.status.success(), "{}", said(&stopped));
    }
}

// 10. CSV exports ran agent-controlled cells as spreadsheet formulas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_exports_never_carry_a_formula() {
    let s = common::start(|_| {}).await;
    let formulas = [
        "=HYPERLINK(\"http://example.com/\",\"click\")",
        "+cmd|' /C calc'!A0",
        "-2+3",
        "@SUM(1+1)*cmd|' /C calc'!A0",
        "\tleading tab",
    ];
    for f in formulas {
        s.add(f).await;
    }
    let text = s
        .http
        .get(s.api("/api/export?format=csv"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let content = reader.headers().unwrap().iter().position(|h| h == "content").unwrap();
    let cells: Vec<String> = reader.records().map(|r| r.unwrap()[content].to_owned()).collect();
    for f in formulas {
        assert!(cells.contains(&format!("'{f}")), "{f:?} is inert in {cells:?}");
    }
    for cell in &cells {
        assert!(!cell.starts_with(['=', '+', '-', '@', '\t']), "{cell:?}");
    }
    s.stop().await;
}

// 11. Log files were readable by every account.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_files_are_the_owners_only() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o755)).unwrap();
    let older = logs.join("local-mcp-server.2026-11-01.log");
    std::fs::write(&older, "an older day's log\n").unwrap();
    std::fs::set_permissions(&older, std::fs::Permissions::from_mode(0o644)).unwrap();
    let db = tmp.path().join("q.sqlite3");
    let mut server = common::spawn_binary(
        &db,
        &[("LOCAL_MCP_LOG_DIR", logs.to_str().unwrap()), ("LOG_LEVEL", "info")],
    )
    .await;
    assert!(
        common::eventually(Duration::from_secs(10), || std::fs::read_dir(&logs).unwrap().count()
            >= 2)
        .await,
        "today's log file is written"
    );
    assert_eq!(mode(&logs), 0o700);
    for file in std::fs::read_dir(&logs).unwrap().flatten() {
        assert_eq!(mode(&file.path()), 0o600, "{}", file.path().display());
        if crate::other_account::root() {
            let read = as_nobody("cat", &[file.path().to_str().unwrap()]).output().unwrap();
            assert!(!read.status.success(), "another account read {}", file.path().display());
        }
    }
    assert!(
        server
            .log
            .lock()
            .unwrap()
            .iter()
            .all(|l| !l.contains("Error reading the log directory")),
        "a first run says nothing about its log folder"
    );
    server.child.kill().await.unwrap();
}

// The other account, checked: `nobody` is a real account distinct from ours.
#[test]
fn the_other_account_is_real() {
    need_root!();
    let out = as_nobody("id", &["-u"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), NOBODY);
    assert_ne!(std::fs::metadata("/proc/self").unwrap().uid().to_string(), NOBODY);
}

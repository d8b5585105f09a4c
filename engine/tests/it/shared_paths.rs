//! A FIFO and a web page (issue 38, finding 2). `GET /api/connect?project=…`
//! read the clients' files of a project folder with a blocking read, and
//! another site's `no-cors` GETs passed the guard: with a FIFO named
//! `.mcp.json` in a world-writable folder, 600 aborted fetches pinned the
//! blocking pool's 512 threads, and the accept-time account lookup ran on the
//! same pool, so `/healthz`, the page and every agent stopped answering.

use std::time::Duration;

use crate::common;

fn fifo(path: &std::path::Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path and a mode.
    assert_eq!(
        unsafe { libc::mkfifo(name.as_ptr(), 0o666) },
        0,
        "mkfifo {}",
        path.display()
    );
}

/// On the way out (a failed assertion included), open each FIFO's writing
/// end a few times: a server that did wait on one is let go, so a
/// regression fails this test instead of holding the test binary open.
struct LetGo(Vec<std::path::PathBuf>);

impl Drop for LetGo {
    fn drop(&mut self) {
        use std::os::unix::fs::OpenOptionsExt;
        for _ in 0..20 {
            for path in &self.0 {
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(path);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_in_a_project_folder_blocks_nothing_and_other_sites_cannot_ask() {
    let s = common::start(|_| {}).await;
    // A folder anyone can write to, with FIFOs where clients keep their project files.
    let project = tempfile::tempdir().unwrap();
    for dir in [".vscode", ".cursor", ".gemini", ".codex", ".zed"] {
        std::fs::create_dir(project.path().join(dir)).unwrap();
    }
    let fifos: Vec<_> = [
        ".mcp.json",
        ".vscode/mcp.json",
        ".cursor/mcp.json",
        ".gemini/settings.json",
        ".codex/config.toml",
        ".zed/settings.json",
        "opencode.json",
    ]
    .iter()
    .map(|file| project.path().join(file))
    .collect();
    for path in &fifos {
        fifo(path);
    }
    let _let_go = LetGo(fifos);
    let path = format!("/api/connect?project={}", project.path().display());

    // Forty at once, each answered, none waiting on a FIFO's other end.
    let asks = (0..40).map(|_| {
        let (http, url) = (s.http.clone(), s.api(&path));
        tokio::spawn(async move {
            tokio::time::timeout(Duration::from_secs(30), http.get(url).send())
                .await
                .map(|r| r.map(|r| r.status().as_u16()))
        })
    });
    for ask in asks {
        let answered = ask.await.unwrap();
        let status = answered
            .expect("a request that reads a FIFO's name waited for its other end (30 s)")
            .unwrap();
        assert_eq!(status, 200);
    }
    let state = s.get_json(&path).await;
    let project_entry = state["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "claude-code" && c["project_level"] == true)
        .unwrap_or_else(|| panic!("{state}"));
    assert!(
        project_entry.to_string().contains("not a regular file"),
        "the FIFO is said for what it is: {project_entry}"
    );
    let health = tokio::time::timeout(Duration::from_secs(5), s.http.get(s.api("/healthz")).send())
        .await
        .expect("/healthz answers")
        .unwrap();
    assert_eq!(health.status(), 200);

    // Another site's page may not make the server read anything; the page
    // itself and a program the person runs may.
    let plain = reqwest::Client::new();
    for (site, expected) in [
        (Some("cross-site"), 403),
        (Some("same-site"), 403),
        (Some("same-origin"), 200),
        (Some("none"), 200),
        (None, 200),
    ] {
        for route in [path.as_str(), "/api/status", "/api/instructions", "/api/events"] {
            let mut request = plain.get(s.api(route));
            if let Some(site) = site {
                request = request.header("sec-fetch-site", site);
            }
            let status = tokio::time::timeout(Duration::from_secs(10), request.send())
                .await
                .expect("an answer's head")
                .unwrap()
                .status()
                .as_u16();
            assert_eq!(status, expected, "GET {route} with Sec-Fetch-Site {site:?}");
        }
    }
    // The page's own files and the health check stay open to anyone.
    for route in ["/", "/healthz"] {
        let r = plain
            .get(s.api(route))
            .header("sec-fetch-site", "cross-site")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{route}");
    }
    s.stop().await;
}

/// A terminal nobody's session holds, its reading end named `.mcp.json`
/// (a fresh attacker's review): the server, started in a session of its own
/// as a login service starts it, took it as its controlling terminal when
/// `/api/connect` opened it, and the terminal's hang-up killed the server.
/// Now it is refused before it is opened (and opened `O_NOCTTY` anyway).
#[cfg(target_os = "linux")] // `/proc/<pid>/stat`, `ptsname_r`
#[tokio::test]
async fn a_terminal_named_like_a_client_file_is_never_opened() {
    let root = tempfile::tempdir().unwrap();
    // The terminal: a pseudo-terminal pair whose other end this test holds.
    // SAFETY: plain calls; each result is checked.
    let master = unsafe { libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY) };
    assert!(master >= 0, "posix_openpt");
    assert_eq!(unsafe { libc::grantpt(master) }, 0);
    assert_eq!(unsafe { libc::unlockpt(master) }, 0);
    let mut name = [0 as libc::c_char; 128];
    assert_eq!(unsafe { libc::ptsname_r(master, name.as_mut_ptr(), name.len()) }, 0);
    let pts = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
        .to_str()
        .unwrap()
        .to_owned();
    let project = root.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::os::unix::fs::symlink(&pts, project.join(".mcp.json")).unwrap();

    let db = root.path().join("q.sqlite3");
    let mut server = common::spawn_binary_via(&["setsid"], &db, &[]).await;
    let pid = server.child.id().unwrap();
    let tty_of = |pid: u32| -> i64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        // The 7th field, counted after the command's closing parenthesis.
        stat.rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .nth(4)
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(tty_of(pid), 0, "the server starts with no terminal");
    let http = reqwest::Client::new();
    let state: serde_json::Value = http
        .get(format!("{}/api/connect?project={}", server.url, project.display()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(state.to_string().contains("not a regular file"), "{state}");
    assert_eq!(tty_of(pid), 0, "the terminal became the server's");
    // Its hang-up reaches nothing.
    // SAFETY: the descriptor is ours and closed once.
    unsafe { libc::close(master) };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server died with the terminal"
    );
    let health = http.get(format!("{}/healthz", server.url)).send().await.unwrap();
    assert_eq!(health.status(), 200);
}

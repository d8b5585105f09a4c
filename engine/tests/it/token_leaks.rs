//! The token leaked to other accounts (issue 38, finding 3): `connect` kept
//! an existing file's mode (a 0644 `~/.cursor/mcp.json` stayed readable with
//! the token in it), did not see a folder shared through an ACL or a file
//! another account made as shared, and put the token in command lines
//! (`claude mcp add-json … "Bearer …"`, the `vscode:mcp/install?…` link)
//! that every account can read in `/proc`.

use engine::model::McpClient;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use engine::client_files::{self, links, Env, Request, Site};

const TOKEN: &str = "tok-0123456789abcdef";

fn env(home: &Path) -> Env {
    Env {
        home: home.to_path_buf(),
        config: home.join(".config"),
        vars: BTreeMap::new(),
        path: Vec::new(),
        records: home.join(".config/local-mcp/connections.json"),
    }
}

fn site(token: Option<&str>) -> Site {
    Site {
        base_url: "http://127.0.0.1:8123".into(),
        token: token.map(str::to_owned),
        program: "/opt/local-mcp/local-mcp-server".into(),
        database: None,
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_file_that_holds_the_token_is_owner_only_whatever_it_was() {
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    let file = env.user_file(McpClient::Cursor).unwrap();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{\"mcpServers\": {}}\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    client_files::connect(&env, &site(Some(TOKEN)), McpClient::Cursor, &Request::default()).unwrap();
    assert!(std::fs::read_to_string(&file).unwrap().contains(TOKEN));
    assert_eq!(mode(&file), 0o600, "the token is in it: nobody else may read it");

    // Without a token the person's mode stays, and a new project file is one the team can read.
    let project = home.path().join("work");
    std::fs::create_dir(&project).unwrap();
    std::fs::set_permissions(&project, std::fs::Permissions::from_mode(0o755)).unwrap();
    let request = Request {
        project: Some(&project),
        ..Request::default()
    };
    client_files::connect(&env, &site(None), McpClient::ClaudeCodeProject, &request).unwrap();
    assert_eq!(
        mode(&project.join(".mcp.json")),
        0o644,
        "no token in it: as any project file"
    );
    client_files::connect(&env, &site(None), McpClient::Zed, &request).unwrap();
    let zed = project.join(".zed/settings.json");
    assert_eq!(mode(&zed), 0o644, "no token in it: as any project file");
    // Zed has no way to refer to a token: its project file holds it, owner-only, and says so.
    let changes = client_files::connect(&env, &site(Some(TOKEN)), McpClient::Zed, &request).unwrap();
    assert!(std::fs::read_to_string(&zed).unwrap().contains(TOKEN));
    assert_eq!(mode(&zed), 0o600, "the token came in: owner-only");
    assert!(
        changes[0]
            .note
            .as_deref()
            .is_some_and(|n| n.contains("version control")),
        "{changes:?}"
    );
}

/// A project's file is committed: with a token required, each client that
/// can refer to the token gets the reference, never the token (39.8 d).
#[test]
fn a_project_file_refers_to_the_token_where_the_client_can() {
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    let project = home.path().join("work");
    std::fs::create_dir(&project).unwrap();
    std::fs::set_permissions(&project, std::fs::Permissions::from_mode(0o755)).unwrap();
    let request = Request {
        project: Some(&project),
        ..Request::default()
    };
    let site = Site {
        database: Some("/home/me/my queue.db".into()),
        ..site(Some(TOKEN))
    };
    let cases: [(McpClient, &str, &str); 6] = [
        (
            McpClient::ClaudeCodeProject,
            ".mcp.json",
            "\"headersHelper\": \"/opt/local-mcp/local-mcp-server --db-path '/home/me/my queue.db' token --header-json\"",
        ),
        (McpClient::Codex, ".codex/config.toml", "bearer_token_env_var = \"LOCAL_MCP_TOKEN\""),
        (McpClient::Cursor, ".cursor/mcp.json", "\"Bearer ${env:LOCAL_MCP_TOKEN}\""),
        (McpClient::GeminiCli, ".gemini/settings.json", "\"Bearer ${LOCAL_MCP_TOKEN}\""),
        (McpClient::Opencode, "opencode.json", "\"Bearer {env:LOCAL_MCP_TOKEN}\""),
        (McpClient::Vscode, ".vscode/mcp.json", "\"stdio\""),
    ];
    for (client, file, reference) in cases {
        let changes = client_files::connect(&env, &site, client, &request).unwrap();
        let path = project.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(TOKEN), "{client:?} wrote the token: {text}");
        assert!(text.contains(reference), "{client:?} has no {reference}: {text}");
        assert_eq!(mode(&path), 0o644, "{client:?}: no secret in it, the team may read it");
        let variable = [
            McpClient::Codex,
            McpClient::Cursor,
            McpClient::GeminiCli,
            McpClient::Opencode,
        ]
        .contains(&client);
        assert_eq!(
            changes[0]
                .note
                .as_deref()
                .is_some_and(|n| n.contains("LOCAL_MCP_TOKEN")),
            variable,
            "{client:?}: {changes:?}"
        );
        // What we wrote is what we want: status calls it connected, and an
        // update leaves it be.
        let status = client_files::client_status(&env, &site, client, Some(&project));
        assert_eq!(status.state, client_files::State::Connected, "{client:?}: {status:?}");
    }
    assert!(client_files::update_all(&env, &site).unwrap().is_empty());
    // In the person's own file the token stays literal (owner-only, tested above).
    client_files::connect(&env, &site, McpClient::Cursor, &Request::default()).unwrap();
    let user = std::fs::read_to_string(env.user_file(McpClient::Cursor).unwrap()).unwrap();
    assert!(user.contains(&format!("Bearer {TOKEN}")), "{user}");
}

/// `setfacl -m u:<uid>:rwx <path>` by hand: the ACL attribute's bytes
/// (Linux's `system.posix_acl_access`; macOS's ACLs are another format).
#[cfg(target_os = "linux")]
fn grant_write(path: &Path, uid: u32) {
    let mut acl = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (0x01u16, 7u16, u32::MAX), // the owner
        (0x02, 7, uid),            // that user
        (0x04, 5, u32::MAX),       // the owning group
        (0x10, 7, u32::MAX),       // the mask
        (0x20, 5, u32::MAX),       // others
    ] {
        acl.extend(tag.to_le_bytes());
        acl.extend(perm.to_le_bytes());
        acl.extend(id.to_le_bytes());
    }
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: NUL-terminated names and a buffer of the length given.
    let set = unsafe {
        libc::setxattr(
            name.as_ptr(),
            c"system.posix_acl_access".as_ptr(),
            acl.as_ptr().cast(),
            acl.len(),
            0,
        )
    };
    assert_eq!(set, 0, "setxattr: {}", std::io::Error::last_os_error());
}

#[cfg(target_os = "linux")]
#[test]
fn a_folder_shared_through_an_acl_or_a_file_of_another_account_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    // 0775, the owner's own group: its mode alone says nobody else writes here.
    let project = home.path().join("shared");
    std::fs::create_dir(&project).unwrap();
    std::fs::set_permissions(&project, std::fs::Permissions::from_mode(0o775)).unwrap();
    grant_write(&project, 4242);
    let request = Request {
        project: Some(&project),
        ..Request::default()
    };
    let err = client_files::connect(&env, &site(Some(TOKEN)), McpClient::ClaudeCodeProject, &request).unwrap_err();
    assert!(err.to_string().contains("its ACL lets uid 4242 write"), "{err}");
    assert!(!project.join(".mcp.json").exists());

    if !crate::other_account::root() {
        assert!(std::env::var_os("CI").is_none(), "CI must run this as root");
        eprintln!("a file of another account needs root to make (chown); CI runs as root");
        return;
    }
    let mine = home.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join(".mcp.json"), "{\"mcpServers\": {}}\n").unwrap();
    std::os::unix::fs::chown(mine.join(".mcp.json"), Some(65534), Some(65534)).unwrap();
    let request = Request {
        project: Some(&mine),
        ..Request::default()
    };
    let err = client_files::connect(&env, &site(Some(TOKEN)), McpClient::ClaudeCodeProject, &request).unwrap_err();
    assert!(
        err.to_string().contains("belongs to another account (uid 65534)"),
        "{err}"
    );
    assert!(!std::fs::read_to_string(mine.join(".mcp.json")).unwrap().contains(TOKEN));
}

#[test]
fn install_links_never_carry_the_token() {
    let with_token = site(Some(TOKEN));
    for client in [
        McpClient::Vscode,
        McpClient::VscodeInsiders,
        McpClient::Cursor,
        McpClient::LmStudio,
        McpClient::Goose,
    ] {
        let link = links::link(client, &with_token.link_entry(client, "default"));
        let Some(link) = link else {
            assert_eq!(client, McpClient::Goose, "only Goose has no link with a token required");
            continue;
        };
        let decoded = percent_encoding::percent_decode_str(&link)
            .decode_utf8_lossy()
            .into_owned();
        let b64 = decoded.split("config=").nth(1).map(|c| {
            use base64::Engine as _;
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(c).unwrap()).unwrap()
        });
        for text in [Some(decoded.clone()), b64].into_iter().flatten() {
            assert!(!text.contains(TOKEN), "{client:?}: {text}");
        }
        assert!(
            decoded.contains("stdio") || b64_has_stdio(&decoded),
            "{client:?} installs the bridge: {decoded}"
        );
    }
    // Without a token the link is the plain HTTP entry.
    let plain = links::link(McpClient::Cursor, &site(None).link_entry(McpClient::Cursor, "default")).unwrap();
    assert!(!plain.contains("stdio"));
}

fn b64_has_stdio(link: &str) -> bool {
    use base64::Engine as _;
    link.split("config=")
        .nth(1)
        .and_then(|c| base64::engine::general_purpose::STANDARD.decode(c).ok())
        .is_some_and(|bytes| String::from_utf8_lossy(&bytes).contains("stdio"))
}

/// The `headersHelper` a Claude Code project file names, run as Claude
/// Code runs it (a shell command), gives the running server's header.
#[tokio::test]
async fn the_claude_code_headers_helper_gives_the_running_servers_header() {
    let home = tempfile::tempdir().unwrap();
    let config_home = home.path().join(".config");
    let db = home.path().join("a queue.db");
    let config_s = config_home.to_str().unwrap();
    let server = crate::common::spawn_binary(&db, &[("XDG_CONFIG_HOME", config_s), ("API_TOKEN", TOKEN)]).await;
    let project = home.path().join("work");
    std::fs::create_dir(&project).unwrap();
    let site = Site {
        base_url: server.url.clone(),
        token: Some(TOKEN.into()),
        program: env!("CARGO_BIN_EXE_local-mcp-server").into(),
        database: Some(db.to_str().unwrap().into()),
    };
    let request = Request {
        project: Some(&project),
        ..Request::default()
    };
    client_files::connect(&env(home.path()), &site, McpClient::ClaudeCodeProject, &request).unwrap();
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(project.join(".mcp.json")).unwrap()).unwrap();
    let helper = file["mcpServers"]["local-mcp"]["headersHelper"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = tokio::process::Command::new("sh")
        .args(["-c", &helper])
        .env("XDG_CONFIG_HOME", &config_home)
        .env_remove("LOCAL_MCP_TOKEN")
        .current_dir(&project)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{helper}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let headers: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        headers,
        serde_json::json!({ "Authorization": format!("Bearer {TOKEN}") })
    );
    // Those headers open the server.
    let mut request = reqwest::Client::new().get(format!("{}/api/status", server.url));
    for (name, value) in headers.as_object().unwrap() {
        request = request.header(name, value.as_str().unwrap());
    }
    assert_eq!(request.send().await.unwrap().status(), 200);
    drop(server);
}

/// The commands `connect` writes (the Stop hook, the `headersHelper`) run
/// through a shell: a program or database path holding `$(…)`, a quote or a
/// space is one word there, never a command of its own (a fresh attacker's
/// review: the hook ran `touch` from a folder named `d$(touch${IFS}HOOKPWN)`).
#[test]
fn a_path_in_a_written_command_is_one_word_whatever_it_holds() {
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    let project = home.path().join("work");
    std::fs::create_dir(&project).unwrap();
    let strange = home.path().join("d$(touch${IFS}PWNED)`touch PWNED2` 'q\" x");
    std::fs::create_dir(&strange).unwrap();
    let program = strange.join("local-mcp-server");
    // A stand-in that prints its arguments, one per line.
    std::fs::write(&program, "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let site = Site {
        program: program.to_str().unwrap().into(),
        database: Some(format!("{}/q $(touch PWNED3).db", strange.display())),
        ..site(Some(TOKEN))
    };
    let request = Request {
        project: Some(&project),
        hooks: true,
        ..Request::default()
    };
    client_files::connect(&env, &site, McpClient::ClaudeCodeProject, &request).unwrap();
    let mcp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(project.join(".mcp.json")).unwrap()).unwrap();
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(project.join(".claude/settings.json")).unwrap()).unwrap();
    let commands = [
        mcp["mcpServers"]["local-mcp"]["headersHelper"]
            .as_str()
            .unwrap()
            .to_owned(),
        settings["hooks"]["Stop"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .to_owned(),
    ];
    for command in commands {
        let out = std::process::Command::new("sh")
            .args(["-c", &command])
            .current_dir(home.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let words: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        let db = site.database.clone().unwrap();
        assert_eq!(
            words.iter().position(|w| *w == db),
            words.iter().position(|w| w == "--db-path").map(|i| i + 1),
            "{command}: {words:?}"
        );
        for planted in ["PWNED", "PWNED2", "PWNED3"] {
            assert!(!home.path().join(planted).exists(), "{command} ran {planted}");
        }
    }
}

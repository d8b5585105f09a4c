//! `connect` / `disconnect` against fixture files in a temporary home, for
//! every client that keeps a file: missing, empty, JSONC with comments and
//! trailing commas, unknown keys, broken, read-only, a symlink. Everything
//! but our entry stays byte-for-byte; one backup; a second run writes
//! nothing; `disconnect` gives the file back as it was and refuses an entry
//! the person edited. The binary's `connect` command is run once end to end.

use engine::model::McpClient;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use engine::client_files::{self, Action, Env, Request, Site, State};
use engine::snippets::ENTRY_NAME;
use serde_json::{json, Value};

fn env(home: &Path) -> Env {
    Env {
        home: home.to_path_buf(),
        config: home.join(".config"),
        vars: BTreeMap::new(),
        path: Vec::new(),
        records: home.join(".config/local-mcp/connections.json"),
    }
}

fn site(port: u16, token: Option<&str>) -> Site {
    Site {
        base_url: format!("http://127.0.0.1:{port}"),
        token: token.map(str::to_owned),
        program: "/opt/local-mcp/local-mcp-server".into(),
        database: None,
    }
}

/// The clients whose user-level entry lives in a file we edit.
fn file_clients() -> impl Iterator<Item = McpClient> {
    McpClient::ALL.into_iter().filter(|c| {
        !matches!(
            c,
            McpClient::ClaudeCode | McpClient::ClaudeCodeProject | McpClient::Goose
        )
    })
}

/// A JSONC fixture with the client's servers key, comments, trailing commas,
/// unknown keys at every level and someone else's server.
fn jsonc_fixture(client: McpClient) -> String {
    let key = client.servers_key();
    let mut inner = String::from(
        "{\n    // theirs\n    \"other\": { \"command\": \"x\", \"args\": [\"--a\", 1, true, null], }, // keep me\n  }",
    );
    for k in key[1..].iter().rev() {
        inner = format!("{{ \"{k}\": {inner}, \"sibling\": 1 }}");
    }
    format!(
        "{{\n  /* top */\n  \"unknownTop\": {{ \"keep\": [1, 2.50, \"é\"] }},\n  \"{}\": {inner},\n  \"after\": \"x\", // end\n}}\n",
        key[0]
    )
}

const TOML_FIXTURE: &str = "# my codex settings\nmodel = \"o3\" # comment\n\n[mcp_servers.other]\ncommand = \"npx\"\nargs = [\"-y\", \"x\"] # keep\n\n[profiles.fast]\nmodel = \"mini\"\n";

fn fixture(client: McpClient) -> String {
    if client == McpClient::Codex {
        TOML_FIXTURE.into()
    } else {
        jsonc_fixture(client)
    }
}

fn parse(client: McpClient, text: &str) -> Value {
    if client == McpClient::Codex {
        serde_json::to_value(text.parse::<toml::Table>().unwrap()).unwrap()
    } else {
        // The fixtures are JSONC: strip with the same parser the clients' docs name.
        jsonc_parser::parse_to_serde_value::<Value>(text, &Default::default()).unwrap()
    }
}

fn entry_in(client: McpClient, value: &Value) -> Option<Value> {
    let mut at = value;
    for k in client.servers_key() {
        at = at.get(*k)?;
    }
    at.get(ENTRY_NAME).cloned()
}

fn without_entry(client: McpClient, mut value: Value) -> Value {
    let mut at = &mut value;
    for k in client.servers_key() {
        at = at.get_mut(*k).unwrap();
    }
    at.as_object_mut().unwrap().remove(ENTRY_NAME);
    value
}

fn backups_beside(file: &Path) -> Vec<PathBuf> {
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("{name}.local-mcp-backup-"))
        })
        .collect()
}

#[test]
fn every_file_client_keeps_everything_but_its_entry() {
    for client in file_clients() {
        let home = tempfile::tempdir().unwrap();
        let env = env(home.path());
        let file = env.user_file(client).unwrap();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let original = fixture(client);
        std::fs::write(&file, &original).unwrap();
        let site = site(8123, Some("s3cret"));

        let changes = client_files::connect(&env, &site, client, &Request::default()).unwrap();
        assert_eq!(changes[0].action, Action::Written, "{client:?}");
        let written = std::fs::read_to_string(&file).unwrap();
        let value = parse(client, &written);
        assert_eq!(
            entry_in(client, &value),
            Some(site.entry(client, "default")),
            "{client:?}\n{written}"
        );
        assert_eq!(
            without_entry(client, value),
            parse(client, &original),
            "{client:?}\n{written}"
        );
        for comment in [
            "/* top */",
            "// theirs",
            "// keep me",
            "// end",
            "# my codex settings",
            "# keep",
        ] {
            assert_eq!(
                original.contains(comment),
                written.contains(comment),
                "{client:?} lost {comment}"
            );
        }
        // Everything before the servers key is byte-for-byte the same.
        let head = &original[..original.find(client.servers_key()[0]).unwrap()];
        assert!(written.starts_with(head), "{client:?}\n{written}");
        let backups = backups_beside(&file);
        assert_eq!(backups.len(), 1, "{client:?}");
        assert_eq!(std::fs::read_to_string(&backups[0]).unwrap(), original);

        // Identical entry: no write at all (and no second backup).
        let before = std::fs::metadata(&file).unwrap().modified().unwrap();
        let again = client_files::connect(&env, &site, client, &Request::default()).unwrap();
        assert_eq!(again[0].action, Action::Unchanged, "{client:?}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), written);
        assert_eq!(std::fs::metadata(&file).unwrap().modified().unwrap(), before);

        // A new port rewrites the entry; still one backup.
        client_files::connect(&env, &site_with_port(9000), client, &Request::default()).unwrap();
        assert_eq!(backups_beside(&file).len(), 1, "{client:?}");

        let removed = client_files::disconnect(&env, client, &Request::default()).unwrap();
        assert_eq!(removed[0].action, Action::Removed, "{client:?}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "{client:?}");
        assert_eq!(client_files::backups(&env).unwrap().len(), 1);
    }
}

fn site_with_port(port: u16) -> Site {
    site(port, Some("s3cret"))
}

#[test]
fn missing_and_empty_files_get_just_the_entry() {
    for client in file_clients() {
        let empty_doc = if client == McpClient::Codex { "\n" } else { "{}" };
        for start in [None, Some(""), Some("\n  \n"), Some(empty_doc)] {
            let home = tempfile::tempdir().unwrap();
            let env = env(home.path());
            let file = env.user_file(client).unwrap();
            if let Some(text) = start {
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, text).unwrap();
            }
            let site = site(8123, None);
            client_files::connect(&env, &site, client, &Request::default()).unwrap();
            let value = parse(client, &std::fs::read_to_string(&file).unwrap());
            assert_eq!(
                entry_in(client, &value),
                Some(site.entry(client, "default")),
                "{client:?} {start:?}"
            );
            // Nothing else was invented.
            assert_eq!(value.as_object().unwrap().len(), 1, "{client:?} {start:?}: {value}");
            assert_eq!(
                backups_beside(&file).len(),
                usize::from(start.is_some()),
                "{client:?} {start:?}"
            );
            #[cfg(unix)]
            if start.is_none() {
                use std::os::unix::fs::PermissionsExt;
                // Every file local-mcp creates is owner-only from its first byte, token or not.
                assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
            }
        }
    }
}

#[cfg(unix)]
#[test]
fn a_new_file_holding_a_token_is_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    client_files::connect(&env, &site(8123, Some("t")), McpClient::Cursor, &Request::default()).unwrap();
    let file = env.user_file(McpClient::Cursor).unwrap();
    assert_eq!(std::fs::metadata(file).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn a_file_that_does_not_parse_is_never_written() {
    for client in file_clients() {
        let broken: &[&str] = if client == McpClient::Codex {
            &[
                "model = \n",
                "[mcp_servers.x]\nurl = 1\n[mcp_servers.x]\n",
                "mcp_servers = 3\n",
            ]
        } else {
            &[
                "{\"servers\": {",
                "{\"a\": 1 \"b\": 2}",
                "{'single': 1}",
                "[]",
                "{\"x\": 1} trailing",
                "\u{0}\u{1}",
            ]
        };
        for text in broken {
            let home = tempfile::tempdir().unwrap();
            let env = env(home.path());
            let file = env.user_file(client).unwrap();
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, text).unwrap();
            let err = client_files::connect(&env, &site(8123, None), client, &Request::default()).unwrap_err();
            let message = err.to_string();
            assert!(
                message.contains(&file.display().to_string()),
                "{client:?} {text:?}: {message}"
            );
            assert!(message.contains("left unchanged"), "{message}");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), *text, "{client:?}");
            assert!(backups_beside(&file).is_empty());
            assert!(!env.records.exists(), "nothing recorded");
            let status = client_files::client_status(&env, &site(8123, None), client, None);
            assert!(
                matches!(status.state, State::Unreadable | State::NotConnected),
                "{client:?} {text:?}: {status:?}"
            );
        }
    }
    // Servers key of the wrong type: refused, unchanged.
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    let file = env.user_file(McpClient::Cursor).unwrap();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{\"mcpServers\": [1]}").unwrap();
    let err = client_files::connect(&env, &site(8123, None), McpClient::Cursor, &Request::default()).unwrap_err();
    assert!(err.to_string().contains("\"mcpServers\" is not an object"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"mcpServers\": [1]}");
}

#[cfg(unix)]
#[test]
fn a_read_only_file_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    let file = env.user_file(McpClient::Vscode).unwrap();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{\"servers\": {}}\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    let err = client_files::connect(&env, &site(8123, None), McpClient::Vscode, &Request::default()).unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"servers\": {}}\n");
    assert!(backups_beside(&file).is_empty());
}

#[cfg(unix)]
#[test]
fn a_symlinked_file_is_edited_through_its_link() {
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    let dotfiles = home.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let real = dotfiles.join("cursor-mcp.json");
    std::fs::write(&real, "{\n  \"mcpServers\": {}\n}\n").unwrap();
    let link = env.user_file(McpClient::Cursor).unwrap();
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();

    client_files::connect(&env, &site(8123, None), McpClient::Cursor, &Request::default()).unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let value = parse(McpClient::Cursor, &std::fs::read_to_string(&real).unwrap());
    assert_eq!(value["mcpServers"]["local-mcp"]["url"], "http://127.0.0.1:8123/mcp");
    assert_eq!(backups_beside(&real).len(), 1, "the backup sits beside the real file");
    let status = client_files::client_status(&env, &site(8123, None), McpClient::Cursor, None);
    assert_eq!(status.state, State::Connected);
    client_files::disconnect(&env, McpClient::Cursor, &Request::default()).unwrap();
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "{\n  \"mcpServers\": {}\n}\n");
}

#[test]
fn disconnect_removes_only_what_connect_wrote_and_nobody_edited() {
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    let file = env.user_file(McpClient::Windsurf).unwrap();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    // An entry the person wrote by hand.
    let by_hand = "{\"mcpServers\": {\"local-mcp\": {\"serverUrl\": \"http://127.0.0.1:8000/mcp\"}}}";
    std::fs::write(&file, by_hand).unwrap();
    let err = client_files::disconnect(&env, McpClient::Windsurf, &Request::default()).unwrap_err();
    assert!(err.to_string().contains("not written by local-mcp"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), by_hand);

    // Ours, then edited by the person: reported, not removed.
    client_files::connect(&env, &site(8123, None), McpClient::Windsurf, &Request::default()).unwrap();
    let edited = std::fs::read_to_string(&file)
        .unwrap()
        .replace("http://127.0.0.1:8123/mcp", "http://127.0.0.1:8124/mcp");
    std::fs::write(&file, &edited).unwrap();
    let err = client_files::disconnect(&env, McpClient::Windsurf, &Request::default()).unwrap_err();
    assert!(err.to_string().contains("edited since"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);
    // …and "Update all" leaves it alone too.
    let results = client_files::update_all(&env, &site(9999, None)).unwrap();
    assert!(
        results
            .iter()
            .all(|r| r.as_ref().is_err_and(|e| e.contains("changed since"))),
        "{results:?}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);

    // Nothing there: nothing to do, and that is not an error.
    let home = tempfile::tempdir().unwrap();
    let env2 = self::env(home.path());
    let r = client_files::disconnect(&env2, McpClient::Windsurf, &Request::default()).unwrap();
    assert_eq!(r[0].action, Action::Absent);
}

#[test]
fn status_says_connected_outdated_or_not_and_update_all_repairs() {
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    let before = site(8123, Some("old"));
    for client in [McpClient::Vscode, McpClient::Codex, McpClient::GeminiCli] {
        client_files::connect(
            &env,
            &before,
            client,
            &Request {
                queue: Some("repo-a"),
                ..Request::default()
            },
        )
        .unwrap();
    }
    let by_id = |list: Vec<client_files::ClientStatus>| list.into_iter().map(|s| (s.id, s)).collect::<HashMap<_, _>>();
    let now = by_id(client_files::status(&env, &before, None));
    assert_eq!(now[&McpClient::Vscode].state, State::Connected);
    assert_eq!(now[&McpClient::Vscode].queue.as_deref(), Some("repo-a"));
    assert_eq!(now[&McpClient::Cursor].state, State::NotConnected);
    assert!(
        !now[&McpClient::Vscode].installed,
        "a folder connect made itself is no sign that VS Code is installed"
    );
    assert!(!now[&McpClient::Zed].installed);
    assert!(now[&McpClient::Vscode].deep_link && !now[&McpClient::Codex].deep_link);

    let token_changed = site(8123, Some("new"));
    let later = by_id(client_files::status(&env, &token_changed, None));
    assert_eq!(later[&McpClient::Codex].state, State::Outdated);
    assert!(later[&McpClient::Codex].detail.as_deref().unwrap().contains("token"));
    let port_changed = site(8200, Some("new"));
    let later = by_id(client_files::status(&env, &port_changed, None));
    assert!(later[&McpClient::GeminiCli].detail.as_deref().unwrap().contains("8123"));

    let results = client_files::update_all(&env, &port_changed).unwrap();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results
        .iter()
        .all(|r| r.as_ref().is_ok_and(|c| c.action == Action::Written)));
    let repaired = by_id(client_files::status(&env, &port_changed, None));
    for client in [McpClient::Vscode, McpClient::Codex, McpClient::GeminiCli] {
        assert_eq!(repaired[&client].state, State::Connected, "{client:?}");
        assert_eq!(repaired[&client].queue.as_deref(), Some("repo-a"), "the queue is kept");
    }
    assert!(client_files::update_all(&env, &port_changed).unwrap().is_empty());
}

#[test]
fn project_files_and_the_claude_code_stop_hook() {
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    let project = home.path().join("repo");
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    let settings = project.join(".claude/settings.json");
    let theirs = "{\n  // mine\n  \"permissions\": {\"allow\": [\"Bash(ls)\"]},\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}\n    ]\n  }\n}\n";
    std::fs::write(&settings, theirs).unwrap();
    let site = site(8123, None);
    let req = Request {
        project: Some(&project),
        queue: Some("repo"),
        hooks: true,
        ..Request::default()
    };
    let changes = client_files::connect(&env, &site, McpClient::ClaudeCode, &req).unwrap();
    assert_eq!(changes.len(), 2);
    assert!(changes.iter().all(|c| c.action == Action::Written));
    let mcp = parse(
        McpClient::ClaudeCode,
        &std::fs::read_to_string(project.join(".mcp.json")).unwrap(),
    );
    assert_eq!(
        mcp["mcpServers"]["local-mcp"]["url"],
        "http://127.0.0.1:8123/mcp/q/repo"
    );
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(text.contains("// mine"));
    let value = parse(McpClient::ClaudeCode, &text);
    let stop = value["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop.len(), 2, "theirs and ours");
    assert_eq!(
        stop[1]["hooks"][0]["command"],
        "/opt/local-mcp/local-mcp-server hook claude-stop --queue repo"
    );
    let status = client_files::client_status(&env, &site, McpClient::ClaudeCode, Some(&project));
    assert_eq!((status.state, status.hook), (State::Connected, Some(true)));

    let again = client_files::connect(&env, &site, McpClient::ClaudeCode, &req).unwrap();
    assert!(again.iter().all(|c| c.action == Action::Unchanged), "{again:?}");

    let gone = client_files::disconnect(
        &env,
        McpClient::ClaudeCode,
        &Request {
            project: Some(&project),
            ..Request::default()
        },
    )
    .unwrap();
    assert!(gone.iter().all(|c| c.action == Action::Removed), "{gone:?}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), theirs);

    // Clients without a project file say so; hooks are Claude Code's only.
    let err = client_files::connect(
        &env,
        &site,
        McpClient::CopilotCli,
        &Request {
            project: Some(&project),
            ..Request::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("no project-level"), "{err}");
    let err = client_files::connect(
        &env,
        &site,
        McpClient::Cursor,
        &Request {
            hooks: true,
            ..Request::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("only Claude Code"), "{err}");
}

#[test]
fn vs_code_gets_its_stop_hook_in_the_projects_github_hooks() {
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    let project = home.path().join("repo");
    std::fs::create_dir_all(&project).unwrap();
    let site = site(8123, None);
    let req = Request {
        project: Some(&project),
        queue: Some("repo"),
        hooks: true,
        ..Request::default()
    };
    let changes = client_files::connect(&env, &site, McpClient::Vscode, &req).unwrap();
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert!(changes.iter().all(|c| c.action == Action::Written), "{changes:?}");
    let file = project.join(".github/hooks/local-mcp.json");
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        value["hooks"]["Stop"],
        json!([{
            "type": "command",
            "command": "/opt/local-mcp/local-mcp-server hook vscode-stop --queue repo",
            "timeout": 10
        }]),
        "VS Code's form: commands, not Claude Code's groups"
    );
    let status = client_files::client_status(&env, &site, McpClient::Vscode, Some(&project));
    assert_eq!((status.state, status.hook), (State::Connected, Some(true)));
    let again = client_files::connect(&env, &site, McpClient::Vscode, &req).unwrap();
    assert!(again.iter().all(|c| c.action == Action::Unchanged), "{again:?}");

    // A hook of the person's own in the same file stays when ours goes.
    let mut edited = value.clone();
    edited["hooks"]["Stop"]
        .as_array_mut()
        .unwrap()
        .insert(0, json!({"type": "command", "command": "./notify.sh"}));
    edited["hooks"]["PostToolUse"] = json!([{"type": "command", "command": "npx prettier --write ."}]);
    std::fs::write(&file, serde_json::to_string_pretty(&edited).unwrap()).unwrap();
    let gone = client_files::disconnect(
        &env,
        McpClient::Vscode,
        &Request {
            project: Some(&project),
            ..Request::default()
        },
    )
    .unwrap();
    assert!(gone.iter().all(|c| c.action == Action::Removed), "{gone:?}");
    let left: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        left["hooks"]["Stop"],
        json!([{"type": "command", "command": "./notify.sh"}])
    );
    assert_eq!(left["hooks"]["PostToolUse"], edited["hooks"]["PostToolUse"]);

    // Without a project there is no place VS Code loads by default: refused, nothing written.
    let err = client_files::connect(
        &env,
        &site,
        McpClient::Vscode,
        &Request {
            hooks: true,
            ..Request::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("needs --project"), "{err}");
}

#[test]
fn dry_run_changes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    let file = env.user_file(McpClient::Zed).unwrap();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{\n  \"theme\": \"One Dark\"\n}\n").unwrap();
    let changes = client_files::connect(
        &env,
        &site(8123, None),
        McpClient::Zed,
        &Request {
            dry_run: true,
            ..Request::default()
        },
    )
    .unwrap();
    assert_eq!(changes[0].action, Action::WouldWrite);
    assert!(changes[0].preview.as_deref().unwrap().contains("\"context_servers\""));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\n  \"theme\": \"One Dark\"\n}\n"
    );
    assert!(backups_beside(&file).is_empty() && !env.records.exists());
}

#[test]
fn goose_is_pointed_to_its_install_link_not_edited() {
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    let err = client_files::connect(&env, &site(8123, None), McpClient::Goose, &Request::default()).unwrap_err();
    assert!(err.to_string().contains("YAML"), "{err}");
    let status = client_files::client_status(&env, &site(8123, None), McpClient::Goose, None);
    assert_eq!(status.state, State::Unavailable);
    assert!(status.deep_link, "without a token, Goose's link is offered");
    assert!(!client_files::client_status(&env, &site(8123, Some("t")), McpClient::Goose, None).deep_link);
}

#[test]
fn claude_code_user_scope_needs_its_own_command() {
    let home = tempfile::tempdir().unwrap();
    let env = env(home.path());
    std::fs::write(env.claude_code_state(), "{\"numStartups\": 3}").unwrap();
    let err = client_files::connect(&env, &site(8123, None), McpClient::ClaudeCode, &Request::default()).unwrap_err();
    assert!(err.to_string().contains("never edits ~/.claude.json"), "{err}");
    assert_eq!(
        std::fs::read_to_string(env.claude_code_state()).unwrap(),
        "{\"numStartups\": 3}"
    );
}

#[test]
fn the_connect_command_end_to_end() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_local-mcp-server"))
            .args(args)
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join(".config"))
            // The same fresh home on Windows, where clients find theirs by these two.
            .env("USERPROFILE", home.path())
            .env("APPDATA", home.path().join(".config"))
            .env_remove("LOCAL_MCP_TOKEN")
            .env_remove("LOCAL_MCP_URL")
            .env_remove("CODEX_HOME")
            .output()
            .unwrap()
    };
    // Codex is not installed in this fresh home: --force writes its file anyway.
    let out = run(&[
        "connect",
        "codex",
        "--force",
        "--url",
        "http://127.0.0.1:8765/mcp",
        "--token",
        "tk",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let config = std::fs::read_to_string(home.path().join(".codex/config.toml")).unwrap();
    let table: toml::Table = config.parse().unwrap();
    assert_eq!(
        table["mcp_servers"]["local-mcp"]["http_headers"]["Authorization"].as_str(),
        Some("Bearer tk")
    );

    let out = run(&[
        "connect",
        "--json",
        "--url",
        "http://127.0.0.1:8765/mcp",
        "--token",
        "tk",
    ]);
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let codex = list.iter().find(|c| c["id"] == "codex").unwrap();
    assert_eq!(codex["state"], "connected");
    // Its folder is the one connect made: no sign that Codex is installed.
    assert_eq!(codex["installed"], false);

    std::fs::create_dir_all(home.path().join(".cursor")).unwrap();
    std::fs::write(home.path().join(".cursor/mcp.json"), "{,}").unwrap();
    let out = run(&["connect", "cursor", "--url", "http://127.0.0.1:8765/mcp"]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    let named = format!(".cursor{}mcp.json does not parse", std::path::MAIN_SEPARATOR);
    assert!(said.contains(&named), "{said}");

    let out = run(&["disconnect", "codex"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The file (and its folder) were connect's own: both are gone again.
    assert!(!home.path().join(".codex").exists());
    let _ = json!(null);
}

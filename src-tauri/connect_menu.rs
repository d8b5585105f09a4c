//! The tray's "Connect ▸" submenu: each MCP client found on this computer
//! with its state ("VS Code: connected", "Cursor: connect…"), a click that
//! connects it through the engine's [`engine::client_files`] (the same safe edit
//! as the page and the CLI), and "Update all" when a new port or token made
//! entries outdated. Rebuilt after each action and once a minute.

use engine::model::McpClient;
use std::time::Duration;

use engine::client_files::{self, ClientStatus, Env, Request, Site, State};
use engine::snippets;
use tauri::menu::{MenuItem, PredefinedMenuItem, Submenu};
use tauri::{AppHandle, Manager, Wry};

use crate::notify;
use crate::shell::Shell;

/// Prefix of the per-client items; the client id follows.
pub const PREFIX: &str = "connect:";
pub const UPDATE_ALL: &str = "connect-update-all";

/// How often the states are read again (a client installed or edited meanwhile).
const REFRESH_EVERY: Duration = Duration::from_secs(60);

struct ConnectMenu(Submenu<Wry>);

pub fn create(app: &AppHandle) -> tauri::Result<Submenu<Wry>> {
    let menu = Submenu::with_items(app, "Connect", true, &[])?;
    app.manage(ConnectMenu(menu.clone()));
    let handle = app.clone();
    std::thread::spawn(move || loop {
        refresh_now(&handle);
        std::thread::sleep(REFRESH_EVERY);
    });
    Ok(menu)
}

fn site(shell: &Shell) -> Site {
    Site {
        base_url: shell
            .mcp_url
            .trim_end_matches('/')
            .trim_end_matches(engine::model::MCP_PATH)
            .to_owned(),
        token: shell.credentials.token().filter(|_| shell.credentials.token_required()),
        program: snippets::bridge_program(),
        database: shell.database.clone(),
    }
}

/// The item's words: the client, then what a click does or what it is.
pub fn label(c: &ClientStatus) -> String {
    let what = match c.state {
        State::Connected => "connected",
        State::Outdated => "outdated — update",
        State::NotConnected => "connect",
        State::Unreadable => "cannot read its file",
        State::Unavailable => "unavailable",
    };
    format!("{}: {what}", c.name)
}

/// Read every client's state (file reads: off the main thread) and show it.
fn refresh_now(app: &AppHandle) {
    let (Some(shell), Some(env)) = (app.try_state::<Shell>(), Env::from_process()) else {
        return;
    };
    let list = client_files::status(&env, &site(&shell), None);
    let handle = app.clone();
    let _ = app.run_on_main_thread(move || rebuild(&handle, &list));
}

fn refresh(app: &AppHandle) {
    let handle = app.clone();
    std::thread::spawn(move || refresh_now(&handle));
}

fn rebuild(app: &AppHandle, list: &[ClientStatus]) {
    let menu = &app.state::<ConnectMenu>().0;
    if let Ok(old) = menu.items() {
        for item in old {
            let _ = menu.remove(&item);
        }
    }
    let shown = list
        .iter()
        .filter(|c| c.installed || !matches!(c.state, State::NotConnected | State::Unavailable));
    for c in shown {
        let clickable = matches!(c.state, State::NotConnected | State::Outdated);
        if let Ok(item) = MenuItem::with_id(app, format!("{PREFIX}{}", c.id.id()), label(c), clickable, None::<&str>) {
            let _ = menu.append(&item);
        }
    }
    if let Ok(sep) = PredefinedMenuItem::separator(app) {
        let _ = menu.append(&sep);
    }
    let outdated = list.iter().any(|c| c.state == State::Outdated);
    if let Ok(item) = MenuItem::with_id(app, UPDATE_ALL, "Update all", outdated, None::<&str>) {
        let _ = menu.append(&item);
    }
}

/// Handle a click on one of this submenu's items; `false` when it is not one.
pub fn on_menu(app: &AppHandle, id: &str) -> bool {
    if id == UPDATE_ALL {
        run(app, None);
        return true;
    }
    match id.strip_prefix(PREFIX).and_then(McpClient::from_id) {
        Some(client) => {
            run(app, Some(client));
            true
        }
        None => false,
    }
}

/// Connect one client (or update all) off the main thread; say the outcome.
fn run(app: &AppHandle, client: Option<McpClient>) {
    let handle = app.clone();
    std::thread::spawn(move || {
        let (Some(shell), Some(env)) = (handle.try_state::<Shell>(), Env::from_process()) else {
            return;
        };
        let site = site(&shell);
        match client {
            Some(client) => match client_files::connect(&env, &site, client, &Request::default()) {
                Ok(changes) => {
                    let body = changes
                        .iter()
                        .map(|c| {
                            format!(
                                "{}{}",
                                c.file,
                                c.note.as_deref().map(|n| format!(" — {n}")).unwrap_or_default()
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    notify::send(&handle, &format!("{} connected to local-mcp", client.name()), &body);
                }
                Err(e) => notify::send(&handle, &format!("Could not connect {}", client.name()), &e.to_string()),
            },
            None => match client_files::update_all(&env, &site) {
                Ok(results) => {
                    let done = results.iter().filter(|r| r.is_ok()).count();
                    let left: Vec<String> = results.into_iter().filter_map(Result::err).collect();
                    notify::send(&handle, &format!("{done} client(s) updated"), &left.join("\n"));
                }
                Err(e) => notify::send(&handle, "Could not update the clients", &e.to_string()),
            },
        }
        refresh_now(&handle);
    });
    refresh(app);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(state: State) -> ClientStatus {
        ClientStatus {
            id: McpClient::Cursor,
            name: "Cursor",
            installed: true,
            state,
            file: None,
            detail: None,
            queue: None,
            project_level: true,
            deep_link: true,
            hook: None,
        }
    }

    #[test]
    fn each_state_reads_as_what_a_click_does() {
        assert_eq!(label(&status(State::Connected)), "Cursor: connected");
        assert_eq!(label(&status(State::NotConnected)), "Cursor: connect");
        assert_eq!(label(&status(State::Outdated)), "Cursor: outdated — update");
        assert_eq!(label(&status(State::Unreadable)), "Cursor: cannot read its file");
        assert_eq!(label(&status(State::Unavailable)), "Cursor: unavailable");
    }
}

//! Pure decisions of the shell, kept apart from Tauri so they are easy to test:
//! what the tray shows for a status, which agents just started waiting, what
//! a notification says, and what a navigation in a window means.

use std::collections::HashSet;

use engine::model::StatusSnapshot;
use engine::model::{AgentId, AgentState, QueueName};

/// The three tray images: a call is waiting, an instruction is being worked
/// on, or nobody is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayIcon {
    /// An agent asked a question and waits for the answer.
    NeedsYou,
    Listening,
    Working,
    Offline,
}

impl TrayIcon {
    pub fn png(self) -> &'static [u8] {
        match self {
            TrayIcon::NeedsYou => include_bytes!("../icons/tray-needs-you.png"),
            TrayIcon::Listening => include_bytes!("../icons/tray-listening.png"),
            TrayIcon::Working => include_bytes!("../icons/tray-working.png"),
            TrayIcon::Offline => include_bytes!("../icons/tray-offline.png"),
        }
    }
}

/// Everything the tray shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayView {
    pub icon: TrayIcon,
    pub tooltip: String,
    pub pending_label: String,
    /// One line per queue ("proj — 2 pending · held"), when there is more
    /// than one queue or one is held.
    pub queue_labels: Vec<String>,
    /// Whether any queue is held ("Release all" rather than "Hold all").
    pub any_held: bool,
    /// The question quick add answers now: (report id, agent id).
    pub answer: Option<(String, String)>,
    /// Every agent waiting on its question ("Needs you" in the menu).
    pub asking: Vec<Asking>,
    /// Short text beside the icon, only while something needs the person:
    /// Linux trays (AppIndicator) show no tooltips, so this is what says it there.
    pub title: Option<String>,
    /// The engine's log folder ("Open log folder"), `None` when it writes no files.
    pub log_dir: Option<String>,
}

fn pending_words(n: u64) -> String {
    match n {
        0 => "nothing pending".into(),
        1 => "1 pending".into(),
        n => format!("{n} pending"),
    }
}

/// The agents that started waiting on an empty queue since the previous
/// snapshot (for "<agent> is waiting for you"). `listening` remembers who was
/// listening; it forgets agents that left the report, so it cannot grow
/// without bound. Snapshots are coalesced, so an agent that stopped and
/// started again between two of them is not announced twice.
pub fn newly_waiting(listening: &mut HashSet<String>, status: &StatusSnapshot) -> Vec<String> {
    // An agent is its id within a queue.
    let key = |a: &engine::model::AgentStatus| format!("{}\n{}", a.queue, a.agent_id);
    let pending_in = |queue: &str| {
        status
            .queues
            .iter()
            .find(|q| q.name == queue)
            .map_or(0, |q| q.pending_count)
    };
    let now: HashSet<String> = status
        .agents
        .iter()
        .filter(|a| matches!(a.state, AgentState::Listening | AgentState::NeedsYou))
        .map(key)
        .collect();
    let started: Vec<String> = status
        .agents
        .iter()
        .filter(|a| now.contains(&key(a)) && !listening.contains(&key(a)))
        // Waiting with work queued means a hold or a target elsewhere, not "waiting for you".
        .filter(|a| pending_in(&a.queue) == 0)
        .map(|a| a.agent_id.to_string())
        .collect();
    *listening = now;
    started
}

/// What the person is told when the configured port was taken. Another
/// account holding it is a warning: agents configured for that port would
/// talk to a stranger's server.
pub fn port_fallback_notification(port: u16, holder: Option<&str>, mcp_url: &str) -> (String, String) {
    match holder {
        Some(who) => (
            format!("Port {port} is held by another account"),
            format!(
                "{who} runs a server on port {port}: agents configured for port {port} would reach another \
                 account's server. local-mcp is serving on {mcp_url} — point your agents there."
            ),
        ),
        None => (
            format!("Port {port} was taken"),
            format!("local-mcp is serving on {mcp_url} — update your agents' MCP URL."),
        ),
    }
}

/// An agent's client and the wait it gets, for the tooltip:
/// " (Claude Code 2.1.330 · waits up to 108 s)", or nothing when its client is unknown.
pub fn client_note(status: &StatusSnapshot, agent_id: &str) -> String {
    let Some(client) = status
        .agents
        .iter()
        .find(|a| a.agent_id == agent_id)
        .and_then(|a| a.client.as_ref())
    else {
        return String::new();
    };
    let version = client.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default();
    format!(" ({}{version} · waits up to {} s)", client.name, client.wait_seconds)
}

/// An agent waiting on its question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asking {
    pub report: String,
    pub queue: QueueName,
    pub agent: AgentId,
}

/// The agents waiting on an unanswered question, as the status lists them.
fn asking(status: &StatusSnapshot) -> Vec<Asking> {
    status
        .agents
        .iter()
        .filter(|a| a.state == AgentState::NeedsYou || (a.state == AgentState::Listening && a.asking.is_some()))
        .filter_map(|a| {
            Some(Asking {
                report: a.asking.clone()?,
                queue: a.queue.clone(),
                agent: a.agent_id.clone(),
            })
        })
        .collect()
}

/// Text as a menu shows it: muda reads a single `&` as the mark of a
/// keyboard shortcut (GTK's `_`, Windows' `&`), so "Fix & push" would show
/// as "Fix  push"; `&&` is a literal one.
pub fn menu_text(text: &str) -> String {
    text.replace('&', "&&")
}

/// A "Needs you" entry: "claude: Merge the branch now?" (the queue named
/// when it is not `default`); "claude asks" until the question is read.
pub fn needs_you_label(asked: &Asking, question: Option<&str>) -> String {
    let who = if asked.queue.is_default() {
        asked.agent.to_string()
    } else {
        format!("{} in {}", asked.agent, asked.queue)
    };
    match question.map(|q| first_line(q, 60)).filter(|q| !q.is_empty()) {
        Some(q) => format!("{who}: {q}"),
        None => format!("{who} asks"),
    }
}

/// An agent state in the page's words (`ui/js/presence.js`, `WORDS`), so
/// the tray and the page never describe one agent two ways.
pub fn state_word(state: AgentState) -> &'static str {
    match state {
        AgentState::NeedsYou => "Needs you",
        AgentState::Listening => "Listening",
        AgentState::Working => "Working",
        AgentState::Idle => "Idle",
        AgentState::Offline => "Offline",
    }
}

/// The tray for a status snapshot.
pub fn tray_view(status: &StatusSnapshot) -> TrayView {
    let agent = &status.agent;
    let pending = pending_words(status.queue.pending_count);
    // The page's header: the loudest agent's state in its words, and who.
    let icon = match (agent.agent_id.as_deref(), agent.state) {
        (Some(_), AgentState::NeedsYou) => TrayIcon::NeedsYou,
        (Some(_), AgentState::Listening) => TrayIcon::Listening,
        (Some(_), AgentState::Working) => TrayIcon::Working,
        _ => TrayIcon::Offline,
    };
    let who = match agent.agent_id.as_deref() {
        Some(id) => {
            let stopping = status.agents.iter().any(|a| a.agent_id == id && a.stop_requested);
            let word = if stopping && agent.state != AgentState::Offline {
                "Stopping"
            } else {
                state_word(agent.state)
            };
            format!("{word} · {id}{}", client_note(status, id))
        }
        None => "No agent yet".into(),
    };
    let held: Vec<&str> = status
        .queues
        .iter()
        .filter(|q| q.held)
        .map(|q| q.name.as_str())
        .collect();
    let held_note = match held.as_slice() {
        [] => String::new(),
        names => format!(" · held: {}", names.join(", ")),
    };
    let queue_labels = if status.queues.len() > 1 || !held.is_empty() {
        status
            .queues
            .iter()
            .map(|q| {
                let mut label = format!("{} — {}", q.name, pending_words(q.pending_count));
                if q.held {
                    label.push_str(" · held");
                }
                label
            })
            .collect()
    } else {
        Vec::new()
    };
    let asking = asking(status);
    let answer = asking.first().map(|a| (a.report.clone(), a.agent.to_string()));
    let (icon, who) = match asking.as_slice() {
        [] => (icon, who),
        [a] => (
            TrayIcon::NeedsYou,
            format!("Needs you · {} (quick add answers it)", a.agent),
        ),
        [a, rest @ ..] => (
            TrayIcon::NeedsYou,
            format!(
                "Needs you · {} and {} more (quick add answers {0})",
                a.agent,
                rest.len()
            ),
        ),
    };
    // A database that cannot be written outranks everything: nothing new can
    // be queued or delivered until the person (or time) fixes it.
    let (icon, tooltip) = match &status.server.storage_fault {
        Some(fault) => (
            TrayIcon::NeedsYou,
            format!("local-mcp cannot write its database — {fault}"),
        ),
        None => (
            icon,
            format!(
                "local-mcp — {who} · {pending}{held_note}{}",
                doubt_note(status.queue.in_doubt_count)
            ),
        ),
    };
    TrayView {
        icon,
        answer,
        asking,
        tooltip,
        title: alert_title(status),
        pending_label: capitalize(&pending),
        queue_labels,
        any_held: !held.is_empty(),
        log_dir: status.server.log_dir.clone(),
    }
}

/// The text beside the icon: a database that cannot be written, or deliveries in doubt.
fn alert_title(status: &StatusSnapshot) -> Option<String> {
    if status.server.storage_fault.is_some() {
        return Some("cannot write".into());
    }
    match status.queue.in_doubt_count {
        0 => None,
        n => Some(format!("{n} in doubt")),
    }
}

fn doubt_note(n: u64) -> String {
    match n {
        0 => String::new(),
        1 => " · 1 delivery in doubt".into(),
        n => format!(" · {n} deliveries in doubt"),
    }
}

/// When a delivery's answer was cut off: the agent may never have seen it.
pub fn in_doubt_notification(agent: &str, content: &str) -> (String, String) {
    (
        format!("{agent} may not have received: {}", first_line(content, 60)),
        "Its answer was cut off. Send it again from the ledger.".to_owned(),
    )
}

/// The desktop running as a headless server's window and tray says so.
pub fn attached(mut view: TrayView, base: &str) -> TrayView {
    view.tooltip = format!("{} · the window of the local-mcp server at {base}", view.tooltip);
    view
}

/// While the server this desktop is attached to does not answer.
pub fn attached_gone(base: &str) -> String {
    format!("local-mcp — the server at {base} is not answering (retrying)")
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// The first line of an instruction, shortened for a notification.
pub fn first_line(content: &str, max_chars: usize) -> String {
    let line = content.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if line.chars().count() <= max_chars {
        line.to_owned()
    } else {
        line.chars().take(max_chars.saturating_sub(1)).collect::<String>() + "…"
    }
}

/// "<agent> picked up: <first line>" and how many are left.
pub fn consumed_notification(agent: &str, content: &str, pending: u64) -> (String, String) {
    let title = format!("{agent} picked up: {}", first_line(content, 80));
    (title, pending_left(pending))
}

/// "3 instructions left in the queue." (after a delivery).
pub fn pending_left(pending: u64) -> String {
    match pending {
        0 => "The queue is empty now.".to_owned(),
        1 => "1 instruction left in the queue.".to_owned(),
        n => format!("{n} instructions left in the queue."),
    }
}

/// "<agent> reported: <first line>".
pub fn report_notification(agent: &str, content: &str) -> (String, String) {
    let mut lines = content.lines().map(str::trim).filter(|l| !l.is_empty());
    let title = format!("{agent} reported: {}", first_line(content, 80));
    let body = lines.nth(1).map(|l| first_line(l, 160)).unwrap_or_default();
    (title, body)
}

/// The database was found damaged at start and moved aside.
/// When the database stops accepting writes (the tooltip keeps saying so until it clears).
pub fn storage_fault_notification(fault: &str) -> (String, String) {
    ("local-mcp cannot write its database".to_owned(), fault.to_owned())
}

pub fn recovery_notification(moved_to: &str) -> (String, String) {
    (
        "local-mcp started with a fresh database".to_owned(),
        format!("The old one was damaged; it is kept, unchanged, at {moved_to}"),
    )
}

/// What "Queue clipboard" did: the image's size and the text's first line,
/// or why nothing was queued.
pub fn clipboard_notification(image: Option<(u32, u32)>, text: Option<&str>, failed: Option<&str>) -> (String, String) {
    if let Some(why) = failed {
        return ("Nothing queued from the clipboard".to_owned(), first_line(why, 160));
    }
    let what = match (image, text) {
        (Some((w, h)), Some(_)) => format!("a {w}×{h} image and text"),
        (Some((w, h)), None) => format!("a {w}×{h} image"),
        _ => "text".to_owned(),
    };
    (
        format!("Queued from the clipboard: {what}"),
        text.map(|t| first_line(t, 160)).unwrap_or_default(),
    )
}

/// An agent has started waiting on an empty queue.
pub fn waiting_notification(agent: &str) -> (String, String) {
    (
        format!("{agent} is waiting for you"),
        "The queue is empty: add the next instruction.".to_owned(),
    )
}

/// What a navigation in the quick-add window means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuickAddNav {
    /// The instruction was queued: close the window.
    Done,
    /// The person pressed Esc: close the window.
    Cancel,
    /// Anything else on the engine's origin: let it load.
    Allow,
    /// Somewhere else: refuse.
    Refuse,
}

pub fn quick_add_nav(url: &url::Url, engine_origin: &url::Origin) -> QuickAddNav {
    if url.origin() != *engine_origin {
        return QuickAddNav::Refuse;
    }
    match url.path() {
        "/quick-add/done" => QuickAddNav::Done,
        "/quick-add/cancel" => QuickAddNav::Cancel,
        _ => QuickAddNav::Allow,
    }
}

/// May the main window go to `url`? Only the engine's own pages (and the
/// shell's placeholder); anything else opens in the system browser instead.
pub fn main_window_may_load(url: &url::Url, engine_origin: &url::Origin) -> bool {
    url.origin() == *engine_origin
        || matches!(url.scheme(), "tauri")
        || url.host_str() == Some("tauri.localhost")
        || url.as_str() == "about:blank"
}

/// Why the app cannot open windows here, if it cannot.
pub fn missing_display(display: Option<&str>, wayland: Option<&str>) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let set = |v: Option<&str>| v.is_some_and(|v| !v.is_empty());
    if set(display) || set(wayland) {
        return None;
    }
    Some(format!(
        "local-mcp: no graphical display (neither DISPLAY nor WAYLAND_DISPLAY is set), so the tray app cannot start.\n{HEADLESS}"
    ))
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
/// What to say when the display `display` (the variable's value) is set but
/// cannot be opened: no X server there, or one that refuses this account.
// Only Linux opens the display before Tauri does (`webview_helpers::open_display`).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub fn unopenable_display(display: &str) -> String {
    format!("local-mcp: cannot open the display {display:?}, so the tray app cannot start.\n{HEADLESS}")
}

/// Where to turn without a display.
const HEADLESS: &str = "On a machine without a display run the headless server instead — same options, same URL:\n\
     \n    local-mcp-server            (or: npm start, which picks it for you)\n";

#[cfg(test)]
mod clipboard_tests {
    use super::clipboard_notification;

    #[test]
    fn a_recovery_says_where_the_old_database_is() {
        let (title, body) = super::recovery_notification("/data/q.sqlite3.corrupt-20261124T090000Z");
        assert!(title.contains("fresh database"));
        assert!(body.ends_with("/data/q.sqlite3.corrupt-20261124T090000Z"));
    }

    #[test]
    fn clipboard_notifications_say_what_was_queued() {
        let (title, body) = clipboard_notification(Some((1920, 1080)), Some("Fix this\nplease"), None);
        assert_eq!(title, "Queued from the clipboard: a 1920×1080 image and text");
        assert_eq!(body, "Fix this");
        assert_eq!(
            clipboard_notification(Some((8, 4)), None, None).0,
            "Queued from the clipboard: a 8×4 image"
        );
        assert_eq!(
            clipboard_notification(None, Some("hi"), None).0,
            "Queued from the clipboard: text"
        );
        let (title, body) = clipboard_notification(None, None, Some("The clipboard holds no image or text."));
        assert_eq!(title, "Nothing queued from the clipboard");
        assert_eq!(body, "The clipboard holds no image or text.");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ampersand_in_a_menu_is_shown_not_taken_for_a_shortcut() {
        assert_eq!(menu_text("Fix & push"), "Fix && push");
        assert_eq!(menu_text("R&&D"), "R&&&&D");
        assert_eq!(menu_text("plain"), "plain");
    }

    fn q(name: &str) -> QueueName {
        QueueName::new(name).unwrap()
    }

    fn id(agent: &str) -> AgentId {
        AgentId::new(agent).unwrap().unwrap()
    }
    use engine::model::{AgentSummary, ServerSummary};
    use engine::model::{QueueCounts, Settings};

    fn status(agent: Option<&str>, state: AgentState, pending: u64) -> StatusSnapshot {
        StatusSnapshot {
            server: ServerSummary {
                status: engine::model::ServerState::Up,
                started_at: engine::model::Timestamp::now(),
                url: "http://127.0.0.1:8000".into(),
                version: "0".into(),
                pid: 0,
                instance: "i".into(),
                requested_port: None,
                requested_port_holder: None,
                recovered: None,
                log_dir: None,
                storage_fault: None,
                refused_without_token: None,
            },
            agent: AgentSummary {
                connected: state != AgentState::Offline,
                state,
                agent_id: agent.map(id),
                last_seen_at: None,
                last_fetch_at: None,
                waiting: state == AgentState::Listening,
            },
            agents: vec![],
            queue: QueueCounts {
                pending_count: pending,
                consumed_count: 0,
                in_doubt_count: 0,
                held_count: 0,
            },
            queues: vec![queue("default", pending, false)],
            settings: Settings::default(),
        }
    }

    fn queue(name: &str, pending: u64, held: bool) -> engine::model::QueueInfo {
        engine::model::QueueInfo {
            name: q(name),
            held,
            archived: false,
            created_at: engine::model::Timestamp::now(),
            suffix: None,
            pending_count: pending,
            consumed_count: 0,
            held_count: 0,
            waiting_agents: vec![],
        }
    }

    #[test]
    fn the_tooltip_names_the_agents_client_and_its_wait_and_needs_you_is_loudest() {
        use AgentState::*;
        let mut s = with_agents(0, &[("claude-myrepo", Listening)]);
        s.agent = AgentSummary {
            connected: true,
            state: Listening,
            agent_id: Some(id("claude-myrepo")),
            last_seen_at: None,
            last_fetch_at: None,
            waiting: true,
        };
        s.agents[0].client = Some(engine::model::AgentClient {
            name: "Claude Code".into(),
            version: Some("2.1.330".into()),
            wait_seconds: 108,
        });
        let v = tray_view(&s);
        assert!(
            v.tooltip
                .contains("Listening · claude-myrepo (Claude Code 2.1.330 · waits up to 108 s)"),
            "{}",
            v.tooltip
        );
        // The engine's own "needs you": the loudest icon, and the question to answer.
        s.agent.state = NeedsYou;
        s.agents[0].state = NeedsYou;
        s.agents[0].asking = Some("r9".into());
        let v = tray_view(&s);
        assert_eq!(v.icon, TrayIcon::NeedsYou);
        assert_eq!(v.answer, Some(("r9".into(), "claude-myrepo".into())));
        assert_eq!(newly_waiting(&mut HashSet::new(), &s), ["claude-myrepo"]);
    }

    #[test]
    fn a_waiting_agent_with_a_question_needs_you() {
        use AgentState::*;
        let mut s = with_agents(0, &[("asker", Listening), ("other", Listening)]);
        assert_ne!(tray_view(&s).icon, TrayIcon::NeedsYou, "no question asked yet");
        s.agents[0].asking = Some("r1".into());
        let v = tray_view(&s);
        assert_eq!(v.icon, TrayIcon::NeedsYou);
        assert!(v.tooltip.contains("Needs you · asker"), "{}", v.tooltip);
        assert_eq!(v.answer, Some(("r1".into(), "asker".into())));
        // Once it works (an answer reached it) the question is gone.
        s.agents[0].state = Working;
        assert_eq!(tray_view(&s).answer, None);
        let (title, body) = report_notification("asker", "Which DB?\n\nSQLite or Postgres");
        assert_eq!(
            (title.as_str(), body.as_str()),
            ("asker reported: Which DB?", "SQLite or Postgres")
        );
    }

    #[test]
    fn a_database_that_cannot_be_written_takes_over_the_tray_until_it_clears() {
        let mut s = status(Some("copilot"), AgentState::Listening, 3);
        assert_eq!(tray_view(&s).icon, TrayIcon::Listening);
        s.server.storage_fault = Some("the disk holding /d/q.sqlite3 is full: free some space".into());
        let v = tray_view(&s);
        assert_eq!(v.icon, TrayIcon::NeedsYou);
        assert_eq!(
            v.tooltip,
            "local-mcp cannot write its database — the disk holding /d/q.sqlite3 is full: free some space"
        );
        assert_eq!(v.title.as_deref(), Some("cannot write"));
        s.server.storage_fault = None;
        assert!(tray_view(&s).tooltip.starts_with("local-mcp — Listening · copilot"));
    }

    #[test]
    fn attached_to_a_headless_server_the_tray_says_whose_window_it_is() {
        let v = attached(
            tray_view(&status(Some("copilot"), AgentState::Listening, 1)),
            "http://127.0.0.1:8000",
        );
        assert_eq!(
            v.tooltip,
            "local-mcp — Listening · copilot · 1 pending · the window of the local-mcp server at http://127.0.0.1:8000"
        );
        assert!(attached_gone("http://127.0.0.1:8000").contains("not answering"));
    }

    #[test]
    fn deliveries_in_doubt_are_counted_in_the_tooltip_and_notified() {
        let mut s = status(Some("copilot"), AgentState::Listening, 0);
        s.queue.in_doubt_count = 2;
        assert!(
            tray_view(&s)
                .tooltip
                .ends_with("nothing pending · 2 deliveries in doubt"),
            "{}",
            tray_view(&s).tooltip
        );
        assert_eq!(tray_view(&s).title.as_deref(), Some("2 in doubt"));
        s.queue.in_doubt_count = 0;
        assert_eq!(tray_view(&s).title, None, "nothing beside the icon when all is well");
        let (title, body) = in_doubt_notification("copilot", "Fix the build\nthen deploy");
        assert_eq!(title, "copilot may not have received: Fix the build");
        assert!(body.contains("Send it again"));
    }

    #[test]
    fn several_queues_are_listed_and_a_hold_shows() {
        let mut s = status(Some("copilot"), AgentState::Listening, 3);
        let v = tray_view(&s);
        assert!(
            v.queue_labels.is_empty() && !v.any_held,
            "one queue: the pending line says it all"
        );
        s.queues = vec![queue("default", 1, false), queue("proj", 2, true)];
        let v = tray_view(&s);
        assert_eq!(v.queue_labels, ["default — 1 pending", "proj — 2 pending · held"]);
        assert!(v.any_held);
        assert!(v.tooltip.ends_with("3 pending · held: proj"), "{}", v.tooltip);
    }

    fn with_agents(pending: u64, agents: &[(&str, AgentState)]) -> StatusSnapshot {
        let mut s = status(None, AgentState::Offline, pending);
        s.agents = agents
            .iter()
            .map(|(id_, state)| engine::model::AgentStatus {
                agent_id: id(id_),
                queue: q("default"),
                stop_requested: false,
                asking: None,
                state: *state,
                connected: *state != AgentState::Offline,
                waiting: matches!(*state, AgentState::Listening | AgentState::NeedsYou),
                last_seen_at: None,
                last_fetch_at: None,
                last_result_type: None,
                client: None,
                session: None,
                in_task: false,
            })
            .collect();
        s
    }

    #[test]
    fn an_agent_is_announced_once_each_time_it_starts_waiting_on_an_empty_queue() {
        use AgentState::*;
        let mut seen = HashSet::new();
        let first = with_agents(0, &[("a", Listening), ("b", Working)]);
        assert_eq!(newly_waiting(&mut seen, &first), ["a"]);
        assert!(newly_waiting(&mut seen, &first).is_empty(), "still waiting: not again");
        let next = with_agents(0, &[("a", Working), ("b", Listening)]);
        assert_eq!(newly_waiting(&mut seen, &next), ["b"]);
        let back = with_agents(0, &[("a", Listening), ("b", Listening)]);
        assert_eq!(newly_waiting(&mut seen, &back), ["a"], "a waits again after working");
        // With instructions pending nobody waits for the person; the state is still followed.
        let busy = with_agents(2, &[("c", Listening)]);
        assert!(newly_waiting(&mut seen, &busy).is_empty());
        // Work queued in another queue does not count: that agent waits for the person.
        let mut elsewhere = with_agents(2, &[("d", Listening)]);
        elsewhere.agents[0].queue = q("proj");
        let mut fresh = HashSet::new();
        assert_eq!(newly_waiting(&mut fresh, &elsewhere), ["d"]);
        assert_eq!(
            seen,
            HashSet::from(["default\nc".to_owned()]),
            "agents gone from the report are forgotten"
        );
        assert!(newly_waiting(&mut seen, &with_agents(0, &[("c", Listening)])).is_empty());
    }

    #[test]
    fn a_port_held_by_another_account_is_a_warning_that_names_it() {
        let (title, body) = port_fallback_notification(8000, Some("mallory (uid 1001)"), "http://127.0.0.1:8001/mcp");
        assert_eq!(title, "Port 8000 is held by another account");
        assert!(
            body.contains("mallory (uid 1001)") && body.contains("another account's server"),
            "{body}"
        );
        assert!(body.contains("http://127.0.0.1:8001/mcp"));
        let (title, _) = port_fallback_notification(8000, None, "http://127.0.0.1:8001/mcp");
        assert_eq!(title, "Port 8000 was taken");
    }

    #[test]
    fn each_agent_state_has_its_icon_tooltip_and_menu_label() {
        let v = tray_view(&status(Some("copilot"), AgentState::Listening, 0));
        assert_eq!(v.icon, TrayIcon::Listening);
        assert_eq!(v.tooltip, "local-mcp — Listening · copilot · nothing pending");
        assert_eq!(v.pending_label, "Nothing pending");
        let v = tray_view(&status(Some("claude"), AgentState::Working, 3));
        assert_eq!(v.icon, TrayIcon::Working);
        assert_eq!(v.tooltip, "local-mcp — Working · claude · 3 pending");
        assert_eq!(v.pending_label, "3 pending");
        let v = tray_view(&status(Some("claude"), AgentState::Offline, 1));
        assert_eq!(v.icon, TrayIcon::Offline);
        assert_eq!(v.tooltip, "local-mcp — Offline · claude · 1 pending");
        let v = tray_view(&status(None, AgentState::Offline, 0));
        assert_eq!(v.icon, TrayIcon::Offline);
        assert_eq!(v.tooltip, "local-mcp — No agent yet · nothing pending");
        let v = tray_view(&status(Some("cursor"), AgentState::Idle, 2));
        assert_eq!(
            (v.icon, v.tooltip.as_str()),
            (TrayIcon::Offline, "local-mcp — Idle · cursor · 2 pending")
        );
        for icon in [TrayIcon::Listening, TrayIcon::Working, TrayIcon::Offline] {
            assert_eq!(&icon.png()[1..4], b"PNG");
        }
    }

    #[test]
    fn the_tray_says_each_state_in_the_pages_words() {
        // The page's words, read from the page itself: a change there that is
        // not made here fails this test.
        let page = include_str!("../ui/js/presence.js");
        let words = &page[page.find("export const WORDS = {").expect("presence.js has WORDS")..];
        let words = &words[..words.find("};").unwrap()];
        use AgentState::*;
        for (state, key) in [
            (NeedsYou, "needs_you"),
            (Listening, "listening"),
            (Working, "working"),
            (Idle, "idle"),
            (Offline, "offline"),
        ] {
            assert!(
                words.contains(&format!("{key}: \"{}\"", state_word(state))),
                "{key}: the page says otherwise: {words}"
            );
            let v = tray_view(&status(Some("a"), state, 0));
            assert!(
                v.tooltip.starts_with(&format!("local-mcp — {} · a", state_word(state))),
                "{}",
                v.tooltip
            );
        }
        assert!(page.contains("\"Stopping\""), "the page says Stopping too");
        let mut s = with_agents(0, &[("a", Working)]);
        s.agents[0].stop_requested = true;
        s.agent.agent_id = Some(id("a"));
        s.agent.state = Working;
        assert!(
            tray_view(&s).tooltip.starts_with("local-mcp — Stopping · a"),
            "{}",
            tray_view(&s).tooltip
        );
    }

    #[test]
    fn every_agent_asking_is_listed_and_named_by_its_question() {
        use AgentState::*;
        let mut s = with_agents(0, &[("a", NeedsYou), ("b", Listening), ("c", Working)]);
        s.agents[0].asking = Some("r1".into());
        s.agents[1].asking = Some("r2".into());
        s.agents[1].queue = q("web");
        s.agents[2].asking = Some("r3".into());
        let v = tray_view(&s);
        let reports: Vec<&str> = v.asking.iter().map(|a| a.report.as_str()).collect();
        assert_eq!(reports, ["r1", "r2"], "c works: its question was answered");
        assert!(v.tooltip.contains("Needs you · a and 1 more"), "{}", v.tooltip);
        assert_eq!(
            needs_you_label(&v.asking[0], Some("\nMerge now?\nIt is green.")),
            "a: Merge now?"
        );
        assert_eq!(needs_you_label(&v.asking[1], None), "b in web asks");
    }

    #[test]
    fn notifications_name_the_agent_and_the_first_line() {
        let (t, b) = consumed_notification("copilot", "\n  Fix the tests\nthen lint", 2);
        assert_eq!(t, "copilot picked up: Fix the tests");
        assert_eq!(b, "2 instructions left in the queue.");
        assert_eq!(consumed_notification("a", "x", 0).1, "The queue is empty now.");
        assert_eq!(consumed_notification("a", "x", 1).1, "1 instruction left in the queue.");
        let long = "é".repeat(200);
        let (t, _) = consumed_notification("a", &long, 0);
        assert_eq!(t.chars().count(), "a picked up: ".len() + 80);
        assert!(t.ends_with('…'));
        assert_eq!(waiting_notification("cursor").0, "cursor is waiting for you");
    }

    #[test]
    fn quick_add_closes_only_on_its_own_signals() {
        let origin = url::Url::parse("http://127.0.0.1:8000/").unwrap().origin();
        let nav = |u: &str| quick_add_nav(&url::Url::parse(u).unwrap(), &origin);
        assert_eq!(nav("http://127.0.0.1:8000/quick-add/done"), QuickAddNav::Done);
        assert_eq!(nav("http://127.0.0.1:8000/quick-add/cancel"), QuickAddNav::Cancel);
        assert_eq!(nav("http://127.0.0.1:8000/quick.html"), QuickAddNav::Allow);
        assert_eq!(nav("http://127.0.0.1:8001/quick-add/done"), QuickAddNav::Refuse);
        assert_eq!(nav("https://example.com/quick-add/done"), QuickAddNav::Refuse);
        let may = |u: &str| main_window_may_load(&url::Url::parse(u).unwrap(), &origin);
        assert!(may("http://127.0.0.1:8000/"));
        assert!(may("tauri://localhost/index.html"));
        assert!(!may("https://example.com/"));
        assert!(
            !may("http://localhost:8000/"),
            "another origin, even if it is the same server"
        );
    }

    #[test]
    fn a_missing_display_is_explained() {
        if cfg!(target_os = "linux") {
            let msg = missing_display(None, Some("")).unwrap();
            assert!(msg.contains("local-mcp-server"));
            assert!(missing_display(Some(":0"), None).is_none());
            assert!(missing_display(None, Some("wayland-0")).is_none());
            let msg = unopenable_display(":7");
            assert!(
                msg.contains("cannot open the display \":7\"") && msg.contains("local-mcp-server"),
                "{msg}"
            );
        }
    }
}

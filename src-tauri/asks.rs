//! An agent's question answered where it appears (issue 42): its
//! notification carries "Reply…" and the short suggested answers as buttons
//! (as many as [`OPTION_BUTTONS`]). A press answers exactly as the page does
//! (`Backend::reply`: queued first, for that agent, `in_reply_to`); "Reply…"
//! or a click on the notification opens quick add answering that question.
//! Once the question is answered — here, on the page, by the CLI — or its
//! agent moves on, its notification is withdrawn. A notification server
//! without actions shows the plain notification.
//!
//! What a press may send is kept here, not in the notification: a press is
//! only a key on the session bus, which any program there can fake, so it
//! can pick among the buttons of a question still open and nothing else;
//! and each question is answered from its notification at most once.

use std::collections::HashMap;
use std::sync::Mutex;

use engine::model::{AgentId, Instruction, QueueName, Report};
use engine::sync::MutexExt;
use tauri::{AppHandle, Manager};
use tauri_plugin_notification::{Action, ActionPerformed, ActionType, NotificationExt};

use crate::backend::Backend;
use crate::{view, windows};

/// Buttons for suggested answers, beside "Reply…": GNOME Shell shows three
/// actions in all (`docs/PLATFORMS.md`, "Notifications"); the rest are
/// answered through "Reply…".
pub const OPTION_BUTTONS: usize = 2;
/// A suggested answer longer than this (or of several lines) is no button:
/// a server cuts a long label, and the person would send what they did not
/// read. Nor is one with a comma: macOS's menu of actions is one string
/// split at commas, and "Yes, merge" would become two entries.
const BUTTON_CHARS: usize = 40;
/// The action that opens quick add at the question. First: macOS reports a
/// click on its "Options" menu as the first action, which must not answer.
pub const REPLY: &str = "reply";
/// The actions that answer: `option:<button>`.
const OPTION: &str = "option:";
/// The extra that names the question's report.
const REPORT: &str = "report";
/// The one action type, registered again for each question (the plugin
/// reads it when the notification is shown): types are never removed.
const ACTION_TYPE: &str = "question";

/// A question shown as a notification and not answered from it yet.
struct Asked {
    notification: i32,
    queue: QueueName,
    agent: AgentId,
    /// What each `option:<n>` button sends.
    buttons: Vec<String>,
}

/// The questions shown, by report id (managed by the app).
#[derive(Default)]
pub struct Shown(Mutex<HashMap<String, Asked>>);

/// The suggested answers that make buttons: short, one line, at most
/// [`OPTION_BUTTONS`].
pub fn buttons(options: &[String]) -> Vec<String> {
    options
        .iter()
        .filter(|o| o.chars().count() <= BUTTON_CHARS && !o.contains(['\n', '\r', ',']) && !o.trim().is_empty())
        .take(OPTION_BUTTONS)
        .cloned()
        .collect()
}

/// Show `report` (a question with options) with "Reply…" and its short
/// answers as buttons; the agent's earlier question, if still shown, goes.
pub fn notify(app: &AppHandle, report: &Report) {
    withdraw_where(app, |a| a.queue == report.queue && a.agent == report.agent_id);
    let (title, body) = view::report_notification(&report.agent_id, &report.content);
    let buttons = buttons(&report.options);
    let mut actions = vec![Action::builder(REPLY, "Reply…").build()];
    actions.extend(
        buttons
            .iter()
            .enumerate()
            .map(|(i, answer)| Action::builder(format!("{OPTION}{i}"), answer).build()),
    );
    let notifications = app.notification();
    if let Err(e) = notifications.register_action_types(vec![ActionType::builder(ACTION_TYPE).actions(actions).build()])
    {
        tracing::warn!(error = %e, "could not offer a question's answers as buttons");
    }
    let id = notification_id(&report.id);
    let shown = notifications
        .builder()
        .id(id)
        .title(title)
        .body(body)
        .action_type_id(ACTION_TYPE)
        .extra(REPORT, &report.id)
        .show();
    match shown {
        Ok(()) => {
            let asked = Asked {
                notification: id,
                queue: report.queue.clone(),
                agent: report.agent_id.clone(),
                buttons,
            };
            app.state::<Shown>().0.lock_anyway().insert(report.id.clone(), asked);
        }
        Err(e) => tracing::warn!(error = %e, "could not show a notification"),
    }
}

/// What a press on a question's notification does (registered once, at
/// setup). A press on one already answered or withdrawn does nothing.
pub fn on_action(app: &AppHandle, performed: &ActionPerformed) {
    let Some(report) = performed
        .notification()
        .and_then(|n| n.extra().get(REPORT))
        .and_then(|r| r.as_str())
    else {
        return;
    };
    let action = performed.action_id();
    let Some(button) = action.strip_prefix(OPTION) else {
        // "Reply…", a click on the notification itself: the person types the
        // answer, in quick add answering this question. It stays shown (a
        // server may keep it in a list) until that answer, or another, comes.
        let Some(agent) = app
            .state::<Shown>()
            .0
            .lock_anyway()
            .get(report)
            .map(|a| a.agent.to_string())
        else {
            return;
        };
        let (handle, answering) = (app.clone(), Some((report.to_owned(), agent)));
        let _ = app.run_on_main_thread(move || windows::show_quick_add_for(&handle, answering));
        return;
    };
    // Only a button this question shows, and only once.
    let chosen = {
        let shown = app.state::<Shown>();
        let mut shown = shown.0.lock_anyway();
        let chosen = shown
            .get(report)
            .and_then(|a| Some((a.notification, a.buttons.get(button.parse::<usize>().ok()?).cloned()?)));
        if chosen.is_some() {
            shown.remove(report);
        }
        chosen
    };
    let Some((notification, answer)) = chosen else {
        tracing::warn!(report = %report, action = %action, "ignored a press for no button of an open question");
        return;
    };
    // Most servers close a notification whose button was pressed; one that
    // keeps it (in a list, or as "resident") is told: it has been answered.
    close(app, notification);
    let Some(backend) = Backend::of(app) else {
        return;
    };
    let report = report.to_owned();
    tauri::async_runtime::spawn(async move {
        if let Err(e) = backend.reply(report.clone(), answer).await {
            tracing::warn!(error = %e, report = %report, "could not answer from the notification");
        }
    });
}

/// An instruction was queued or taken: withdraw the question it answers,
/// and the questions of an agent that took something (it moved on).
pub fn on_instruction(app: &AppHandle, item: &Instruction, taken: bool) {
    if let Some(report) = &item.answers {
        withdraw(app, report);
    }
    if taken {
        if let Some(agent) = &item.consumed_by_agent_id {
            withdraw_where(app, |a| a.queue == item.queue && &a.agent == agent);
        }
    }
}

fn withdraw(app: &AppHandle, report: &str) {
    let asked = app.state::<Shown>().0.lock_anyway().remove(report);
    if let Some(asked) = asked {
        close(app, asked.notification);
    }
}

fn withdraw_where(app: &AppHandle, which: impl Fn(&Asked) -> bool) {
    let gone: Vec<i32> = {
        let shown = app.state::<Shown>();
        let mut shown = shown.0.lock_anyway();
        let mut gone = Vec::new();
        shown.retain(|_, a| {
            let go = which(a);
            if go {
                gone.push(a.notification);
            }
            !go
        });
        gone
    };
    for id in gone {
        close(app, id);
    }
}

fn close(app: &AppHandle, id: i32) {
    if let Err(e) = app.notification().remove_active(vec![id]) {
        tracing::debug!(error = %e, "could not withdraw a notification");
    }
}

/// A notification id of its own for each question (positive, as the
/// platforms want), stable for the report.
fn notification_id(report: &str) -> i32 {
    let hash = report
        .bytes()
        .fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    i32::try_from(hash & 0x7fff_ffff).unwrap_or(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_one_line_answers_without_commas_or_blanks_become_buttons() {
        let long = "Yes, and also force-push main over whatever is there now".to_owned();
        let options: Vec<String> = vec![
            "Merge".into(),
            long,
            "Two\nlines".into(),
            "Yes, merge".into(),
            "  ".into(),
            "Wait".into(),
            "Rebase".into(),
        ];
        assert_eq!(buttons(&options), ["Merge", "Wait"]);
        assert!(buttons(&[]).is_empty());
    }
}

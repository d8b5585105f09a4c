//! The tray's "Needs you" submenu (issue 42): one entry per agent waiting on
//! its question, named by the agent and the question, holding its short
//! suggested answers and "Reply…". An answer goes the page's way
//! (`Backend::reply`: queued first, for that agent, in reply to the
//! question), as a press on the question's notification does (`asks`);
//! "Reply…" opens quick add at the question.
//!
//! Which agents ask comes from each status (`view::TrayView::asking`); what
//! they ask from the report events, or — for a question asked before this
//! window started or attached — from the newest report of the agent, read
//! once. The answers an entry offers are kept here, not in the menu: a
//! click sends only an answer the question still offers, and only once.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use engine::model::Report;
use engine::sync::MutexExt;
use tauri::menu::{IsMenuItem, MenuItem, Submenu};
use tauri::{AppHandle, Manager, Wry};

use crate::backend::Backend;
use crate::view::{self, Asking};
use crate::windows;

/// The submenu's label when nobody asks.
pub const LABEL: &str = "Needs you";
/// Menu ids: `needs:answer:<n>:<report>`, `needs:reply:<report>`.
const ANSWER: &str = "needs:answer:";
const REPLY: &str = "needs:reply:";
/// At most this many answers per question in the menu (the rest through "Reply…").
const MENU_ANSWERS: usize = 6;
/// A longer answer, or one of several lines, is no entry: a menu cuts it,
/// and the person would send what they did not read.
const ANSWER_CHARS: usize = 60;

/// What a question asks, as far as the menu needs it.
#[derive(Clone, PartialEq)]
struct Question {
    content: String,
    options: Vec<String>,
}

#[derive(Default)]
struct State {
    /// The agents asking now, as the last status said.
    asking: Vec<Asking>,
    /// What each question asks, by report id (only the ones asked now are kept).
    known: HashMap<String, Question>,
    /// Questions being read from the engine (each once).
    reading: HashSet<String>,
    /// What the menu shows now: (report, label, answers).
    shown: Vec<(String, String, Vec<String>)>,
}

/// The submenu and what it shows (managed by the app).
pub struct Needs {
    menu: Submenu<Wry>,
    state: Mutex<State>,
}

/// The submenu, empty and disabled until an agent asks.
pub fn create(app: &AppHandle) -> tauri::Result<Submenu<Wry>> {
    let menu = Submenu::with_items(app, LABEL, false, &[])?;
    app.manage(Needs {
        menu: menu.clone(),
        state: Mutex::default(),
    });
    Ok(menu)
}

/// The suggested answers that make entries: short, one line, at most [`MENU_ANSWERS`].
fn menu_answers(options: &[String]) -> Vec<String> {
    options
        .iter()
        .filter(|o| o.chars().count() <= ANSWER_CHARS && !o.contains(['\n', '\r']) && !o.trim().is_empty())
        .take(MENU_ANSWERS)
        .cloned()
        .collect()
}

/// A report was written: remember what it asks, should its agent wait on it.
pub fn heard(app: &AppHandle, report: &Report) {
    let Some(needs) = app.try_state::<Needs>() else {
        return;
    };
    let question = Question {
        content: report.content.clone(),
        options: report.options.clone(),
    };
    needs.state.lock_anyway().known.insert(report.id.clone(), question);
    render(app);
}

/// The agents asking now (from a status): show them, reading the questions not known yet.
pub fn show(app: &AppHandle, asking: &[Asking]) {
    let Some(needs) = app.try_state::<Needs>() else {
        return;
    };
    let unknown: Vec<Asking> = {
        let mut state = needs.state.lock_anyway();
        state.asking = asking.to_vec();
        state
            .known
            .retain(|report, _| asking.iter().any(|a| &a.report == report));
        let unknown: Vec<Asking> = asking
            .iter()
            .filter(|a| !state.known.contains_key(&a.report) && !state.reading.contains(&a.report))
            .cloned()
            .collect();
        state.reading.extend(unknown.iter().map(|a| a.report.clone()));
        unknown
    };
    render(app);
    for asked in unknown {
        read(app, asked);
    }
}

/// Read `asked`'s question from the engine (its agent's newest report).
fn read(app: &AppHandle, asked: Asking) {
    let Some(backend) = Backend::of(app) else {
        return;
    };
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let newest = backend.newest_report(asked.queue.clone(), asked.agent.clone()).await;
        let Some(needs) = app.try_state::<Needs>() else {
            return;
        };
        {
            let mut state = needs.state.lock_anyway();
            state.reading.remove(&asked.report);
            match newest {
                Ok(Some(report)) if report.id == asked.report => {
                    let question = Question {
                        content: report.content,
                        options: report.options,
                    };
                    state.known.insert(report.id, question);
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, "could not read a question for the tray"),
            }
        }
        render(&app);
    });
}

/// Rebuild the submenu when what it shows changed. On the main thread, one
/// at a time: the menu's calls wait on the main thread, so none is made
/// while the state is locked (a click there takes that lock).
fn render(app: &AppHandle) {
    let handle = app.clone();
    let _ = app.run_on_main_thread(move || render_now(&handle));
}

fn render_now(app: &AppHandle) {
    let Some(needs) = app.try_state::<Needs>() else {
        return;
    };
    let lines = {
        let mut state = needs.state.lock_anyway();
        let lines: Vec<(String, String, Vec<String>)> = state
            .asking
            .iter()
            .map(|a| {
                let question = state.known.get(&a.report);
                let label = view::needs_you_label(a, question.map(|q| q.content.as_str()));
                let answers = question.map(|q| menu_answers(&q.options)).unwrap_or_default();
                (a.report.clone(), label, answers)
            })
            .collect();
        if lines == state.shown {
            return;
        }
        state.shown.clone_from(&lines);
        lines
    };
    if let Ok(old) = needs.menu.items() {
        for item in old {
            let _ = needs.menu.remove(&item);
        }
    }
    for (report, label, answers) in &lines {
        if let Err(e) = append_question(app, &needs.menu, report, label, answers) {
            tracing::warn!(error = %e, "could not list a question in the tray");
        }
    }
    // Its label stays: a submenu's new label does not reach a panel through
    // libayatana's dbusmenu (the entries and the enabled state do).
    let _ = needs.menu.set_enabled(!lines.is_empty());
}

fn append_question(
    app: &AppHandle,
    menu: &Submenu<Wry>,
    report: &str,
    label: &str,
    answers: &[String],
) -> tauri::Result<()> {
    let mut items = answers
        .iter()
        .enumerate()
        .map(|(i, answer)| {
            MenuItem::with_id(
                app,
                format!("{ANSWER}{i}:{report}"),
                view::menu_text(answer),
                true,
                None::<&str>,
            )
        })
        .collect::<tauri::Result<Vec<_>>>()?;
    items.push(MenuItem::with_id(
        app,
        format!("{REPLY}{report}"),
        "Reply…",
        true,
        None::<&str>,
    )?);
    let refs: Vec<&dyn IsMenuItem<Wry>> = items.iter().map(|i| i as _).collect();
    menu.append(&Submenu::with_items(app, view::menu_text(label), true, &refs)?)
}

/// A click on one of the submenu's entries; `false` when `id` is not one.
pub fn on_menu(app: &AppHandle, id: &str) -> bool {
    if let Some(report) = id.strip_prefix(REPLY) {
        let agent = app.try_state::<Needs>().and_then(|needs| {
            let state = needs.state.lock_anyway();
            state
                .asking
                .iter()
                .find(|a| a.report == report)
                .map(|a| a.agent.to_string())
        });
        if let Some(agent) = agent {
            windows::show_quick_add_for(app, Some((report.to_owned(), agent)));
        }
        return true;
    }
    let Some(rest) = id.strip_prefix(ANSWER) else {
        return false;
    };
    let Some((n, report)) = rest.split_once(':') else {
        return true;
    };
    if let Some(answer) = take_answer(app, report, n) {
        if let Some(backend) = Backend::of(app) {
            let report = report.to_owned();
            tauri::async_runtime::spawn(async move {
                if let Err(e) = backend.reply(report.clone(), answer).await {
                    tracing::warn!(error = %e, report = %report, "could not answer from the tray");
                }
            });
        }
    }
    true
}

/// The answer entry `n` of `report` sends, if the question is still asked
/// and shows it; the question leaves the menu (answered once).
fn take_answer(app: &AppHandle, report: &str, n: &str) -> Option<String> {
    let needs = app.try_state::<Needs>()?;
    let answer = {
        let mut state = needs.state.lock_anyway();
        let shown = state.shown.iter().find(|(r, _, _)| r == report)?;
        let answer = shown.2.get(n.parse::<usize>().ok()?)?.clone();
        state.asking.retain(|a| a.report != report);
        answer
    };
    render(app);
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_one_line_answers_become_entries_commas_welcome() {
        let options: Vec<String> = vec![
            "Yes, merge".into(),
            "x".repeat(61),
            "Two\nlines".into(),
            " ".into(),
            "Wait".into(),
        ];
        assert_eq!(menu_answers(&options), ["Yes, merge", "Wait"]);
        let many: Vec<String> = (0..9).map(|i| format!("o{i}")).collect();
        assert_eq!(menu_answers(&many).len(), MENU_ANSWERS);
    }
}

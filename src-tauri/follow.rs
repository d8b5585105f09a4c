//! Engine events → the tray and the notifications: the tray on every status
//! change, a notification on a delivery (grouped per agent: `deliveries`), a report, a delivery in doubt, a
//! storage fault and (if wanted) an agent that starts waiting.

use std::collections::HashSet;
use std::time::Instant;

use engine::{EventData, EventKind};
use tauri::{AppHandle, Manager};

use crate::deliveries::Deliveries;
use crate::shell::Shell;
use crate::{asks, needs, notify, tray, view};

/// React to engine events: tray on every status change, notifications on
/// consumption (and, if wanted, when an agent starts waiting on an empty queue).
pub(crate) async fn follow_engine(
    app: AppHandle,
    items: tray::TrayItems,
    mut events: tokio::sync::broadcast::Receiver<std::sync::Arc<engine::Event>>,
) {
    let mut listening = HashSet::new();
    let mut faulty = false;
    let mut deliveries = Deliveries::default();
    loop {
        let due = deliveries.next_due();
        let received = tokio::select! {
            received = events.recv() => received,
            () = until(due) => {
                let counts = deliveries.due(Instant::now());
                if app.state::<Shell>().prefs.get().notify_consumed {
                    for n in counts {
                        notify::replace(&app, n.id, &n.title, &n.body);
                    }
                }
                continue;
            }
        };
        let event = match received {
            Ok(e) => e,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let prefs = app.state::<Shell>().prefs.get();
        match (&event.kind, &event.data) {
            (EventKind::StatusChanged, EventData::Status(status)) => {
                let mut tray_view = view::tray_view(status);
                if let Some(remote) = &app.state::<Shell>().attached {
                    tray_view = view::attached(tray_view, &remote.base);
                }
                tray::apply(&app, &items, &tray_view);
                // Once per fault, when it starts: the tooltip carries it after that.
                match (&status.server.storage_fault, faulty) {
                    (Some(fault), false) => {
                        let (title, body) = view::storage_fault_notification(fault);
                        notify::send(&app, &title, &body);
                        faulty = true;
                    }
                    (None, true) => faulty = false,
                    _ => {}
                }
                for agent in view::newly_waiting(&mut listening, status) {
                    if prefs.notify_waiting {
                        let (title, body) = view::waiting_notification(&agent);
                        notify::send(&app, &title, &body);
                    }
                }
            }
            (EventKind::ReportCreated, EventData::Report(report)) => {
                needs::heard(&app, report);
                if !prefs.notify_reported {
                    continue;
                }
                if report.options.is_empty() {
                    let (title, body) = view::report_notification(&report.agent_id, &report.content);
                    notify::send(&app, &title, &body);
                } else {
                    asks::notify(&app, report);
                }
            }
            (EventKind::InstructionUpdated, EventData::Instruction(item))
                if item.delivery == Some(engine::model::Delivery::InDoubt) =>
            {
                let agent = item.consumed_by_agent_id.as_deref().unwrap_or("An agent");
                let (title, body) = view::in_doubt_notification(agent, &item.content);
                notify::send(&app, &title, &body);
            }
            (EventKind::InstructionCreated, EventData::Instruction(item)) => asks::on_instruction(&app, item, false),
            (EventKind::InstructionConsumed, EventData::Instruction(item)) => {
                // A question of the agent's is moot once it took something.
                asks::on_instruction(&app, item, true);
                if prefs.notify_consumed {
                    let agent = item.consumed_by_agent_id.as_deref().unwrap_or("An agent");
                    let pending = event.pending_count.unwrap_or(0);
                    if let Some(n) = deliveries.picked_up(&item.queue, agent, &item.content, pending, Instant::now()) {
                        notify::replace(&app, n.id, &n.title, &n.body);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Until `due`, or forever when nothing is due.
async fn until(due: Option<Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

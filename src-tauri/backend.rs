//! What the tray's actions act on: the desktop's own engine, or — when a
//! headless `local-mcp-server` already holds the person's database — that
//! server, over its HTTP API (the desktop then runs as its window and tray).

use engine::client::remote::Remote;
use engine::model::{AgentId, NewInstruction, QueueName, Report, Upload};
use engine::sync::MutexExt;
use tauri::{AppHandle, Manager};

use crate::shell::Shell;

pub enum Backend {
    Local(engine::Queue),
    Remote(Remote),
}

impl Backend {
    /// The running engine or the attached server; `None` while stopping.
    pub fn of(app: &AppHandle) -> Option<Backend> {
        let shell = app.state::<Shell>();
        if let Some(remote) = &shell.attached {
            return Some(Backend::Remote(remote.clone()));
        }
        let engine = shell.engine.lock_anyway();
        engine.as_ref().map(|e| Backend::Local(e.queue.clone()))
    }

    /// Hold (or release) every queue.
    pub async fn set_held(&self, held: bool) -> engine::Result<()> {
        match self {
            Backend::Local(queue) => queue.set_held(None, held).await.map(|_| ()),
            Backend::Remote(remote) => remote.set_held(held).await,
        }
    }

    /// Answer the question of report `report_id` with `content`, as the
    /// page does: queued first, for the agent that asked.
    pub async fn reply(&self, report_id: String, content: String) -> engine::Result<()> {
        match self {
            Backend::Local(queue) => queue.reply(report_id, content).await.map(|_| ()),
            Backend::Remote(remote) => remote.reply(&report_id, &content).await,
        }
    }

    /// The newest report of `agent` in `queue`, if it wrote one.
    pub async fn newest_report(&self, queue: QueueName, agent: AgentId) -> engine::Result<Option<Report>> {
        match self {
            Backend::Local(q) => Ok(q.reports(Some(queue), Some(agent), None, 1).await?.into_iter().next()),
            Backend::Remote(remote) => remote.newest_report(&queue, &agent).await,
        }
    }

    /// Queue `content` with `uploads` in the default queue, for anyone.
    pub async fn add(&self, content: String, uploads: Vec<Upload>) -> engine::Result<()> {
        match self {
            Backend::Local(queue) => {
                let new = NewInstruction {
                    content,
                    ..NewInstruction::default()
                };
                queue.add_with_files(new, uploads).await.map(|_| ())
            }
            Backend::Remote(remote) => remote.add(content, uploads).await,
        }
    }
}

//! Reports: what agents tell the person, stored with the same care as the
//! person's input, linked to the instruction they report on, and answered
//! by queueing a reply for that agent at the front of its queue
//! (`docs/ARCHITECTURE.md`, "Reports").

use super::{first, Queue};
use crate::events::{Event, EventData, EventKind};
use crate::model::Timestamp;
use crate::model::{AgentId, Instruction, QueueName, Report};
use crate::store::Durability;
use crate::{markdown, Error, Result};

/// The room a question's first answer leaves behind it for more answers
/// (see [`Queue::reply`]).
const ANSWER_ROOM: i64 = 1024;

impl Queue {
    /// Store what `agent` of `queue` reports, before its call waits. It
    /// attaches to the instruction the agent's previous call delivered when
    /// that one has no report yet, and stands alone otherwise. Sent again
    /// unchanged where it would attach the same way (a client's retry, the
    /// bridge re-sending after a restart), it is not stored twice.
    pub(super) async fn record_report(
        &self,
        queue: &QueueName,
        agent: &AgentId,
        content: String,
        options: Vec<String>,
    ) -> Result<Report> {
        let (queue, agent) = (queue.clone(), agent.clone());
        // Rendering is pure and can be slow on a big report: outside the write.
        let html = markdown::render(&content);
        let (report, fresh) = self
            .blocking(move |i| {
                i.commit(Durability::Full, |db, out| {
                    let delivered = db.previous_delivery(&queue, &agent)?.map(|(id, _)| id);
                    // A repeat of the newest report is a retry when it would
                    // attach where that one did: to the same delivery, or
                    // (nothing delivered by the previous call) anywhere.
                    if let Some(last) = db.latest_report(&queue, &agent)? {
                        let same_place = delivered.is_none() || last.instruction_id == delivered;
                        if last.content == content && last.options == options && same_place {
                            return Ok((last, false));
                        }
                    }
                    let instruction_id = match delivered {
                        Some(id) if !db.has_report(&id)? => Some(id),
                        _ => None,
                    };
                    let report = Report {
                        id: uuid::Uuid::new_v4().to_string(),
                        queue,
                        agent_id: agent,
                        instruction_id,
                        content,
                        options,
                        html,
                        created_at: Timestamp::now(),
                    };
                    db.insert_report(&report)?;
                    out.log(
                        db,
                        Event::new(
                            EventKind::ReportCreated,
                            report.created_at.clone(),
                            EventData::Report(report.clone()),
                            None,
                        ),
                    )?;
                    Ok((report, true))
                })
                .map(|(made, _)| made)
            })
            .await?;
        tracing::info!(queue = %report.queue, agent_id = %report.agent_id, id = %report.id, instruction_id = ?report.instruction_id, stored = fresh, bytes = report.content.len(), "report");
        Ok(report)
    }

    /// Reports, newest first (`before`: a `created_at` to page back from).
    pub async fn reports(
        &self,
        queue: Option<QueueName>,
        agent_id: Option<AgentId>,
        before: Option<String>,
        limit: u32,
    ) -> Result<Vec<Report>> {
        self.blocking(move |i| {
            i.store
                .read(|db| db.reports(queue.as_deref(), agent_id.as_deref(), before.as_deref(), limit))
        })
        .await
    }

    /// The newest report of each agent of `queue`.
    pub async fn latest_reports(&self, queue: QueueName) -> Result<Vec<Report>> {
        self.blocking(move |i| i.store.read(|db| db.latest_reports(&queue)))
            .await
    }

    /// Answer a report: queue `content` at the front of the report's queue,
    /// for the agent that wrote it (it is waiting on the answer) — after any
    /// earlier answer to the same report still waiting, so two answers
    /// arrive in the order they were given. The agent is told which
    /// question it answers (`DeliveredInstruction::in_reply_to`).
    pub async fn reply(&self, report_id: String, content: String) -> Result<Instruction> {
        let content = super::validate_content(content)?;
        let items = self
            .blocking(move |i| {
                i.write_instructions(EventKind::InstructionCreated, |db| {
                    let report = db
                        .get_report(&report_id)?
                        .ok_or_else(|| Error::NotFound(format!("no report with id {report_id}")))?;
                    // First in line, or right after the earlier answers to this
                    // question still waiting. A first answer leaves room behind
                    // it (positions are only an order), so later ones fit
                    // without renumbering the rail.
                    let position = match db.last_pending_answer(&report.queue, &report.id)? {
                        Some(last) => last + 1,
                        None => db.front_position(&report.queue)? - ANSWER_ROOM,
                    };
                    let mut item = Instruction::new_pending(
                        content,
                        report.queue.clone(),
                        Some(report.agent_id),
                        position,
                        Timestamp::now(),
                    );
                    item.answers = Some(report.id.clone());
                    db.insert_instruction(&item)?;
                    Ok(vec![item])
                })
            })
            .await?;
        let item = first(items)?;
        tracing::info!(id = %item.id, queue = %item.queue, target = ?item.target, "reply queued");
        Ok(item)
    }
}

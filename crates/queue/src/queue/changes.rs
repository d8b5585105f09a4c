//! A person's changes to the queue — add, edit, delete, move, send again,
//! and the runtime settings. Each is durable (`synchronous=FULL`) and goes
//! through the one write sequence ([`super::Inner::write_instructions`]),
//! so none can forget to log its event, wake the waiting calls or mark the
//! status out of date.

use super::{attachments, first, not_found, pending_only, validate_content, Queue};
use crate::events::{Event, EventData, EventKind};
use crate::model::Timestamp;
use crate::model::{
    agent_id, Delivery, Instruction, InstructionId, InstructionPatch, InstructionStatus, Listing, MoveTo,
    NewInstruction, QueueName, RequeuePlace, Settings, SettingsPatch,
};
use crate::store::{Durability, PendingChange};
use crate::{Error, Result};

impl Queue {
    /// Queue a new instruction at the back of its queue (created if new),
    /// for anyone there or for one agent.
    pub async fn add(&self, new: impl Into<NewInstruction>) -> Result<Instruction> {
        let new = new.into();
        let content = validate_content(new.content)?;
        // A queue given must be a valid name (blank is not "default" here: it is a mistake).
        let queue = new.queue.unwrap_or_else(QueueName::default_queue);
        let target = agent_id(new.target.as_deref())?;
        let item = self
            .blocking(move |i| {
                i.write_instructions(EventKind::InstructionCreated, |db| {
                    let item = Instruction::new_pending(content, queue, target, db.next_position()?, Timestamp::now());
                    db.insert_instruction(&item)?;
                    Ok(vec![item])
                })
            })
            .await?;
        let item = first(item)?;
        tracing::info!(id = %item.id, queue = %item.queue, target = ?item.target, bytes = item.content.len(), "instruction created");
        Ok(item)
    }

    /// Change a pending instruction's text, queue (it goes to the back of
    /// the new one) or target.
    pub async fn edit(&self, id: InstructionId, patch: InstructionPatch) -> Result<Instruction> {
        let content = patch.content.map(validate_content).transpose()?;
        let queue = patch.queue;
        let target = patch.target.map(|t| agent_id(t.as_deref())).transpose()?;
        let items = self
            .blocking(move |i| {
                i.write_instructions(EventKind::InstructionUpdated, |db| {
                    let position = match &queue {
                        Some(q) => Some((q.as_str(), db.next_position()?)),
                        None => None,
                    };
                    let change = PendingChange {
                        content: content.as_deref(),
                        queue: position,
                        target: target.as_ref().map(|t| t.as_deref()),
                    };
                    match db.update_pending(&id, &change, &Timestamp::now())? {
                        Some(item) => Ok(vec![item]),
                        None => Err(pending_only(db, &id, "edited")?),
                    }
                })
            })
            .await?;
        let item = first(items)?;
        tracing::info!(id = %item.id, queue = %item.queue, target = ?item.target, bytes = item.content.len(), "instruction updated");
        Ok(item)
    }

    /// Remove a pending instruction.
    pub async fn delete(&self, id: InstructionId) -> Result<Instruction> {
        let items = self
            .blocking(move |i| {
                i.write_instructions(EventKind::InstructionDeleted, |db| match db.delete_pending(&id)? {
                    Some(item) => Ok(vec![item]),
                    None => Err(pending_only(db, &id, "deleted")?),
                })
            })
            .await?;
        let item = first(items)?;
        // After the commit (the rows went with it); a crash first leaves files the start sweeps.
        let id = item.id.clone();
        self.blocking(move |i| {
            i.store.files().remove_all(&id);
            Ok(())
        })
        .await?;
        tracing::info!(id = %item.id, "instruction deleted");
        Ok(item)
    }

    /// Release the held pending instructions (from an import or a restore)
    /// of `queue`, or of every queue: they are deliverable from now on, and
    /// the waiting calls are offered them. Returns them.
    pub async fn release_held(&self, queue: Option<&QueueName>) -> Result<Vec<Instruction>> {
        let queue = queue.cloned();
        let one = queue.clone();
        let items = self
            .blocking(move |i| {
                i.write_instructions(EventKind::InstructionUpdated, |db| {
                    db.release_held(one.as_deref(), &Timestamp::now())
                })
            })
            .await?;
        tracing::info!(
            queue = queue.as_deref().unwrap_or("(all)"),
            released = items.len(),
            "held instructions released"
        );
        Ok(items)
    }

    /// Move a pending instruction before/after another pending one of its
    /// queue, or to the front/back of its queue. Returns that queue's pending
    /// rail in its new order.
    pub async fn move_to(&self, id: InstructionId, to: MoveTo) -> Result<Vec<Instruction>> {
        let given = [to.before_id.is_some(), to.after_id.is_some(), to.to.is_some()];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(Error::Invalid(
                "give exactly one of before_id, after_id or to (\"front\" | \"back\")".into(),
            ));
        }
        let queue = self
            .blocking(move |i| {
                i.write_instructions(EventKind::InstructionUpdated, |db| {
                    let Some(queue) = db
                        .get_instruction(&id)?
                        .filter(|i| i.status == InstructionStatus::Pending)
                        .map(|i| i.queue)
                    else {
                        return Err(pending_only(db, &id, "moved")?);
                    };
                    let mut order = db.pending_ids(&queue)?;
                    let Some(from) = order.iter().position(|x| *x == id) else {
                        return Err(pending_only(db, &id, "moved")?);
                    };
                    let moving = order.remove(from);
                    let at = match (&to.before_id, &to.after_id, to.to) {
                        (Some(anchor), _, _) | (_, Some(anchor), _) => {
                            if *anchor == moving {
                                return Err(Error::Invalid(
                                    "an instruction cannot be moved relative to itself".into(),
                                ));
                            }
                            let a = order.iter().position(|x| x == anchor).ok_or_else(|| {
                                Error::Conflict(format!(
                                "instruction {anchor} is not pending in queue {queue}; reload the queue and try again"
                            ))
                            })?;
                            if to.before_id.is_some() {
                                a
                            } else {
                                a + 1
                            }
                        }
                        (_, _, Some(RequeuePlace::Front)) => 0,
                        _ => order.len(),
                    };
                    order.insert(at, moving);
                    let base = db.min_pending_position(&queue)?.unwrap_or(1);
                    let mut changed = db.set_pending_order(&order, base, &Timestamp::now())?;
                    // The moved one is logged even when its number did not change
                    // (front of a one-item rail): the caller learns its queue here.
                    if changed.is_empty() {
                        changed.extend(db.get_instruction(&order[at])?);
                    }
                    Ok(changed)
                })
            })
            .await?
            .into_iter()
            .next()
            .map_or_else(QueueName::default_queue, |i| i.queue);
        self.list(Listing::pending().in_queue(&queue)).await
    }

    /// "Send again": queue a copy of a consumed instruction as a new pending
    /// one. A delivery in doubt goes to the agent it was meant for, and is
    /// marked `resent`.
    pub async fn requeue(&self, id: InstructionId, place: RequeuePlace) -> Result<Instruction> {
        let source_id = id.clone();
        let items = self
            .blocking(move |i| {
                i.write_instructions(EventKind::InstructionCreated, |db| {
                    let source = db.get_instruction(&id)?.ok_or_else(|| not_found(&id))?;
                    if source.status != InstructionStatus::Consumed {
                        return Err(Error::Conflict(format!(
                            "instruction {id} is still pending; only a consumed instruction can be sent again"
                        )));
                    }
                    let position = match place {
                        RequeuePlace::Front => db.front_position(&source.queue)?,
                        RequeuePlace::Back => db.next_position()?,
                    };
                    let in_doubt = source.delivery == Some(Delivery::InDoubt);
                    if in_doubt {
                        // A task that carried it must not hand it over as well: the
                        // copy is what goes now (as `redeliver_in_doubt` does).
                        db.cancel_task_of_instruction(&id, super::tasks::QUEUED_AGAIN, &Timestamp::now())?;
                    }
                    let target = if in_doubt {
                        source.consumed_by_agent_id.or(source.target)
                    } else {
                        source.target
                    };
                    let item =
                        Instruction::new_pending(source.content, source.queue, target, position, Timestamp::now());
                    db.insert_instruction(&item)?;
                    // Its files come along: linked into the copy's folder before the rows commit.
                    let rows = db.attachments_of(&id)?;
                    if !rows.is_empty() {
                        let copies = attachments::copies(&rows, &item.id);
                        let names: Vec<(String, String)> = rows
                            .iter()
                            .zip(&copies)
                            .flat_map(|(old, new)| {
                                let mut pairs = vec![(old.file.clone(), new.file.clone())];
                                if old.delivery_file != old.file {
                                    pairs.push((old.delivery_file.clone(), new.delivery_file.clone()));
                                }
                                pairs
                            })
                            .collect();
                        i.store
                            .files()
                            .copy(&id, &item.id, &names)
                            .map_err(|e| Error::internal("copying an instruction's attachments", e))?;
                        for row in &copies {
                            db.insert_attachment(row)?;
                        }
                    }
                    Ok(vec![item])
                })
            })
            .await?;
        let item = first(items)?;
        // The source, if it was in doubt, is now resent (a no-op otherwise).
        if self.mark_resent(source_id).await? {
            self.mark_status_dirty();
        }
        tracing::info!(id = %item.id, "instruction queued again");
        Ok(item)
    }

    /// Change runtime settings; returns them as stored.
    pub async fn update_settings(&self, patch: SettingsPatch) -> Result<Settings> {
        let next = patch.apply(self.settings());
        next.validate()?;
        let stored = next.clone();
        self.blocking(move |i| {
            // Publishing the event puts the settings in the cache.
            i.commit(Durability::Full, |db, out| {
                db.put_settings(&stored)?;
                out.log(
                    db,
                    Event::new(
                        EventKind::ConfigUpdated,
                        Timestamp::now(),
                        EventData::Config(stored.clone()),
                        None,
                    ),
                )
            })
        })
        .await?;
        tracing::info!(
            default_wait_seconds = next.default_wait_seconds,
            agent_stale_after_seconds = next.agent_stale_after_seconds,
            default_empty_response_bytes = next.default_empty_response.len(),
            "settings updated"
        );
        self.mark_status_dirty();
        Ok(next)
    }
}

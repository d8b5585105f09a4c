//! Importing an export (JSON or bundle) into this database.
//!
//! Everything in the file is checked the way the API checks a person's and an
//! agent's input — text limits, queue and agent names, times, each
//! attachment's bytes through the same inspection as an upload, whose SHA-256
//! must match the export's — before anything is written; then all of it goes
//! in one transaction, so a bad file is refused whole and a failed write
//! leaves nothing behind. Pending instructions join the back of their queues
//! in the file's order; delivered ones stay history, with their reports.
//!
//! Ids are kept where they are free. An item whose id is taken by the *same*
//! item (same text, same creation time) is already here and is skipped, so
//! importing a file twice changes nothing; a different item under that id
//! gets a new one. Reports' HTML is rendered again here: a file never
//! supplies markup the page inserts.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use sha2::Digest as _;

use super::attachments::{check_text, write_files};
use super::commit::queue_updated;
use super::uploads::{prepare, Ready};
use super::{validate_content, Queue};
use crate::events::{Event, EventData, EventKind};
use crate::export::{self, ImportSummary, Opened};
use crate::media::Arrival;
use crate::model::{Delivery, Instruction, InstructionId, InstructionStatus, QueueName, Report, Timestamp, Upload};
use crate::store::Durability;
use crate::sync::RwLockExt as _;
use crate::{markdown, Error, Result};

/// An instruction ready to write, with its files and report.
struct Incoming {
    item: Instruction,
    files: Vec<Ready>,
    report: Option<Report>,
}

/// The file's instructions, each with its report, and the reports that stand alone.
type Checked = (Vec<(Instruction, Option<Report>)>, Vec<Report>);

/// What the ids phase made of the file: what to write, and how many items
/// were skipped (already here) or given a new id.
struct Placed {
    items: Vec<(Instruction, Option<Report>)>,
    loose: Vec<Report>,
    skipped: usize,
    renewed: usize,
}

impl Queue {
    /// Import the export at `path`; with `dry_run`, check everything and say
    /// what would change without changing anything. Messages call the file
    /// "the file" (what was sent is a temporary copy).
    pub async fn import(&self, path: PathBuf, dry_run: bool) -> Result<ImportSummary> {
        let opened = tokio::task::spawn_blocking(move || export::open(&path, "the file"))
            .await
            .map_err(|e| Error::internal("an import task failed", e))??;
        let Opened { export, bundle } = opened;
        let mut summary = ImportSummary {
            dry_run,
            pending: 0,
            delivered: 0,
            reports: 0,
            attachments: 0,
            already_present: 0,
            new_ids: 0,
            queues_created: Vec::new(),
            attachments_not_in_file: 0,
        };
        let (items, loose) = check_items(export)?;

        // From here to the commit, one import at a time (see `Inner::importing`).
        let _one_at_a_time = self.inner.importing.lock().await;

        let placed = self.place_ids(items, loose).await?;
        summary.already_present = placed.skipped;
        summary.new_ids = placed.renewed;
        let loose = placed.loose;
        let incoming = read_files(placed.items, bundle.as_ref(), &mut summary).await?;
        summary.pending = incoming
            .iter()
            .filter(|i| i.item.status == InstructionStatus::Pending)
            .count();
        summary.delivered = incoming.len() - summary.pending;
        summary.reports = incoming.iter().filter(|i| i.report.is_some()).count() + loose.len();
        summary.queues_created = self.queues_created(&incoming, &loose);
        if dry_run {
            return Ok(summary);
        }

        let queues = self.write_import(incoming, loose, summary.clone()).await?;
        self.mark_status_dirty();
        tracing::info!(
            pending = summary.pending,
            delivered = summary.delivered,
            reports = summary.reports,
            attachments = summary.attachments,
            skipped = summary.already_present,
            queues = queues.len(),
            "history imported"
        );
        Ok(summary)
    }

    /// 2. Ids: kept where free, skipped where the same item is here, renewed otherwise.
    async fn place_ids(&self, items: Vec<(Instruction, Option<Report>)>, loose: Vec<Report>) -> Result<Placed> {
        self.blocking(move |i| {
            i.store.read(|db| {
                let mut seen = HashSet::new();
                let (mut skipped, mut renewed) = (0, 0);
                let mut kept = Vec::new();
                for (mut item, report) in items {
                    match db.get_instruction(&item.id)? {
                        Some(here) if here.content == item.content && here.created_at == item.created_at => {
                            skipped += 1;
                            continue;
                        }
                        Some(_) => {
                            item.id = InstructionId::fresh();
                            renewed += 1;
                        }
                        None if !seen.insert(item.id.to_string()) => {
                            item.id = InstructionId::fresh();
                            renewed += 1;
                        }
                        None => {}
                    }
                    let report = match report {
                        Some(mut r) => {
                            if db.get_report(&r.id)?.is_some() || !seen.insert(r.id.clone()) {
                                r.id = uuid::Uuid::new_v4().to_string();
                            }
                            r.instruction_id = Some(item.id.clone());
                            Some(r)
                        }
                        None => None,
                    };
                    kept.push((item, report));
                }
                let mut reports = Vec::new();
                for mut r in loose {
                    match db.get_report(&r.id)? {
                        Some(here) if here.content == r.content && here.created_at == r.created_at => {
                            skipped += 1;
                            continue;
                        }
                        Some(_) => {
                            r.id = uuid::Uuid::new_v4().to_string();
                            renewed += 1;
                        }
                        None if !seen.insert(r.id.clone()) => {
                            r.id = uuid::Uuid::new_v4().to_string();
                            renewed += 1;
                        }
                        None => {}
                    }
                    reports.push(r);
                }
                Ok(Placed {
                    items: kept,
                    loose: reports,
                    skipped,
                    renewed,
                })
            })
        })
        .await
    }

    /// The queues the import would bring into being (for the summary).
    fn queues_created(&self, incoming: &[Incoming], loose: &[Report]) -> Vec<String> {
        let known: HashSet<String> = self.inner.queues.read_anyway().keys().cloned().collect();
        queues_of(incoming, loose)
            .into_iter()
            .filter(|q| !known.contains(q.as_str()))
            .map(QueueName::into_string)
            .collect()
    }

    /// 4. The write: files first (a crash leaves files without rows, swept at
    ///    the next start), then every row in one transaction, with the
    ///    queues they are in made to exist in that same transaction (a
    ///    rename or archive cannot slip in between). Returns the queues that
    ///    got pending instructions, whose waiting calls were offered them.
    async fn write_import(
        &self,
        incoming: Vec<Incoming>,
        loose: Vec<Report>,
        done: ImportSummary,
    ) -> Result<BTreeSet<QueueName>> {
        let queues_needed = queues_of(&incoming, &loose);
        self.blocking(move |i| {
            let files = i.store.files();
            let written: Vec<InstructionId> = incoming
                .iter()
                .filter(|x| !x.files.is_empty())
                .map(|x| x.item.id.clone())
                .collect();
            let wrote = incoming
                .iter()
                .filter(|x| !x.files.is_empty())
                .try_for_each(|x| write_files(files, &x.item.id, &x.files));
            let result = wrote.and_then(|()| {
                i.commit(Durability::Full, |db, out| {
                    let first = db.next_position()?;
                    let now = crate::model::Timestamp::now();
                    for q in &queues_needed {
                        if let Some(record) = db.ensure_queue(q, &now)? {
                            out.log(db, queue_updated(&now, record))?;
                        }
                    }
                    for (position, x) in (first..).zip(&incoming) {
                        let mut item = x.item.clone();
                        item.position = position;
                        db.insert_instruction(&item)?;
                        for f in &x.files {
                            db.insert_attachment(&f.row)?;
                        }
                        if let Some(r) = &x.report {
                            db.insert_report(r)?;
                        }
                        if item.status == InstructionStatus::Pending {
                            db.fill_attachments(std::slice::from_mut(&mut item))?;
                            let pending = db.queue_pending_count(&item.queue)?;
                            out.log(
                                db,
                                Event::new(
                                    EventKind::InstructionCreated,
                                    now.clone(),
                                    EventData::Instruction(item),
                                    Some(pending),
                                ),
                            )?;
                        }
                    }
                    for r in &loose {
                        db.insert_report(r)?;
                    }
                    out.log(
                        db,
                        Event::new(
                            EventKind::HistoryImported,
                            now,
                            EventData::Imported(Box::new(done)),
                            None,
                        ),
                    )
                })
            });
            match result {
                Ok(((), events)) => {
                    let queues: BTreeSet<QueueName> = events
                        .iter()
                        .filter_map(|e| e.instruction())
                        .map(|i| i.queue.clone())
                        .collect();
                    for q in &queues {
                        i.kick_blocking(q);
                    }
                    Ok(queues)
                }
                Err(e) => {
                    for id in &written {
                        files.remove_all(id);
                    }
                    Err(e)
                }
            }
        })
        .await
    }
}

/// 1. Every item checked on its own, before the database is asked anything.
fn check_items(export: export::Incoming) -> Result<Checked> {
    let mut items = Vec::with_capacity(export.instructions.len());
    for (n, raw) in export.instructions.into_iter().enumerate() {
        let place = format!("instruction {} ({})", n + 1, raw.id);
        items.push(check_instruction(raw).map_err(|e| at(&place, e))?);
    }
    let mut loose = Vec::with_capacity(export.reports.len());
    for (n, raw) in export.reports.into_iter().enumerate() {
        let place = format!("report {} ({})", n + 1, raw.id);
        loose.push(check_report(raw, None).map_err(|e| at(&place, e))?);
    }
    Ok((items, loose))
}

/// 3. The files: each through the upload's inspection, matched against the
///    export (counted in `summary`).
async fn read_files(
    items: Vec<(Instruction, Option<Report>)>,
    bundle: Option<&export::Bundle>,
    summary: &mut ImportSummary,
) -> Result<Vec<Incoming>> {
    let mut incoming = Vec::with_capacity(items.len());
    for (n, (mut item, report)) in items.into_iter().enumerate() {
        let listed = std::mem::take(&mut item.attachments);
        let mut uploads = Vec::new();
        let mut expected = Vec::new();
        for a in &listed {
            match bundle.map(|b| b.read(&a.id)).transpose()?.flatten() {
                Some(bytes) => {
                    // Before any decoding: a changed file is a damaged bundle, whatever else it is.
                    if hex::encode(sha2::Sha256::digest(&bytes)) != a.sha256 {
                        return Err(Error::Invalid(format!(
                            "instruction {} ({}): the file of attachment {} ({}) is not the one exported (its SHA-256 differs): the bundle is damaged",
                            n + 1,
                            item.id,
                            a.id,
                            a.name
                        )));
                    }
                    uploads.push(Upload {
                        name: a.name.clone(),
                        bytes: bytes.into(),
                    });
                    expected.push(a);
                }
                None if bundle.is_some() => {
                    return Err(Error::Invalid(format!(
                        "instruction {} ({}): the bundle has no file for attachment {} ({})",
                        n + 1,
                        item.id,
                        a.id,
                        a.name
                    )))
                }
                None => summary.attachments_not_in_file += 1,
            }
        }
        let place = format!("instruction {} ({})", n + 1, item.id);
        if uploads.is_empty() && item.content.trim().is_empty() {
            return Err(Error::Invalid(format!(
                "{place}: it has no text, and its files are not in a JSON export: import the bundle instead"
            )));
        }
        let files = if uploads.is_empty() {
            Vec::new()
        } else {
            // What an earlier version took is kept as it was (`media::Arrival`).
            prepare(item.id.to_string(), uploads, 0, 0, Arrival::Restored)
                .await
                .map_err(|e| at(&place, e))?
        };
        let mut files = files;
        for (ready, listed) in files.iter_mut().zip(&expected) {
            ready.row.attachment.created_at = listed.created_at.clone();
        }
        summary.attachments += files.len();
        incoming.push(Incoming { item, files, report });
    }
    Ok(incoming)
}

/// Every queue the import puts something in, by name.
fn queues_of(incoming: &[Incoming], loose: &[Report]) -> BTreeSet<QueueName> {
    incoming
        .iter()
        .map(|i| i.item.queue.clone())
        .chain(loose.iter().map(|r| r.queue.clone()))
        .collect()
}

/// Check one exported instruction; returns it ready to write (position set later) with its report.
fn check_instruction(raw: Instruction) -> Result<(Instruction, Option<Report>)> {
    let (queue, target) = (raw.queue, raw.target);
    // With files the text may be blank (a screenshot says it all); whether the
    // files are in the file is known later.
    let content = if raw.attachments.is_empty() {
        validate_content(raw.content)?
    } else {
        check_text(raw.content)?
    };
    let created_at = Timestamp::read(&raw.created_at).map_err(|_| field("created_at", &raw.created_at))?;
    let updated_at = Timestamp::read(&raw.updated_at).unwrap_or_else(|_| created_at.clone());
    // An odd id (it would name a folder of files) is renewed, as a report's is.
    let id = match kept_id(&raw.id) {
        kept if kept == raw.id.as_str() => raw.id,
        _ => InstructionId::fresh(),
    };
    let mut item = Instruction {
        id,
        content,
        status: raw.status,
        created_at,
        updated_at,
        consumed_at: None,
        consumed_by_agent_id: None,
        position: 0,
        queue,
        target,
        delivery: None,
        answers: None,
        // A pending one waits, held, until the person releases it: the file
        // may be someone else's, and its instructions must not go to
        // waiting agents on their own.
        held: (raw.status == InstructionStatus::Pending).then(|| "import".to_owned()),
        report: None,
        attachments: raw.attachments,
    };
    let report = match raw.status {
        InstructionStatus::Pending => {
            if raw.report.is_some() {
                return Err(Error::Invalid("a pending instruction cannot have a report".into()));
            }
            None
        }
        InstructionStatus::Consumed => {
            let at = raw.consumed_at.as_deref().ok_or_else(|| {
                Error::Invalid("a delivered instruction needs consumed_at (when it was delivered)".into())
            })?;
            item.consumed_at = Some(Timestamp::read(at).map_err(|_| field("consumed_at", at))?);
            item.consumed_by_agent_id = raw.consumed_by_agent_id;
            // A delivery the file calls open or in doubt was another
            // server's: in doubt here, and marked as from outside, so it
            // goes again only when the person sends it (never by itself to
            // the agent the file names).
            item.delivery = match raw.delivery {
                Some(Delivery::Claimed | Delivery::InDoubt) => {
                    item.held = Some("import".to_owned());
                    Some(Delivery::InDoubt)
                }
                other => other,
            };
            raw.report.map(|r| check_report(r, Some(&item.queue))).transpose()?
        }
    };
    Ok((item, report))
}

/// Check one exported report; `queue` is its instruction's, when it has one.
fn check_report(raw: Report, queue: Option<&QueueName>) -> Result<Report> {
    let queue = queue.cloned().unwrap_or(raw.queue);
    let agent = raw.agent_id;
    let (content, options) = crate::model::report_args(Some(raw.content), Some(raw.options))?
        .ok_or_else(|| Error::Invalid("a report must not be blank".into()))?;
    let created_at = Timestamp::read(&raw.created_at).map_err(|_| field("created_at", &raw.created_at))?;
    Ok(Report {
        id: kept_id(&raw.id),
        queue,
        agent_id: agent,
        instruction_id: None,
        html: markdown::render(&content),
        content,
        options,
        created_at,
    })
}

/// The file's id if it looks like one of ours (letters, digits, `-`, `_`, at
/// most 64), else a new one: ids end up in folder names and URLs.
fn kept_id(id: &str) -> String {
    let fits = (1..=64).contains(&id.len()) && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if fits {
        id.to_owned()
    } else {
        uuid::Uuid::new_v4().to_string()
    }
}

fn field(name: &str, value: &str) -> Error {
    Error::Invalid(format!("{name} {value:?} is not an RFC 3339 time"))
}

/// Say where in the file a refusal is; every refusal of a file's content is a 400.
fn at(place: &str, e: Error) -> Error {
    match e {
        Error::Invalid(m) | Error::TooLarge(m) | Error::Unsupported(m) => Error::Invalid(format!("{place}: {m}")),
        other => other,
    }
}

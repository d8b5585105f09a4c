//! The history out of this database: an export of a queue (or of every
//! queue) as data or as a bundle with the attachment files, and a backup
//! archive of the whole database. (Reading one back is `import.rs`.)

use std::collections::HashMap;

use super::Queue;
use crate::model::Timestamp;
use crate::model::{Listing, QueueName};
use crate::{Error, Result};

impl Queue {
    /// A private folder for one operation's temporary files (see `Store::work_dir`).
    pub async fn work_dir(&self) -> Result<crate::private_fs::WorkDir> {
        self.blocking(|i| i.store.work_dir()).await
    }

    /// Write a backup archive (a consistent snapshot and the attachment files) to `out`.
    pub async fn backup_to(&self, out: std::path::PathBuf) -> Result<()> {
        self.blocking_long(move |i| i.store.backup_to(&out)).await
    }

    /// Everything of `queue` (or every queue) for an export: all pending
    /// instructions, the delivered ones since `since`, and the reports that
    /// stand alone.
    pub async fn export(&self, queue: Option<QueueName>, since: Option<Timestamp>) -> Result<crate::export::Export> {
        let listing = Listing {
            status: crate::model::StatusFilter::All,
            queue: queue.clone(),
            history: crate::model::HistoryFilter {
                since: since.clone(),
                ..Default::default()
            },
            ..Listing::default()
        };
        let instructions = self.list(listing).await?;
        let reports = self
            .reports(queue.clone(), None, None, u32::MAX)
            .await?
            .into_iter()
            .filter(|r| r.instruction_id.is_none() && since.as_ref().is_none_or(|s| r.created_at >= *s))
            .collect();
        Ok(crate::export::Export {
            format: crate::export::FORMAT_NAME,
            version: crate::export::FORMAT_VERSION,
            exported_at: Timestamp::now(),
            queue,
            since,
            instructions,
            reports,
        })
    }

    /// An export as a bundle written to `out`: its JSON and each attachment's original file.
    pub async fn export_bundle(
        &self,
        queue: Option<QueueName>,
        since: Option<Timestamp>,
        out: std::path::PathBuf,
    ) -> Result<()> {
        let data = self.export(queue, since).await?;
        self.blocking_long(move |i| {
            let originals = i.store.read(|db| {
                let mut names = HashMap::new();
                for a in data.instructions.iter().flat_map(|x| &x.attachments) {
                    if let Some(row) = db.get_attachment(&a.id)? {
                        names.insert(a.id.clone(), row.file);
                    }
                }
                Ok(names)
            })?;
            let file = crate::private_fs::create_new(&out)
                .map_err(|e| Error::internal(format!("cannot write {}", out.display()), e))?;
            crate::export::write_bundle(&data, std::io::BufWriter::new(file), |a| {
                let name = originals
                    .get(&a.id)
                    .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
                i.store.files().open(&a.instruction_id, name)
            })
        })
        .await
    }
}

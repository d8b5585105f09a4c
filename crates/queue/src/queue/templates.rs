//! Templates: saved instructions, with optional files, kept with the same
//! durability as the person's other input. Using one is the composer's (or
//! the CLI's) business: it fills the text and stages the files, which are
//! then queued like any other — so a template's files go through the
//! upload's inspection twice, once when saved and once when used.
//!
//! A template's files are written (and fsynced) into their own folder
//! beside the attachments before their rows commit; the start-up sweep
//! knows them, and removes any a crash left without a row.

use super::uploads::{prepare, Ready};
use super::{validate_content, Queue};
use crate::media::Arrival;
use crate::model::{template_name, Template, TemplateFile, Upload};
use crate::store::{template_folder, Durability, NewFile, TemplateFileRow};
use crate::{Error, Result};

/// How many templates a database keeps: a list to pick from, not a second history.
pub const MAX_TEMPLATES: usize = 500;

impl Queue {
    /// Every template, by name, with its files.
    pub async fn templates(&self) -> Result<Vec<Template>> {
        self.blocking(|i| {
            i.store.read(|db| {
                let mut all = db.templates()?;
                for t in &mut all {
                    t.files = db.template_files(&t.name)?.into_iter().map(|f| f.file).collect();
                }
                Ok(all)
            })
        })
        .await
    }

    pub async fn template(&self, name: &str) -> Result<Template> {
        let name = template_name(name)?;
        self.blocking(move |i| {
            i.store.read(|db| {
                let mut t = db.get_template(&name)?.ok_or_else(|| no_template(&name))?;
                t.files = db.template_files(&name)?.into_iter().map(|f| f.file).collect();
                Ok(t)
            })
        })
        .await
    }

    /// Add files to a template (inspected like an upload; an instruction's limits).
    pub async fn add_template_files(&self, name: &str, uploads: Vec<Upload>) -> Result<Template> {
        if uploads.is_empty() {
            return Err(Error::Invalid("no files were sent".into()));
        }
        let current = self.template(name).await?;
        let name = current.name.clone();
        let have_bytes = current.files.iter().map(|f| f.bytes as usize).sum();
        let ready: Vec<Ready> = prepare(
            template_folder(&name),
            uploads,
            current.files.len(),
            have_bytes,
            Arrival::New,
        )
        .await?;
        let key = name.clone();
        self.blocking(move |i| {
            let folder = template_folder(&key);
            let files = i.store.files();
            let list: Vec<NewFile<'_>> = ready
                .iter()
                .map(|r| NewFile {
                    name: r.row.file.clone(),
                    bytes: &r.original,
                })
                .collect();
            let names: Vec<String> = list.iter().map(|f| f.name.clone()).collect();
            files.write(&folder, &list).map_err(|e| {
                files.remove(&folder, &names);
                i.store.fault(Error::internal("writing a template's file", e))
            })?;
            let written = i.store.write(
                Durability::Full,
                |db| {
                    if db.get_template(&key)?.is_none() {
                        return Err(no_template(&key)); // deleted meanwhile
                    }
                    let next = db
                        .template_files(&key)?
                        .iter()
                        .map(|f| f.file.ordinal + 1)
                        .max()
                        .unwrap_or(0);
                    for (n, r) in ready.iter().enumerate() {
                        let a = &r.row.attachment;
                        db.insert_template_file(
                            &key,
                            &TemplateFileRow {
                                file: TemplateFile {
                                    ordinal: next + n as u32,
                                    name: a.name.clone(),
                                    kind: a.kind.clone(),
                                    mime_type: a.mime_type.clone(),
                                    bytes: a.bytes,
                                    sha256: a.sha256.clone(),
                                    created_at: a.created_at.clone(),
                                },
                                stored: r.row.file.clone(),
                            },
                        )?;
                    }
                    Ok(())
                },
                |_| {},
            );
            if written.is_err() {
                files.remove(&folder, &names);
            }
            written
        })
        .await?;
        tracing::info!(template = %name, "template files added");
        self.template(&name).await
    }

    /// One of a template's files, and its bytes (read inside the template's
    /// folder, never through a link).
    pub async fn template_file(&self, name: &str, ordinal: u32) -> Result<(TemplateFile, Vec<u8>)> {
        let name = template_name(name)?;
        self.blocking(move |i| {
            let row = i.store.read(|db| {
                db.template_files(&name)?
                    .into_iter()
                    .find(|f| f.file.ordinal == ordinal)
                    .ok_or_else(|| no_file(&name, ordinal))
            })?;
            let bytes = i
                .store
                .files()
                .read(&template_folder(&name), &row.stored)
                .map_err(|e| Error::internal(format!("reading a file of template {name}"), e))?;
            Ok((row.file, bytes))
        })
        .await
    }

    /// Remove one of a template's files.
    pub async fn remove_template_file(&self, name: &str, ordinal: u32) -> Result<Template> {
        let name = template_name(name)?;
        let key = name.clone();
        self.blocking(move |i| {
            let gone = i.store.write(
                Durability::Full,
                |db| {
                    db.delete_template_file(&key, ordinal)?
                        .ok_or_else(|| no_file(&key, ordinal))
                },
                |_| {},
            )?;
            // After the commit: a crash in between leaves a file the sweep removes.
            i.store.files().remove(&template_folder(&key), &[gone.stored]);
            Ok(())
        })
        .await?;
        self.template(&name).await
    }

    /// Save `content` under `name` (replacing what was there); true when it is new.
    pub async fn save_template(&self, name: &str, content: String) -> Result<(Template, bool)> {
        let name = template_name(name)?;
        let content = validate_content(content)?;
        self.blocking(move |i| {
            i.store.write(
                Durability::Full,
                |db| {
                    let new = db.get_template(&name)?.is_none();
                    if new && db.templates()?.len() >= MAX_TEMPLATES {
                        return Err(Error::Conflict(format!(
                            "there are {MAX_TEMPLATES} templates already: delete one first"
                        )));
                    }
                    Ok((db.put_template(&name, &content, &crate::model::Timestamp::now())?, new))
                },
                |_| {},
            )
        })
        .await
    }

    /// Delete a template with its files.
    pub async fn delete_template(&self, name: &str) -> Result<()> {
        let name = template_name(name)?;
        self.blocking(move |i| {
            i.store.write(
                Durability::Full,
                |db| {
                    if db.delete_template(&name)? {
                        Ok(())
                    } else {
                        Err(no_template(&name))
                    }
                },
                |_| {},
            )?;
            i.store.files().remove_all(&template_folder(&name));
            Ok(())
        })
        .await
    }
}

fn no_template(name: &str) -> Error {
    Error::NotFound(format!("no template named {name}"))
}

fn no_file(name: &str, ordinal: u32) -> Error {
    Error::NotFound(format!("template {name} has no file {ordinal}"))
}

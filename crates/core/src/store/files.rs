//! The attachment files, beside the database: `<database>-attachments/<instruction id>/`.
//!
//! Files are written and fsynced (with their folders) *before* the rows that
//! name them commit, so a row never points at a missing file; a crash in
//! between leaves files without a row, which [`Files::sweep`] removes at the
//! next start. The folder is tied to its database (like SQLite's `-wal`
//! file), so two databases in one folder never sweep each other's files.
//!
//! Nothing a row names is trusted: a database may come back from a backup
//! someone else made. An instruction's folder and a file's name are each one
//! plain name (`private_fs::plain_component`) before they are joined onto
//! the folder, and files are opened from it without following links
//! (`private_fs::open_beneath`).

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

use crate::{paths, private_fs};

/// The folder of a template's files, beside the instructions' folders: a
/// name no instruction id can have (ids never hold a '.').
pub fn template_folder(template: &str) -> String {
    format!(".template.{template}")
}

/// The attachment folder of one database.
#[derive(Debug, Clone)]
pub struct Files {
    root: PathBuf,
    /// An in-memory database's folder, removed with the last clone.
    _temporary: Option<std::sync::Arc<private_fs::WorkDir>>,
}

/// A file to write: its name inside the instruction's folder, and its bytes.
pub struct NewFile<'a> {
    pub name: String,
    pub bytes: &'a [u8],
}

impl Files {
    /// The folder for the database at `db`.
    pub fn beside(db: &Path) -> Files {
        let mut name = db.file_name().unwrap_or_default().to_os_string();
        name.push("-attachments");
        Files {
            root: db.with_file_name(name),
            _temporary: None,
        }
    }

    /// A private folder for an in-memory database (tests).
    pub fn temporary() -> Files {
        // Nowhere to put files is no reason to fail a test's store; its
        // writes would then fail with the reason.
        let work = private_fs::WorkDir::temporary().ok().map(std::sync::Arc::new);
        let root = work.as_ref().map_or_else(PathBuf::new, |w| w.join("attachments"));
        Files { root, _temporary: work }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// An instruction's (or a template's) folder: one plain name under the root.
    fn dir(&self, instruction_id: &str) -> io::Result<PathBuf> {
        private_fs::plain_component(instruction_id)?;
        Ok(self.root.join(instruction_id))
    }

    /// The absolute path of one of an instruction's files (what an agent is
    /// told), when both names are plain.
    pub fn path(&self, instruction_id: &str, file: &str) -> io::Result<PathBuf> {
        private_fs::plain_component(file)?;
        Ok(self.dir(instruction_id)?.join(file))
    }

    /// Open one of an instruction's files for reading: a link at its folder
    /// or its name is refused, and so is anything but a regular file.
    pub fn open(&self, instruction_id: &str, file: &str) -> io::Result<std::fs::File> {
        private_fs::open_beneath(&self.root, instruction_id, file)
    }

    /// Read one of an instruction's files whole (as [`Files::open`]).
    pub fn read(&self, instruction_id: &str, file: &str) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut self.open(instruction_id, file)?, &mut bytes)?;
        Ok(bytes)
    }

    /// Write files into an instruction's folder and make them durable
    /// (each file, the folder, and the root that holds the folder).
    pub fn write(&self, instruction_id: &str, files: &[NewFile<'_>]) -> io::Result<()> {
        let dir = self.dir(instruction_id)?;
        paths::private_dir(&dir)?;
        for f in files {
            private_fs::plain_component(&f.name)?;
            paths::write_private(&dir.join(&f.name), f.bytes)?;
        }
        private_fs::sync_dir_checked(&dir)?;
        private_fs::sync_dir_checked(&self.root)
    }

    /// Link (or copy, where links are not possible) another instruction's
    /// files into this one's folder, durably.
    pub fn copy(&self, from: &str, to: &str, names: &[(String, String)]) -> io::Result<()> {
        let dir = self.dir(to)?;
        paths::private_dir(&dir)?;
        for (old, new) in names {
            private_fs::plain_component(new)?;
            let (src, dst) = (self.path(from, old)?, dir.join(new));
            private_fs::link_or_copy(&src, &dst)?;
        }
        private_fs::sync_dir_checked(&dir)?;
        private_fs::sync_dir_checked(&self.root)
    }

    /// Remove some files of an instruction (best effort: a leftover is swept at start).
    pub fn remove(&self, instruction_id: &str, names: &[String]) {
        for name in names {
            let removed = self.path(instruction_id, name).and_then(|path| {
                std::fs::remove_file(&path).or_else(|e| match e.kind() {
                    io::ErrorKind::NotFound => Ok(()),
                    _ => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
                })
            });
            if let Err(e) = removed {
                tracing::warn!(error = %e, "could not remove an attachment file");
            }
        }
    }

    /// Remove an instruction's folder (best effort, as above).
    pub fn remove_all(&self, instruction_id: &str) {
        let removed = self.dir(instruction_id).and_then(|dir| {
            std::fs::remove_dir_all(&dir).or_else(|e| match e.kind() {
                io::ErrorKind::NotFound => Ok(()),
                _ => Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
            })
        });
        if let Err(e) = removed {
            tracing::warn!(error = %e, "could not remove an attachment folder");
        }
    }

    /// Remove every file no row names: folders of instructions that have no
    /// attachment row, and files in the others that no row lists. Returns how
    /// many entries were removed.
    pub fn sweep(&self, kept: &HashSet<(String, String)>) -> io::Result<usize> {
        let dirs: HashSet<&str> = kept.iter().map(|(i, _)| i.as_str()).collect();
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut removed = 0;
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if !entry.file_type()?.is_dir() || !dirs.contains(name.as_str()) {
                remove_any(&path)?;
                removed += 1;
                continue;
            }
            for file in std::fs::read_dir(&path)? {
                let file = file?;
                let file_name = file.file_name().to_string_lossy().into_owned();
                if !kept.contains(&(name.clone(), file_name)) {
                    remove_any(&file.path())?;
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }
}

fn remove_any(path: &Path) -> io::Result<()> {
    if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_keeps_what_rows_name_and_removes_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::beside(&dir.path().join("q.sqlite3"));
        assert!(files.root().ends_with("q.sqlite3-attachments"));
        files
            .write(
                "i1",
                &[
                    NewFile {
                        name: "a.png".into(),
                        bytes: b"1",
                    },
                    NewFile {
                        name: "stray".into(),
                        bytes: b"2",
                    },
                ],
            )
            .unwrap();
        files
            .write(
                "orphan",
                &[NewFile {
                    name: "b.png".into(),
                    bytes: b"3",
                }],
            )
            .unwrap();
        std::fs::write(files.root().join("loose.tmp"), b"x").unwrap();
        let kept: HashSet<(String, String)> = [("i1".to_owned(), "a.png".to_owned())].into();
        assert_eq!(files.sweep(&kept).unwrap(), 3);
        assert!(files.path("i1", "a.png").unwrap().exists());
        assert!(!files.path("i1", "stray").unwrap().exists());
        assert!(!files.root().join("orphan").exists());
        assert_eq!(files.sweep(&kept).unwrap(), 0);
    }

    #[test]
    fn copies_survive_the_source_folder() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::beside(&dir.path().join("q.sqlite3"));
        files
            .write(
                "a",
                &[NewFile {
                    name: "x".into(),
                    bytes: b"data",
                }],
            )
            .unwrap();
        files.copy("a", "b", &[("x".into(), "y".into())]).unwrap();
        files.remove_all("a");
        assert_eq!(files.read("b", "y").unwrap(), b"data");
    }
}

//! The shell's own preferences (which notifications to show), kept in
//! `desktop.json` in the platform config folder. The queue's settings live in
//! the engine; these only concern this desktop.

use engine::sync::MutexExt;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Prefs {
    /// "<agent> picked up: …" when an instruction is consumed.
    pub notify_consumed: bool,
    /// "<agent> is waiting for you" when an agent waits on an empty queue.
    pub notify_waiting: bool,
    /// "<agent> reported: …" when an agent reports or asks.
    pub notify_reported: bool,
}

impl Default for Prefs {
    fn default() -> Self {
        Prefs {
            notify_consumed: true,
            notify_waiting: false,
            notify_reported: true,
        }
    }
}

/// Preferences plus where they are saved.
pub struct PrefsFile {
    path: Option<PathBuf>,
    prefs: Mutex<Prefs>,
}

impl PrefsFile {
    pub fn load() -> PrefsFile {
        let path = engine::default_desktop_prefs();
        let prefs = path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        PrefsFile {
            path,
            prefs: Mutex::new(prefs),
        }
    }

    pub fn get(&self) -> Prefs {
        *self.prefs.lock_anyway()
    }

    pub fn update(&self, f: impl FnOnce(&mut Prefs)) -> Prefs {
        let mut guard = self.prefs.lock_anyway();
        f(&mut guard);
        let prefs = *guard;
        drop(guard);
        if let Some(path) = &self.path {
            // Atomic and owner-only, like every file local-mcp writes.
            let saved = path
                .parent()
                .map_or(Ok(()), engine::private_fs::create_dir_all)
                .and_then(|()| {
                    engine::private_fs::replace(
                        path,
                        &serde_json::to_vec_pretty(&prefs).unwrap_or_default(),
                        engine::private_fs::Mode::Private,
                    )
                });
            if let Err(e) = saved {
                tracing::warn!(error = %e, path = %path.display(), "could not save desktop preferences");
            }
        }
        prefs
    }
}

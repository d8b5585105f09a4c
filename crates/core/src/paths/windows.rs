//! Windows: the home is `%USERPROFILE%` and the config folder `%APPDATA%`,
//! where the agents' clients look for their files: they are Node and
//! Electron programs — Node's `os.homedir()` reads `USERPROFILE` (Cursor's
//! `.cursor`, Codex's `.codex`, Claude Code's `.claude.json` are under it),
//! VS Code and its kin read `APPDATA`. When a variable is unset, empty or
//! not an absolute path, the shell's known folders are used (what the
//! `directories` crate asks `SHGetKnownFolderPath` for; on a normal
//! account they are the same folders).
//!
//! Verified: built for `x86_64-pc-windows-gnu` and run under Wine by
//! `npm run check:platforms`, where `cli::connect_does_not_invent_…`,
//! `connect::the_connect_command_end_to_end` and the `connect` module's
//! other tests write and remove client files in a fresh home named by these
//! two variables. Not yet run on a real Windows (the release workflow's
//! Windows job builds it and runs `peer`'s tests, not these).

use std::path::PathBuf;

fn folder(var: &str) -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os(var)?);
    path.is_absolute().then_some(path)
}

pub fn client_folders() -> Option<(PathBuf, PathBuf)> {
    let base = directories::BaseDirs::new();
    let home = folder("USERPROFILE").or_else(|| base.as_ref().map(|b| b.home_dir().to_path_buf()))?;
    let config = folder("APPDATA").or_else(|| base.as_ref().map(|b| b.config_dir().to_path_buf()))?;
    Some((home, config))
}

pub fn claude_desktop_store_folder() -> Option<PathBuf> {
    let packages = folder("LOCALAPPDATA")?.join("Packages");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&packages)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("Claude_"))
        .map(|e| e.path().join("LocalCache").join("Roaming").join("Claude"))
        .filter(|p| p.exists())
        .collect();
    (found.len() == 1).then(|| found.remove(0))
}

/// Windows has no executable bit: a file on `PATH` with its extension is a program.
pub fn is_program(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

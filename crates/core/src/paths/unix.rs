//! Linux and macOS: the home and config folders the agents' clients read,
//! from the `directories` crate — `$HOME`, and `$XDG_CONFIG_HOME` or
//! `~/.config` on Linux, `~/Library/Application Support` on macOS.
//!
//! Verified: on Linux by every `connect` test of `npm test` (each points
//! `HOME` and `XDG_CONFIG_HOME` at a fresh home); for macOS type-checked by
//! `npm run check:platforms` (`aarch64-apple-darwin`, `x86_64-apple-darwin`).

use std::path::PathBuf;

pub fn client_folders() -> Option<(PathBuf, PathBuf)> {
    let base = directories::BaseDirs::new()?;
    Some((base.home_dir().to_path_buf(), base.config_dir().to_path_buf()))
}

/// No store install of Claude Desktop moves its file here.
pub fn claude_desktop_store_folder() -> Option<PathBuf> {
    None
}

pub fn is_program(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

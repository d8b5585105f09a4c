//! local-mcp's foundations: what every other crate of the workspace builds on,
//! and nothing that knows about queues' rules, HTTP, MCP or the command line
//! (those crates sit above this one, so an import of theirs does not compile).
//!
//! # Layout
//! Each module owns one concern and imports only from the layers below it
//! (`docs/ARCHITECTURE.md` has the map; inside this crate the engine's
//! `tests/it/layers.rs` still checks the order):
//!
//! 0. `error`, `time`, `sync` (a lock past a panic), `private_fs` (the one
//!    way files are created), `paths` (the file places), `peer` (who owns a
//!    local socket), `process` (our other processes, by pid), `markdown`,
//!    `media` (what an upload is), `written` (whether a response went out).
//! 1. `model` — the nouns, plain data, each checked once; the settings are
//!    declared there once.
//! 2. `config` (flags, environment, file) and `store` (SQLite: every SQL statement).
//! 3. `lock` (one engine per database), `connection_info` (the
//!    connection-info file), `export` (the history as a file).

pub mod config;
pub mod connection_info;
pub mod error;
pub mod export;
pub mod lock;
pub mod markdown;
pub mod media;
pub mod model;
pub mod paths;
pub mod peer;
pub mod private_fs;
pub mod process;
pub mod store;
pub mod sync;
pub mod time;
pub mod written;

pub use error::{Error, Result};

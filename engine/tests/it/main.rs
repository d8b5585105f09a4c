//! The engine's integration tests, one binary (as cargo's own `tests/testsuite/`):
//! the real engine on port 0 with a temporary database, the real
//! `local-mcp-server` binary where a test needs a process (kills, other
//! accounts, the CLI), and real MCP clients. One module per area; `common`
//! holds the shared harness. Run one area with `cargo test -p local-mcp-engine
//! --test it <area>::`.

mod common;
#[cfg(unix)]
mod other_account;

mod api;
mod attachments;
mod backup;
mod catalog;
mod cli;
mod clients;
mod connect;
mod crash;
mod daemon;
mod delivery;
mod direct;
mod events;
mod export;
mod hook;
mod hostile;
mod import;
#[cfg(unix)] // another account through setpriv
mod lan;
mod layers;
mod logs;
mod mcp;
mod model;
mod newcomer;
mod one_engine;
mod queues;
mod recovery;
mod reports;
#[cfg(unix)] // another account through setpriv (docs/PLATFORMS.md)
mod same_user;
mod search;
mod security;
#[cfg(unix)]
mod shared_paths;
mod storage;
mod tasks;
mod templates;
#[cfg(unix)]
mod threats;
#[cfg(unix)]
mod token_leaks;
#[cfg(unix)]
mod untrusted;

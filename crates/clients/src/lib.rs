//! What local-mcp knows about MCP client programs (Claude Code, VS Code,
//! Cursor, Codex, …): the configuration snippet each takes (`snippets`) and
//! our entry in each one's own files (`client_files`). Beside the queue, not
//! above it: nothing here knows about instructions or the server.

pub mod client_files;
pub mod snippets;

// The layers below, under the names the modules use (`crate::model`, …).
use local_mcp_core::{model, paths, private_fs, time, Error, Result};

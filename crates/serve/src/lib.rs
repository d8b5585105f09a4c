//! local-mcp's ways in over the network: the token and the page session
//! (`auth`), the MCP tools, resources and prompt (`mcp`, with the direct fast
//! path for `get_user_request` in `mcp/direct.rs`), the HTTP guard, API, SSE
//! and page (`http`, with `/mcp` nested), the listener (`server`), and the
//! phone's own TLS listener with its pairing and gate (`phone`).

pub mod auth;
pub mod http;
pub mod mcp;
pub mod phone;
mod said;
pub mod server;

// The layers below, under the names the modules use (`crate::queue`, …).
use local_mcp_clients::{client_files, snippets};
use local_mcp_core::{connection_info, export, model, paths, peer, private_fs, sync, time, written, Error, Result};
use local_mcp_queue::{events, queue};

//! local-mcp's command line: a running engine's API, typed (`client`: found,
//! called, its answers and events decoded), and the commands and the stdio
//! bridge that use it (`cli`). It talks to the server over HTTP, so nothing
//! of the server's crate is linked in: a change there does not rebuild this.

pub mod cli;
pub mod client;

// The layers below, under the names the modules use (`crate::store`, …).
use local_mcp_clients::{client_files, snippets};
use local_mcp_core::{
    config, connection_info, export, lock, model, paths, peer, private_fs, process, store, sync, time, Error, Result,
};
use local_mcp_queue::events::{Event, EventData, EventKind};

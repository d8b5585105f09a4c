//! local-mcp's rules: what a person or an agent can do to the queue
//! (`queue`), and the domain events each change publishes (`events`). Above
//! the store; below every way in (HTTP, MCP, the command line), which is why
//! none of those can be named here.

pub mod events;
pub mod queue;

// The layers below, under the names the modules use (`crate::store`, …).
use local_mcp_core::{export, markdown, media, model, private_fs, store, sync, time, Error, Result};

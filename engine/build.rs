//! The headless server's release code, hot functions first (`build/link_order.rs`).

#[path = "build/link_order.rs"]
mod link_order;

fn main() {
    let dir = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    link_order::apply("local-mcp-server", &dir.join("build/local-mcp-server.order"));
}

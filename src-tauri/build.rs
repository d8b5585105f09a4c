//! Tauri's build step, and the release app's code with its hot functions
//! first (`engine/build/link_order.rs`).

#[path = "../engine/build/link_order.rs"]
mod link_order;

fn main() {
    let dir = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    link_order::apply("local-mcp", &dir.join("src-tauri/local-mcp.order"));
    tauri_build::build()
}

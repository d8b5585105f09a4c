//! The release binaries' code laid out hot-first, from an order file.
//!
//! A long-running process keeps mapped every page of its code it has run,
//! and the kernel maps 64 KiB around each page a process first touches
//! (fault-around). The linker places functions in no particular order, so
//! the few thousand that start-up and serving run are spread over nearly
//! all of the text: the headless server mapped ~8 of its ~11 MiB of code
//! while idle, though callgrind counts ~3 MiB of functions run. Named in an
//! order file, lld puts those functions first and together.
//!
//! The order files are written by `scripts/link-order.py` (the binary run
//! under callgrind through start-up and a person's and an agent's usual
//! requests). A name the build no longer has is skipped, so a stale file
//! costs memory, never correctness: the bench's idle-RSS row shows it.
//! Only for `x86_64-unknown-linux-gnu` release builds, whose default
//! linker is lld since Rust 1.90; a linker chosen by hand may not know the
//! flag, so then, or with `LOCAL_MCP_LINK_ORDER=off`, the layout is the
//! linker's own.

use std::path::Path;

/// Link `bin` with the functions `file` names first, in its order.
pub fn apply(bin: &str, file: &Path) {
    // Cargo reruns a build script every time for a path that does not exist.
    match file.is_file() {
        true => println!("cargo:rerun-if-changed={}", file.display()),
        false => println!("cargo:rerun-if-changed={}", file.parent().unwrap_or(file).display()),
    }
    println!("cargo:rerun-if-env-changed=LOCAL_MCP_LINK_ORDER");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let linker_chosen =
        flags.contains("fuse-ld") || flags.contains("linker") || std::env::var_os("RUSTC_LINKER").is_some();
    let wanted = var("PROFILE") == "release"
        && var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("LOCAL_MCP_LINK_ORDER") != "off"
        && !linker_chosen;
    if wanted && file.is_file() {
        println!(
            "cargo:rustc-link-arg-bin={bin}=-Wl,--symbol-ordering-file={}",
            file.display()
        );
        println!("cargo:rustc-link-arg-bin={bin}=-Wl,--no-warn-symbol-ordering");
    }
}

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
//! requests). The names carry hashes of the toolchain, the dependencies and
//! their features: a name the build does not have is skipped, so a stale
//! file costs memory, never correctness (the bench's idle-RSS row shows it).
//! Only for `x86_64-unknown-linux-gnu` release builds, and only when a probe
//! link with this rustc, its flags and its linker takes the flag: rustup's
//! toolchains link with lld there since Rust 1.90, a distribution's rustc
//! may call GNU ld, which does not know it. A linker chosen only on
//! `cargo rustc`'s command line is not seen by the probe: set
//! `LOCAL_MCP_LINK_ORDER=off` then.

use std::path::Path;
use std::process::{Command, Stdio};

/// Link `bin` with the functions `file` names first, in its order.
pub fn apply(bin: &str, file: &Path) {
    // Cargo reruns a build script every time for a path that does not exist.
    match file.is_file() {
        true => println!("cargo:rerun-if-changed={}", file.display()),
        false => println!("cargo:rerun-if-changed={}", file.parent().unwrap_or(file).display()),
    }
    println!("cargo:rerun-if-env-changed=LOCAL_MCP_LINK_ORDER");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let wanted = var("PROFILE") == "release"
        && var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("LOCAL_MCP_LINK_ORDER") != "off"
        && file.is_file();
    // A path with a comma would be split by `-Wl,`; `-Xlinker` passes it whole.
    let Some(path) = file.to_str() else { return };
    let linker_flags = [
        format!("--symbol-ordering-file={path}"),
        "--no-warn-symbol-ordering".to_owned(),
    ];
    if wanted && linker_takes(&linker_flags) {
        for flag in linker_flags {
            println!("cargo:rustc-link-arg-bin={bin}=-Xlinker");
            println!("cargo:rustc-link-arg-bin={bin}={flag}");
        }
    }
}

/// Whether an empty program links with these linker flags, as this build links.
fn linker_takes(linker_flags: &[String]) -> bool {
    let (Some(rustc), Some(out)) = (std::env::var_os("RUSTC"), std::env::var_os("OUT_DIR")) else {
        return false;
    };
    let out = Path::new(&out);
    let source = out.join("link_order_probe.rs");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let mut probe = Command::new(rustc);
    probe
        .args(["--crate-name", "link_order_probe", "--edition", "2021", "--target"])
        .arg(std::env::var("TARGET").unwrap_or_default())
        .arg("-o")
        .arg(out.join("link_order_probe"))
        .arg(&source);
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    probe.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        probe.arg("-C").arg(format!("linker={}", linker.to_string_lossy()));
    }
    for flag in linker_flags {
        probe
            .args(["-C", "link-arg=-Xlinker", "-C"])
            .arg(format!("link-arg={flag}"));
    }
    let taken = probe
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !taken {
        println!("cargo:warning=the linker does not take --symbol-ordering-file: the release code keeps the linker's own layout");
    }
    taken
}

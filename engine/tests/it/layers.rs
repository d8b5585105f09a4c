//! The module layering (`docs/ARCHITECTURE.md`, "Module map"). Between crates
//! the compiler enforces it: a crate cannot name one above it (`crates/core`
//! knows nothing of `crates/serve`). Inside a crate it is read here: each
//! top-level module imports only from lower layers, or from a module of its
//! own layer that does not import it back, so the module graph has no cycle.
//!
//! Read from the sources: every `crate::name` path and `crate::{…}` group in
//! `engine/src` and each `crates/*/src`, by the top-level module of the file
//! it is in. A new module must be given a layer here, which is the moment to
//! decide where it sits.
//!
//! Also read from the sources: files and folders are created only by
//! `private_fs` (owner-only, never through a link, never at a name another
//! account could have chosen; `docs/RELIABILITY.md`, "Other accounts").

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. The crate root (`lib.rs`) sits above them all.
const LAYERS: &[&[&str]] = &[
    &[
        "error",
        "time",
        "sync",
        "private_fs",
        "process",
        "paths",
        "peer",
        "markdown",
        "media",
        "written",
        "heap",
        "said",
    ],
    &["model"],
    &["config", "store"],
    &[
        "events",
        "auth",
        "connection_info",
        "lock",
        "snippets",
        "client_files",
        "export",
    ],
    &["queue"],
    &["mcp", "client", "phone"],
    &["cli", "http"],
    &["server"],
];

fn layer_of(module: &str) -> Option<usize> {
    if module == "lib" {
        return Some(LAYERS.len());
    }
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Each crate's `src` folder: the engine's and the workspace's crates'.
fn source_roots() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut roots = vec![root.join("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("../crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    assert!(crates.len() >= 5, "the workspace's crates: {crates:?}");
    roots.extend(crates);
    roots
}

/// Every Rust source of the engine and its crates.
fn all_sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for src in source_roots() {
        rust_files(&src, &mut files);
    }
    files
}

/// Where the one module that creates files lives.
fn private_fs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/core/src/private_fs")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules each top-level module names through `crate::`.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for src in source_roots() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let relative = file.strip_prefix(&src).unwrap();
            let first = relative
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy()
                .into_owned();
            if first == "bin" {
                continue; // the binaries are clients of the library, not part of it
            }
            let module = if first == "lib.rs" {
                "lib".to_owned()
            } else {
                first.trim_end_matches(".rs").to_owned()
            };
            let text: String = std::fs::read_to_string(&file)
                .unwrap()
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            let names = graph.entry(module.clone()).or_default();
            let mut rest = text.as_str();
            while let Some(at) = rest.find("crate::") {
                rest = &rest[at + "crate::".len()..];
                let group = if let Some(inner) = rest.strip_prefix('{') {
                    inner.split('}').next().unwrap_or("").to_owned()
                } else {
                    rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
                };
                for item in group.split(',') {
                    let name = item.trim().split("::").next().unwrap_or("").trim();
                    // The root re-exports the error type.
                    let name = if name == "Error" || name == "Result" {
                        "error"
                    } else {
                        name
                    };
                    if !name.is_empty() && name != module && name.chars().next().is_some_and(char::is_lowercase) {
                        names.insert(name.to_owned());
                    }
                }
            }
        }
    }
    graph
}

#[test]
fn every_module_imports_only_downward_and_there_is_no_cycle() {
    let graph = imports();
    let mut wrong = Vec::new();
    for (module, names) in &graph {
        let Some(from) = layer_of(module) else {
            wrong.push(format!("{module} has no layer in tests/layers.rs"));
            continue;
        };
        for name in names {
            match layer_of(name) {
                None => wrong.push(format!("{module} imports {name}, which has no layer")),
                Some(to) if to > from => wrong.push(format!("{module} (layer {from}) imports {name} (layer {to})")),
                Some(_) => {}
            }
        }
    }
    // Same-layer imports are allowed only one way: look for a cycle.
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        cycles: &mut Vec<String>,
    ) {
        if let Some(start) = path.iter().position(|n| *n == node) {
            cycles.push(format!("cycle: {} -> {node}", path[start..].join(" -> ")));
            return;
        }
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, cycles);
        }
        path.pop();
    }
    for module in graph.keys() {
        visit(module, &graph, &mut Vec::new(), &mut wrong);
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
    // The scan itself works: the queue is known to use the store.
    assert!(graph["queue"].contains("store"), "{graph:?}");
}

/// The ways Rust can create a file or folder, or name the shared temp folder.
const CREATES: &[&str] = &[
    "File::create",
    "fs::write(",
    "OpenOptions",
    "fs::copy(",
    "create_dir(",
    "create_dir_all(",
    "DirBuilder",
    "tempfile::",
    "temp_dir()",
    "hard_link(",
];

/// A source file's lines outside its test module (tests build fixtures freely).
fn lines_outside_tests(file: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        out.push((n + 1, code.to_owned()));
    }
    out
}

#[test]
fn only_private_fs_creates_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = all_sources();
    rust_files(&root.join("../src-tauri"), &mut files);
    assert!(files.len() > 50, "the scan found the sources: {}", files.len());
    let mut found = Vec::new();
    for file in &files {
        // private_fs itself, and test modules kept in files of their own.
        if file.starts_with(private_fs_dir()) || file.ends_with("tests.rs") {
            continue;
        }
        for (n, code) in lines_outside_tests(file) {
            for pattern in CREATES {
                let outside = code
                    .match_indices(pattern)
                    .any(|(at, _)| !code[..at].ends_with("private_fs::"));
                if outside {
                    found.push(format!("{}:{n}: {pattern}", file.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "create files and folders through engine::private_fs (owner-only, O_EXCL, no links):\n{}",
        found.join("\n")
    );
    // The scan itself works: private_fs is where they are.
    let here: Vec<_> = ["mod.rs", "unix.rs", "windows.rs"]
        .iter()
        .flat_map(|f| lines_outside_tests(&private_fs_dir().join(f)))
        .filter(|(_, code)| CREATES.iter().any(|p| code.contains(p)))
        .collect();
    assert!(here.len() >= 3, "{here:?}");
}

/// Files small enough to read in one sitting: no engine or desktop source
/// over 500 lines, its tests aside (a `tests.rs`, or what follows `#[cfg(test)]`).
#[test]
fn no_source_file_is_over_500_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = all_sources();
    rust_files(&root.join("../src-tauri"), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter(|f| !f.ends_with("tests.rs"))
        .map(|f| (f, lines_outside_tests(f).len()))
        .filter(|(_, n)| *n > 500)
        .map(|(f, n)| format!("{}: {n} lines", f.display()))
        .collect();
    assert!(long.is_empty(), "split these by concern:\n{}", long.join("\n"));
}

/// Each noun's rule in one place (`model/names.rs`): the queue-name pattern
/// is spelled once in the sources, and every schema that names a queue
/// takes it from `QueueName`.
#[test]
fn the_queue_name_rule_is_spelled_once() {
    let files = all_sources();
    let spelled: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .contains("[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert_eq!(spelled.len(), 1, "{spelled:?}");
    assert!(spelled[0].ends_with("model/names.rs"), "{spelled:?}");
}

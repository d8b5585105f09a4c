//! While no window is open, the app gives back the code and read-only data
//! pages it is not using. A window's first open pulls tens of MiB of
//! WebKitGTK's, JavaScriptCore's and GTK's code into this process; with the
//! window gone nothing runs them, yet they stay mapped (and counted as the
//! app's memory) for as long as it sits in the tray. So, on Linux, once no
//! window is open (`webview_helpers`), the clean pages of the app's own
//! program and of its shared libraries are reclaimed (`madvise` with
//! `MADV_PAGEOUT`, as the kernel would under memory pressure): what the tray,
//! the engine and the next window use again is read back from its file.
//! Measured (docs/PERFORMANCE.md): the app after its window closed 94–97 →
//! 32 MiB PSS, a re-opened window's page 0–100 ms later.
//!
//! Only pages that can be read again from their file are asked for:
//! read-only mappings of a shared object or of this program with no page of
//! their own (`Anonymous: 0 kB` in `/proc/self/smaps`, so no relocated page
//! is among them). Fonts, databases and other mapped files are left out:
//! they are mapped and unmapped as the app runs. `MADV_PAGEOUT` rather than
//! `MADV_DONTNEED` (which drops the mapping's pages outright, 27 MiB): a
//! range read from `smaps` that meanwhile held something else loses nothing
//! to a page-out, and a page another process maps is left alone.

// Reading the mappings is Linux only: elsewhere only `drop_code_pages` (a no-op) is used.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

/// A range of this process's address space that can be dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub start: usize,
    pub len: usize,
}

/// The ranges of `smaps` (the text of `/proc/self/smaps`) that hold only
/// pages read from a library's or from `exe`'s file.
pub fn droppable(smaps: &str, exe: &str) -> Vec<Range> {
    let mut found = Vec::new();
    // The mapping being read, while it qualifies, until its `Anonymous:` line.
    let mut current: Option<Range> = None;
    for line in smaps.lines() {
        match mapping_line(line) {
            // A mapping whose `Anonymous:` line never came is not known to be clean.
            Some(mapping) => current = mapping.filter(|m| qualifies(m, exe)).map(|m| m.range),
            None => {
                if let (Some(kib), Some(range)) = (line.strip_prefix("Anonymous:"), current) {
                    current = None;
                    if kib.trim().strip_suffix("kB").map(str::trim) == Some("0") {
                        found.push(range);
                    }
                }
            }
        }
    }
    found
}

struct Mapping<'a> {
    range: Range,
    perms: &'a str,
    path: &'a str,
}

/// `Some(Some(mapping))` for a mapping's first line, `Some(None)` for one
/// that does not parse, `None` for the lines of its fields.
fn mapping_line(line: &str) -> Option<Option<Mapping<'_>>> {
    let (range, rest) = line.split_once(' ')?;
    let (start, end) = range.split_once('-')?;
    let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else {
        // "Size:", "Rss:"… have no hexadecimal range before their space.
        return None;
    };
    let mut fields = rest.splitn(5, ' ');
    let perms = fields.next()?;
    let _offset = fields.next();
    let _device = fields.next();
    let _inode = fields.next();
    let path = fields.next().unwrap_or("").trim_start();
    Some(end.checked_sub(start).map(|len| Mapping {
        range: Range { start, len },
        perms,
        path,
    }))
}

fn qualifies(m: &Mapping<'_>, exe: &str) -> bool {
    let read_only = m.perms.len() == 4 && m.perms.starts_with('r') && m.perms.as_bytes()[1] == b'-';
    let library = m.path.ends_with(".so") || m.path.contains(".so.");
    read_only
        && m.range.len > 0
        && m.path.starts_with('/')
        && !m.path.ends_with(" (deleted)")
        && (library || m.path == exe)
}

/// Reclaim this process's clean library and program pages; how many bytes
/// of address space were advised.
#[cfg(target_os = "linux")]
pub fn drop_code_pages() -> std::io::Result<u64> {
    // The kernel prints paths' bytes as they are: a folder with a name that is not UTF-8 must not turn this off.
    let smaps = String::from_utf8_lossy(&std::fs::read("/proc/self/smaps")?).into_owned();
    let exe = std::fs::read_link("/proc/self/exe")?;
    let mut advised = 0u64;
    for range in droppable(&smaps, &exe.to_string_lossy()) {
        // SAFETY: madvise with MADV_PAGEOUT changes no memory's contents
        // (reclaimed pages are read back, or swapped in, on their next use)
        // whatever the range holds by now; a kernel before 5.4 refuses it.
        let done = unsafe { libc::madvise(range.start as *mut libc::c_void, range.len, libc::MADV_PAGEOUT) };
        if done == 0 {
            advised += range.len as u64;
        }
    }
    Ok(advised)
}

#[cfg(not(target_os = "linux"))]
pub fn drop_code_pages() -> std::io::Result<u64> {
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const EXE: &str = "/opt/local-mcp/local-mcp";

    fn smaps(entries: &[(&str, &str, &str)]) -> String {
        entries
            .iter()
            .map(|(head, path, anon)| {
                format!("{head} 00000000 08:01 1234       {path}\nSize:                 64 kB\nRss:                  12 kB\nAnonymous:          {anon} kB\nVmFlags: rd mr mw me\n")
            })
            .collect()
    }

    #[test]
    fn only_clean_read_only_library_and_program_pages_are_dropped() {
        let text = smaps(&[
            ("555500000000-555500010000 r--p", EXE, "0"),
            ("555500010000-555500090000 r-xp", EXE, "0"),
            // Relocated, then made read-only: pages of its own.
            ("555500090000-5555000a0000 r--p", EXE, "8"),
            ("5555000a0000-5555000b0000 rw-p", EXE, "16"),
            (
                "7f0000000000-7f0001000000 r-xp",
                "/usr/lib/x86_64-linux-gnu/libwebkit2gtk-4.1.so.0.19.9",
                "0",
            ),
            (
                "7f0001000000-7f0001100000 r--p",
                "/usr/lib/x86_64-linux-gnu/libwebkit2gtk-4.1.so.0.19.9",
                "0",
            ),
            (
                "7f0001100000-7f0001200000 rw-p",
                "/usr/lib/x86_64-linux-gnu/libwebkit2gtk-4.1.so.0.19.9",
                "0",
            ),
            // A font, a database, a file that is gone, shared memory, the heap.
            (
                "7f0002000000-7f0002100000 r--p",
                "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                "0",
            ),
            (
                "7f0002100000-7f0002200000 r--s",
                "/home/me/.local/share/local-mcp/queue.sqlite3",
                "0",
            ),
            ("7f0002200000-7f0002300000 r-xp", "/usr/lib/libold.so.1 (deleted)", "0"),
            ("7f0002300000-7f0002400000 rw-s", "/SYSV00000000 (deleted)", "0"),
            ("7f0002400000-7f0002500000 rw-p", "[heap]", "64"),
            ("7f0002500000-7f0002600000 r-xp", "", "0"),
            ("ffffffffff600000-ffffffffff601000 --xp", "[vsyscall]", "0"),
        ]);
        let ranges = droppable(&text, EXE);
        assert_eq!(
            ranges,
            vec![
                Range {
                    start: 0x5555_0000_0000,
                    len: 0x10000
                },
                Range {
                    start: 0x5555_0001_0000,
                    len: 0x80000
                },
                Range {
                    start: 0x7f00_0000_0000,
                    len: 0x100_0000
                },
                Range {
                    start: 0x7f00_0100_0000,
                    len: 0x10_0000
                },
            ]
        );
    }

    #[test]
    fn a_mapping_whose_pages_are_not_known_is_kept() {
        // No `Anonymous:` line (a kernel that does not print it, a cut read).
        let text = "7f0000000000-7f0001000000 r-xp 00000000 08:01 1 /usr/lib/libx.so.1\nSize: 4 kB\n\
                    7f0001000000-7f0002000000 r-xp 00000000 08:01 2 /usr/lib/liby.so.1\n";
        assert_eq!(droppable(text, EXE), vec![]);
        assert_eq!(droppable("garbage\n- - -\nAnonymous: 0 kB\n", EXE), vec![]);
    }

    /// In this very process: a library only it maps (a copy of zlib loaded
    /// from a folder of this test's) has its pages reclaimed, and its code
    /// runs again afterwards. (The test binary's own pages, and libc's, are
    /// mapped by other processes too, which the kernel leaves alone.)
    #[cfg(target_os = "linux")]
    #[test]
    fn the_pages_leave_and_come_back_when_used() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("libz-copy.so.1");
        let zlib = [
            "/lib/x86_64-linux-gnu/libz.so.1",
            "/usr/lib/x86_64-linux-gnu/libz.so.1",
            "/usr/lib/libz.so.1",
        ]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("zlib (a dependency of GTK) is on this machine");
        std::fs::copy(zlib, &copy).unwrap();
        // Written back, so that its pages are clean ones the kernel can drop.
        std::fs::File::open(&copy).unwrap().sync_all().unwrap();
        let path = std::ffi::CString::new(copy.to_str().unwrap()).unwrap();
        // SAFETY: dlopen of a copy of zlib and a call of zlibVersion, a C function of no arguments
        // that returns a static string; the library is never closed.
        let version = unsafe {
            let lib = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            assert!(!lib.is_null(), "the copy of zlib did not load");
            let symbol = libc::dlsym(lib, c"zlibVersion".as_ptr());
            assert!(!symbol.is_null());
            let f: unsafe extern "C" fn() -> *const libc::c_char = std::mem::transmute(symbol);
            move || std::ffi::CStr::from_ptr(f()).to_string_lossy().into_owned()
        };
        let first = version();
        let copy = copy.to_string_lossy().into_owned();
        // KiB of the copy resident in this process (only this process maps it).
        let resident = || -> u64 {
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            let mut total = 0;
            let mut counted = false;
            for line in smaps.lines() {
                if let Some(m) = mapping_line(line) {
                    counted = m.is_some_and(|m| m.path == copy);
                } else if let Some(kib) = line.strip_prefix("Rss:").filter(|_| counted) {
                    total += kib.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap();
                }
            }
            total
        };
        let before = resident();
        assert!(before > 0, "the copy's pages were never read in");
        assert!(drop_code_pages().unwrap() > 0, "nothing was advised");
        let after = resident();
        // Its relocated pages (its own, `Anonymous`) stay; the file's pages go.
        assert!(
            after < before,
            "the copy's pages: {before} KiB before, {after} KiB after"
        );
        assert_eq!(version(), first, "its code runs again");
    }
}

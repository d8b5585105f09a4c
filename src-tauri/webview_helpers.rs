//! The webview's helper processes end with the last window. WebKitGTK
//! keeps its network process for as long as the web context lives, and on
//! Linux Tauri keeps the context for the app's whole life (a context made
//! anew per window leaked a network process each: tauri-apps/tauri#14626).
//! For an app that sits in the tray all day with its windows closed, that
//! process is tens of MiB held for nothing; once no window is left, it is
//! ended (SIGTERM), and WebKit starts a new one when a window opens again.
//! Windows (WebView2) and macOS (WKWebView) end theirs themselves.
//!
//! And on Linux the app's own process draws without OpenGL, and without
//! EGL ([`before_toolkit`]).

use std::time::Duration;

use tauri::{AppHandle, Manager};

/// How long after the last window closed: a window opened right away (quick
/// add closing as the queue opens) keeps the process it would reuse.
const AFTER: Duration = Duration::from_secs(2);

/// Before GTK starts (single-threaded still): turn GTK's OpenGL off unless
/// the person set `GDK_GL` themselves (`GDK_GL=` keeps GTK's default), and
/// keep this process from opening an EGL display ([`no_egl_here`]).
///
/// GTK 3 probes OpenGL when it opens the display, which loads Mesa's driver
/// and its LLVM into an app that, started hidden, shows nothing but a tray
/// icon: measured 31 MiB of the tray-resident app's 102 (PSS, Xvfb). With
/// GTK's OpenGL off, WebKitGTK also draws the page without GPU compositing,
/// and the window's processes hold ~86 MiB less (328 → 242 MiB PSS). A
/// queue of text draws as fast on the CPU, and WebKitGTK's GPU path is what
/// leaves windows blank under some drivers (tauri-apps/tauri#9304).
/// `tests/desktop/lifecycle.test.mjs` checks that the app's process maps no
/// Mesa, hidden, with its window open and after. What the app starts (a
/// browser the tray opens) inherits `GDK_GL`: Firefox and Chromium draw with
/// their own OpenGL and ignore it; a GTK 3 program that uses GTK's would
/// draw without.
#[cfg(target_os = "linux")]
pub fn before_toolkit() {
    if std::env::var_os("GDK_GL").is_none() {
        // Called from `run` before any other thread exists.
        std::env::set_var("GDK_GL", "disable");
        no_egl_here();
    }
}

/// Leave this process without EGL, and the web process with it.
///
/// WebKitGTK 2.50 opens an EGL display in the app's process when the first
/// window makes its web context: under Mesa that loads the driver and its
/// LLVM (24 MiB of the closed app's PSS by `smaps`, Xvfb and llvmpipe),
/// which then stay for the app's life although, with GTK's OpenGL off, this
/// process draws with cairo. Without it, same hour: the open window's
/// processes 234 → 215 MiB, the app after its window closed 127 → 101 MiB
/// (docs/PERFORMANCE.md, "What the figures say"). glvnd's `libEGL` reads the vendors it may load
/// (`__EGL_VENDOR_LIBRARY_FILENAMES`) once, at its first call: that call is
/// made here with none named, so WebKit's display here fails and it goes
/// without; the variable is then put back as it was, so the web process —
/// which aborts without EGL — still finds Mesa, and its frames still reach
/// the window (the lifecycle test reads the window's pixels). A `libEGL`
/// that is not glvnd's ignores the variable: nothing changes there. Only
/// when GTK's OpenGL is off ([`before_toolkit`]): a person who turns it on
/// with `GDK_GL` gets GTK's and WebKit's GPU path whole. Checked on X11
/// (Xvfb) with WebKitGTK 2.50; on Wayland the web process draws as it does
/// here, but that was not run.
#[cfg(target_os = "linux")]
fn no_egl_here() {
    const VENDORS: &str = "__EGL_VENDOR_LIBRARY_FILENAMES";
    const EGL_EXTENSIONS: i32 = 0x3055;
    let before = std::env::var_os(VENDORS);
    std::env::set_var(VENDORS, "/nonexistent/local-mcp-no-egl-vendor.json");
    // SAFETY: dlopen and dlsym with constant C strings; the symbol found is
    // eglQueryString, called as its C prototype says, with EGL_NO_DISPLAY.
    // The library is never closed: unloaded, it would forget its (empty)
    // vendor list and read the variable again.
    unsafe {
        let egl = libc::dlopen(c"libEGL.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
        if !egl.is_null() {
            let symbol = libc::dlsym(egl, c"eglQueryString".as_ptr());
            if !symbol.is_null() {
                let query: unsafe extern "C" fn(*mut libc::c_void, i32) -> *const libc::c_char =
                    std::mem::transmute(symbol);
                query(std::ptr::null_mut(), EGL_EXTENSIONS);
            }
        }
    }
    match before {
        Some(value) => std::env::set_var(VENDORS, value),
        None => std::env::remove_var(VENDORS),
    }
}

#[cfg(not(target_os = "linux"))]
pub fn before_toolkit() {}

/// Open the display, as Tauri's first step would (on the main thread, after
/// [`before_toolkit`]): Tauri panics, deep in its event loop, on a display it
/// cannot open (`DISPLAY` naming no server, a server that refuses this
/// account); this says what is wrong instead, and where to turn. Tauri's own
/// start then finds GTK up and goes on.
#[cfg(target_os = "linux")]
pub fn open_display() -> Result<(), String> {
    gtk::init().map_err(|_| {
        let display = std::env::var("WAYLAND_DISPLAY")
            .ok()
            .filter(|v| !v.is_empty())
            .or_else(|| std::env::var("DISPLAY").ok())
            .unwrap_or_default();
        crate::view::unopenable_display(&display)
    })
}

#[cfg(not(target_os = "linux"))]
pub fn open_display() -> Result<(), String> {
    Ok(())
}

/// Call when a window is destroyed: once no window is left, end the
/// webview's helper processes that outlive them, and give back the code
/// pages the window used.
pub fn window_destroyed(app: &AppHandle) {
    if app.webview_windows().is_empty() {
        when_no_window(app, AFTER);
    }
}

/// Call once the app has started without a window: give back the pages
/// start-up used once it has settled.
pub fn started_hidden(app: &AppHandle) {
    when_no_window(app, SETTLED);
}

/// Call once a window has been created: give back what its creation, and
/// start-up before it, used once that is over; what the open window keeps
/// running comes back at once.
pub fn window_created(app: &AppHandle) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(SETTLED).await;
        if !app.webview_windows().is_empty() {
            give_back("a window settled").await;
        }
    });
}

/// Have the kernel reclaim this process's clean code pages (`trim`), off
/// the async threads (hundreds of mappings, and the kernel's work on them).
async fn give_back(when: &'static str) {
    match tauri::async_runtime::spawn_blocking(crate::trim::drop_code_pages).await {
        Ok(Ok(bytes)) => tracing::debug!(mib = bytes >> 20, "{when}: gave back the code pages"),
        Ok(Err(e)) => tracing::debug!(error = %e, "could not read this process's mappings"),
        Err(e) => tracing::debug!(error = %e, "giving back the code pages did not finish"),
    }
}

/// How long after start-up: what it does once (loading, the tray's first
/// drawing, the engine's first requests) is over by then.
const SETTLED: Duration = Duration::from_secs(5);

/// After `delay`, if still no window is open: end the network process and,
/// once the webview's processes are gone (a page another process still maps
/// is not reclaimed), drop this process's clean code pages (`trim`).
fn when_no_window(app: &AppHandle, delay: Duration) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(delay).await;
        if !app.webview_windows().is_empty() {
            return;
        }
        end_network_process();
        let deadline = tokio::time::Instant::now() + HELPERS_GONE;
        while !helper_processes().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if app.webview_windows().is_empty() {
            give_back("no window open").await;
        }
    });
}

/// How long the webview's processes may take to leave before the pages are
/// given back anyway (those they still map are then left in place).
const HELPERS_GONE: Duration = Duration::from_secs(10);

/// The webview's processes this app started that still run (WebKitGTK's web
/// and network processes): their pids and names (`comm`, cut at 15 bytes:
/// "WebKitNetworkPr"). One that has exited and waits to be reaped is gone.
#[cfg(target_os = "linux")]
fn helper_processes() -> Vec<(u32, String)> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Some(stat) = engine::process::stat(pid) else {
            continue;
        };
        if stat.name.starts_with("WebKit") && stat.parent == me && !stat.gone() {
            found.push((pid, stat.name));
        }
    }
    found
}

#[cfg(not(target_os = "linux"))]
fn helper_processes() -> Vec<(u32, String)> {
    Vec::new()
}

fn end_network_process() {
    for (pid, name) in helper_processes() {
        if name.starts_with("WebKitNetwork") {
            tracing::debug!(pid, "no window left: ending the webview's network process");
            if let Err(e) = engine::process::terminate(pid) {
                tracing::debug!(pid, error = %e, "could not end the webview's network process");
            }
        }
    }
}

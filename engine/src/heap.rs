//! What the engine asks of the C allocator (glibc's, where it is the one in
//! use; elsewhere these do nothing): how much free memory each arena keeps
//! while serving, and when it gives what it keeps back to the system
//! (`docs/PERFORMANCE.md`, "Memory").

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How often the engine looks whether connections came since it last gave
/// memory back. Long enough that a burst of claims is never interrupted
/// more than once by it; short enough that memory a burst took is back
/// before anyone looks twice.
const GIVE_BACK_EVERY: Duration = Duration::from_secs(10);

/// Let each glibc arena keep up to 2 MiB of free memory at its top before
/// giving pages back, and serve blocks under 1 MiB from the arenas. glibc's
/// default trim threshold (128 KiB) sits just under what claims free between
/// two of theirs: under many agents each arena's top crossed it over and
/// over, and each crossing was an `madvise(MADV_DONTNEED)` — a TLB shootdown
/// on every core — then page faults to zero the same pages again (the
/// `strace` counts and claims/s are in `docs/PERFORMANCE.md`). Setting
/// either value ends glibc's own adjustment of both, so both are set, in its
/// ratio (trim = 2 × mmap). What the arenas keep this way is given back
/// after a burst ([`give_back_after_bursts`]).
///
/// And at most two arenas per core, not glibc's eight: each thread that
/// meets a busy arena gets one of its own, and what it frees there stays
/// scattered between live blocks, which no trim gives back. Two per core
/// kept claims/s within the run-to-run spread (`docs/PERFORMANCE.md`).
///
/// A process-wide setting, so a program's `main` calls it before its threads
/// start (the headless server and the desktop app both do), not `start`.
pub fn keep_arena_tops() {
    // SAFETY (below): mallopt sets integers that glibc's allocator reads;
    // calling it while other threads allocate is allowed (it takes the main
    // arena's lock).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let arenas = libc::c_int::try_from(2 * cores).unwrap_or(libc::c_int::MAX);
        // SAFETY: as above; M_ARENA_MAX bounds arenas created from now on.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 2 << 20);
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// Give the free memory every arena keeps back to the system, whatever the
/// trim threshold. Start-up builds and drops far more than serving keeps
/// (the OpenAPI document and its schemas, the migration, the router), and a
/// burst of requests leaves each arena it touched up to its threshold.
pub(crate) fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the system, and glibc's
    // allocator locks each arena while it does.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Every [`GIVE_BACK_EVERY`], give memory back if connections were
/// accepted since the last look (`accepted` counts them): an idle engine
/// does nothing, and one under load trims once per period rather than on
/// every free, as glibc's own threshold would. Ends with `shutdown`.
pub(crate) async fn give_back_after_bursts(accepted: Arc<AtomicU64>, shutdown: CancellationToken) {
    let mut seen = accepted.load(Ordering::Relaxed);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(GIVE_BACK_EVERY) => {}
        }
        let now = accepted.load(Ordering::Relaxed);
        if now != seen {
            seen = now;
            // It walks every arena, each locked meanwhile: not on a worker.
            let _ = tokio::task::spawn_blocking(give_back).await;
        }
    }
}

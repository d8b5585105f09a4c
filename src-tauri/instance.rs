//! One desktop app per account, and a start that always ends in one running
//! app. The single-instance plugin hands a second launch's arguments to the
//! running app over a channel (D-Bus on Linux) that says nothing of an app
//! that is still starting, is leaving, or has hung: a launch then could hand
//! its arguments to an app that was about to exit, or give up with "could not
//! start" (a bus call to an app that no longer answers fails with NoReply).
//!
//! So the app also holds an OS lock on `desktop.lock` (in its config folder)
//! for its whole life, and says in `desktop.state` beside it what it is doing:
//! starting, ready (its single-instance channel is up) or leaving. A start
//! that finds the lock held hands over only to a ready app; it waits for one
//! that is starting or leaving, and takes over (SIGTERM, then SIGKILL) from one
//! that stays so past its patience or does not answer. The lock dies with its
//! process, so a crashed app never blocks a start. The state is a separate
//! file because Windows lets no other process read a locked one.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use engine::{private_fs, process};
use serde::{Deserialize, Serialize};

/// What the app holding the lock is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Lock taken; the engine, the toolkit and the single-instance channel are coming up.
    Starting,
    /// Its single-instance channel answers: a second launch hands over to it.
    Ready,
    /// On its way out (Quit, SIGTERM): a start waits for it to be gone.
    Leaving,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub pid: u32,
    pub phase: Phase,
}

/// How long a start waits for an app that is starting before taking over:
/// a start on a loaded machine can take seconds; twenty means it has hung.
pub const STARTING_PATIENCE: Duration = Duration::from_secs(20);
/// How long a start waits for an app that is leaving: its engine's stop is
/// bounded at 6 s (`stop_engine`), the rest is the toolkit's teardown.
pub const LEAVING_PATIENCE: Duration = Duration::from_secs(10);
/// How long a SIGTERM gets before SIGKILL.
const TERM_PATIENCE: Duration = Duration::from_secs(3);

/// This process's hold on the lock; released when the process ends.
pub struct Instance {
    _lock: File,
    state_path: PathBuf,
    state: State,
}

pub enum Claim {
    /// No other desktop app runs: this one is the app.
    Mine(Instance),
    /// One runs and is ready: hand it this launch's arguments.
    Running(State),
}

/// `desktop.state`, beside the lock file.
fn state_path(lock_path: &Path) -> PathBuf {
    lock_path.with_file_name("desktop.state")
}

/// Who holds the lock now, by its own account (`None`: nobody, or a holder
/// that has not written its state yet).
/// Only a small regular file of this account's counts (never through a link,
/// never waiting on a FIFO swapped in at that name).
pub fn read_state(lock_path: &Path) -> Option<State> {
    let bytes = private_fs::read_ours(&state_path(lock_path), STATE_LIMIT).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// More than a state's JSON ever takes.
const STATE_LIMIT: u64 = 4096;

/// Take the lock, waiting for (and, past their patience, taking over from) an
/// app that is starting or leaving; or find the ready app to hand over to.
pub fn claim(lock_path: &Path) -> Result<Claim, String> {
    claim_within(lock_path, STARTING_PATIENCE, LEAVING_PATIENCE)
}

fn claim_within(lock_path: &Path, starting: Duration, leaving: Duration) -> Result<Claim, String> {
    // Our own folder: refused when another account owns it (it could swap
    // the state file and make this start signal a process of its choosing).
    if let Some(dir) = lock_path.parent() {
        private_fs::private_dir(dir).map_err(|e| format!("cannot use {}: {e}", dir.display()))?;
    }
    let file =
        private_fs::open_or_create(lock_path).map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
    // Since when the holder has been seen in its current phase.
    let mut seen: Option<(Option<State>, Instant)> = None;
    let mut taken_over = false;
    loop {
        match file.try_lock() {
            Ok(()) => {
                let mut instance = Instance {
                    _lock: file,
                    state_path: state_path(lock_path),
                    state: State {
                        pid: std::process::id(),
                        phase: Phase::Starting,
                    },
                };
                instance.record();
                return Ok(Claim::Mine(instance));
            }
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(format!("cannot lock {}: {e}", lock_path.display())),
        }
        // A state naming a process that is not local-mcp says nothing of who holds the lock.
        let state = read_state(lock_path).filter(|s| s.pid != std::process::id() && process::same_program(s.pid));
        if let Some(s) = state.filter(|s| s.phase == Phase::Ready && process::alive(s.pid)) {
            return Ok(Claim::Running(s));
        }
        let since = match seen {
            Some((was, at)) if was == state => at,
            _ => {
                if let Some(s) = state {
                    tracing::info!(pid = s.pid, phase = ?s.phase, "another local-mcp holds {}; waiting", lock_path.display());
                }
                let now = Instant::now();
                seen = Some((state, now));
                now
            }
        };
        let patience = match state.map(|s| s.phase) {
            Some(Phase::Leaving) => leaving,
            _ => starting,
        };
        if since.elapsed() >= patience {
            let Some(s) = state.filter(|_| !taken_over) else {
                return Err(format!(
                    "another program holds {} and has not said it is local-mcp for {} s{}",
                    lock_path.display(),
                    patience.as_secs(),
                    if taken_over { " (after local-mcp was ended)" } else { "" }
                ));
            };
            take_over(
                s.pid,
                "the desktop lock's holder",
                &format!("{:?} for {} s", s.phase, patience.as_secs()),
            )?;
            // Once: whoever holds the lock after that is not the app that was ended.
            taken_over = true;
            seen = None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// End the app `pid`, which did not leave or answer in time: SIGTERM (it
/// leaves gracefully if it still can), then SIGKILL. Refused unless `pid`
/// runs this very program: a pid read from a file, or a bus's owner, is not
/// proof of who it is. `whose` says where the pid came from.
pub fn take_over(pid: u32, whose: &str, why: &str) -> Result<(), String> {
    if !process::same_program(pid) {
        return Err(format!(
            "{whose} is process {pid}, which is not local-mcp; not ending it"
        ));
    }
    tracing::warn!(
        pid,
        "the running local-mcp does not answer ({why}); ending it to take over"
    );
    eprintln!("local-mcp: the running local-mcp (process {pid}) does not answer ({why}); ending it to take over");
    if process::terminate(pid).is_ok() && process::wait_until(TERM_PATIENCE, || !process::alive(pid)) {
        return Ok(());
    }
    let _ = process::kill(pid);
    process::wait_until(TERM_PATIENCE, || !process::alive(pid));
    Ok(())
}

impl Instance {
    /// Say what this app is doing now, for the next start to read.
    pub fn mark(&mut self, phase: Phase) {
        self.state.phase = phase;
        self.record();
    }

    fn record(&mut self) {
        let text = serde_json::to_vec(&self.state).unwrap_or_default();
        if let Err(e) = private_fs::replace(&self.state_path, &text, private_fs::Mode::Private) {
            tracing::warn!(error = %e, path = %self.state_path.display(), "could not record this app's state");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock_in(dir: &Path) -> PathBuf {
        dir.join("nested").join("desktop.lock")
    }

    #[test]
    fn the_first_claim_is_mine_and_says_it_is_starting() {
        let dir = tempfile::tempdir().unwrap();
        let lock = lock_in(dir.path());
        let Ok(Claim::Mine(mut me)) = claim(&lock) else {
            panic!("the first claim was not granted");
        };
        assert_eq!(
            read_state(&lock).map(|s| (s.pid, s.phase)),
            Some((std::process::id(), Phase::Starting))
        );
        me.mark(Phase::Ready);
        assert_eq!(read_state(&lock).map(|s| s.phase), Some(Phase::Ready));
    }

    #[test]
    fn a_ready_app_in_another_process_is_handed_to() {
        let dir = tempfile::tempdir().unwrap();
        let lock = lock_in(dir.path());
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        // Another process (a child that lives on) holds the lock and says it is ready.
        let holder = LockHolder::start(&lock);
        std::fs::write(
            state_path(&lock),
            serde_json::to_vec(&State {
                pid: holder.pid(),
                phase: Phase::Ready,
            })
            .unwrap(),
        )
        .unwrap();
        match claim(&lock) {
            Ok(Claim::Running(s)) => assert_eq!(s.pid, holder.pid()),
            Ok(Claim::Mine(_)) => panic!("granted a lock another process holds"),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_leaving_app_is_waited_for_and_the_lock_is_taken_when_it_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let lock = lock_in(dir.path());
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        let mut holder = LockHolder::start(&lock);
        std::fs::write(
            state_path(&lock),
            serde_json::to_vec(&State {
                pid: holder.pid(),
                phase: Phase::Leaving,
            })
            .unwrap(),
        )
        .unwrap();
        let pid = holder.pid();
        let ender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(600));
            holder.end();
        });
        let started = Instant::now();
        let Ok(Claim::Mine(_)) = claim(&lock) else {
            panic!("no lock once the leaving app was gone");
        };
        assert!(
            started.elapsed() >= Duration::from_millis(500),
            "it waited for the leaving app"
        );
        assert!(started.elapsed() < LEAVING_PATIENCE, "it did not need to take over");
        ender.join().unwrap();
        assert!(!process::alive(pid));
    }

    /// A state file naming a process that is not local-mcp (a stale number,
    /// or one another program wrote) is never signalled: the start ends in
    /// an error, once, and the process lives on.
    #[test]
    fn a_state_naming_another_program_is_never_signalled() {
        let dir = tempfile::tempdir().unwrap();
        let lock = lock_in(dir.path());
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        let _holder = LockHolder::start(&lock);
        let mut bystander = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        for phase in [Phase::Starting, Phase::Leaving, Phase::Ready] {
            std::fs::write(
                state_path(&lock),
                serde_json::to_vec(&State {
                    pid: bystander.id(),
                    phase,
                })
                .unwrap(),
            )
            .unwrap();
            match claim_within(&lock, Duration::from_millis(300), Duration::from_millis(300)) {
                Err(e) => assert!(e.contains("has not said it is local-mcp"), "{phase:?}: {e}"),
                Ok(Claim::Mine(_)) => panic!("{phase:?}: granted a lock another process holds"),
                Ok(Claim::Running(s)) => panic!("{phase:?}: handed over to {}", s.pid),
            }
            assert!(process::alive(bystander.id()), "{phase:?}: the bystander was signalled");
        }
        assert!(take_over(bystander.id(), "a test's bystander", "a test").is_err());
        assert!(process::alive(bystander.id()));
        bystander.kill().unwrap();
        bystander.wait().unwrap();
    }

    /// The state is read only from a small regular file of ours: a FIFO at
    /// its name does not block the start, a link is not followed, a huge
    /// file is read no further than a state can be.
    #[cfg(unix)]
    #[test]
    fn a_hostile_state_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let lock = lock_in(dir.path());
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        let state = state_path(&lock);
        let fifo = std::process::Command::new("mkfifo").arg(&state).status().unwrap();
        assert!(fifo.success());
        let started = Instant::now();
        assert_eq!(read_state(&lock), None);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "a FIFO did not hold the read"
        );
        std::fs::remove_file(&state).unwrap();

        let real = dir.path().join("elsewhere.json");
        std::fs::write(&real, br#"{"pid":1,"phase":"ready"}"#).unwrap();
        std::os::unix::fs::symlink(&real, &state).unwrap();
        assert_eq!(read_state(&lock), None, "a link is not followed");
        std::fs::remove_file(&state).unwrap();

        // Whole, this is a valid state; its first 4 KiB are not.
        let huge = format!(r#"{{"pid":1,"phase":"ready","padding":"{}"}}"#, "x".repeat(10 << 20));
        std::fs::write(&state, huge).unwrap();
        assert_eq!(read_state(&lock), None, "only the first 4 KiB are read");
    }

    /// Set in the environment of a copy of this test binary that holds the
    /// lock at its value (`hold_the_lock_for_a_test`).
    const HOLD: &str = "LOCAL_MCP_TEST_HOLD_LOCK";

    /// Not a test of its own: what the copy of this binary runs.
    #[test]
    #[ignore = "run by LockHolder in a child process"]
    fn hold_the_lock_for_a_test() {
        let Some(path) = std::env::var_os(HOLD) else {
            return;
        };
        let file = private_fs::open_or_create(Path::new(&path)).unwrap();
        file.lock().unwrap();
        std::thread::sleep(Duration::from_secs(60));
    }

    /// Another process holding the OS lock on `path`: a copy of this test binary.
    struct LockHolder(std::process::Child);

    impl LockHolder {
        fn start(path: &Path) -> LockHolder {
            let child = crate::test_child("instance::tests::hold_the_lock_for_a_test", HOLD, path);
            let holder = LockHolder(child);
            let file = private_fs::open_or_create(path).unwrap();
            assert!(
                process::wait_until(Duration::from_secs(20), || match file.try_lock() {
                    Ok(()) => file.unlock().is_err(),
                    Err(_) => true,
                }),
                "the child took the lock"
            );
            holder
        }

        fn pid(&self) -> u32 {
            self.0.id()
        }

        fn end(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    impl Drop for LockHolder {
        fn drop(&mut self) {
            self.end();
        }
    }
}

//! Who holds the desktop's single-instance channel, asked when a start is
//! late. The single-instance plugin owns the channel for the running app and,
//! in a second launch, calls whoever owns it, with no bound of its own: a
//! holder that neither answers nor leaves keeps that start waiting for ever.
//! A start is also late for reasons of its own (the toolkit's first start on
//! a busy machine), and ending it then would be wrong. So a late start asks
//! who holds the channel before it decides (`relaunch::watch_start`).
//!
//! On Linux the channel is the session bus name `<identifier>.SingleInstance`,
//! and the bus says which process owns it. Elsewhere (a named mutex and a
//! window on Windows, a socket on macOS) there is no owner to ask.

/// Who owns the channel now.
#[derive(Debug, Clone, PartialEq, Eq)]
// Elsewhere than Linux the owner is always `Unknown`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub enum Holder {
    /// Nobody: whatever holds this start up, it is not another app.
    Nobody,
    /// This process: the channel is up.
    This,
    /// Another process, by its pid, and whether it answered a ping on the
    /// bus: one that does is running, and a start is not blocked by it.
    Other { pid: u32, answers: bool },
    /// Not known here (no session bus to ask, one that does not answer,
    /// or another platform), and why.
    Unknown(String),
}

/// What came of handing a second launch's arguments to the app that holds
/// the channel.
#[derive(Debug, PartialEq, Eq)]
// Elsewhere than Linux the answer is always `NotHere`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub enum Handed {
    /// The running app took them: this launch is done.
    Taken,
    /// The channel's holder did not answer in time (why): it has hung.
    NoAnswer(String),
    /// Not handed (why): nobody holds the channel, there is no bus to reach
    /// it by, or this platform's channel is only the plugin's. The start goes
    /// on as a first launch would, and the plugin decides.
    NotHere(String),
}

// The platform's way to ask, chosen once (as the engine's `peer` does).
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as platform;
#[cfg(not(target_os = "linux"))]
mod other;
#[cfg(not(target_os = "linux"))]
use other as platform;

pub use platform::{hand, holder};

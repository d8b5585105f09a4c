//! The channel elsewhere than Linux (a named mutex and a window on Windows,
//! a socket on macOS): the plugin's alone, with no owner to ask.

use super::{Handed, Holder};

/// The owner of the channel of the app `identifier`.
pub fn holder(_identifier: &str) -> Holder {
    Holder::Unknown("this platform's single-instance channel names no owner".into())
}

pub fn hand(_identifier: &str, _patience: std::time::Duration) -> Handed {
    Handed::NotHere("this platform's single-instance channel is the plugin's alone".into())
}

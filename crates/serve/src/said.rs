//! Refusals anyone on the network can cause as fast as they like, said in
//! the log without letting them fill it or hide someone else's: in each
//! [`WINDOW`], the first refusal of each address is said at once (of at most
//! [`ADDRESSES`] addresses); the rest are counted, and the next line said
//! tells how many went unsaid. One kind of refusal, one `Said`.

use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::sync::MutexExt as _;

/// How long an address's first refusal keeps its later ones quiet.
pub const WINDOW: Duration = Duration::from_secs(10);
/// Addresses said at once in a window: past these, refusals are only counted.
pub const ADDRESSES: usize = 8;

/// What to put in the line being said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Refusals of this kind so far.
    pub total: u64,
    /// Refusals since the last line that no line said.
    pub unsaid: u64,
}

#[derive(Debug)]
struct Window {
    total: u64,
    unsaid: u64,
    started: Option<Instant>,
    heard: Vec<IpAddr>,
}

/// One kind of refusal's log lines (see the module's header).
#[derive(Debug)]
pub struct Said {
    window: Mutex<Window>,
}

impl Default for Said {
    fn default() -> Said {
        Said::new()
    }
}

impl Said {
    pub const fn new() -> Said {
        Said {
            window: Mutex::new(Window {
                total: 0,
                unsaid: 0,
                started: None,
                heard: Vec::new(),
            }),
        }
    }

    /// Count a refusal from `from`; what to say, when it is to be said.
    pub fn count(&self, from: IpAddr) -> Option<Tally> {
        self.count_at(from, Instant::now())
    }

    fn count_at(&self, from: IpAddr, now: Instant) -> Option<Tally> {
        let mut w = self.window.lock_anyway();
        w.total += 1;
        if w.started.is_none_or(|s| now.duration_since(s) >= WINDOW) {
            w.started = Some(now);
            w.heard.clear();
        }
        if w.heard.contains(&from) || w.heard.len() >= ADDRESSES {
            w.unsaid += 1;
            return None;
        }
        w.heard.push(from);
        let unsaid = std::mem::take(&mut w.unsaid);
        Some(Tally { total: w.total, unsaid })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(n: u8) -> IpAddr {
        [10, 0, 0, n].into()
    }

    #[test]
    fn a_flood_from_one_address_hides_no_other_and_fills_no_log() {
        let said = Said::new();
        let t0 = Instant::now();
        assert_eq!(said.count_at(at(9), t0), Some(Tally { total: 1, unsaid: 0 }));
        let flood = (0..1000).filter(|_| said.count_at(at(9), t0).is_some()).count();
        assert_eq!(flood, 0, "the flood's address is said once a window");
        assert_eq!(
            said.count_at(at(2), t0),
            Some(Tally {
                total: 1002,
                unsaid: 1000
            }),
            "another address is said at once, with what went unsaid"
        );
        assert_eq!(
            said.count_at(at(9), t0 + WINDOW),
            Some(Tally { total: 1003, unsaid: 0 }),
            "said again in the next window"
        );
    }

    #[test]
    fn many_addresses_are_said_at_most_a_handful_a_window() {
        let said = Said::new();
        let t0 = Instant::now();
        let lines = (0..=255u8).filter(|&n| said.count_at(at(n), t0).is_some()).count();
        assert_eq!(lines, ADDRESSES);
        let next = said.count_at(at(255), t0 + WINDOW).unwrap();
        assert_eq!(next.unsaid, 256 - ADDRESSES as u64);
    }
}

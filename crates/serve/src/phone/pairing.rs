//! One-time pairing codes and what keeps them from being guessed: a code is
//! 12 characters of base32 (60 bits), lives two minutes and works once; an
//! address that sends five wrong codes in a row is locked out for a minute.
//! The lock is per address, so nobody on the network can keep the person's
//! own phone from pairing (or the computer from making codes); the 60 bits
//! are what stops guessing from many addresses (a million guesses a second
//! for a code's two minutes would find it once in ten thousand years).
//! Pure: the time is given, so the tests need no clock.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use subtle::ConstantTimeEq;

/// How long a code works.
pub const CODE_LIFE: Duration = Duration::from_secs(120);
/// Wrong codes in a row from one address before it is locked out.
pub const WRONG_BEFORE_LOCK: u32 = 5;
/// How long an address stays locked out.
pub const LOCKED_FOR: Duration = Duration::from_secs(60);
/// Codes outstanding at once (a new one past this retires the oldest).
const OUTSTANDING: usize = 4;
/// Addresses remembered for their wrong codes (the oldest are forgotten past this).
const REMEMBERED: usize = 4096;
/// Crockford's base32: no I, L, O, U (nothing a person misreads when typing the link).
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const CODE_CHARS: usize = 12;

/// What became of a code a phone sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tried {
    Paired,
    Wrong { locked_now: bool },
    Locked { for_secs: u64 },
}

/// One address's wrong codes in a row, and its lock.
#[derive(Debug, Clone, Copy)]
struct Misses {
    in_a_row: u32,
    locked_until: Option<Instant>,
    last: Instant,
}

#[derive(Default)]
pub struct Codes {
    live: Vec<(String, Instant)>,
    misses: HashMap<IpAddr, Misses>,
    /// When `misses` was last swept.
    swept: Option<Instant>,
}

impl Codes {
    /// A new code, valid for [`CODE_LIFE`] from `now`.
    pub fn issue(&mut self, now: Instant) -> (String, Instant) {
        self.live.retain(|(_, until)| *until > now);
        if self.live.len() >= OUTSTANDING {
            self.live.remove(0);
        }
        let code = new_code();
        let until = now + CODE_LIFE;
        self.live.push((code.clone(), until));
        (code, until)
    }

    /// `from` tries `given`: a live code pairs once; anything else counts
    /// against that address.
    pub fn try_code(&mut self, given: &str, from: IpAddr, now: Instant) -> Tried {
        if let Some(for_secs) = self.locked_for(from, now) {
            return Tried::Locked { for_secs };
        }
        let given = given.trim().to_ascii_uppercase();
        // Every live code compared in full, in constant time each.
        let hit = self
            .live
            .iter()
            .position(|(code, until)| *until > now && bool::from(code.as_bytes().ct_eq(given.as_bytes())));
        if let Some(at) = hit {
            self.live.remove(at);
            self.misses.remove(&from);
            return Tried::Paired;
        }
        self.forget_old(now);
        if self.misses.len() >= REMEMBERED && !self.misses.contains_key(&from) {
            // Full of addresses sending codes now: this one is not counted.
            // What stops guessing from many addresses is the code's 60 bits.
            return Tried::Wrong { locked_now: false };
        }
        let misses = self.misses.entry(from).or_insert(Misses {
            in_a_row: 0,
            locked_until: None,
            last: now,
        });
        misses.in_a_row += 1;
        misses.last = now;
        let locked_now = misses.in_a_row >= WRONG_BEFORE_LOCK;
        if locked_now {
            misses.in_a_row = 0;
            misses.locked_until = Some(now + LOCKED_FOR);
        }
        Tried::Wrong { locked_now }
    }

    /// Whole seconds `from` stays locked out, if it is.
    pub fn locked_for(&self, from: IpAddr, now: Instant) -> Option<u64> {
        self.misses
            .get(&from)
            .and_then(|m| m.locked_until)
            .filter(|until| *until > now)
            .map(|until| (until - now).as_secs().max(1))
    }

    /// How many addresses are locked out now, and the last lock's end.
    pub fn locked(&self, now: Instant) -> (usize, Option<Duration>) {
        let ends: Vec<Duration> = self
            .misses
            .values()
            .filter_map(|m| m.locked_until.filter(|u| *u > now).map(|u| u - now))
            .collect();
        (ends.len(), ends.into_iter().max())
    }

    /// Forget every code (the listener stopped).
    pub fn clear(&mut self) {
        self.live.clear();
    }

    /// Addresses quiet for longer than a lock are forgotten (swept at most
    /// once a second: a wrong code costs no pass over them all). A locked
    /// address is never forgotten while its lock lasts.
    fn forget_old(&mut self, now: Instant) {
        if self
            .swept
            .is_some_and(|at| now.duration_since(at) < Duration::from_secs(1))
        {
            return;
        }
        self.swept = Some(now);
        self.misses
            .retain(|_, m| m.locked_until.is_some_and(|u| u > now) || now.duration_since(m.last) < LOCKED_FOR);
    }
}

fn new_code() -> String {
    let mut bytes = [0u8; CODE_CHARS];
    getrandom::fill(&mut bytes).unwrap_or_else(|_| {
        // No system randomness is no pairing: a code nobody can send.
        bytes = [0xff; CODE_CHARS];
    });
    bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(b & 31)]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PHONE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));
    const ATTACKER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 9));

    #[test]
    fn a_code_pairs_once_within_its_life() {
        let mut codes = Codes::default();
        let t0 = Instant::now();
        let (code, until) = codes.issue(t0);
        assert_eq!(code.len(), CODE_CHARS);
        assert_eq!(until, t0 + CODE_LIFE);
        assert_eq!(
            codes.try_code(&code.to_lowercase(), PHONE, t0),
            Tried::Paired,
            "case does not matter"
        );
        assert_eq!(
            codes.try_code(&code, PHONE, t0),
            Tried::Wrong { locked_now: false },
            "used: gone"
        );
        let (late, _) = codes.issue(t0);
        assert_eq!(
            codes.try_code(&late, PHONE, t0 + CODE_LIFE),
            Tried::Wrong { locked_now: false },
            "expired"
        );
    }

    #[test]
    fn five_wrong_codes_lock_that_address_out_and_no_one_else() {
        let mut codes = Codes::default();
        let t0 = Instant::now();
        let (code, _) = codes.issue(t0);
        for n in 1..WRONG_BEFORE_LOCK {
            assert_eq!(
                codes.try_code("AAAAAAAAAAAA", ATTACKER, t0),
                Tried::Wrong { locked_now: false },
                "{n}"
            );
        }
        assert_eq!(
            codes.try_code("AAAAAAAAAAAA", ATTACKER, t0),
            Tried::Wrong { locked_now: true }
        );
        assert_eq!(
            codes.try_code(&code, ATTACKER, t0),
            Tried::Locked { for_secs: 60 },
            "even the right code"
        );
        assert_eq!(codes.locked(t0).0, 1);
        // The person's phone, elsewhere, pairs with the same live code; new codes are made as usual.
        assert_eq!(codes.try_code(&code, PHONE, t0), Tried::Paired);
        let (fresh, _) = codes.issue(t0);
        let later = t0 + LOCKED_FOR;
        assert_eq!(codes.locked(later).0, 0, "the lock ends");
        assert_eq!(codes.try_code(&fresh, ATTACKER, later), Tried::Paired);
    }

    #[test]
    fn codes_differ_use_the_alphabet_and_the_memory_of_misses_stays_bounded() {
        let mut codes = Codes::default();
        let t0 = Instant::now();
        let a = codes.issue(t0).0;
        let b = codes.issue(t0).0;
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| ALPHABET.contains(&c)));
        // The first address locked out, then thousands more sending codes.
        for _ in 0..WRONG_BEFORE_LOCK {
            codes.try_code("X", ATTACKER, t0);
        }
        for n in 0..(REMEMBERED as u32 + 100) {
            codes.try_code("X", IpAddr::V4(n.into()), t0);
        }
        assert!(codes.misses.len() <= REMEMBERED);
        assert!(
            codes.locked_for(ATTACKER, t0).is_some(),
            "a locked address is not forgotten to make room"
        );
        // Once they have been quiet a lock's length, they are forgotten.
        let later = t0 + LOCKED_FOR + Duration::from_secs(1);
        codes.try_code("X", PHONE, later);
        assert_eq!(codes.misses.len(), 1);
    }
}

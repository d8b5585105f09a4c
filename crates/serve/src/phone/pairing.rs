//! One-time pairing codes and the lockout that keeps them from being
//! guessed: a code is 12 characters of base32 (60 bits), lives two minutes
//! and works once; five wrong codes in a row burn every code outstanding
//! and lock pairing for a minute, whoever sends them (an attacker can
//! change address; the person just makes a new code). Pure: the time is
//! given, so the tests need no clock.

use std::time::{Duration, Instant};

use subtle::ConstantTimeEq;

/// How long a code works.
pub const CODE_LIFE: Duration = Duration::from_secs(120);
/// Wrong codes in a row before pairing locks.
pub const WRONG_BEFORE_LOCK: u32 = 5;
/// How long it stays locked.
pub const LOCKED_FOR: Duration = Duration::from_secs(60);
/// Codes outstanding at once (a new one past this retires the oldest).
const OUTSTANDING: usize = 4;
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

#[derive(Default)]
pub struct Codes {
    live: Vec<(String, Instant)>,
    wrong_in_a_row: u32,
    locked_until: Option<Instant>,
}

impl Codes {
    /// A new code, or how long pairing stays locked.
    pub fn issue(&mut self, now: Instant) -> Result<(String, Instant), u64> {
        if let Some(secs) = self.locked_for(now) {
            return Err(secs);
        }
        self.live.retain(|(_, until)| *until > now);
        if self.live.len() >= OUTSTANDING {
            self.live.remove(0);
        }
        let code = new_code();
        let until = now + CODE_LIFE;
        self.live.push((code.clone(), until));
        Ok((code, until))
    }

    /// Try `given`: a live code pairs once; anything else counts as wrong.
    pub fn try_code(&mut self, given: &str, now: Instant) -> Tried {
        if let Some(for_secs) = self.locked_for(now) {
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
            self.wrong_in_a_row = 0;
            return Tried::Paired;
        }
        self.wrong_in_a_row += 1;
        let locked_now = self.wrong_in_a_row >= WRONG_BEFORE_LOCK;
        if locked_now {
            self.live.clear();
            self.wrong_in_a_row = 0;
            self.locked_until = Some(now + LOCKED_FOR);
        }
        Tried::Wrong { locked_now }
    }

    /// Whole seconds pairing stays locked, if it is.
    pub fn locked_for(&self, now: Instant) -> Option<u64> {
        self.locked_until
            .filter(|until| *until > now)
            .map(|until| (until - now).as_secs().max(1))
    }

    /// Forget every code (the listener stopped).
    pub fn clear(&mut self) {
        self.live.clear();
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

    #[test]
    fn a_code_pairs_once_within_its_life() {
        let mut codes = Codes::default();
        let t0 = Instant::now();
        let (code, until) = codes.issue(t0).unwrap();
        assert_eq!(code.len(), CODE_CHARS);
        assert_eq!(until, t0 + CODE_LIFE);
        assert_eq!(
            codes.try_code(&code.to_lowercase(), t0),
            Tried::Paired,
            "case does not matter"
        );
        assert_eq!(
            codes.try_code(&code, t0),
            Tried::Wrong { locked_now: false },
            "used: gone"
        );
        let (late, _) = codes.issue(t0).unwrap();
        assert_eq!(
            codes.try_code(&late, t0 + CODE_LIFE),
            Tried::Wrong { locked_now: false },
            "expired"
        );
    }

    #[test]
    fn five_wrong_codes_burn_the_live_ones_and_lock_pairing() {
        let mut codes = Codes::default();
        let t0 = Instant::now();
        let (code, _) = codes.issue(t0).unwrap();
        for n in 1..WRONG_BEFORE_LOCK {
            assert_eq!(
                codes.try_code("AAAAAAAAAAAA", t0),
                Tried::Wrong { locked_now: false },
                "{n}"
            );
        }
        assert_eq!(codes.try_code("AAAAAAAAAAAA", t0), Tried::Wrong { locked_now: true });
        assert_eq!(
            codes.try_code(&code, t0),
            Tried::Locked { for_secs: 60 },
            "even the right code"
        );
        assert_eq!(codes.issue(t0), Err(60), "no new code while locked");
        let later = t0 + LOCKED_FOR;
        assert_eq!(
            codes.try_code(&code, later),
            Tried::Wrong { locked_now: false },
            "it was burned"
        );
        let (fresh, _) = codes.issue(later).unwrap();
        assert_eq!(codes.try_code(&fresh, later), Tried::Paired);
    }

    #[test]
    fn codes_differ_and_use_the_alphabet() {
        let mut codes = Codes::default();
        let t0 = Instant::now();
        let a = codes.issue(t0).unwrap().0;
        let b = codes.issue(t0).unwrap().0;
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| ALPHABET.contains(&c)));
    }
}

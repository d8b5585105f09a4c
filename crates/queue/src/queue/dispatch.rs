//! Who gets an instruction when several calls wait: fair, targeted hand-off
//! without a thundering herd (`docs/ARCHITECTURE.md`, "Queues and targets").
//!
//! Waiting calls line up per queue in the order they started to wait. When
//! instructions may be available (one was queued, moved, readdressed, a queue
//! was released, a call gave an offer back), the queue reads the first
//! instructions the free waiters could take and [`Dispatch::offer`] matches
//! them in delivery order to the longest-waiting eligible call: an instruction
//! for anyone goes to the first free call, one for an agent only to that
//! agent's call. Only the calls that got an offer are woken.
//!
//! An offer is a hint, not a claim: the woken call claims in its own
//! transaction (so a call that left meanwhile consumes nothing), trying the
//! offered instruction first. If the claim finds nothing the call gives the
//! offer back and the queue matches again, so no instruction is stranded
//! while an eligible call waits.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::{Inner, Queue};
use crate::sync::MutexExt as _;

#[derive(Default)]
pub struct Dispatch {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next_seq: u64,
    /// Waiting calls per queue, in the order they started to wait.
    lines: HashMap<String, BTreeMap<u64, Waiter>>,
    /// Instructions offered to a call that has not claimed yet.
    offered: HashSet<String>,
}

struct Waiter {
    agent: String,
    offer: Option<String>,
    wake: Arc<Notify>,
}

/// A call's place in its queue's line.
pub struct Place {
    pub queue: String,
    seq: u64,
    /// Woken when an offer arrives (the permit is kept if the call is not polling yet).
    pub wake: Arc<Notify>,
}

impl Dispatch {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock_anyway()
    }

    /// Join the line of `queue` as `agent`.
    pub fn enter(&self, queue: &str, agent: &str) -> Place {
        let mut state = self.lock();
        state.next_seq += 1;
        let seq = state.next_seq;
        let wake = Arc::new(Notify::new());
        state.lines.entry(queue.to_owned()).or_default().insert(
            seq,
            Waiter {
                agent: agent.to_owned(),
                offer: None,
                wake: wake.clone(),
            },
        );
        Place {
            queue: queue.to_owned(),
            seq,
            wake,
        }
    }

    /// Leave the line. `true` when the call held an offer it did not use:
    /// the queue must match again so another call gets that instruction.
    pub fn leave(&self, place: &Place) -> bool {
        let mut state = self.lock();
        let Some(line) = state.lines.get_mut(&place.queue) else {
            return false;
        };
        let offer = line.remove(&place.seq).and_then(|w| w.offer);
        if line.is_empty() {
            state.lines.remove(&place.queue);
        }
        match offer {
            Some(id) => {
                state.offered.remove(&id);
                true
            }
            None => false,
        }
    }

    /// The instruction offered to this call, if any (it stays reserved until [`Dispatch::settle`]).
    pub fn offer_for(&self, place: &Place) -> Option<String> {
        self.lock()
            .lines
            .get(&place.queue)
            .and_then(|l| l.get(&place.seq))
            .and_then(|w| w.offer.clone())
    }

    /// The call tried its offer: release the reservation.
    pub fn settle(&self, place: &Place) {
        let mut state = self.lock();
        let offer = state
            .lines
            .get_mut(&place.queue)
            .and_then(|l| l.get_mut(&place.seq))
            .and_then(|w| w.offer.take());
        if let Some(id) = offer {
            state.offered.remove(&id);
        }
    }

    /// The agents of `queue`'s calls that wait without an offer (deduplicated),
    /// and how many instructions are enough to read before [`Dispatch::offer`]
    /// (one per free call, plus those already offered, which it skips).
    /// `None` when no call is free.
    pub fn free_agents(&self, queue: &str) -> Option<(Vec<String>, usize)> {
        let state = self.lock();
        let line = state.lines.get(queue)?;
        let mut agents: Vec<String> = line
            .values()
            .filter(|w| w.offer.is_none())
            .map(|w| w.agent.clone())
            .collect();
        if agents.is_empty() {
            return None;
        }
        let free = agents.len();
        agents.sort_unstable();
        agents.dedup();
        Some((agents, free + state.offered.len()))
    }

    /// Match `heads` — pending instructions of `queue` in delivery order, as
    /// (id, target) — to free calls, longest-waiting first, and wake those
    /// calls. Returns how many offers were made.
    pub fn offer(&self, queue: &str, heads: &[(String, Option<String>)]) -> usize {
        let mut state = self.lock();
        let State { lines, offered, .. } = &mut *state;
        let Some(line) = lines.get_mut(queue) else {
            return 0;
        };
        let mut made = 0;
        for (id, target) in heads {
            if offered.contains(id) {
                continue;
            }
            let taker = line
                .values_mut()
                .find(|w| w.offer.is_none() && target.as_ref().is_none_or(|t| *t == w.agent));
            if let Some(w) = taker {
                w.offer = Some(id.clone());
                offered.insert(id.clone());
                w.wake.notify_one();
                made += 1;
            }
        }
        made
    }
}

impl Queue {
    /// Offer `queue`'s available instructions to its free waiting calls (off
    /// the async threads). Cheap when nobody waits there.
    pub(crate) fn kick(&self, queue: &str) {
        if self.inner.dispatch.free_agents(queue).is_none() {
            return;
        }
        let inner = self.inner.clone();
        let queue = queue.to_owned();
        tokio::task::spawn_blocking(move || inner.kick_blocking(&queue));
    }
}

impl Inner {
    /// [`Queue::kick`] on a thread that may block: read what the free calls
    /// could take and offer it.
    pub(super) fn kick_blocking(&self, queue: &str) {
        if self.is_held(queue) {
            return;
        }
        let Some((agents, enough)) = self.dispatch.free_agents(queue) else {
            return;
        };
        match self.store.read(|db| db.pending_heads(queue, &agents, enough)) {
            Ok(heads) => {
                self.dispatch.offer(queue, &heads);
            }
            Err(e) => tracing::warn!(queue, error = %e, "could not offer instructions to waiting calls"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heads(items: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        items
            .iter()
            .map(|(i, t)| (i.to_string(), t.map(str::to_owned)))
            .collect()
    }

    #[test]
    fn the_longest_waiting_call_gets_the_first_instruction() {
        let d = Dispatch::default();
        let a = d.enter("q", "a");
        let b = d.enter("q", "b");
        let c = d.enter("q", "c");
        assert_eq!(d.offer("q", &heads(&[("1", None), ("2", None)])), 2);
        assert_eq!(d.offer_for(&a).as_deref(), Some("1"));
        assert_eq!(d.offer_for(&b).as_deref(), Some("2"));
        assert_eq!(d.offer_for(&c), None, "no herd: c was not offered anything");
        // Offered instructions are not offered twice.
        assert_eq!(d.offer("q", &heads(&[("1", None), ("2", None), ("3", None)])), 1);
        assert_eq!(d.offer_for(&c).as_deref(), Some("3"));
    }

    #[test]
    fn a_targeted_instruction_goes_only_to_its_agent() {
        let d = Dispatch::default();
        let a = d.enter("q", "a");
        let b = d.enter("q", "b");
        let other = d.enter("other", "b");
        assert_eq!(d.offer("q", &heads(&[("1", Some("b")), ("2", Some("nobody"))])), 1);
        assert_eq!(d.offer_for(&a), None);
        assert_eq!(d.offer_for(&b).as_deref(), Some("1"));
        assert_eq!(d.offer_for(&other), None, "another queue's call is never offered");
    }

    #[test]
    fn an_unused_offer_is_given_back() {
        let d = Dispatch::default();
        let a = d.enter("q", "a");
        let b = d.enter("q", "b");
        d.offer("q", &heads(&[("1", None)]));
        assert!(d.leave(&a), "a held an offer: the queue must match again");
        assert_eq!(d.free_agents("q"), Some((vec!["b".to_owned()], 1)));
        d.offer("q", &heads(&[("1", None)]));
        assert_eq!(d.offer_for(&b).as_deref(), Some("1"));
        d.settle(&b);
        assert_eq!(d.offer_for(&b), None);
        assert!(!d.leave(&b));
        assert_eq!(d.free_agents("q"), None);
    }
}

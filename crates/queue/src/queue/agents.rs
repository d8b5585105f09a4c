//! Live `get_user_request` calls per agent of a queue, and what an agent's state is.
//!
//! Each call takes a generation for its (queue, agent); a newer call from the
//! same agent in the same queue cancels the older call's supersede token (`docs/ARCHITECTURE.md`,
//! "Delivery rules": the
//! client already gave up on it, so it must return without consuming).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

use crate::model::{AgentActivity, AgentId, AgentState, QueueName, ResultType};
use crate::sync::MutexExt as _;

/// How long an agent counts as "working" after it was handed an instruction
/// and has not called back. Real tasks take minutes, but a state must be
/// true: one not heard from for longer is shown as gone (offline, "not heard
/// from for 9 min"), not as busy (issue 25).
pub const WORKING_FOR_SECONDS: f64 = 300.0;

/// How long after its last call an agent that forgot its `agent_id` is still
/// recognised by its client alone (`Queue::agent_for`): a long task may
/// keep it away that long.
pub const RECOGNISED_FOR_SECONDS: f64 = 3600.0;

/// An agent is its id within a queue.
type Key = (QueueName, AgentId);

#[derive(Default)]
pub struct Calls {
    by_agent: Mutex<HashMap<Key, AgentCalls>>,
}

#[derive(Default)]
struct AgentCalls {
    generation: u64,
    newest: CancellationToken,
    /// Cancelled when the person stops this agent.
    stop: CancellationToken,
    in_flight: usize,
    waiting: usize,
}

/// A call's registration; dropping it ends the call (even if its future is dropped).
pub struct CallGuard<'a> {
    calls: &'a Calls,
    key: Key,
    waiting: bool,
    /// Cancelled when a newer call from the same agent arrives.
    pub superseded: CancellationToken,
    /// Cancelled when the person stops the agent.
    pub stopped: CancellationToken,
}

impl Calls {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, AgentCalls>> {
        self.by_agent.lock_anyway()
    }

    /// Register a call, superseding the agent's previous one in this queue.
    pub fn begin(&self, queue: &QueueName, agent_id: &AgentId) -> CallGuard<'_> {
        let key = (queue.clone(), agent_id.clone());
        let mut map = self.lock();
        let entry = map.entry(key.clone()).or_default();
        entry.generation += 1;
        entry.newest.cancel();
        entry.newest = CancellationToken::new();
        entry.in_flight += 1;
        CallGuard {
            calls: self,
            key,
            waiting: false,
            superseded: entry.newest.clone(),
            stopped: entry.stop.clone(),
        }
    }

    /// Tell this agent's live calls that the person stopped it (the stored
    /// request covers a call that has not started yet).
    pub fn stop(&self, queue: &QueueName, agent_id: &AgentId) {
        if let Some(c) = self.lock().get_mut(&(queue.clone(), agent_id.clone())) {
            c.stop.cancel();
            c.stop = CancellationToken::new();
        }
    }

    /// How many calls from this agent are waiting on its queue now.
    pub fn waiting(&self, queue: &QueueName, agent_id: &AgentId) -> usize {
        self.lock()
            .get(&(queue.clone(), agent_id.clone()))
            .map_or(0, |c| c.waiting)
    }

    /// (queue, agent) of every agent with at least one waiting call.
    pub fn waiting_agents(&self) -> Vec<(QueueName, AgentId)> {
        self.lock()
            .iter()
            .filter(|(_, c)| c.waiting > 0)
            .map(|(k, _)| k.clone())
            .collect()
    }
}

impl CallGuard<'_> {
    /// Mark this call as waiting (the agent is "listening").
    pub fn set_waiting(&mut self, waiting: bool) {
        if self.waiting == waiting {
            return;
        }
        self.waiting = waiting;
        if let Some(c) = self.calls.lock().get_mut(&self.key) {
            if waiting {
                c.waiting += 1;
            } else {
                c.waiting -= 1;
            }
        }
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.set_waiting(false);
        let mut map = self.calls.lock();
        if let Some(c) = map.get_mut(&self.key) {
            c.in_flight -= 1;
            // Forget idle agents so arbitrary agent ids cannot grow this map forever.
            if c.in_flight == 0 {
                map.remove(&self.key);
            }
        }
    }
}

/// An agent's state from its recorded activity (pure, so it is easy to test).
pub fn agent_state(activity: &AgentActivity, waiting: bool, stale_after_seconds: u32) -> AgentState {
    if waiting {
        return AgentState::Listening;
    }
    // Told to stop and it did, or its client went away while it waited
    // (killed mid-wait, a one-shot agent that exited): gone until it calls
    // again — not "working" on what it took before (issue 39).
    if activity.last_result_type == Some(ResultType::Stop) || activity.left_at.is_some() {
        return AgentState::Offline;
    }
    let since = |t: Option<&str>| t.and_then(crate::time::seconds_since).unwrap_or(f64::INFINITY);
    if activity.last_result_type == Some(ResultType::Instruction)
        && since(activity.last_fetch_at.as_deref()) < WORKING_FOR_SECONDS
    {
        return AgentState::Working;
    }
    if since(Some(&activity.last_seen_at)) < f64::from(stale_after_seconds) {
        AgentState::Idle
    } else {
        AgentState::Offline
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::{Duration, OffsetDateTime};

    fn qn(name: &str) -> QueueName {
        QueueName::new(name).unwrap()
    }

    fn aid(agent: &str) -> AgentId {
        AgentId::new(agent).unwrap().unwrap()
    }

    fn ago(seconds: i64) -> crate::model::Timestamp {
        crate::model::Timestamp::at(OffsetDateTime::now_utc() - Duration::seconds(seconds))
    }

    fn activity(seen: i64, fetch: Option<(i64, &str)>) -> AgentActivity {
        AgentActivity {
            queue: qn("default"),
            stop_requested: false,
            agent_id: aid("a"),
            last_seen_at: ago(seen),
            last_fetch_at: fetch.map(|(s, _)| ago(s)),
            last_result_type: fetch.and_then(|(_, r)| ResultType::parse(r)),
            client: None,
            client_version: None,
            session: None,
            left_at: None,
        }
    }

    #[test]
    fn states_follow_activity() {
        assert_eq!(agent_state(&activity(500, None), true, 30), AgentState::Listening);
        assert_eq!(
            agent_state(&activity(100, Some((100, "instruction"))), false, 30),
            AgentState::Working
        );
        // Nine minutes without a word is not working.
        assert_eq!(
            agent_state(&activity(540, Some((540, "instruction"))), false, 30),
            AgentState::Offline
        );
        assert_eq!(
            agent_state(&activity(5, Some((5, "empty"))), false, 30),
            AgentState::Idle
        );
        assert_eq!(
            agent_state(&activity(31, Some((31, "default_response"))), false, 30),
            AgentState::Offline
        );
        assert_eq!(
            agent_state(&activity(4000, Some((4000, "instruction"))), false, 30),
            AgentState::Offline
        );
        assert_eq!(
            agent_state(&activity(1, Some((1, "stop"))), false, 30),
            AgentState::Offline
        );
    }

    #[test]
    fn a_newer_call_supersedes_the_older_one() {
        let calls = Calls::default();
        let mut first = calls.begin(&qn("q"), &aid("a"));
        first.set_waiting(true);
        assert_eq!(calls.waiting(&qn("q"), &aid("a")), 1);
        let other = calls.begin(&qn("q"), &aid("b"));
        let elsewhere = calls.begin(&qn("r"), &aid("a"));
        assert!(!first.superseded.is_cancelled(), "another agent must not supersede");
        assert!(
            !first.superseded.is_cancelled(),
            "the same id in another queue is another agent"
        );
        let second = calls.begin(&qn("q"), &aid("a"));
        assert!(first.superseded.is_cancelled());
        assert!(!second.superseded.is_cancelled());
        calls.stop(&qn("q"), &aid("a"));
        assert!(second.stopped.is_cancelled());
        assert!(!elsewhere.stopped.is_cancelled());
        assert!(
            !calls.begin(&qn("q"), &aid("a")).stopped.is_cancelled(),
            "a stop is one-shot"
        );
        drop(first);
        assert_eq!(calls.waiting(&qn("q"), &aid("a")), 0);
        drop((second, other, elsewhere));
        assert!(calls.lock().is_empty(), "finished agents are forgotten");
    }
}

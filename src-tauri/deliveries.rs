//! "Picked up" notifications, one per agent at a time (issue 42): the first
//! delivery to an agent is announced at once; what it takes in the
//! [`WINDOW`] after is counted, and when the window ends one notification
//! says how many it took and which was the latest, in place of the one on
//! screen. Ten quick deliveries are one notification, not ten; an agent
//! taking one instruction now and then still gets each announced at once.
//!
//! Only the counting is here (pure, tested); `follow` shows what it says.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::view;

/// At most one "picked up" notification per agent in this long.
pub const WINDOW: Duration = Duration::from_secs(10);

/// What to show for an agent: its notification id (one per agent, so a
/// newer one replaces the older) and the words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub id: i32,
    pub title: String,
    pub body: String,
}

/// One agent's deliveries since its notification was last shown.
struct Run {
    agent: String,
    shown_at: Instant,
    /// Announced in this run, the shown ones included.
    taken: u32,
    /// Taken since the last notification.
    unshown: u32,
    latest: String,
    pending: u64,
}

/// The runs of each agent (by queue and id) that took something lately.
#[derive(Default)]
pub struct Deliveries {
    runs: HashMap<(String, String), Run>,
}

impl Deliveries {
    /// `agent` of `queue` took `content`, leaving `pending`: what to show now, if anything.
    pub fn picked_up(&mut self, queue: &str, agent: &str, content: &str, pending: u64, now: Instant) -> Option<Notice> {
        self.forget_quiet(now);
        let key = (queue.to_owned(), agent.to_owned());
        if let Some(run) = self.runs.get_mut(&key) {
            run.taken += 1;
            run.unshown += 1;
            content.clone_into(&mut run.latest);
            run.pending = pending;
            return None;
        }
        let (title, body) = view::consumed_notification(agent, content, pending);
        let run = Run {
            agent: agent.to_owned(),
            shown_at: now,
            taken: 1,
            unshown: 0,
            latest: content.to_owned(),
            pending,
        };
        self.runs.insert(key.clone(), run);
        Some(Notice {
            id: notification_id(&key),
            title,
            body,
        })
    }

    /// When the next count is due, if one is waiting.
    pub fn next_due(&self) -> Option<Instant> {
        self.runs
            .values()
            .filter(|r| r.unshown > 0)
            .map(|r| r.shown_at + WINDOW)
            .min()
    }

    /// The counts whose window ended by `now`, each replacing its agent's
    /// notification; each run goes on from `now`.
    pub fn due(&mut self, now: Instant) -> Vec<Notice> {
        let mut notices = Vec::new();
        for (key, run) in &mut self.runs {
            if run.unshown == 0 || run.shown_at + WINDOW > now {
                continue;
            }
            run.unshown = 0;
            run.shown_at = now;
            notices.push(Notice {
                id: notification_id(key),
                title: format!("{} picked up {} instructions", run.agent, run.taken),
                body: format!(
                    "Latest: {}. {}",
                    view::first_line(&run.latest, 80),
                    view::pending_left(run.pending)
                ),
            });
        }
        self.forget_quiet(now);
        notices
    }

    /// Runs with nothing unshown whose window is over end: the agent's next
    /// delivery is news again (and the map stays as small as the agents busy now).
    fn forget_quiet(&mut self, now: Instant) {
        self.runs.retain(|_, r| r.unshown > 0 || r.shown_at + WINDOW > now);
    }
}

/// A notification id of the agent's own (positive, as platforms want),
/// stable while the app runs, apart from the questions' ids by its seed.
fn notification_id((queue, agent): &(String, String)) -> i32 {
    let hash = queue
        .bytes()
        .chain([0])
        .chain(agent.bytes())
        .fold(0x0123_4567_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    i32::try_from(hash & 0x7fff_ffff).unwrap_or(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_quick_deliveries_are_one_notification_then_one_count() {
        let mut d = Deliveries::default();
        let t0 = Instant::now();
        let first = d
            .picked_up("default", "claude", "one", 9, t0)
            .expect("the first is shown at once");
        assert_eq!(first.title, "claude picked up: one");
        for n in 2..=10u64 {
            let at = t0 + Duration::from_millis(100 * n);
            assert_eq!(d.picked_up("default", "claude", &format!("item {n}"), 10 - n, at), None);
        }
        assert_eq!(d.next_due(), Some(t0 + WINDOW));
        assert!(
            d.due(t0 + WINDOW - Duration::from_millis(1)).is_empty(),
            "not before the window ends"
        );
        let count = d.due(t0 + WINDOW);
        assert_eq!(count.len(), 1);
        assert_eq!(count[0].id, first.id, "it replaces the first");
        assert_eq!(count[0].title, "claude picked up 10 instructions");
        assert_eq!(count[0].body, "Latest: item 10. The queue is empty now.");
        assert_eq!(d.next_due(), None);
        // Quiet for a window: the next one is news again, shown at once.
        let later = t0 + WINDOW * 3;
        let again = d
            .picked_up("default", "claude", "eleven", 0, later)
            .expect("shown at once");
        assert_eq!(again.title, "claude picked up: eleven");
    }

    #[test]
    fn each_agent_counts_on_its_own() {
        let mut d = Deliveries::default();
        let t0 = Instant::now();
        let a = d.picked_up("default", "a", "x", 0, t0).unwrap();
        let b = d.picked_up("default", "b", "y", 0, t0).unwrap();
        let a_elsewhere = d.picked_up("other", "a", "z", 0, t0).unwrap();
        assert!(a.id != b.id && a.id != a_elsewhere.id, "one notification per agent");
        assert_eq!(d.picked_up("default", "a", "x2", 0, t0 + Duration::from_secs(1)), None);
        let count = d.due(t0 + WINDOW);
        assert_eq!(count.len(), 1, "only a took more: {count:?}");
        assert_eq!(count[0].title, "a picked up 2 instructions");
    }

    #[test]
    fn a_run_that_goes_on_is_counted_once_per_window() {
        let mut d = Deliveries::default();
        let t0 = Instant::now();
        d.picked_up("q", "a", "1", 0, t0).unwrap();
        d.picked_up("q", "a", "2", 0, t0 + Duration::from_secs(5));
        assert_eq!(d.due(t0 + WINDOW)[0].title, "a picked up 2 instructions");
        d.picked_up("q", "a", "3", 0, t0 + WINDOW + Duration::from_secs(1));
        assert_eq!(d.next_due(), Some(t0 + WINDOW * 2));
        assert_eq!(d.due(t0 + WINDOW * 2)[0].title, "a picked up 3 instructions");
        assert!(d.runs.len() == 1);
        d.due(t0 + WINDOW * 4);
        assert!(d.runs.is_empty(), "a quiet agent is forgotten");
    }
}

//! Model-based test of the queue: random sequences of add / edit / readdress
//! / move between queues / delete / reorder / send-again / hold / release /
//! stop / claim (with or without a report), over three queues and three
//! agents, against the real queue (real SQLite) and a plain in-memory model.
//! After every step each queue's pending rail, the ledger and the reports
//! (with the instruction each one attaches to) must match the model; a
//! targeted instruction must never reach another agent; edits or deletes of
//! consumed instructions must be refused.

use std::collections::{HashMap, HashSet};

use engine::model::{
    AgentId, InstructionId, InstructionPatch, Listing, MoveTo, NewInstruction, QueueName, RequeuePlace, ResultType,
    Settings,
};
use engine::Error;
use engine::{Queue, ServerFacts, Store};
use proptest::prelude::*;
use tokio_util::sync::CancellationToken;

const QUEUES: [&str; 3] = ["default", "b", "c"];
const AGENTS: [&str; 3] = ["x", "y", "z"];

#[derive(Debug, Clone)]
enum Op {
    Add(String, usize, Option<usize>),
    Edit(usize, String),
    Readdress(usize, Option<usize>),
    MoveQueue(usize, usize),
    Delete(usize),
    EditConsumed(usize),
    DeleteConsumed(usize),
    MoveBefore(usize, usize),
    MoveAfter(usize, usize),
    MoveTo(usize, bool),
    Requeue(usize, bool),
    Hold(Option<usize>, bool),
    Stop(usize, usize),
    Claim(usize, usize, Option<usize>),
}

/// Reports a call may carry: few, so repeats (retries) happen.
const REPORTS: [&str; 2] = ["done", "which one?"];

fn text() -> impl Strategy<Value = String> {
    "[a-z ]{0,6}[a-z]{1,3}"
}

fn queue() -> impl Strategy<Value = usize> {
    0..QUEUES.len()
}

fn target() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![2 => Just(None), 1 => (0..AGENTS.len()).prop_map(Some)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (text(), queue(), target()).prop_map(|(t, q, a)| Op::Add(t, q, a)),
        1 => (any::<usize>(), text()).prop_map(|(i, t)| Op::Edit(i, t)),
        1 => (any::<usize>(), target()).prop_map(|(i, a)| Op::Readdress(i, a)),
        1 => (any::<usize>(), queue()).prop_map(|(i, q)| Op::MoveQueue(i, q)),
        1 => any::<usize>().prop_map(Op::Delete),
        1 => any::<usize>().prop_map(Op::EditConsumed),
        1 => any::<usize>().prop_map(Op::DeleteConsumed),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::MoveBefore(a, b)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::MoveAfter(a, b)),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(a, f)| Op::MoveTo(a, f)),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(a, f)| Op::Requeue(a, f)),
        1 => (proptest::option::of(queue()), any::<bool>()).prop_map(|(q, h)| Op::Hold(q, h)),
        1 => (queue(), 0..AGENTS.len()).prop_map(|(q, a)| Op::Stop(q, a)),
        5 => (queue(), 0..AGENTS.len(), proptest::option::of(0..REPORTS.len())).prop_map(|(q, a, r)| Op::Claim(q, a, r)),
    ]
}

#[derive(Debug, Clone, PartialEq)]
struct Item {
    id: InstructionId,
    content: String,
    queue: String,
    target: Option<String>,
}

/// The model: pending items per queue in delivery order (one list, filtered
/// per queue), consumed items, held queues, seen agents and stop requests.
#[derive(Default)]
struct Model {
    pending: Vec<Item>,
    consumed: Vec<Item>,
    held: HashSet<String>,
    seen: HashSet<(String, String)>,
    stops: HashSet<(String, String)>,
    /// What each agent's previous call delivered, if it delivered something.
    previous: HashMap<(String, String), String>,
    /// Reports in the order they were stored: (queue, agent, content, instruction id).
    reports: Vec<(String, String, String, Option<String>)>,
}

impl Model {
    fn rail(&self, queue: &str) -> Vec<Item> {
        self.pending.iter().filter(|i| i.queue == queue).cloned().collect()
    }

    fn takes(&self, queue: &str, agent: &str) -> Vec<Item> {
        self.rail(queue)
            .into_iter()
            .filter(|i| i.target.as_deref().is_none_or(|t| t == agent))
            .collect()
    }

    fn remove(&mut self, id: &str) -> Item {
        let at = self.pending.iter().position(|i| i.id == id).unwrap();
        self.pending.remove(at)
    }
}

/// The model keeps names as text; the queue takes them checked.
fn qn(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

fn aid(agent: &str) -> AgentId {
    AgentId::new(agent).unwrap().unwrap()
}

fn pick<T>(v: &[T], i: usize) -> Option<&T> {
    (!v.is_empty()).then(|| &v[i % v.len()])
}

async fn run(ops: Vec<Op>) {
    let facts = ServerFacts {
        url: "http://model".into(),
        version: "0".into(),
        started_at: engine::model::Timestamp::now(),
        requested_port: None,
        requested_port_holder: None,
        recovered: None,
        log_dir: None,
        database: None,
    };
    let settings = Settings {
        default_wait_seconds: 0,
        ..Settings::default()
    };
    let q = Queue::new(
        Store::open_in_memory().unwrap(),
        &settings,
        facts,
        CancellationToken::new(),
    )
    .unwrap();
    let mut m = Model::default();
    for op in ops {
        match op.clone() {
            Op::Add(t, qi, a) => {
                let new = NewInstruction {
                    content: t.clone(),
                    queue: Some(qn(QUEUES[qi])),
                    target: a.map(|a| AGENTS[a].to_owned()),
                };
                let item = q.add(new).await.unwrap();
                m.pending.push(Item {
                    id: item.id,
                    content: t,
                    queue: QUEUES[qi].to_owned(),
                    target: a.map(|a| AGENTS[a].to_owned()),
                });
            }
            Op::Edit(i, t) => {
                if let Some(it) = pick(&m.pending, i).cloned() {
                    q.edit(it.id.clone(), InstructionPatch::content(t.clone()))
                        .await
                        .unwrap();
                    m.pending.iter_mut().find(|p| p.id == it.id).unwrap().content = t;
                }
            }
            Op::Readdress(i, a) => {
                if let Some(it) = pick(&m.pending, i).cloned() {
                    let target = a.map(|a| AGENTS[a].to_owned());
                    let patch = InstructionPatch {
                        target: Some(target.clone()),
                        ..InstructionPatch::default()
                    };
                    let got = q.edit(it.id.clone(), patch).await.unwrap();
                    assert_eq!(got.target.map(AgentId::into_string), target);
                    m.pending.iter_mut().find(|p| p.id == it.id).unwrap().target = target;
                }
            }
            Op::MoveQueue(i, qi) => {
                if let Some(it) = pick(&m.pending, i).cloned() {
                    let patch = InstructionPatch {
                        queue: Some(qn(QUEUES[qi])),
                        ..InstructionPatch::default()
                    };
                    q.edit(it.id.clone(), patch).await.unwrap();
                    let mut moved = m.remove(&it.id);
                    moved.queue = QUEUES[qi].to_owned();
                    m.pending.push(moved); // the back of its new queue
                }
            }
            Op::Delete(i) => {
                if let Some(it) = pick(&m.pending, i).cloned() {
                    q.delete(it.id.clone()).await.unwrap();
                    m.remove(&it.id);
                }
            }
            Op::EditConsumed(i) => {
                if let Some(it) = pick(&m.consumed, i).cloned() {
                    let r = q.edit(it.id.clone(), InstructionPatch::content("x")).await;
                    assert!(matches!(r, Err(Error::Conflict(_))));
                    let readdress = InstructionPatch {
                        queue: Some(qn("b")),
                        ..InstructionPatch::default()
                    };
                    assert!(matches!(q.edit(it.id, readdress).await, Err(Error::Conflict(_))));
                }
            }
            Op::DeleteConsumed(i) => {
                if let Some(it) = pick(&m.consumed, i).cloned() {
                    assert!(matches!(q.delete(it.id).await, Err(Error::Conflict(_))));
                }
            }
            Op::MoveBefore(a, b) | Op::MoveAfter(a, b) => {
                let before = matches!(op, Op::MoveBefore(..));
                let (Some(it), Some(anchor)) = (pick(&m.pending, a).cloned(), pick(&m.pending, b).cloned()) else {
                    continue;
                };
                let to = MoveTo {
                    before_id: before.then(|| anchor.id.clone()),
                    after_id: (!before).then(|| anchor.id.clone()),
                    to: None,
                };
                let r = q.move_to(it.id.clone(), to).await;
                if it.id == anchor.id {
                    assert!(matches!(r, Err(Error::Invalid(_))), "moving relative to itself");
                    continue;
                }
                if it.queue != anchor.queue {
                    assert!(matches!(r, Err(Error::Conflict(_))), "an anchor in another queue");
                    continue;
                }
                let rail = r.unwrap();
                assert!(
                    rail.iter().all(|i| i.queue == it.queue),
                    "the answer is the queue's rail"
                );
                let moving = m.remove(&it.id);
                let at = m.pending.iter().position(|p| p.id == anchor.id).unwrap();
                m.pending.insert(if before { at } else { at + 1 }, moving);
            }
            Op::MoveTo(a, front) => {
                if let Some(it) = pick(&m.pending, a).cloned() {
                    let place = if front { RequeuePlace::Front } else { RequeuePlace::Back };
                    let to = MoveTo {
                        before_id: None,
                        after_id: None,
                        to: Some(place),
                    };
                    q.move_to(it.id.clone(), to).await.unwrap();
                    let moving = m.remove(&it.id);
                    if front {
                        m.pending.insert(0, moving)
                    } else {
                        m.pending.push(moving)
                    }
                }
            }
            Op::Requeue(i, front) => {
                if let Some(it) = pick(&m.consumed, i).cloned() {
                    let place = if front { RequeuePlace::Front } else { RequeuePlace::Back };
                    let item = q.requeue(it.id.clone(), place).await.unwrap();
                    assert_eq!(
                        (&item.content, item.queue.as_str(), item.target.as_deref()),
                        (&it.content, it.queue.as_str(), it.target.as_deref())
                    );
                    let copy = Item { id: item.id, ..it };
                    if front {
                        m.pending.insert(0, copy)
                    } else {
                        m.pending.push(copy)
                    }
                }
            }
            Op::Hold(qi, held) => {
                let name = qi.map(|i| QUEUES[i]);
                match q.set_held(name.map(qn).as_ref(), held).await {
                    Ok(_) => {
                        let names: Vec<String> = match name {
                            Some(n) => vec![n.to_owned()],
                            None => q
                                .queues(true)
                                .await
                                .unwrap()
                                .into_iter()
                                .map(|i| i.name.into_string())
                                .collect(),
                        };
                        for n in names {
                            if held {
                                m.held.insert(n);
                            } else {
                                m.held.remove(&n);
                            }
                        }
                    }
                    // A queue nobody has used yet does not exist.
                    Err(Error::NotFound(_)) => assert!(q
                        .queues(true)
                        .await
                        .unwrap()
                        .iter()
                        .all(|i| Some(i.name.as_str()) != name)),
                    Err(e) => panic!("{e}"),
                }
            }
            Op::Stop(qi, ai) => {
                let key = (QUEUES[qi].to_owned(), AGENTS[ai].to_owned());
                match q.stop_agent(&qn(&key.0), &aid(&key.1)).await {
                    Ok(()) => {
                        assert!(m.seen.contains(&key), "only a seen agent can be stopped");
                        m.stops.insert(key);
                    }
                    Err(Error::NotFound(_)) => assert!(!m.seen.contains(&key)),
                    Err(e) => panic!("{e}"),
                }
            }
            Op::Claim(qi, ai, report) => {
                let (queue, agent) = (QUEUES[qi], AGENTS[ai]);
                let key = (queue.to_owned(), agent.to_owned());
                let report = report.map(|i| REPORTS[i].to_owned());
                if let Some(content) = &report {
                    // The linking rule: attach to what the previous call delivered
                    // unless it has a report; a repeat that would attach the same
                    // way is a retry and is not stored again.
                    let delivered = m.previous.get(&key).cloned();
                    let latest = m.reports.iter().rev().find(|r| (&r.0, &r.1) == (&key.0, &key.1));
                    let retry = latest.is_some_and(|r| r.2 == *content && (delivered.is_none() || r.3 == delivered));
                    if !retry {
                        let free = delivered.filter(|d| !m.reports.iter().any(|r| r.3.as_ref() == Some(d)));
                        m.reports.push((key.0.clone(), key.1.clone(), content.clone(), free));
                    }
                }
                let (queue_name, agent_id) = (qn(queue), aid(agent));
                let (r, _) = q
                    .get_user_request(
                        Some(&queue_name),
                        Some(&agent_id),
                        engine::model::Caller::default(),
                        report.map(|c| (c, Vec::new())),
                        CancellationToken::new(),
                        None,
                    )
                    .await
                    .unwrap();
                assert_eq!(r.queue, queue);
                match &r.instruction {
                    Some(i) => m.previous.insert(key.clone(), i.id.clone()),
                    None => m.previous.remove(&key),
                };
                m.seen.insert(key.clone());
                if m.stops.remove(&key) {
                    assert_eq!(r.result_type, ResultType::Stop, "a stop comes first, once");
                    assert!(r.instruction.is_none());
                } else if m.held.contains(queue) {
                    assert!(r.instruction.is_none(), "a held queue delivers nothing");
                } else {
                    match m.takes(queue, agent).first().cloned() {
                        Some(want) => {
                            let got = r.instruction.expect("an instruction while the model has one");
                            assert_eq!(
                                (got.id.as_str(), &got.content, &got.target),
                                (want.id.as_str(), &want.content, &want.target)
                            );
                            let item = m.remove(&want.id);
                            m.consumed.push(item);
                        }
                        None => assert!(r.instruction.is_none(), "nothing this agent may take"),
                    }
                }
                assert_eq!(r.remaining_pending, m.takes(queue, agent).len() as u64);
            }
        }
        // After every step: same rail in every queue, same ledger.
        for queue in QUEUES {
            let rail = q.list(Listing::pending().in_queue(&qn(queue))).await.unwrap();
            let got: Vec<Item> = rail
                .into_iter()
                .map(|i| Item {
                    id: i.id,
                    content: i.content,
                    queue: i.queue.into_string(),
                    target: i.target.map(AgentId::into_string),
                })
                .collect();
            assert_eq!(got, m.rail(queue), "queue {queue} differs from the model after {op:?}");
        }
        // The counts the status reports (kept by triggers, not counted)
        // agree with the model in every queue, and in total.
        let status = q.status().await.unwrap();
        for queue in QUEUES {
            let (pending, consumed) = status
                .queues
                .iter()
                .find(|i| i.name == queue)
                .map_or((0, 0), |i| (i.pending_count, i.consumed_count));
            let want = (
                m.rail(queue).len() as u64,
                m.consumed.iter().filter(|c| c.queue == queue).count() as u64,
            );
            assert_eq!((pending, consumed), want, "queue {queue}'s counts after {op:?}");
        }
        assert_eq!(
            (status.queue.pending_count, status.queue.consumed_count),
            (m.pending.len() as u64, m.consumed.len() as u64),
            "the total counts after {op:?}"
        );
        let consumed = q.list(Listing::consumed()).await.unwrap();
        let mut got: Vec<(&str, Option<&str>)> = consumed
            .iter()
            .map(|i| (i.id.as_str(), i.consumed_by_agent_id.as_deref()))
            .collect();
        got.sort_unstable();
        let mut want: Vec<&str> = m.consumed.iter().map(|c| c.id.as_str()).collect();
        want.sort_unstable();
        assert_eq!(
            got.iter().map(|g| g.0).collect::<Vec<_>>(),
            want,
            "ledger differs from the model"
        );
        let mut stored: Vec<(String, String, String, Option<String>)> = q
            .reports(None, None, None, 10_000)
            .await
            .unwrap()
            .into_iter()
            .map(|r| {
                (
                    r.queue.into_string(),
                    r.agent_id.into_string(),
                    r.content,
                    r.instruction_id.map(|i| i.into_string()),
                )
            })
            .collect();
        let mut want = m.reports.clone();
        stored.sort();
        want.sort();
        assert_eq!(stored, want, "reports differ from the model after {op:?}");
        for c in &consumed {
            if let Some(t) = &c.target {
                assert_eq!(
                    c.consumed_by_agent_id.as_ref(),
                    Some(t),
                    "a targeted instruction reached another agent"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn the_queue_behaves_like_its_model(ops in proptest::collection::vec(op(), 1..60)) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(run(ops));
    }
}

//! Model-based test of the queue: random sequences of add / edit / delete /
//! move / send-again / claim against the real queue (real SQLite) and a plain
//! in-memory model. After every step the pending rail and the ledger must match
//! the model, and edits or deletes of consumed instructions must be refused.

use engine::model::{InstructionStatus, MoveTo, RequeuePlace, Settings, StatusFilter};
use engine::Error;
use engine::{Queue, ServerFacts, Store};
use proptest::prelude::*;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
enum Op {
    Add(String),
    Edit(usize, String),
    Delete(usize),
    EditConsumed(usize),
    DeleteConsumed(usize),
    MoveBefore(usize, usize),
    MoveAfter(usize, usize),
    MoveTo(usize, bool),
    Requeue(usize, bool),
    Claim,
}

fn text() -> impl Strategy<Value = String> {
    "[a-z ]{0,6}[a-z]{1,3}"
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => text().prop_map(Op::Add),
        1 => (any::<usize>(), text()).prop_map(|(i, t)| Op::Edit(i, t)),
        1 => any::<usize>().prop_map(Op::Delete),
        1 => any::<usize>().prop_map(Op::EditConsumed),
        1 => any::<usize>().prop_map(Op::DeleteConsumed),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::MoveBefore(a, b)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::MoveAfter(a, b)),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(a, f)| Op::MoveTo(a, f)),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(a, f)| Op::Requeue(a, f)),
        2 => Just(Op::Claim),
    ]
}

/// The model: pending (id, content) in delivery order; consumed ids and contents.
#[derive(Default)]
struct Model {
    pending: Vec<(String, String)>,
    consumed: Vec<(String, String)>,
}

fn pick<T>(v: &[T], i: usize) -> Option<&T> {
    (!v.is_empty()).then(|| &v[i % v.len()])
}

async fn run(ops: Vec<Op>) {
    let facts = ServerFacts {
        url: "http://model".into(),
        version: "0".into(),
        started_at: "t".into(),
        requested_port: None,
        requested_port_holder: None,
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
        match op {
            Op::Add(t) => {
                let item = q.add(t.clone()).await.unwrap();
                m.pending.push((item.id, t));
            }
            Op::Edit(i, t) => {
                if let Some((id, _)) = pick(&m.pending, i).cloned() {
                    q.edit(id.clone(), t.clone()).await.unwrap();
                    m.pending.iter_mut().find(|p| p.0 == id).unwrap().1 = t;
                }
            }
            Op::Delete(i) => {
                if let Some((id, _)) = pick(&m.pending, i).cloned() {
                    q.delete(id.clone()).await.unwrap();
                    m.pending.retain(|p| p.0 != id);
                }
            }
            Op::EditConsumed(i) => {
                if let Some((id, _)) = pick(&m.consumed, i).cloned() {
                    assert!(matches!(q.edit(id, "x".into()).await, Err(Error::Conflict(_))));
                }
            }
            Op::DeleteConsumed(i) => {
                if let Some((id, _)) = pick(&m.consumed, i).cloned() {
                    assert!(matches!(q.delete(id).await, Err(Error::Conflict(_))));
                }
            }
            Op::MoveBefore(a, b) | Op::MoveAfter(a, b) => {
                let before = matches!(op, Op::MoveBefore(..));
                let (Some((id, _)), Some((anchor, _))) = (pick(&m.pending, a).cloned(), pick(&m.pending, b).cloned())
                else {
                    continue;
                };
                let to = MoveTo {
                    before_id: before.then(|| anchor.clone()),
                    after_id: (!before).then(|| anchor.clone()),
                    to: None,
                };
                let r = q.move_to(id.clone(), to).await;
                if id == anchor {
                    assert!(matches!(r, Err(Error::Invalid(_))), "moving relative to itself");
                    continue;
                }
                r.unwrap();
                let from = m.pending.iter().position(|p| p.0 == id).unwrap();
                let item = m.pending.remove(from);
                let at = m.pending.iter().position(|p| p.0 == anchor).unwrap();
                m.pending.insert(if before { at } else { at + 1 }, item);
            }
            Op::MoveTo(a, front) => {
                if let Some((id, _)) = pick(&m.pending, a).cloned() {
                    let place = if front { RequeuePlace::Front } else { RequeuePlace::Back };
                    q.move_to(
                        id.clone(),
                        MoveTo {
                            before_id: None,
                            after_id: None,
                            to: Some(place),
                        },
                    )
                    .await
                    .unwrap();
                    let from = m.pending.iter().position(|p| p.0 == id).unwrap();
                    let item = m.pending.remove(from);
                    if front {
                        m.pending.insert(0, item)
                    } else {
                        m.pending.push(item)
                    }
                }
            }
            Op::Requeue(i, front) => {
                if let Some((id, content)) = pick(&m.consumed, i).cloned() {
                    let place = if front { RequeuePlace::Front } else { RequeuePlace::Back };
                    let item = q.requeue(id, place).await.unwrap();
                    assert_eq!(item.content, content);
                    if front {
                        m.pending.insert(0, (item.id, content))
                    } else {
                        m.pending.push((item.id, content))
                    }
                }
            }
            Op::Claim => {
                let (r, _) = q
                    .get_user_request(Some("model"), CancellationToken::new(), None)
                    .await
                    .unwrap();
                match m.pending.first().cloned() {
                    Some((id, content)) => {
                        let got = r.instruction.expect("an instruction while the model has one");
                        assert_eq!((got.id.as_str(), got.content.as_str()), (id.as_str(), content.as_str()));
                        m.pending.remove(0);
                        m.consumed.push((id, content));
                        assert_eq!(r.remaining_pending, m.pending.len() as u64);
                    }
                    None => assert!(r.instruction.is_none()),
                }
            }
        }
        // After every step: same rail, same ledger.
        let pending = q.list(StatusFilter::Pending, None, 0).await.unwrap();
        let got: Vec<(String, String)> = pending.iter().map(|i| (i.id.clone(), i.content.clone())).collect();
        assert_eq!(got, m.pending, "pending rail differs from the model");
        let consumed = q.list(StatusFilter::Consumed, None, 0).await.unwrap();
        assert!(consumed.iter().all(|i| i.status == InstructionStatus::Consumed));
        let mut got: Vec<&str> = consumed.iter().map(|i| i.id.as_str()).collect();
        let mut want: Vec<&str> = m.consumed.iter().map(|c| c.0.as_str()).collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "ledger differs from the model");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_queue_behaves_like_its_model(ops in proptest::collection::vec(op(), 1..40)) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(run(ops));
    }
}

//! `notifications/cancelled` for a stateless call.
//!
//! A stateless call and the notification that cancels it arrive as two
//! requests with no session to tie them, and rmcp cancels a stateless call
//! only when its connection closes. A client that times a call out on its
//! own (Gemini CLI and opencode, past a timeout set shorter than our wait)
//! sends the notification and keeps the call's stream open: the call went on
//! waiting, took the next instruction and had it marked sent — an
//! instruction the model never saw. So the direct path keeps each call by
//! its JSON-RPC id and its client's `User-Agent`, and a notification naming
//! an id ends every such call of that client: consuming nothing, answering
//! as a wait that ended (ids repeat across clients; two calls of one client
//! with one id in flight are both ended, and each answer is a normal empty
//! one — the worst a wrong match does).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::sync::MutexExt as _;

type Key = (String, String);

/// The stateless calls in flight, by (id as JSON, `User-Agent`).
#[derive(Default)]
pub struct InFlight {
    calls: Mutex<HashMap<Key, Vec<(u64, CancellationToken)>>>,
    next: AtomicU64,
}

/// A call's place in [`InFlight`], given up when dropped (the call ended).
pub struct Registered {
    table: Arc<InFlight>,
    key: Key,
    seq: u64,
}

impl InFlight {
    /// Keep `token` (cancelled by a notification naming `id` from a client
    /// with this `user_agent`) until the returned guard is dropped.
    pub fn register(
        self: &Arc<Self>,
        id: &serde_json::Value,
        user_agent: &str,
        token: CancellationToken,
    ) -> Registered {
        let key = (id.to_string(), user_agent.to_owned());
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        self.calls
            .lock_anyway()
            .entry(key.clone())
            .or_default()
            .push((seq, token));
        Registered {
            table: self.clone(),
            key,
            seq,
        }
    }

    /// Cancel the calls `body` names, if it is a `notifications/cancelled`
    /// from a client with this `user_agent`; how many were.
    pub fn cancel_named_in(&self, body: &[u8], user_agent: &str) -> usize {
        let Ok(message) = serde_json::from_slice::<serde_json::Value>(body) else {
            return 0;
        };
        let notification = message.get("id").is_none_or(serde_json::Value::is_null);
        if !notification || message.get("method").and_then(|m| m.as_str()) != Some("notifications/cancelled") {
            return 0;
        }
        let Some(id) = message.pointer("/params/requestId") else {
            return 0;
        };
        let key = (id.to_string(), user_agent.to_owned());
        let calls = self.calls.lock_anyway().get(&key).cloned().unwrap_or_default();
        for (_, token) in &calls {
            token.cancel();
        }
        if !calls.is_empty() {
            tracing::debug!(request = %key.0, calls = calls.len(), "a stateless call was cancelled by its client");
        }
        calls.len()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut calls = self.table.calls.lock_anyway();
        if let Some(list) = calls.get_mut(&self.key) {
            list.retain(|(seq, _)| *seq != self.seq);
            if list.is_empty() {
                calls.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_notification_cancels_the_calls_of_its_client_with_that_id_only() {
        let table = Arc::new(InFlight::default());
        let (mine, theirs, other_id) = (
            CancellationToken::new(),
            CancellationToken::new(),
            CancellationToken::new(),
        );
        let _a = table.register(&json!(7), "gemini-cli/0.61", mine.clone());
        let _b = table.register(&json!(7), "opencode/1.18", theirs.clone());
        let c = table.register(&json!("7"), "gemini-cli/0.61", other_id.clone());
        let cancel = |id: serde_json::Value| {
            serde_json::to_vec(
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}),
            )
            .unwrap()
        };
        assert_eq!(table.cancel_named_in(&cancel(json!(7)), "gemini-cli/0.61"), 1);
        assert!(mine.is_cancelled() && !theirs.is_cancelled() && !other_id.is_cancelled());
        // A request (it has an id) is no notification; other methods are not cancels.
        let request = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "notifications/cancelled", "params": {"requestId": 7}}),
        )
        .unwrap();
        assert_eq!(table.cancel_named_in(&request, "opencode/1.18"), 0);
        assert_eq!(table.cancel_named_in(b"not json", "opencode/1.18"), 0);
        // A call that ended is no longer found.
        drop(c);
        assert_eq!(table.cancel_named_in(&cancel(json!("7")), "gemini-cli/0.61"), 0);
        assert!(table.calls.lock_anyway().len() == 2);
    }
}

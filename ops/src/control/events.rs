//! The event hub: every event of the run loop, turned into a [`pb::Event`]
//! and broadcast to `Watch` streams; and the last error of each rule, for
//! `ListRules`.
//!
//! The run loop's observer calls [`EventHub::publish`] on the loop task, so
//! publishing must never wait: it is a broadcast send, which drops the
//! oldest events for a subscriber that is too slow (the subscriber is told
//! how many it missed) instead of slowing detection down.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use engine::runtime::DaemonEvent;
use engine::{EngineEvent, Nanos};
use serde_json::json;
use tokio::sync::{broadcast, watch};

use super::pb;
use crate::report::{short, verdict};

/// Events buffered per subscriber before the slowest one starts missing some.
pub const WATCH_BUFFER: usize = 4096;

/// Every kind [`to_event`] gives an event, for `rocemend watch --kind`
/// (which refuses any other word: a filter on a kind that never comes
/// would show nothing, and say nothing). "lagged" is not here: it is sent
/// whatever the filter.
pub const KINDS: [&str; 8] = ["transition", "decision", "note", "reload", "mode", "sensor", "stale", "error"];

/// Shared between the run loop's observer and the control service.
#[derive(Debug, Clone)]
pub struct EventHub {
    tx: broadcast::Sender<pb::Event>,
    errors: Arc<Mutex<HashMap<String, (String, Nanos)>>>,
    /// Turns true when the daemon stops: `Watch` streams end then, so the
    /// server's graceful shutdown does not wait on them forever.
    closed: Arc<watch::Sender<bool>>,
}

impl Default for EventHub {
    fn default() -> EventHub {
        EventHub {
            tx: broadcast::channel(WATCH_BUFFER).0,
            errors: Arc::default(),
            closed: Arc::new(watch::channel(false).0),
        }
    }
}

impl EventHub {
    /// Records and broadcasts one event of the run loop.
    pub fn publish(&self, event: &DaemonEvent) {
        match event {
            DaemonEvent::Engine(EngineEvent::Quarantined { rule, error, at }) => {
                self.set_error(rule, error.to_string(), *at)
            }
            DaemonEvent::Engine(EngineEvent::ActionError { rule, message, .. }) => {
                self.set_error(rule, message.clone(), engine::time::wall_clock_now())
            }
            _ => {}
        }
        if let Some(e) = to_event(event) {
            // No subscriber is not an error: nobody is watching.
            let _ = self.tx.send(e);
        }
    }

    fn set_error(&self, rule: &str, error: String, at: Nanos) {
        self.errors.lock().unwrap_or_else(|p| p.into_inner()).insert(rule.to_string(), (error, at));
    }

    /// The last error of `rule` since the daemon started, and when.
    pub fn last_error(&self, rule: &str) -> Option<(String, Nanos)> {
        self.errors.lock().unwrap_or_else(|p| p.into_inner()).get(rule).cloned()
    }

    /// Ends every `Watch` stream: the daemon is stopping.
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    /// Resolves once [`EventHub::close`] was called.
    pub fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.closed.subscribe();
        async move {
            let _ = rx.wait_for(|c| *c).await;
        }
    }

    /// A new subscription, receiving events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<pb::Event> {
        self.tx.subscribe()
    }
}

fn event(at: Nanos, kind: &str, text: String, json: serde_json::Value) -> Option<pb::Event> {
    Some(pb::Event { at_ns: at, kind: kind.to_string(), text, json: json.to_string() })
}

/// The wire form of one event; `None` for those not shown (proposals: the
/// decision that follows says more).
pub fn to_event(e: &DaemonEvent) -> Option<pb::Event> {
    let now = engine::time::wall_clock_now();
    match e {
        DaemonEvent::Engine(EngineEvent::Transition { rule, subject, from, to, at, values, .. }) => event(
            *at,
            "transition",
            format!("{rule} {} {} -> {}", short(subject), from.as_str(), to.as_str()),
            json!({"rule": rule, "subject": subject, "from": from.as_str(), "to": to.as_str(), "at": at,
                   "values": values.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>()}),
        ),
        DaemonEvent::Engine(EngineEvent::Proposal(_)) => None,
        DaemonEvent::Engine(EngineEvent::ActionError { rule, subject, message }) => event(
            now,
            "error",
            format!("{rule} {}: could not build an action: {message}", short(subject)),
            json!({"rule": rule, "subject": subject, "error": message}),
        ),
        DaemonEvent::Engine(EngineEvent::SensorStale { rule, subject, last_seen, at }) => event(
            *at,
            "stale",
            format!("{rule} {}: inputs stale; the rule cannot act on this subject", short(subject)),
            json!({"rule": rule, "subject": subject, "stale": true, "last_seen": last_seen}),
        ),
        DaemonEvent::Engine(EngineEvent::SensorFresh { rule, subject, at }) => event(
            *at,
            "stale",
            format!("{rule} {}: inputs fresh again", short(subject)),
            json!({"rule": rule, "subject": subject, "stale": false}),
        ),
        DaemonEvent::Engine(EngineEvent::Quarantined { rule, error, at }) => event(
            *at,
            "error",
            format!("{rule} quarantined: {error}"),
            json!({"rule": rule, "error": error.to_string(), "quarantined": true}),
        ),
        DaemonEvent::Decision(d) => event(
            d.finished_at.max(d.dispatched_at),
            "decision",
            format!("{} {} {} [{}] {}", d.id, d.proposal.rule, d.proposal.action, d.mode.as_str(), verdict(d)),
            serde_json::to_value(d.as_ref()).unwrap_or_default(),
        ),
        DaemonEvent::Note(n) => {
            event(n.ts, "note", format!("{}: {}", n.kind, n.text), serde_json::to_value(n).unwrap_or_default())
        }
        DaemonEvent::Reloaded(r) => event(
            now,
            "reload",
            format!(
                "rules reloaded: {} unchanged, {} changed, {} added, {} removed",
                r.unchanged.len(),
                r.changed.len(),
                r.added.len(),
                r.removed.len()
            ),
            json!({"ok": true, "unchanged": r.unchanged, "changed": r.changed, "added": r.added, "removed": r.removed}),
        ),
        DaemonEvent::ReloadFailed(errors) => event(
            now,
            "reload",
            format!("reload refused, the running rules stay: {}", errors.join("; ")),
            json!({"ok": false, "errors": errors}),
        ),
        DaemonEvent::ModeSet(set) => event(
            set.at,
            "mode",
            format!("mode set to {} by {}", set.mode.as_str(), set.by),
            json!({"mode": set.mode.as_str(), "by": set.by}),
        ),
        DaemonEvent::SensorExited { sensor, error } => event(
            now,
            "sensor",
            match error {
                Some(e) => format!("sensor {sensor} stopped: {e}"),
                None => format!("sensor {sensor} finished"),
            },
            json!({"sensor": sensor, "error": error}),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::{Labels, State};

    #[test]
    fn a_transition_is_broadcast_with_its_labels_and_a_quarantine_becomes_the_rules_last_error() {
        let hub = EventHub::default();
        let mut rx = hub.subscribe();
        hub.publish(&DaemonEvent::Engine(EngineEvent::Transition {
            rule: "pfc-storm".into(),
            subject: Labels::from_pairs([("node", "gpu-01"), ("netdev", "eth0")]),
            from: State::Pending,
            to: State::Firing,
            at: 42,
            values: vec![("pause".into(), 0.5)],
            severity: engine::Severity::Critical,
        }));
        let e = rx.try_recv().unwrap();
        assert_eq!((e.kind.as_str(), e.at_ns), ("transition", 42));
        assert_eq!(e.text, "pfc-storm {node=gpu-01 netdev=eth0} pending -> firing");
        let v: serde_json::Value = serde_json::from_str(&e.json).unwrap();
        assert_eq!(v["subject"]["netdev"], "eth0");
        assert_eq!(v["values"]["pause"], 0.5);

        hub.publish(&DaemonEvent::Engine(EngineEvent::ActionError {
            rule: "link-flap".into(),
            subject: Labels::default(),
            message: "template needs label port".into(),
        }));
        assert_eq!(hub.last_error("link-flap").unwrap().0, "template needs label port");
        assert!(hub.last_error("pfc-storm").is_none());
        assert_eq!(rx.try_recv().unwrap().kind, "error");
    }

    #[test]
    fn every_kind_sent_is_one_watch_kind_accepts() {
        let subject = Labels::default;
        let events = [
            DaemonEvent::Engine(EngineEvent::SensorStale { rule: "r".into(), subject: subject(), last_seen: 1, at: 2 }),
            DaemonEvent::Engine(EngineEvent::SensorFresh { rule: "r".into(), subject: subject(), at: 3 }),
            DaemonEvent::Reloaded(engine::ReloadReport::default()),
            DaemonEvent::ReloadFailed(vec!["bad".into()]),
            DaemonEvent::SensorExited { sensor: "s".into(), error: None },
        ];
        for e in &events {
            let kind = to_event(e).unwrap().kind;
            assert!(KINDS.contains(&kind.as_str()), "{kind} is missing from KINDS");
        }
    }
}

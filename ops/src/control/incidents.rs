//! Incidents: one per firing episode of a rule on a subject.
//!
//! The engine has no incident object of its own; an incident is what an
//! SRE calls "that storm on gpu-07 at 03:12": the same rule, the same
//! subject, the same moment the fault was first seen (the instance's
//! `active_at`, which every proposal of the episode carries). Grouping the
//! ledger's decisions and the live instances by that key gives each
//! incident its decisions and its current state without storing anything
//! new. An incident an operator ended (`rocemend resolve`) has a
//! [`Resolution`] in the ledger under the same key: its state is then
//! `resolved`, with who and when, whatever its instance does afterwards.

use std::collections::BTreeMap;

use engine::dispatch::{Decision, Resolution};
use engine::{InstanceView, Labels, Nanos, State};

use super::pb;

/// The id of the incident of `rule` on `subject` first seen at `started`:
/// `inc-` and 12 hex digits of an FNV-1a hash, stable across restarts and
/// versions.
pub fn incident_id(rule: &str, subject: &Labels, started: Nanos) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in format!("{rule}\u{0}{subject}\u{0}{started}").bytes() {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("inc-{:012x}", h >> 16)
}

fn map(labels: &Labels) -> std::collections::HashMap<String, String> {
    labels.0.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

type Key = (Nanos, String, String);

/// The rule name of the incidents raised for subjects whose inputs went stale.
pub const SENSOR_STALE: &str = "sensor-stale";

fn entry<'a>(
    by_key: &'a mut BTreeMap<Key, pb::Incident>,
    rule: &str,
    subject: &Labels,
    at: Nanos,
) -> &'a mut pb::Incident {
    by_key.entry((at, rule.to_string(), subject.to_string())).or_insert_with(|| pb::Incident {
        id: incident_id(rule, subject, at),
        rule: rule.to_string(),
        subject: map(subject),
        started_ns: at,
        state: "over".into(),
        decision_ids: vec![],
        last_verdict: String::new(),
        actions: vec![],
        drift: vec![],
        resolved_by: String::new(),
        resolved_ns: 0,
    })
}

/// Groups `decisions` (oldest first) and the live `instances` into
/// incidents, oldest first; `resolutions` marks those an operator ended.
/// Undo decisions belong to the incident of what they undo (they carry its
/// proposal).
pub fn incidents(
    decisions: &[Decision],
    instances: &[InstanceView],
    resolutions: &[Resolution],
    since: Nanos,
) -> Vec<pb::Incident> {
    let mut by_key: BTreeMap<Key, pb::Incident> = BTreeMap::new();
    for d in decisions.iter().filter(|d| d.proposal.active_at >= since) {
        let p = &d.proposal;
        let inc = entry(&mut by_key, &p.rule, &p.subject, p.active_at);
        inc.decision_ids.push(d.id.clone());
        inc.last_verdict = d.verdict.name().to_string();
        let action = p.action.to_string();
        if !inc.actions.contains(&action) {
            inc.actions.push(action);
        }
        if let Some(drift) = &d.drift {
            inc.drift.push(format!("{} {}: {}", d.id, drift.kind.name(), drift.found));
        }
    }
    for i in instances.iter().filter(|i| i.instance.active_at >= since && i.instance.active_at > 0) {
        if i.instance.state == State::Inactive {
            continue;
        }
        let inc = entry(&mut by_key, &i.rule, &i.subject, i.instance.active_at);
        inc.state = i.instance.state.as_str().to_string();
    }
    // Ended by hand: resolved, even while the rule's instance still fires
    // (it proposes nothing more for this incident).
    for r in resolutions.iter().filter(|r| r.started >= since) {
        let inc = entry(&mut by_key, &r.rule, &r.subject, r.started);
        inc.state = "resolved".into();
        inc.resolved_by = r.by.clone();
        inc.resolved_ns = r.at;
    }
    // A subject whose inputs stopped is an incident of its own: the rule
    // cannot act on it (fail safe), and someone should look at the sensor.
    for i in instances.iter().filter(|i| i.instance.stale) {
        let started = i.instance.stale_since.unwrap_or(i.instance.since);
        if started < since {
            continue;
        }
        let mut subject = i.subject.clone();
        subject.insert("rule", i.rule.clone());
        let inc = entry(&mut by_key, SENSOR_STALE, &subject, started);
        inc.state = "stale".into();
        inc.last_verdict = format!("{} cannot act on this subject: its inputs stopped", i.rule);
    }
    by_key.into_values().collect()
}

/// Whether `id` can name an incident: `inc-` and 12 hex digits, as
/// [`incident_id`] makes them.
pub fn is_incident_id(id: &str) -> bool {
    id.strip_prefix("inc-").is_some_and(|hex| hex.len() == 12 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_subject_is_a_sensor_stale_incident_with_its_rule() {
        let mut instance = engine::Instance::new(0);
        instance.state = State::Firing;
        instance.active_at = 5;
        instance.stale = true;
        instance.stale_since = Some(9);
        let view =
            InstanceView { rule: "pfc-storm".into(), subject: Labels::from_pairs([("node", "gpu-07")]), instance };
        let list = incidents(&[], &[view], &[], 0);
        assert_eq!(list.len(), 2, "the firing one and its sensor-stale incident: {list:?}");
        let stale = list.iter().find(|i| i.rule == SENSOR_STALE).unwrap();
        assert_eq!((stale.state.as_str(), stale.started_ns), ("stale", 9));
        assert_eq!(stale.subject.get("rule").map(String::as_str), Some("pfc-storm"));
    }

    #[test]
    fn an_incident_resolved_by_hand_is_resolved_while_its_instance_fires() {
        let mut instance = engine::Instance::new(0);
        instance.state = State::Firing;
        instance.active_at = 5;
        let subject = Labels::from_pairs([("node", "gpu-07")]);
        let view = InstanceView { rule: "pfc-storm".into(), subject: subject.clone(), instance };
        let resolution =
            Resolution { rule: "pfc-storm".into(), subject, started: 5, by: "oncall".into(), at: 9, decisions: vec![] };
        let list = incidents(&[], &[view], &[resolution], 0);
        assert_eq!(list.len(), 1, "{list:?}");
        assert_eq!(
            (list[0].state.as_str(), list[0].resolved_by.as_str(), list[0].resolved_ns),
            ("resolved", "oncall", 9)
        );
    }

    #[test]
    fn the_id_depends_on_rule_subject_and_start_only() {
        let s = Labels::from_pairs([("node", "gpu-07")]);
        let a = incident_id("pfc-storm", &s, 1);
        assert_eq!(a, incident_id("pfc-storm", &s, 1));
        assert_eq!(a.len(), "inc-".len() + 12);
        assert_ne!(a, incident_id("pfc-storm", &s, 2));
        assert_ne!(a, incident_id("link-flap", &s, 1));
    }
}

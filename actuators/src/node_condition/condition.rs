//! The condition itself, as pure functions of what fires: which incidents
//! count, the condition they make, and the PATCH body that carries it.

use std::collections::BTreeMap;

use engine::{Labels, Nanos, Severity, State};
use serde_json::{json, Value};

/// The condition's type.
pub const CONDITION_TYPE: &str = "RoceFabricHealthy";
/// The reason of a healthy node.
pub const HEALTHY_REASON: &str = "RoceFabricHealthy";
/// How many incidents the message names; the rest are counted ("and 3
/// more"): a condition is read by people in `kubectl describe node`, and
/// its message is stored in the Node object of every write.
pub const MAX_NAMED: usize = 3;

/// One incident firing on this node: a rule firing for a subject.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Incident {
    /// The rule.
    pub rule: String,
    /// Its subject.
    pub subject: Labels,
}

/// The incidents firing on one node, with each one's severity and when it
/// started firing.
///
/// Bounded by the engine: each entry is a firing instance of a rule on this
/// node, and the instances are bounded by the series the sensors may create
/// (`max_series_per_sensor`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Incidents {
    firing: BTreeMap<Incident, (Severity, Nanos)>,
}

/// A subject as `name=value,…`, in label order, for people.
pub fn subject_key(subject: &Labels) -> String {
    subject.0.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// The labels of the engine's subject key `name=value,…` (an absent label
/// is written with an empty value there: left out here).
pub fn key_labels(key: &str) -> Labels {
    Labels::from_pairs(key.split(',').filter_map(|pair| pair.split_once('=')).filter(|(_, v)| !v.is_empty()))
}

impl Incidents {
    /// Takes a transition of `rule` for `subject` into account; whether
    /// the set changed. Only subjects whose `node` label is `node` count.
    pub fn transition(
        &mut self,
        node: &str,
        rule: &str,
        subject: &Labels,
        to: State,
        at: Nanos,
        severity: Severity,
    ) -> bool {
        if subject.get("node") != Some(node) {
            return false;
        }
        // An incident restored at start is known by its rule's `group_by`
        // labels only: the same subject as any transition whose labels
        // include them.
        let before = self.firing.len();
        let same = |i: &Incident| i.rule == rule && subject.contains_all(&i.subject) && i.subject != *subject;
        self.firing.retain(|i, _| !same(i));
        let merged = self.firing.len() != before;
        let incident = Incident { rule: rule.to_string(), subject: subject.clone() };
        if to == State::Firing {
            self.firing.insert(incident, (severity, at)).is_none() || merged
        } else {
            self.firing.remove(&incident).is_some() || merged
        }
    }

    /// Adds an incident already firing (restored at start, whose firing
    /// emits no transition), as firing since `at`; `subject` is the
    /// engine's subject key.
    pub fn restored(&mut self, rule: &str, subject: &str, severity: Severity, at: Nanos) {
        self.firing.insert(Incident { rule: rule.into(), subject: key_labels(subject) }, (severity, at));
    }

    /// Drops the incidents of rules no longer loaded (a reload removes a
    /// rule and its instances without a transition); whether any went.
    pub fn rules_removed(&mut self, removed: &[String]) -> bool {
        let before = self.firing.len();
        self.firing.retain(|incident, _| !removed.contains(&incident.rule));
        self.firing.len() != before
    }

    /// The incidents of at least `severity`, the most severe first, then
    /// the earliest, then by rule and subject.
    fn counted(&self, severity: Severity) -> Vec<(&Incident, Severity)> {
        let mut out: Vec<(&Incident, Severity, Nanos)> =
            self.firing.iter().filter(|(_, (s, _))| *s >= severity).map(|(i, (s, at))| (i, *s, *at)).collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(b.0)));
        out.into_iter().map(|(i, s, _)| (i, s)).collect()
    }
}

/// What the condition says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// `True` when no incident of at least the severity fires.
    pub healthy: bool,
    /// `RoceFabricHealthy`, or the leading incident's rule in CamelCase.
    pub reason: String,
    /// For people: what fires, or that nothing does.
    pub message: String,
}

impl Condition {
    /// The condition `incidents` make on `node` counting those of at
    /// least `severity`.
    pub fn judge(incidents: &Incidents, node: &str, severity: Severity) -> Condition {
        let counted = incidents.counted(severity);
        let Some((first, _)) = counted.first() else {
            return Condition {
                healthy: true,
                reason: HEALTHY_REASON.into(),
                message: format!("no RoCE fabric incident of severity {} or above on node {node}", name(severity)),
            };
        };
        let named: Vec<String> = counted
            .iter()
            .take(MAX_NAMED)
            .map(|(i, s)| format!("{} ({}) on {}", i.rule, name(*s), subject_key(&i.subject)))
            .collect();
        let more = counted.len().saturating_sub(MAX_NAMED);
        let list = if more > 0 { format!("{} and {more} more", named.join(", ")) } else { named.join(", ") };
        let count = counted.len();
        Condition {
            healthy: false,
            reason: camel_case(&first.rule),
            message: format!(
                "{count} RoCE fabric incident{} firing on node {node}: {list}",
                if count == 1 { "" } else { "s" }
            ),
        }
    }

    /// The condition's `status`.
    pub fn status(&self) -> &'static str {
        if self.healthy {
            "True"
        } else {
            "False"
        }
    }

    /// The strategic-merge PATCH of `/api/v1/nodes/<node>/status` that sets
    /// this condition (conditions merge by `type`: the others stay), with
    /// its heartbeat and transition times.
    pub fn patch(&self, heartbeat: Nanos, transition: Nanos) -> Value {
        json!({
            "status": {
                "conditions": [{
                    "type": CONDITION_TYPE,
                    "status": self.status(),
                    "reason": self.reason,
                    "message": self.message,
                    "lastHeartbeatTime": kube_time(heartbeat),
                    "lastTransitionTime": kube_time(transition),
                }],
            },
        })
    }
}

fn name(severity: Severity) -> &'static str {
    match severity {
        Severity::Info => "info",
        Severity::Warning => "warning",
        Severity::Critical => "critical",
    }
}

/// A rule's name as a condition reason: `pfc-storm` → `PfcStorm`. A reason
/// is one CamelCase word (`metav1.Condition` accepts letters, digits, `_`,
/// `,` and `:`, starting with a letter), so every other character
/// separates words, and a name starting with a digit gets `Rule` before it.
pub fn camel_case(rule: &str) -> String {
    let mut out = String::with_capacity(rule.len());
    for word in rule.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    match out.chars().next() {
        None => "RoceFabricIncident".into(),
        Some(c) if c.is_ascii_digit() => format!("Rule{out}"),
        Some(_) => out,
    }
}

/// A time as Kubernetes writes one (`metav1.Time`): RFC 3339 in UTC, to
/// the second; the API server keeps no finer.
pub fn kube_time(ts: Nanos) -> String {
    let secs = u64::try_from(ts.div_euclid(engine::SECOND)).unwrap_or(0);
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)).to_string()
}

#[cfg(test)]
mod tests {
    use engine::SECOND;

    use super::*;

    fn labels(node: &str, netdev: &str) -> Labels {
        Labels::from_pairs([("node", node), ("netdev", netdev)])
    }

    #[test]
    fn rule_names_become_one_camel_case_word() {
        assert_eq!(camel_case("pfc-storm"), "PfcStorm");
        assert_eq!(camel_case("link_flap"), "LinkFlap");
        assert_eq!(camel_case("gpu.xid-79"), "GpuXid79");
        assert_eq!(camel_case("400g-ber"), "Rule400gBer");
        assert_eq!(camel_case("--"), "RoceFabricIncident");
    }

    #[test]
    fn times_are_utc_seconds() {
        assert_eq!(kube_time(1_765_123_456 * SECOND + 999_000_000), "2025-12-07T16:04:16Z");
        assert_eq!(kube_time(-5), "1970-01-01T00:00:00Z", "a clock before the epoch is clamped, not a panic");
    }

    #[test]
    fn only_this_nodes_incidents_of_the_severity_count() {
        let mut incidents = Incidents::default();
        assert!(!incidents.transition("n1", "pfc-storm", &labels("n2", "eth0"), State::Firing, 1, Severity::Critical));
        assert!(incidents.transition("n1", "ecn-marks", &labels("n1", "eth1"), State::Firing, 2, Severity::Warning));
        let healthy = Condition::judge(&incidents, "n1", Severity::Critical);
        assert_eq!(
            healthy,
            Condition {
                healthy: true,
                reason: "RoceFabricHealthy".into(),
                message: "no RoCE fabric incident of severity critical or above on node n1".into(),
            }
        );
        let warned = Condition::judge(&incidents, "n1", Severity::Warning);
        assert_eq!((warned.status(), warned.reason.as_str()), ("False", "EcnMarks"));
        assert_eq!(
            warned.message,
            "1 RoCE fabric incident firing on node n1: ecn-marks (warning) on netdev=eth1,node=n1"
        );
    }

    #[test]
    fn the_most_severe_then_earliest_leads_and_the_rest_are_counted() {
        let mut incidents = Incidents::default();
        let fire = |i: &mut Incidents, rule: &str, netdev: &str, at: Nanos, s: Severity| {
            i.transition("n1", rule, &labels("n1", netdev), State::Firing, at, s)
        };
        fire(&mut incidents, "ecn-marks", "eth0", 1, Severity::Warning);
        fire(&mut incidents, "pfc-storm", "eth3", 5, Severity::Critical);
        fire(&mut incidents, "link-flap", "eth2", 3, Severity::Critical);
        fire(&mut incidents, "pfc-storm", "eth1", 4, Severity::Critical);
        fire(&mut incidents, "symbol-errors", "eth4", 2, Severity::Critical);
        let c = Condition::judge(&incidents, "n1", Severity::Warning);
        assert_eq!(c.reason, "SymbolErrors");
        assert_eq!(
            c.message,
            "5 RoCE fabric incidents firing on node n1: symbol-errors (critical) on netdev=eth4,node=n1, \
             link-flap (critical) on netdev=eth2,node=n1, pfc-storm (critical) on netdev=eth1,node=n1 and 2 more"
        );
        // Resolved, or its rule removed: no longer counted.
        assert!(incidents.transition(
            "n1",
            "symbol-errors",
            &labels("n1", "eth4"),
            State::Resolved,
            9,
            Severity::Critical
        ));
        assert!(!incidents.transition(
            "n1",
            "symbol-errors",
            &labels("n1", "eth4"),
            State::Inactive,
            9,
            Severity::Critical
        ));
        assert!(incidents.rules_removed(&["link-flap".into()]));
        let c = Condition::judge(&incidents, "n1", Severity::Critical);
        assert_eq!(c.reason, "PfcStorm");
        assert!(
            c.message.starts_with("2 RoCE fabric incidents firing on node n1: pfc-storm (critical) on netdev=eth1"),
            "{}",
            c.message
        );
    }

    #[test]
    fn an_incident_restored_at_start_ends_with_its_subjects_transition() {
        let mut incidents = Incidents::default();
        incidents.restored("pfc-storm", "node=n1,netdev=eth0,queue=", Severity::Critical, 0);
        assert_eq!(Condition::judge(&incidents, "n1", Severity::Critical).reason, "PfcStorm");
        let subject = Labels::from_pairs([("node", "n1"), ("netdev", "eth0"), ("rail", "3")]);
        assert!(incidents.transition("n1", "pfc-storm", &subject, State::Resolved, 5, Severity::Critical));
        assert_eq!(incidents, Incidents::default());
    }

    #[test]
    fn the_patch_sets_one_condition_with_both_times() {
        let c = Condition { healthy: false, reason: "PfcStorm".into(), message: "m".into() };
        assert_eq!(
            c.patch(120 * SECOND, 60 * SECOND),
            json!({"status": {"conditions": [{
                "type": "RoceFabricHealthy", "status": "False", "reason": "PfcStorm", "message": "m",
                "lastHeartbeatTime": "1970-01-01T00:02:00Z", "lastTransitionTime": "1970-01-01T00:01:00Z",
            }]}})
        );
    }
}

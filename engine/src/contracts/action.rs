//! Actions and proposals: what a firing rule asks for ([`Proposal`]), what
//! an actuator receives ([`Action`]), how action kinds are matched
//! ([`kind_matches`]) and where an action lands in the topology ([`Impact`]).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::labels::Labels;
use crate::mode::Mode;
use crate::time::Nanos;

/// How bad a rule's finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Degrades the fabric.
    Warning,
    /// Stalls training.
    Critical,
}

/// An action with its target resolved: what an actuator receives.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Action {
    /// `<actuator>.<verb>`, e.g. `pfcwd.escalate`.
    pub kind: String,
    /// What it acts on, e.g. `{switch="leaf-rail3", port="Ethernet8", queue="3"}`.
    pub target: Labels,
    /// Parameters, e.g. `{level="1"}`.
    pub params: BTreeMap<String, String>,
}

impl Action {
    /// The verb part of the kind (`escalate` in `pfcwd.escalate`).
    pub fn verb(&self) -> &str {
        self.kind.split_once('.').map(|(_, v)| v).unwrap_or(&self.kind)
    }

    /// The key that identifies "the same action on the same target", for
    /// de-duplication.
    pub fn dedup_key(&self) -> String {
        format!("{} {}", self.kind, self.target)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.target)?;
        if !self.params.is_empty() {
            let params: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            write!(f, " ({})", params.join(", "))?;
        }
        Ok(())
    }
}

/// The prefix of the id of a page's proposal (`[outcomes] page`: a decision
/// the dispatcher makes about a rule, not a proposal the rule made).
pub const PAGE_PREFIX: &str = "page-";

/// A proposal from a firing rule instance, with the evidence behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// Unique id (time-ordered).
    pub id: String,
    /// The rule that fired.
    pub rule: String,
    /// SHA-256 of the rule file: which version of the rule decided.
    pub rule_hash: String,
    /// The rule's declared mode.
    pub rule_mode: Mode,
    /// The rule's severity.
    pub severity: Severity,
    /// The subject's labels.
    pub subject: Labels,
    /// What to do.
    pub action: Action,
    /// The running jobs (from the job signals) the action touches, sorted: those on the nodes
    /// its target reaches, found when it is proposed (`rule::Helpers::jobs_touched`).
    /// `[limits] max_jobs_touched` counts them. Absent in records of older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<String>,
    /// The window values when it fired. An empty window's `NaN` is written
    /// `null` in JSON and read back as `NaN`.
    #[serde(with = "window_values")]
    pub values: Vec<(String, f64)>,
    /// When the fire condition first held (the instance went pending).
    pub active_at: Nanos,
    /// Time of the newest sample the decision saw.
    pub sample_at: Nanos,
    /// When the instance fired and this proposal was made.
    pub decided_at: Nanos,
    /// Made again after a restart for an instance found firing: it may have
    /// been decided before the crash, and then it is not decided twice.
    #[serde(default)]
    pub restored: bool,
}

impl Proposal {
    /// The jobs it touches for people to read, `a, b, c`: the first `at_most`, then how many
    /// more (a reason or a table row is one line; `jobs` keeps them all).
    pub fn job_list(&self, at_most: usize) -> String {
        let mut list = self.jobs.iter().take(at_most).cloned().collect::<Vec<_>>().join(", ");
        if self.jobs.len() > at_most {
            list.push_str(&format!(", and {} more", self.jobs.len() - at_most));
        }
        list
    }
}

/// Window values in a record. JSON has no NaN or infinity: serde_json
/// writes them `null`, so `null` reads back as NaN instead of making the
/// record (a ledger entry, a recording line) unreadable.
pub mod window_values {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Writes the values; JSON encoders write NaN as `null`.
    pub fn serialize<S: Serializer>(values: &[(String, f64)], s: S) -> Result<S::Ok, S::Error> {
        values.serialize(s)
    }

    /// Reads the values, `null` as NaN.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, f64)>, D::Error> {
        let raw: Vec<(String, Option<f64>)> = Vec::deserialize(d)?;
        Ok(raw.into_iter().map(|(name, v)| (name, v.unwrap_or(f64::NAN))).collect())
    }
}

/// Whether an action kind matches a pattern: exact, `prefix.*`, or `*`.
pub fn kind_matches(pattern: &str, kind: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => kind.starts_with(prefix),
        None => pattern == kind,
    }
}

/// Where an action lands in the topology.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Impact {
    /// The node it acts on.
    pub node: Option<String>,
    /// The rail.
    pub rail: Option<String>,
    /// The plane.
    pub plane: Option<String>,
    /// The switch.
    pub switch: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposal() -> Proposal {
        Proposal {
            id: "p".into(),
            rule: "r".into(),
            rule_hash: String::new(),
            rule_mode: Mode::Enforce,
            severity: Severity::Warning,
            subject: Labels::default(),
            action: Action { kind: "node.cordon".into(), target: Labels::default(), params: BTreeMap::new() },
            jobs: vec![],
            values: vec![],
            active_at: 0,
            sample_at: 0,
            decided_at: 0,
            restored: false,
        }
    }

    #[test]
    fn an_empty_window_in_the_evidence_survives_json() {
        let proposal = Proposal { values: vec![("errors".into(), 51.0), ("reading".into(), f64::NAN)], ..proposal() };
        let text = serde_json::to_string(&proposal).unwrap();
        assert!(text.contains(r#"["reading",null]"#), "{text}");
        let back: Proposal = serde_json::from_str(&text).unwrap();
        assert_eq!(back.values[0], ("errors".to_string(), 51.0));
        assert!(back.values[1].1.is_nan());
    }

    /// Ledgers and recordings written before proposals carried their jobs still read.
    #[test]
    fn a_record_without_jobs_reads_as_touching_none_and_none_is_not_written() {
        let old = serde_json::to_string(&proposal()).unwrap();
        assert!(!old.contains("jobs"), "{old}");
        assert_eq!(serde_json::from_str::<Proposal>(&old).unwrap().jobs, Vec::<String>::new());
        let touching = Proposal { jobs: vec!["train-a".into(), "train-b".into()], ..proposal() };
        let text = serde_json::to_string(&touching).unwrap();
        assert_eq!(serde_json::from_str::<Proposal>(&text).unwrap().jobs, ["train-a", "train-b"]);
    }

    #[test]
    fn a_job_list_names_the_first_jobs_and_counts_the_rest() {
        let p = Proposal { jobs: vec!["a".into(), "b".into(), "c".into()], ..proposal() };
        assert_eq!(p.job_list(2), "a, b, and 1 more");
        assert_eq!(p.job_list(3), "a, b, c");
        assert_eq!(proposal().job_list(3), "");
    }
}

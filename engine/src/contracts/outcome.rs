//! What an executed action should achieve, and what it did: the outcome
//! check the dispatcher makes after every change (`[outcomes]` and
//! `[[expect]]` in the playbook).
//!
//! An action is **effective** when the rule that asked for it clears on its
//! subject within `expect_within` (the time it took is recorded),
//! **harmful** when one of the rule's window values the playbook names as
//! `worse` rose by more than `margin` over its value when the rule fired
//! (it is undone and the rule held on that subject), **ineffective** when
//! neither happened in time, and **unread** when the rule could not be read
//! on its subject at the deadline (stale data judges nothing).

use serde::{Deserialize, Serialize};

use super::decision::nan_as_null;
use crate::time::Nanos;

/// The check an executed action carries in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeCheck {
    /// When the action took effect.
    pub since: Nanos,
    /// By when the rule must clear.
    pub due: Nanos,
    /// The values that must not rise (the rule's window values, the
    /// touched jobs' signals), with their values when it fired.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worse: Vec<Watched>,
    /// For a check watching job signals: when a reading of them starts to
    /// count (the action's time plus its settling time: a step time is
    /// known at the step's end). Until one is read the check is not judged
    /// effective, short of its deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs_read_after: Option<Nanos>,
    /// How much higher than before counts as worse (0.1: 10 %).
    pub margin: f64,
    /// How long the rule is held on the subject after a harmful action.
    pub hold: Nanos,
    /// The judgement, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<OutcomeJudgement>,
}

/// A window value an outcome check watches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Watched {
    /// The rule's window value (`paused`).
    pub name: String,
    /// Its value when the rule fired. `null` in JSON when unknown.
    #[serde(with = "nan_as_null")]
    pub before: f64,
}

/// What an outcome check found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeJudgement {
    /// When.
    pub at: Nanos,
    /// The verdict.
    pub result: OutcomeResult,
    /// How long after the action (for an effective one: its time to effect).
    pub after_ns: Nanos,
    /// What was read then: each watched value, or the one that rose.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// An outcome check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutcomeResult {
    /// The rule cleared on its subject in time.
    Effective,
    /// It did not clear in time, and nothing it watches got worse.
    Ineffective,
    /// A watched value rose: undone, the rule held on the subject.
    Harmful,
    /// The rule could not be read on its subject at the deadline.
    Unread,
}

impl OutcomeResult {
    /// Its name as the ledger writes it.
    pub fn name(self) -> &'static str {
        match self {
            OutcomeResult::Effective => "effective",
            OutcomeResult::Ineffective => "ineffective",
            OutcomeResult::Harmful => "harmful",
            OutcomeResult::Unread => "unread",
        }
    }
}

impl OutcomeCheck {
    /// One line for a report: `outcome: effective after 4.2 s` or
    /// `outcome due at …, watching paused 0.65`.
    pub fn describe(&self) -> String {
        match &self.judged {
            None => {
                let watched: Vec<String> = self.worse.iter().map(|w| format!("{} {:.3}", w.name, w.before)).collect();
                let watching =
                    if watched.is_empty() { String::new() } else { format!(", watching {}", watched.join(", ")) };
                let settle = match self.jobs_read_after {
                    Some(at) => format!(", the jobs read from {}", crate::time::rfc3339(at)),
                    None => String::new(),
                };
                format!("outcome due by {}{watching}{settle}", crate::time::rfc3339(self.due))
            }
            Some(j) => {
                let detail = if j.detail.is_empty() { String::new() } else { format!(": {}", j.detail) };
                format!("outcome: {} after {:.1} s{detail}", j.result.name(), j.after_ns as f64 / 1e9)
            }
        }
    }

    /// Whether it is still to be judged.
    pub fn is_open(&self) -> bool {
        self.judged.is_none()
    }
}

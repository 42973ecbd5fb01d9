//! What every executed action is expected to achieve, as the playbook says
//! it (the dispatcher's outcome checks, `contracts::outcome`).
//!
//! ```toml
//! [outcomes]
//! check = true                        # every enforced change gets an outcome check
//! expect_within = "5m"                # the rule must clear on its subject by then
//! page = "webhook.notify"             # who is told when an action made it worse or a ladder ran out
//!
//! [[expect]]
//! actions = ["ecn.lower"]             # for these kinds:
//! within = "2m"                       # a deadline of their own
//! worse = ["marked"]                  # the rule's window values that must not rise
//! margin = 0.1                        # by more than 10 % over their value when it fired
//! hold = "1h"                         # after a harmful one, the rule is held on that subject
//!
//! [[expect]]
//! actions = ["rail.drain", "link.isolate"]
//! worse = ["job.step_time"]           # a job signal of the jobs the action touches
//! margin = 0.05
//! settle = "10s"                      # read them from 10 s after the action (default: three steps)
//! ```
//!
//! A job signal (`evaluator::JOB_SIGNALS`) is read from the touched jobs'
//! series only from `settle` after the action: a step time is known at the
//! step's end, and one ending sooner was mostly run before the action.
//! Without `settle`, three of the steps before the action, at least a
//! second.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::duration::{self, nanos};
use crate::contracts::kind_matches;
use crate::time::Nanos;

use super::PolicyError;

/// `[outcomes]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutcomesConfig {
    /// Whether executed actions are checked at all.
    #[serde(default = "yes")]
    pub check: bool,
    /// The default deadline for the rule to clear.
    #[serde(default = "five_minutes", with = "duration")]
    pub expect_within: Duration,
    /// The action kind that pages a human when an action made things
    /// worse or an escalation ladder ran out (`webhook.notify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
}

impl Default for OutcomesConfig {
    fn default() -> OutcomesConfig {
        OutcomesConfig { check: true, expect_within: five_minutes(), page: None }
    }
}

/// One `[[expect]]`: what actions of these kinds must achieve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectRule {
    /// Action kinds (`ecn.lower`, `rail.*`).
    pub actions: Vec<String>,
    /// By when the rule must clear on its subject.
    #[serde(default = "five_minutes", with = "duration")]
    pub within: Duration,
    /// The proposing rule's window values that must not rise.
    #[serde(default)]
    pub worse: Vec<String>,
    /// How much higher than before counts as a rise (0.1: 10 %).
    #[serde(default = "tenth")]
    pub margin: f64,
    /// After a harmful action, how long its rule is held on the subject.
    #[serde(default = "one_hour", with = "duration")]
    pub hold: Duration,
    /// How long after the action the job signals in `worse` are first read.
    #[serde(default, with = "duration::option", skip_serializing_if = "Option::is_none")]
    pub settle: Option<Duration>,
}

/// What an action of one kind is expected to achieve.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// Its deadline, from when it took effect.
    pub within: Nanos,
    /// The window values that must not rise.
    pub worse: Vec<String>,
    /// The rise that counts.
    pub margin: f64,
    /// The hold after a harmful one.
    pub hold: Nanos,
    /// When job signals are first read after the action (`None`: three
    /// steps before it, at least [`MIN_SETTLE`]).
    pub settle: Option<Nanos>,
}

/// The shortest settling time derived from the step time.
pub const MIN_SETTLE: Nanos = crate::time::SECOND;

impl Expectation {
    /// Whether it watches a job signal.
    pub fn watches_jobs(&self) -> bool {
        self.worse.iter().any(|w| crate::evaluator::is_job_signal(w))
    }

    /// How long after the action job signals count, given the step time
    /// before it (seconds, `NaN` when unknown).
    pub fn settle_after(&self, step_seconds: f64) -> Nanos {
        self.settle.unwrap_or_else(|| {
            let three_steps = if step_seconds.is_finite() { (3.0 * step_seconds * 1e9) as Nanos } else { 0 };
            three_steps.max(MIN_SETTLE)
        })
    }
}

/// `[outcomes]` and the `[[expect]]` sections, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeSettings {
    check: bool,
    page: Option<String>,
    default: Expectation,
    expects: Vec<(Vec<String>, Expectation)>,
}

impl Default for OutcomeSettings {
    fn default() -> OutcomeSettings {
        OutcomeSettings::new(&OutcomesConfig::default(), &[]).expect("the defaults are valid")
    }
}

impl OutcomeSettings {
    /// The settings of the raw ones; errors name the field.
    pub fn new(outcomes: &OutcomesConfig, expects: &[ExpectRule]) -> Result<OutcomeSettings, PolicyError> {
        if outcomes.expect_within.is_zero() {
            return Err(PolicyError("outcomes.expect_within = 0: an action must be given time to work".into()));
        }
        for (i, e) in expects.iter().enumerate() {
            if e.within.is_zero() {
                return Err(PolicyError(format!("expect[{i}].within = 0: an action must be given time to work")));
            }
            if !(e.margin.is_finite() && e.margin >= 0.0) {
                return Err(PolicyError(format!("expect[{i}].margin = {}: expected 0 or more", e.margin)));
            }
            if e.settle.is_some_and(|s| s.is_zero()) {
                return Err(PolicyError(format!(
                    "expect[{i}].settle = 0: a step time is known at the step's end; give the job a step after the action"
                )));
            }
            if let Some(empty) = e.worse.iter().position(|w| w.trim().is_empty()) {
                return Err(PolicyError(format!("expect[{i}].worse[{empty}] is empty: name the rule's window value")));
            }
        }
        let default = Expectation {
            within: nanos(outcomes.expect_within),
            worse: Vec::new(),
            margin: 0.1,
            hold: 0,
            settle: None,
        };
        let expects = expects
            .iter()
            .map(|e| {
                let x = Expectation {
                    within: nanos(e.within),
                    worse: e.worse.clone(),
                    margin: e.margin,
                    hold: nanos(e.hold),
                    settle: e.settle.map(nanos),
                };
                (e.actions.clone(), x)
            })
            .collect();
        Ok(OutcomeSettings { check: outcomes.check, page: outcomes.page.clone(), default, expects })
    }

    /// What an action of `kind` must achieve: the first `[[expect]]` that
    /// lists it, else the default; `None` when outcomes are not checked.
    pub fn for_kind(&self, kind: &str) -> Option<&Expectation> {
        if !self.check {
            return None;
        }
        let listed = self.expects.iter().find(|(kinds, _)| kinds.iter().any(|p| kind_matches(p, kind)));
        Some(listed.map_or(&self.default, |(_, x)| x))
    }

    /// The kind that pages a human, if set.
    pub fn page(&self) -> Option<&str> {
        self.page.as_deref()
    }

    /// The `[[expect]]` sections' kinds and watched values, for `check`.
    pub fn watched(&self) -> impl Iterator<Item = (usize, &[String], &[String])> {
        self.expects.iter().enumerate().map(|(i, (kinds, x))| (i, kinds.as_slice(), x.worse.as_slice()))
    }
}

fn yes() -> bool {
    true
}
fn tenth() -> f64 {
    0.1
}
fn five_minutes() -> Duration {
    Duration::from_secs(300)
}
fn one_hour() -> Duration {
    Duration::from_secs(3600)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expect(actions: &[&str], worse: &[&str]) -> ExpectRule {
        ExpectRule {
            actions: actions.iter().map(|s| s.to_string()).collect(),
            within: Duration::from_secs(60),
            worse: worse.iter().map(|s| s.to_string()).collect(),
            margin: 0.2,
            hold: Duration::from_secs(600),
            settle: None,
        }
    }

    #[test]
    fn a_kind_takes_its_first_expect_else_the_default_and_nothing_when_unchecked() {
        let s = OutcomeSettings::new(&OutcomesConfig::default(), &[expect(&["ecn.*"], &["marked"])]).unwrap();
        let ecn = s.for_kind("ecn.lower").unwrap();
        assert_eq!((ecn.within, ecn.worse.as_slice(), ecn.margin), (60_000_000_000, &["marked".to_string()][..], 0.2));
        let other = s.for_kind("node.cordon").unwrap();
        assert_eq!((other.within, other.worse.len()), (300_000_000_000, 0));
        let off = OutcomeSettings::new(&OutcomesConfig { check: false, ..OutcomesConfig::default() }, &[]).unwrap();
        assert!(off.for_kind("ecn.lower").is_none());
    }

    #[test]
    fn a_zero_deadline_a_negative_margin_and_an_empty_value_are_refused_by_name() {
        let zero = ExpectRule { within: Duration::ZERO, ..expect(&["x"], &[]) };
        let e = OutcomeSettings::new(&OutcomesConfig::default(), &[zero]).unwrap_err();
        assert!(e.to_string().starts_with("expect[0].within = 0"), "{e}");
        let neg = ExpectRule { margin: -1.0, ..expect(&["x"], &[]) };
        let e = OutcomeSettings::new(&OutcomesConfig::default(), &[expect(&["y"], &[]), neg]).unwrap_err();
        assert!(e.to_string().starts_with("expect[1].margin = -1"), "{e}");
        let e = OutcomeSettings::new(&OutcomesConfig::default(), &[expect(&["x"], &["a", " "])]).unwrap_err();
        assert!(e.to_string().starts_with("expect[0].worse[1] is empty"), "{e}");
        let none = OutcomesConfig { expect_within: Duration::ZERO, ..OutcomesConfig::default() };
        assert!(OutcomeSettings::new(&none, &[]).unwrap_err().to_string().starts_with("outcomes.expect_within = 0"));
    }
}

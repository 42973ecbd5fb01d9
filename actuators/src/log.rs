//! The `log` actuator: writes each action to the daemon's log and changes
//! nothing. For trying a playbook on a live fabric before giving it a real
//! actuator, and as the safe default in examples.
//!
//! It remembers, in memory, which actions it has "applied", so the engine's
//! verify-before-undo and verify-after-failure paths can be tried with it too:
//! [`Actuator::verify`] says [`Verification::InEffect`] for an action executed
//! and not undone since, [`Verification::NotInEffect`] otherwise. The memory
//! ends with the process, as a log line cannot be read back; but a line once
//! logged stays logged, so an action the engine says it applied (its ledger
//! outlives the process) is in effect until its undo is logged: after a
//! restart its effects are neither forgotten nor reported reverted.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use engine::{Action, ActionKindDecl, Actuator, ActuatorError, Outcome, RequestPlan, Verification};
use serde::{Deserialize, Serialize};

use crate::declare::{declarations, KindSettings, Like};
use crate::ActuatorConfigError;

/// How many applied actions are remembered. Keys are `kind` plus target
/// (a couple of hundred bytes), so this caps the memory at roughly 16 MiB
/// while staying above the distinct targets of a large fabric (every port
/// queue of a few hundred switches). Past it, new actions are logged but not
/// remembered, and verify answers [`Verification::Unknown`] rather than a
/// `NotInEffect` it could no longer vouch for.
pub const MAX_APPLIED: usize = 65_536;

/// The `log` actuator's settings: only how the safety policy counts what it
/// logs, as if it were carried out (see [`crate::declare`]). Any other
/// setting is an error (a typo must not pass silently).
///
/// ```toml
/// like = "cordon"     # count node.cordon as the cordon actuator does
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// The actuator types whose kinds it counts as they declare them.
    #[serde(default, skip_serializing_if = "Like::is_empty")]
    pub like: Like,
    /// How the safety policy counts each kind it logs, by kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kinds: BTreeMap<String, KindSettings>,
}

impl LogConfig {
    /// Builds the actuator `name`.
    pub fn build(&self, name: &str) -> Result<LogActuator, ActuatorConfigError> {
        Ok(LogActuator::declaring(name, self.declarations()?))
    }

    /// The kinds it declares: it logs any, and undoes what it logged.
    pub fn declarations(&self) -> Result<Vec<ActionKindDecl>, ActuatorConfigError> {
        declarations(&self.like, &self.kinds, true)
    }
}

/// Logs each action at info level, with structured fields, and remembers
/// which ones are in effect.
#[derive(Debug)]
pub struct LogActuator {
    name: String,
    kinds: Vec<ActionKindDecl>,
    applied: Mutex<Applied>,
}

/// The actions executed and not undone since, by [`Action::dedup_key`].
#[derive(Debug, Default)]
struct Applied {
    keys: HashSet<String>,
    /// The actions undone by this process (at most [`MAX_APPLIED`]): what
    /// the engine applied before a restart is in effect unless it is here.
    undone: HashSet<String>,
    /// Whether an action went unremembered because [`MAX_APPLIED`] was reached.
    overflowed: bool,
}

impl LogActuator {
    /// One journal line: `what` happened to `action`.
    fn journal(&self, what: &str, action: &Action) {
        tracing::info!(
            message = what,
            actuator = %self.name,
            kind = %action.kind,
            verb = action.verb(),
            target = %action.target,
            params = ?action.params,
        );
    }

    /// A log actuator called `name`, counting every kind plainly.
    pub fn new(name: &str) -> LogActuator {
        LogActuator::declaring(name, vec![ActionKindDecl::new("*", &[])])
    }

    /// A log actuator called `name` that declares `kinds`.
    pub fn declaring(name: &str, kinds: Vec<ActionKindDecl>) -> LogActuator {
        LogActuator { name: name.to_string(), kinds, applied: Mutex::default() }
    }

    fn request(action: &Action) -> String {
        format!("log {action}")
    }

    fn undo_request(action: &Action) -> String {
        format!("log undo {action}")
    }

    fn applied(&self) -> std::sync::MutexGuard<'_, Applied> {
        // Every change to the set is a single insert or remove, so a thread
        // that panicked while holding the lock cannot have left it half-done.
        self.applied.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl Actuator for LogActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        Ok(RequestPlan { actuator: self.name.clone(), requests: vec![Self::request(action)] })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        self.journal("Action.", action);
        let remembered = {
            let mut applied = self.applied();
            let key = action.dedup_key();
            applied.undone.remove(&key);
            if applied.keys.len() < MAX_APPLIED || applied.keys.contains(&key) {
                applied.keys.insert(key);
                true
            } else {
                applied.overflowed = true;
                false
            }
        };
        if !remembered {
            tracing::warn!(
                message = "Too many applied actions to remember; verify will answer unknown.",
                actuator = %self.name,
                action = %action,
                limit = MAX_APPLIED,
            );
        }
        Ok(Outcome { summary: format!("logged {action}"), requests: vec![Self::request(action)], prior: None })
    }

    async fn verify(&self, action: &Action, outcome: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let applied = self.applied();
        let key = action.dedup_key();
        Ok(if applied.keys.contains(&key) {
            Verification::InEffect
        } else if applied.undone.contains(&key) {
            Verification::NotInEffect
        } else if applied.overflowed {
            Verification::Unknown
        } else if outcome.is_some() {
            // Applied, the engine says, and not undone by this process:
            // logged before a restart, and a log line is never taken back.
            Verification::InEffect
        } else {
            Verification::NotInEffect
        })
    }

    async fn dry_run_undo(&self, action: &Action, _applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        Ok(RequestPlan { actuator: self.name.clone(), requests: vec![Self::undo_request(action)] })
    }

    async fn undo(&self, action: &Action, _applied: &Outcome) -> Result<Outcome, ActuatorError> {
        {
            let mut applied = self.applied();
            let key = action.dedup_key();
            applied.keys.remove(&key);
            if applied.undone.len() < MAX_APPLIED || applied.undone.contains(&key) {
                applied.undone.insert(key);
            } else {
                applied.overflowed = true;
            }
        }
        self.journal("Undo.", action);
        Ok(Outcome {
            summary: format!("logged undo of {action}"),
            requests: vec![Self::undo_request(action)],
            prior: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use engine::Labels;

    use super::*;

    fn action() -> Action {
        Action {
            kind: "pfcwd.escalate".into(),
            target: Labels::from_pairs([("switch", "leaf-rail3"), ("port", "Ethernet8"), ("queue", "3")]),
            params: BTreeMap::from([("level".to_string(), "1".to_string())]),
        }
    }

    fn on_port(port: &str) -> Action {
        Action { target: Labels::from_pairs([("switch", "leaf-rail3"), ("port", port), ("queue", "3")]), ..action() }
    }

    #[tokio::test]
    async fn the_plan_is_one_line_describing_the_action() {
        let plan = LogActuator::new("audit").dry_run(&action()).await.unwrap();
        assert_eq!(plan.actuator, "audit");
        assert_eq!(
            plan.requests,
            ["log pfcwd.escalate {port=\"Ethernet8\",queue=\"3\",switch=\"leaf-rail3\"} (level=1)"]
        );
    }

    #[tokio::test]
    async fn execute_reports_what_the_plan_said() {
        let actuator = LogActuator::new("audit");
        let plan = actuator.dry_run(&action()).await.unwrap();
        let outcome = actuator.execute(&action()).await.unwrap();
        assert_eq!(outcome.requests, plan.requests);
        assert_eq!(
            outcome.summary,
            "logged pfcwd.escalate {port=\"Ethernet8\",queue=\"3\",switch=\"leaf-rail3\"} (level=1)"
        );
        assert_eq!(outcome.prior, None);
    }

    #[tokio::test]
    async fn verify_says_in_effect_only_for_executed_actions() {
        let actuator = LogActuator::new("audit");
        assert_eq!(actuator.verify(&action(), None).await.unwrap(), Verification::NotInEffect);
        let outcome = actuator.execute(&action()).await.unwrap();
        assert_eq!(actuator.verify(&action(), Some(&outcome)).await.unwrap(), Verification::InEffect);
        // Known without the outcome too, as after a crash mid-action.
        assert_eq!(actuator.verify(&action(), None).await.unwrap(), Verification::InEffect);
        // Another target was never acted on.
        assert_eq!(actuator.verify(&on_port("Ethernet12"), None).await.unwrap(), Verification::NotInEffect);
    }

    #[tokio::test]
    async fn the_undo_plan_is_one_line_naming_the_action() {
        let actuator = LogActuator::new("audit");
        let outcome = actuator.execute(&action()).await.unwrap();
        let plan = actuator.dry_run_undo(&action(), &outcome).await.unwrap();
        assert_eq!(plan.actuator, "audit");
        assert_eq!(
            plan.requests,
            ["log undo pfcwd.escalate {port=\"Ethernet8\",queue=\"3\",switch=\"leaf-rail3\"} (level=1)"]
        );
        // A dry run changes nothing.
        assert_eq!(actuator.verify(&action(), Some(&outcome)).await.unwrap(), Verification::InEffect);
    }

    #[tokio::test]
    async fn an_action_applied_before_a_restart_is_in_effect_until_its_undo_is_logged() {
        let before = LogActuator::new("audit");
        let applied = before.execute(&action()).await.unwrap();
        // A new process: nothing in memory, the engine's ledger says applied.
        let after = LogActuator::new("audit");
        assert_eq!(after.verify(&action(), Some(&applied)).await.unwrap(), Verification::InEffect);
        // Asked without an outcome (is anything there?), it still knows nothing.
        assert_eq!(after.verify(&action(), None).await.unwrap(), Verification::NotInEffect);
        after.undo(&action(), &applied).await.unwrap();
        assert_eq!(after.verify(&action(), Some(&applied)).await.unwrap(), Verification::NotInEffect);
        // Executed again, it is in effect again.
        after.execute(&action()).await.unwrap();
        assert_eq!(after.verify(&action(), Some(&applied)).await.unwrap(), Verification::InEffect);
    }

    #[tokio::test]
    async fn undo_reports_its_plan_and_makes_verify_say_not_in_effect() {
        let actuator = LogActuator::new("audit");
        let applied = actuator.execute(&action()).await.unwrap();
        actuator.execute(&on_port("Ethernet12")).await.unwrap();
        let plan = actuator.dry_run_undo(&action(), &applied).await.unwrap();
        let undone = actuator.undo(&action(), &applied).await.unwrap();
        assert_eq!(undone.requests, plan.requests);
        assert_eq!(
            undone.summary,
            "logged undo of pfcwd.escalate {port=\"Ethernet8\",queue=\"3\",switch=\"leaf-rail3\"} (level=1)"
        );
        assert_eq!(actuator.verify(&action(), Some(&applied)).await.unwrap(), Verification::NotInEffect);
        // Only that action was undone.
        assert_eq!(actuator.verify(&on_port("Ethernet12"), None).await.unwrap(), Verification::InEffect);
    }

    #[tokio::test]
    async fn past_the_limit_verify_says_unknown_instead_of_not_in_effect() {
        let actuator = LogActuator::new("audit");
        actuator.applied().keys.extend((0..MAX_APPLIED).map(|i| format!("filler {i}")));
        actuator.execute(&action()).await.unwrap();
        assert_eq!(actuator.applied().keys.len(), MAX_APPLIED);
        assert_eq!(actuator.verify(&action(), None).await.unwrap(), Verification::Unknown);
        // What is remembered is still known, and re-executing it does not count against the limit.
        actuator.applied().keys.remove("filler 0");
        actuator.execute(&action()).await.unwrap();
        actuator.execute(&action()).await.unwrap();
        assert_eq!(actuator.verify(&action(), None).await.unwrap(), Verification::InEffect);
        assert_eq!(actuator.applied().keys.len(), MAX_APPLIED);
    }
}

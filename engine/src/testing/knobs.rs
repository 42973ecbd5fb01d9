//! [`Knobs`]: an actuator whose targets are values a test can read and
//! change by hand.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;

use crate::action::Action;
use crate::contracts::{Actuator, ActuatorError, Outcome, Plan, Verification};
use crate::labels::Labels;

/// One knob per target: `execute` sets it to "ours" and records what it
/// replaced ("default" when unset), `undo` puts that back, `verify` reads
/// it. [`Knobs::set_by_hand`] is the operator; [`Knobs::fail_next`] a busy
/// switch.
#[derive(Debug, Default)]
pub struct Knobs {
    values: Mutex<HashMap<String, String>>,
    executes: AtomicUsize,
    undos: AtomicUsize,
    failures_left: AtomicUsize,
}

impl Knobs {
    /// The knob of `target`, if it was ever set.
    pub fn value(&self, target: &Labels) -> Option<String> {
        self.values.lock().unwrap_or_else(|p| p.into_inner()).get(&target.to_string()).cloned()
    }

    /// Sets the knob of `target` as a human would.
    pub fn set_by_hand(&self, target: &Labels, value: &str) {
        self.values.lock().unwrap_or_else(|p| p.into_inner()).insert(target.to_string(), value.to_string());
    }

    /// The next `n` executes fail ("switch busy").
    pub fn fail_next(&self, n: usize) {
        self.failures_left.store(n, Ordering::SeqCst);
    }

    /// Executes called so far, failed ones included.
    pub fn executes(&self) -> usize {
        self.executes.load(Ordering::SeqCst)
    }

    /// Undos called so far.
    pub fn undos(&self) -> usize {
        self.undos.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Actuator for Knobs {
    fn name(&self) -> &str {
        "knobs"
    }

    async fn dry_run(&self, action: &Action) -> Result<Plan, ActuatorError> {
        Ok(Plan { actuator: "knobs".into(), requests: vec![format!("set {} ours", action.target)] })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        self.executes.fetch_add(1, Ordering::SeqCst);
        let failing = self.failures_left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if failing.is_ok() {
            return Err(ActuatorError::Failed("switch busy".into()));
        }
        let key = action.target.to_string();
        let prior = self
            .values
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), "ours".into())
            .unwrap_or_else(|| "default".into());
        Ok(Outcome {
            summary: format!("set {key} ours"),
            requests: vec![format!("set {key} ours")],
            prior: Some(serde_json::json!(prior)),
        })
    }

    async fn verify(&self, action: &Action, _: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        Ok(match self.value(&action.target).as_deref() {
            Some("ours") => Verification::InEffect,
            Some(other) => Verification::Changed(format!("value is {other}")),
            None => Verification::NotInEffect,
        })
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<Plan, ActuatorError> {
        Ok(Plan { actuator: "knobs".into(), requests: vec![format!("set {} {:?}", action.target, applied.prior)] })
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        self.undos.fetch_add(1, Ordering::SeqCst);
        let prior = applied.prior.as_ref().and_then(|p| p.as_str()).unwrap_or("default").to_string();
        self.set_by_hand(&action.target, &prior);
        Ok(Outcome { summary: format!("restored {prior}"), requests: vec![], prior: None })
    }
}

//! [`Knobs`]: an actuator whose targets are values a test can read and
//! change by hand.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;

use crate::contracts::{
    Action, ActionKindDecl, Actuator, ActuatorError, Change, Outcome, Prepared, Prior, RequestPlan, Verification,
};
use crate::labels::Labels;

/// One knob per target: `prepare` reads it ("default" when unset), `apply`
/// sets it to "ours", `undo` puts back what `prepare` read, `verify` reads
/// it: ours, as before, or someone else's. [`Knobs::set_by_hand`] is the operator; [`Knobs::fail_next`] a busy
/// switch. It declares every kind (`*`): local, no topology limit,
/// destructive, undoable; [`Knobs::declaring`] says otherwise.
#[derive(Debug)]
pub struct Knobs {
    kinds: Vec<ActionKindDecl>,
    values: Mutex<HashMap<String, String>>,
    executes: AtomicUsize,
    undos: AtomicUsize,
    failures_left: AtomicUsize,
    late_undos_left: AtomicUsize,
}

impl Default for Knobs {
    fn default() -> Knobs {
        Knobs::declaring(vec![ActionKindDecl::new("*", &[])])
    }
}

impl Knobs {
    /// Knobs that declare `kinds`, as an actuator of the playbook would.
    pub fn declaring(kinds: Vec<ActionKindDecl>) -> Knobs {
        Knobs {
            kinds,
            values: Mutex::default(),
            executes: AtomicUsize::default(),
            undos: AtomicUsize::default(),
            failures_left: AtomicUsize::default(),
            late_undos_left: AtomicUsize::default(),
        }
    }

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

    /// The next `n` undos restore the knob but answer too late ("timed out"), as a switch
    /// whose config updater pauses after each write does.
    pub fn answer_late_to_next_undos(&self, n: usize) {
        self.late_undos_left.store(n, Ordering::SeqCst);
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

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        Ok(RequestPlan { actuator: "knobs".into(), requests: vec![format!("set {} ours", action.target)] })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let prepared = self.prepare(action).await?.expect("knobs always read their target");
        self.apply(action, &prepared.prior).await
    }

    async fn prepare(&self, action: &Action) -> Result<Option<Prepared>, ActuatorError> {
        let before = self.value(&action.target).unwrap_or_else(|| "default".into());
        Change { before, after: "ours".to_string() }.prepared().map(Some)
    }

    async fn apply(&self, action: &Action, prior: &Prior) -> Result<Outcome, ActuatorError> {
        self.executes.fetch_add(1, Ordering::SeqCst);
        let failing = self.failures_left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if failing.is_ok() {
            return Err(ActuatorError::Failed("switch busy".into()));
        }
        let key = action.target.to_string();
        self.set_by_hand(&action.target, "ours");
        Ok(Outcome {
            summary: format!("set {key} ours"),
            requests: vec![format!("set {key} ours")],
            prior: Some(prior.clone()),
        })
    }

    async fn verify(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let before = applied.map(before);
        let now = self.value(&action.target).unwrap_or_else(|| "default".into());
        Ok(if now == "ours" {
            Verification::InEffect
        } else if before.is_none_or(|b| b == now) {
            Verification::NotInEffect
        } else {
            Verification::Changed(format!("value is {now}"))
        })
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        Ok(RequestPlan {
            actuator: "knobs".into(),
            requests: vec![format!("set {} {}", action.target, before(applied))],
        })
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        self.undos.fetch_add(1, Ordering::SeqCst);
        let prior = before(applied);
        self.set_by_hand(&action.target, &prior);
        let late = self.late_undos_left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if late.is_ok() {
            return Err(ActuatorError::Failed("timed out after 2000 ms".into()));
        }
        Ok(Outcome { summary: format!("restored {prior}"), requests: vec![], prior: None })
    }
}

/// What a knob held before `applied` set it.
fn before(applied: &Outcome) -> String {
    let change = applied.prior.as_ref().and_then(|p| p.read::<Change<String>>().ok());
    change.map_or_else(|| "default".to_string(), |c| c.before)
}

//! The preview's actuator: it records what it would do and reports
//! success, and nothing is sent anywhere.
//!
//! It stands in for every actuator of the playbook, under the playbook's
//! own names, so the dispatcher takes exactly the path it takes in the
//! daemon: read first, apply, verify, undo. It remembers which targets it
//! "changed", so a target read back (de-duplication after an instance
//! resolved, an undo) answers as the fabric would after that change.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use engine::contracts::Verification;
use engine::{Action, ActionKindDecl, Actuator, ActuatorError, Change, Outcome, Prepared, Prior, RequestPlan};

/// What the planning actuators changed, shared by all of them: one
/// fabric, whichever actuator acted on it.
pub type Changed = Arc<Mutex<BTreeSet<String>>>;

/// One actuator of the playbook, planned.
pub struct Planner {
    name: String,
    kinds: Vec<ActionKindDecl>,
    changed: Changed,
}

impl Planner {
    /// The actuator the playbook calls `name`, declaring its `kinds`.
    pub fn new(name: &str, kinds: Vec<ActionKindDecl>, changed: Changed) -> Planner {
        Planner { name: name.to_string(), kinds, changed }
    }

    fn key(action: &Action) -> String {
        format!("{} {}", action.kind, action.target)
    }

    fn changed(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.changed.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn plan(&self, what: String) -> RequestPlan {
        RequestPlan { actuator: self.name.clone(), requests: vec![what] }
    }
}

#[async_trait]
impl Actuator for Planner {
    fn name(&self) -> &str {
        &self.name
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        Ok(self.plan(format!("{action}")))
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let prepared = self.prepare(action).await?.expect("the planner always reads its target");
        self.apply(action, &prepared.prior).await
    }

    async fn prepare(&self, action: &Action) -> Result<Option<Prepared>, ActuatorError> {
        // A target counts as untouched until this preview changed it: the
        // preview knows nothing of the fabric beyond the recording.
        let before = if self.changed().contains(&Self::key(action)) { "changed" } else { "as found" };
        Change { before: before.to_string(), after: "changed".to_string() }.prepared().map(Some)
    }

    async fn apply(&self, action: &Action, prior: &Prior) -> Result<Outcome, ActuatorError> {
        self.changed().insert(Self::key(action));
        Ok(Outcome {
            summary: format!("{} would carry out {action} (preview: nothing sent)", self.name),
            requests: vec![action.to_string()],
            prior: Some(prior.clone()),
        })
    }

    async fn verify(&self, action: &Action, _applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        Ok(if self.changed().contains(&Self::key(action)) { Verification::InEffect } else { Verification::NotInEffect })
    }

    async fn dry_run_undo(&self, action: &Action, _applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        Ok(self.plan(format!("undo {action}")))
    }

    async fn undo(&self, action: &Action, _applied: &Outcome) -> Result<Outcome, ActuatorError> {
        self.changed().remove(&Self::key(action));
        Ok(Outcome {
            summary: format!("{} would undo {action} (preview: nothing sent)", self.name),
            requests: vec![format!("undo {action}")],
            prior: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::Labels;
    use std::collections::BTreeMap;

    #[tokio::test(flavor = "current_thread")]
    async fn it_remembers_what_it_would_have_changed_and_sends_nothing() {
        let changed = Changed::default();
        let planner = Planner::new("cordon", vec![ActionKindDecl::new("node.cordon", &["node"])], changed.clone());
        let action = Action {
            kind: "node.cordon".into(),
            target: Labels::from_pairs([("node", "n1")]),
            params: BTreeMap::new(),
        };
        assert_eq!(planner.verify(&action, None).await.unwrap(), Verification::NotInEffect);
        let outcome = planner.execute(&action).await.unwrap();
        assert!(outcome.summary.contains("nothing sent"), "{}", outcome.summary);
        assert_eq!(planner.verify(&action, None).await.unwrap(), Verification::InEffect);
        planner.undo(&action, &outcome).await.unwrap();
        assert_eq!(planner.verify(&action, None).await.unwrap(), Verification::NotInEffect);
        assert!(changed.lock().unwrap().is_empty());
    }
}

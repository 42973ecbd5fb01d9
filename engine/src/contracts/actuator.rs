//! The actuator contract: an [`Actuator`] says what it would send
//! ([`Plan`]), sends it ([`Outcome`]), reads the target back
//! ([`Verification`]) and restores it; its errors say whether a retry can
//! help ([`ActuatorError`]).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::action::Action;

/// Exactly what an actuator would send for an action, without sending it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The actuator.
    pub actuator: String,
    /// Each request it would make, as text (an argv, a gNMI Set, an HTTP body).
    pub requests: Vec<String>,
}

/// Whether a prepared `prior` (see [`Actuator::prepare`]) says the target
/// already holds what the action sets.
pub fn already_holds(prior: &serde_json::Value) -> bool {
    match (prior.get("before"), prior.get("after")) {
        (Some(before), Some(after)) => before == after,
        _ => false,
    }
}

/// What an actuator did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// One line for people.
    pub summary: String,
    /// What was sent, request by request (the same text as the [`Plan`]).
    pub requests: Vec<String>,
    /// The target's state before the change, for undo.
    #[serde(default)]
    pub prior: Option<serde_json::Value>,
}

/// An actuator failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ActuatorError {
    /// The action's target or parameters are not acceptable; retrying will
    /// not help.
    #[error("invalid action: {0}")]
    Invalid(String),
    /// The target does not support this action.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// It failed; a retry may succeed.
    #[error("failed: {0}")]
    Failed(String),
    /// It did not finish in time.
    #[error("timed out after {0} ms")]
    Timeout(u64),
}

/// What an actuator reads back from a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", content = "detail", rename_all = "kebab-case")]
pub enum Verification {
    /// The target is as the action leaves it.
    InEffect,
    /// The action is not in effect (never applied, or reverted).
    NotInEffect,
    /// Someone else changed the target since the action: it is theirs now.
    Changed(String),
    /// This actuator cannot read the target back.
    Unknown,
}

/// Something that changes the fabric (or tells a human).
///
/// The engine drives timeouts, retries and verification; an actuator only
/// says what it would send, sends it, reads the target back and restores it.
#[async_trait]
pub trait Actuator: Send + Sync {
    /// The actuator's name, as the playbook calls it.
    fn name(&self) -> &str;

    /// Why this actuator, as configured, cannot carry out actions of
    /// `kind`: a verb it does not know, or a side (switches, the host) it
    /// has no settings for. A playbook whose rules propose such a kind is
    /// refused by `check` and `run` alike. `None`: it can, as far as the kind
    /// alone tells (the default: notifications and commands take any kind).
    fn cannot(&self, kind: &str) -> Option<String> {
        let _ = kind;
        None
    }

    /// Exactly what [`Actuator::execute`] would send for `action`.
    async fn dry_run(&self, action: &Action) -> Result<Plan, ActuatorError>;

    /// Carries out `action`. The outcome's `prior` is the target's state
    /// before, so [`Actuator::undo`] can restore it.
    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError>;

    /// Reads the target before acting: what it holds now and what `action`
    /// would make it hold, as the outcome's `prior` carries them
    /// (`{"before": …, "after": …}`). The dispatcher writes this into the
    /// intent, durably, before [`Actuator::apply`] changes anything, so a
    /// crash between the change and its record can always be reconciled
    /// and undone. When `before` already equals `after`, the target holds
    /// what the action sets: nothing is sent and nothing is recorded as ours.
    ///
    /// `Ok(None)`: this actuator has no state to read (a notification, a
    /// command); the dispatcher calls [`Actuator::execute`] instead.
    async fn prepare(&self, action: &Action) -> Result<Option<serde_json::Value>, ActuatorError> {
        let _ = action;
        Ok(None)
    }

    /// Carries out `action` on a target read by [`Actuator::prepare`] as
    /// `prior`: changes exactly `prior["after"]`, and returns the outcome with
    /// `prior` as its prior. Actuators that prepare implement it (and their
    /// [`Actuator::execute`] as prepare then apply).
    async fn apply(&self, action: &Action, prior: &serde_json::Value) -> Result<Outcome, ActuatorError> {
        let _ = prior;
        self.execute(action).await
    }

    /// Reads the target back: is `action` in effect? `applied` is the
    /// outcome of the execution, when known (not after a crash mid-action).
    async fn verify(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let _ = (action, applied);
        Ok(Verification::Unknown)
    }

    /// Exactly what [`Actuator::undo`] would send.
    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<Plan, ActuatorError> {
        let _ = (action, applied);
        Err(ActuatorError::NotSupported(format!("{} cannot undo {}", self.name(), action.kind)))
    }

    /// Restores what `applied` changed.
    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let _ = applied;
        Err(ActuatorError::NotSupported(format!("{} cannot undo {}", self.name(), action.kind)))
    }
}

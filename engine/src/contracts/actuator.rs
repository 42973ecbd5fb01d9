//! The actuator contract: an [`Actuator`] declares the action kinds it
//! carries out ([`ActionKindDecl`]), says what it would send
//! ([`RequestPlan`]), reads the target first ([`Prepared`]), sends it
//! ([`Outcome`]), reads the target back ([`Verification`]) and restores it;
//! its errors say whether a retry can help ([`ActuatorError`]).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::action::Action;
use super::kinds::ActionKindDecl;
use super::prior::{Prepared, Prior};

/// Exactly what an actuator would send for an action, without sending it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestPlan {
    /// The actuator.
    pub actuator: String,
    /// Each request it would make, as text (an argv, a gNMI Set, an HTTP body).
    pub requests: Vec<String>,
}

/// What an actuator did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// One line for people.
    pub summary: String,
    /// What was sent, request by request (the same text as the [`RequestPlan`]).
    pub requests: Vec<String>,
    /// The target's state before the change, for undo.
    #[serde(default)]
    pub prior: Option<Prior>,
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
/// An actuator parses an [`Action`] into its own typed form at the edge, in
/// one place, and keeps what it reads from a target as its own serde type
/// (a [`Prior`]); the engine never reads inside either.
#[async_trait]
pub trait Actuator: Send + Sync {
    /// The actuator's name, as the playbook calls it.
    fn name(&self) -> &str;

    /// The action kinds it carries out, each as the safety policy counts it.
    /// A playbook whose rules propose a kind the actuator it is routed to
    /// does not declare is refused by `check` and `run` alike.
    fn kinds(&self) -> &[ActionKindDecl];

    /// Why this actuator, as configured, cannot carry out `kind`, a kind it
    /// declares: a side (switches, the host) it has no settings for.
    /// `None`: it can, as far as the kind alone tells.
    fn cannot(&self, kind: &str) -> Option<String> {
        let _ = kind;
        None
    }

    /// Checks now what this actuator is configured to change (its switches probed: reachable,
    /// serving what it writes, writable), so a target that cannot be changed is known at
    /// start and not during an incident: one line per target, `Ok` with what it is or the
    /// reason it cannot be changed. `rocemend check --probe` prints it; the daemon logs it at
    /// start. Default: nothing to check (the actuator's targets are only known per action).
    async fn check_targets(&self) -> Vec<(String, Result<String, ActuatorError>)> {
        Vec::new()
    }

    /// Exactly what [`Actuator::execute`] would send for `action`.
    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError>;

    /// Carries out `action`. The outcome's `prior` is the target's state
    /// before, so [`Actuator::undo`] can restore it.
    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError>;

    /// Reads the target before acting: what it holds now and what `action`
    /// would make it hold, as the actuator's own record ([`Prepared::prior`]).
    /// The dispatcher writes that record into the intent, durably, before
    /// [`Actuator::apply`] changes anything, so a crash between the change
    /// and its record can always be reconciled and undone. When the target
    /// already holds what the action sets ([`Prepared::holds_already`]),
    /// nothing is sent and nothing is recorded as ours.
    ///
    /// `Ok(None)`: this actuator has no state to read (a notification, a
    /// command); the dispatcher calls [`Actuator::execute`] instead.
    async fn prepare(&self, action: &Action) -> Result<Option<Prepared>, ActuatorError> {
        let _ = action;
        Ok(None)
    }

    /// Carries out `action` on a target read by [`Actuator::prepare`] as
    /// `prior`: changes exactly what the prior says the action sets, and
    /// returns the outcome with `prior` as its prior. Actuators that prepare
    /// implement it (and their [`Actuator::execute`] as prepare then apply).
    async fn apply(&self, action: &Action, prior: &Prior) -> Result<Outcome, ActuatorError> {
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
    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        let _ = (action, applied);
        Err(ActuatorError::NotSupported(format!("{} cannot undo {}", self.name(), action.kind)))
    }

    /// Restores what `applied` changed.
    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let _ = applied;
        Err(ActuatorError::NotSupported(format!("{} cannot undo {}", self.name(), action.kind)))
    }
}

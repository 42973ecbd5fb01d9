//! What a running daemon is asked (the control API, reload on change,
//! metrics), split by who answers: the loop task owns the evaluator, the
//! dispatcher's task the dispatcher.

use tokio::sync::oneshot;

use super::{DispatchStatus, EngineView};
use crate::dispatch::{Decision, DispatchError, Mode, Resolution, Silence};
use crate::labels::Labels;
use crate::policy::BreakerState;
use crate::time::Nanos;

/// A request to a running daemon: for the loop's evaluator, or for the
/// dispatcher's task.
#[derive(Debug)]
pub enum Command {
    /// Handled by the loop task.
    Engine(EngineCommand),
    /// Handed to the dispatcher's task.
    Dispatch(DispatchCommand),
}

impl EngineCommand {
    /// A reload nobody waits for (a changed file, SIGHUP), not allowed to
    /// shrink the rule set.
    pub fn reload() -> EngineCommand {
        EngineCommand::Reload(super::reload::ReloadRequest { allow_shrink: false, reply: None })
    }
}

impl From<EngineCommand> for Command {
    fn from(c: EngineCommand) -> Command {
        Command::Engine(c)
    }
}

impl From<DispatchCommand> for Command {
    fn from(c: DispatchCommand) -> Command {
        Command::Dispatch(c)
    }
}

/// What the evaluator is asked.
#[derive(Debug)]
pub enum EngineCommand {
    /// Load the rules again.
    Reload(super::reload::ReloadRequest),
    /// The evaluator's state: rules with their health, instances, counters.
    View {
        /// The answer.
        reply: oneshot::Sender<EngineView>,
    },
}

/// What the dispatcher is asked.
#[derive(Debug)]
pub enum DispatchCommand {
    /// Switch the global mode; recorded in the ledger with who and when,
    /// and kept across restarts.
    SetMode {
        /// The mode.
        mode: Mode,
        /// Who set it.
        by: String,
    },
    /// Approve a held request.
    Approve {
        /// The decision id.
        id: String,
        /// Who approves.
        by: String,
        /// The decision after approval.
        reply: oneshot::Sender<Result<Decision, DispatchError>>,
    },
    /// Reject a held request.
    Reject {
        /// The decision id.
        id: String,
        /// Who rejects.
        by: String,
        /// The decision after rejection.
        reply: oneshot::Sender<Result<Decision, DispatchError>>,
    },
    /// Undo an action in effect by hand (see `Dispatcher::undo_by_hand`).
    Undo {
        /// The decision that put it in effect.
        id: String,
        /// Who asks.
        by: String,
        /// The undo's decision, or why it was refused.
        reply: oneshot::Sender<Result<Decision, DispatchError>>,
    },
    /// End an incident by hand (see `Dispatcher::resolve_incident`).
    Resolve {
        /// The incident's id, for messages.
        incident: String,
        /// Its rule.
        rule: String,
        /// Its subject.
        subject: Labels,
        /// When its fault was first seen.
        started: Nanos,
        /// Who asks.
        by: String,
        /// The resolution with the decisions it made, or why it was refused.
        reply: oneshot::Sender<Result<(Resolution, Vec<Decision>), DispatchError>>,
    },
    /// Reset the circuit breaker.
    ResetBreaker {
        /// Who resets it.
        by: String,
        /// The state before the reset.
        reply: oneshot::Sender<BreakerState>,
    },
    /// The dispatcher's state.
    Status {
        /// The answer.
        reply: oneshot::Sender<DispatchStatus>,
    },
    /// Silence a rule or a target for a while (see [`crate::silence`]).
    Silence {
        /// The silence; its id is assigned by the dispatcher.
        silence: Silence,
        /// The silence as set, or why it was refused.
        reply: oneshot::Sender<Result<Silence, DispatchError>>,
    },
    /// Lift a silence early.
    Unsilence {
        /// The silence's id.
        id: String,
        /// Whether there was such a silence.
        reply: oneshot::Sender<bool>,
    },
}

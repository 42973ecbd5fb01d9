//! Why a chaos run could not be made: every failure of the harness itself,
//! as opposed to a run whose expectations fail (that is a [`RunOutcome`]
//! with `passed = false`, not an error).
//!
//! [`RunOutcome`]: crate::report::RunOutcome

use actuators::registry::PlaybookError;
use engine::config::TomlError;
use engine::store::StoreError;
use engine::{Errors, RuleErrors};
use net::NetError;
use sim::fabric::FabricError;
use sim::switch::SwitchError;

use crate::spec::ScenarioError;

/// A chaos run could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChaosError {
    /// The scenario file is wrong.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The playbook file is wrong.
    #[error(transparent)]
    PlaybookFile(#[from] Errors<TomlError>),
    /// The rules do not load.
    #[error(transparent)]
    Rules(#[from] RuleErrors),
    /// The playbook's actuators or policy were refused.
    #[error(transparent)]
    Playbook(#[from] Errors<PlaybookError>),
    /// The fabric simulator refused the scenario's fabric or jobs.
    #[error("the simulated fabric: {0}")]
    Fabric(#[from] FabricError),
    /// A simulated leaf could not serve gNMI.
    #[error("a simulated leaf: {0}")]
    Switch(#[from] SwitchError),
    /// The run's state store or ledger failed.
    #[error("the run's store: {0}")]
    Store(#[from] StoreError),
    /// A network namespace, link or tool failed (wall clock).
    #[error(transparent)]
    Net(#[from] NetError),
    /// A file or directory of the run failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// A part of the daemon under test failed to start or run.
    #[error("the daemon under test: {0}")]
    Daemon(String),
    /// The attached daemon (a game day) could not be asked.
    #[error("the daemon at {at}: {source}")]
    Attached {
        /// Its control socket.
        at: String,
        /// What failed.
        source: AttachError,
    },
    /// The scenario cannot run on this machine; the reason says what is
    /// missing.
    #[error("scenario {scenario}: {reason}")]
    CannotRunHere {
        /// The scenario.
        scenario: String,
        /// What is missing.
        reason: String,
    },
    /// No built-in scenario has that name.
    #[error("no built-in scenario {0:?}")]
    NoSuchScenario(String),
}

impl ChaosError {
    /// An I/O error, saying what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> ChaosError {
        ChaosError::Io { what: what.into(), source }
    }
}

/// Why an attached daemon could not tell its decisions.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttachError {
    /// Its control socket could not be reached: the client's words.
    #[error("{0}")]
    Unreachable(String),
    /// It refused the call: its status message.
    #[error("{0}")]
    Refused(String),
    /// A decision it sent does not read as one.
    #[error("a decision it sent: {0}")]
    BadDecision(#[source] serde_json::Error),
}

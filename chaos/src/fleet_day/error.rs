//! Why a fleet game day could not be played: the harness's own failures.
//! A game whose expectations fail is not an error: its report says
//! `passed = false`.

use engine::config::TomlError;
use engine::store::StoreError;
use engine::Errors;
use sim::fabric::FabricError;
use sim::switch::SwitchError;

use crate::spec::ScenarioError;

/// A fleet game day could not be played.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetDayError {
    /// The game file is wrong (`file:line:col`).
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A playbook the game names does not load.
    #[error(transparent)]
    Playbook(#[from] Errors<TomlError>),
    /// An actuator of a playbook the game names does not say how it counts
    /// the action kinds it carries out.
    #[error(transparent)]
    Actuators(#[from] Errors<actuators::registry::PlaybookError>),
    /// A part the game needs is not on this machine (etcd, etcdctl): the
    /// game is skipped, with this reason.
    #[error("{0}")]
    CannotRunHere(String),
    /// The etcd cluster failed to start or answer.
    #[error("etcd: {0}")]
    Etcd(String),
    /// A daemon failed to start, or died when it should not have.
    #[error("daemon {name}: {reason}")]
    Daemon {
        /// Its identity.
        name: String,
        /// What happened, with the end of its log.
        reason: String,
    },
    /// The simulated fabric refused the inventory or a fault.
    #[error("the simulated fabric: {0}")]
    Fabric(#[from] FabricError),
    /// A simulated leaf could not serve gNMI.
    #[error("a simulated leaf: {0}")]
    Switch(#[from] SwitchError),
    /// A file, directory or process of the game failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// A stopped daemon's ledger could not be read.
    #[error("the ledger of {daemon}: {source}")]
    Ledger {
        /// The daemon.
        daemon: String,
        /// The error.
        source: StoreError,
    },
    /// Ctrl-C or SIGTERM: every process of the game was stopped and its
    /// directory removed.
    #[error("interrupted by {0}; every process of the game was stopped")]
    Interrupted(&'static str),
}

impl FleetDayError {
    /// An I/O error, saying what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> FleetDayError {
        FleetDayError::Io { what: what.into(), source }
    }

    /// Whether the game's input is at fault (exit status 2 with the
    /// location), not the machine or the run.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, FleetDayError::Scenario(_) | FleetDayError::Playbook(_))
    }
}

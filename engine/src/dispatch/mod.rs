//! The dispatch point: the one place where proposals become actions.
//!
//! Every proposal passes here on its way to an actuator, and every proposal
//! gets a [`Decision`] in the ledger, whether or not anything was sent: the
//! mode (`enforce`, `dry-run`, `shadow`; the most conservative of global,
//! playbook and rule wins), the [`policy`](crate::policy) verdict with its
//! reason, approvals, the fleet token for fleet-scoped actions (see
//! [`Coordinator`](crate::contracts::Coordinator)), the actuator's outcome, retries,
//! and undo.

mod dispatcher;
mod fleet;

pub use crate::catalog::ActuatorRoute;
pub use crate::contracts::{Decision, Drift, DriftKind, Drifted, Phase, Resolution, Step, Verdict};
pub use crate::mode::Mode;
pub use crate::silence::{self, Silence};
pub use dispatcher::{
    CanaryBoard, CanaryCheck, Clock, DispatchConfig, DispatchError, Dispatcher, OutcomeBoard, OutcomeWatch,
    COMPACTION_INTERVAL, COMPACTION_STEP, LEDGER_UNWRITABLE,
};

#[cfg(test)]
mod canary_tests;
#[cfg(test)]
mod fleet_tests;
#[cfg(test)]
mod ladder_tests;
#[cfg(test)]
mod ledger_tests;
#[cfg(test)]
mod manual_tests;
#[cfg(test)]
mod outcome_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trust_tests;

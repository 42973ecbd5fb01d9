//! The dispatch point: the one place where proposals become actions.
//!
//! Every proposal passes here on its way to an actuator, and every proposal
//! gets a [`Decision`] in the ledger, whether or not anything was sent: the
//! mode (`enforce`, `dry-run`, `shadow`; the most conservative of global,
//! playbook and rule wins), the [`policy`](crate::policy) verdict with its
//! reason, approvals, the fleet token for fleet-scoped actions (see
//! [`coordination`](crate::coordination)), the actuator's outcome, retries,
//! and undo.

mod dispatcher;
mod fleet;
pub mod silence;
mod types;

pub use dispatcher::{ActuatorRoute, Clock, DispatchConfig, DispatchError, Dispatcher, COMPACTION_INTERVAL};
pub use silence::Silence;
pub use types::{Decision, Drift, DriftKind, Drifted, Mode, Phase, Resolution, Step, Verdict};

#[cfg(test)]
mod fleet_tests;
#[cfg(test)]
mod manual_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trust_tests;

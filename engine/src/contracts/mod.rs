//! The contracts between the engine and the outside world, and the types
//! they exchange: [`Sensor`]s feed it, [`Actuator`]s carry out what it
//! decides, a [`Coordinator`] keeps the fleet's shared budget. Concrete
//! sensors, actuators and coordinators live in their own crates; the engine
//! depends on none of them.
//!
//! This module is the bottom of the engine's own layering: it names only
//! the data model below it (labels, series, time, mode), and everything
//! else in the engine (rules, instances, the policy, the dispatcher, the
//! ledger, the run loop) sits above it, the arrows pointing one way.
//!
//! - [`sensor`]: [`Sensor`], what it is given and what it sends;
//! - [`action`]: [`Proposal`]s and the [`Action`]s in them, kind patterns,
//!   [`Impact`];
//! - [`actuator`]: [`Actuator`], its [`Plan`], [`Outcome`] and errors;
//! - [`decision`]: the [`Decision`] about a proposal, as the ledger keeps it;
//! - [`coordinator`]: [`Coordinator`], the fleet-wide budget.

pub mod action;
pub mod actuator;
pub mod coordinator;
pub mod decision;
pub mod sensor;

pub use action::{kind_matches, Action, Impact, Proposal, Severity};
pub use actuator::{already_holds, Actuator, ActuatorError, Outcome, Plan, Verification};
pub use coordinator::{
    Admission, Adopted, CoordinationError, Coordinator, FleetBreaker, Health, Release, Scope, Standalone, Token,
    TokenRequest, FLEET_KINDS,
};
pub use decision::{Decision, Drift, DriftKind, Drifted, Phase, Resolution, Step, Verdict};
pub use sensor::{Batch, HealthBoard, HealthState, Note, Sensor, SensorContext, SensorError, SensorHealth};

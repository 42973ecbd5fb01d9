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
//! - [`kinds`]: the action kinds actuators declare ([`ActionKindDecl`]), their
//!   [`Scope`] and [`LimitClass`];
//! - [`actuator`]: [`Actuator`], its [`RequestPlan`], [`Outcome`] and errors;
//! - [`prior`]: what an actuator reads before acting ([`Prepared`], [`Prior`]);
//! - [`decision`]: the [`Decision`] about a proposal, as the ledger keeps it;
//! - [`coordinator`]: [`Coordinator`], the fleet-wide budget.

pub mod action;
pub mod actuator;
pub mod coordinator;
pub mod decision;
pub mod kinds;
pub mod outcome;
pub mod prior;
pub mod sensor;

pub use action::{kind_matches, Action, Impact, Proposal, Severity, PAGE_PREFIX};
pub use actuator::{Actuator, ActuatorError, Outcome, RequestPlan, Verification};
pub use coordinator::{
    Admission, Adopted, CoordinationError, Coordinator, FleetBreaker, Health, NotOwner, Release, Standalone, Token,
    TokenRequest,
};
pub use decision::{
    Canary, CanaryJudgement, CanaryOutcome, Decision, Drift, DriftKind, Drifted, Phase, Resolution, Step, Verdict,
};
pub use kinds::{ActionKindDecl, LimitClass, Scope};
pub use outcome::{OutcomeCheck, OutcomeJudgement, OutcomeResult, Watched};
pub use prior::{Change, Prepared, Prior};
pub use sensor::{Batch, HealthBoard, HealthState, Note, Sensor, SensorContext, SensorError, SensorHealth};

//! The core of rocemend: data model, windows, Rhai rules, the rule instance
//! state machine, action proposals and the dispatch point.
//!
//! # Brief overview
//!
//! Sensors register series in a [`SeriesTable`] (labels enriched from the
//! [`Topology`]) and send [`Sample`]s. The [`Evaluator`] updates native window
//! state per sample ([`window`]), evaluates the rules of a [`RuleSet`] for the
//! subjects whose windows moved, steps each [`Instance`] through
//! inactive → pending → firing → resolved, and emits [`EngineEvent`]s,
//! among them action [`Proposal`]s.
//!
//! ```
//! use engine::{rule, Evaluator, Helpers, Labels, Sample, SampleKind, SeriesSpec, SeriesTable, Value};
//! use engine::{CounterSpec, EngineEvent, SECOND};
//!
//! let source = r#"
//!     fn fire(w) { w.flaps >= 3 }
//!     #{
//!         name: "link-flap",
//!         select: ["link_carrier_down_count"],
//!         group_by: ["node", "netdev"],
//!         windows: #{ flaps: increase("link_carrier_down_count", "30s") },
//!         actions: [ #{ action: "link.isolate", target: #{ node: "{node}", netdev: "{netdev}" } } ],
//!     }
//! "#;
//! let series = SeriesTable::default();
//! let rules = rule::load_sources(&[("flap.rhai".into(), source.into())], Helpers::default()).unwrap();
//! let mut ev = Evaluator::new(series.clone(), rules, None).unwrap();
//!
//! let sensor = series.add_sensor("example", 100);
//! let id = series.register(sensor, &SeriesSpec {
//!     metric: "link_carrier_down_count".into(),
//!     labels: Labels::from_pairs([("node", "n1"), ("netdev", "eth0")]),
//!     kind: SampleKind::Counter(CounterSpec::U32_WRAP),
//! }).unwrap();
//!
//! let mut events = Vec::new();
//! for (t, downs) in [(0, 0), (1, 1), (2, 2), (3, 3)] {
//!     ev.ingest(&[Sample { series: id, ts: t * SECOND, value: Value::Count(downs) }]);
//!     ev.evaluate(t * SECOND, &mut events);
//! }
//! assert!(events.iter().any(|e| matches!(e, EngineEvent::Proposal(p) if p.action.kind == "link.isolate")));
//! ```
//!
//! # Layout
//!
//! - [`time`]: nanosecond timestamps and rule durations;
//! - [`labels`], [`series`], [`counter`]: the data model and counter arithmetic;
//! - [`label_check`]: label values checked by what they name (netdev, port, host);
//! - [`topology`]: the inventory and label enrichment;
//! - [`window`]: native window accumulators;
//! - [`stats`]: robust statistics (median, median absolute deviation);
//! - [`rule`]: rule files, the Rhai sandbox, cross-series helpers, native predicates;
//! - [`rule_test`]: the offline rule test runner (`<rule>.test.toml`);
//! - [`mode`]: how far a rule's findings may go (enforce, dry-run, shadow, off);
//! - [`contracts`]: the [`Sensor`], [`Actuator`] and
//!   [`Coordinator`](contracts::Coordinator) traits and what they exchange: proposals, actions,
//!   decisions; everything below in this list sits above them;
//! - [`catalog`]: the playbook's routes and what their actuators declare about each action kind;
//! - [`instance`]: the per-(rule, subject) state machine;
//! - [`evaluator`]: ingest and evaluation;
//! - [`policy`]: the safety policy: limits, breaker, cooldowns, approval;
//! - [`playbook`]: which rules run in which mode, and which actuators act;
//! - [`silence`]: operators' silences;
//! - [`store`]: instance state in sled;
//! - [`ledger`]: every decision, durably, with crash reconciliation;
//! - [`dispatch`]: the dispatch point: modes, de-duplication, the policy's verdict, the actuators' calls;
//! - [`runtime`]: the async run loop wiring sensors, evaluator and dispatcher;
//! - [`backtest`]: what a rule set would have done on a recording;
//! - [`recording`]: JSON-lines recordings for replay;
//! - [`config`]: TOML helpers with line/column errors;
//! - `testing` (feature `test-util`): fakes shared by the workspace's tests;
//! - [`errors`]: error lists ([`Errors`]) and the build error of components;
//! - [`names`]: "did you mean …?" for mistyped names.

#![deny(missing_docs)]

// The tests in `src/tests/` use the crate by its name, as its users do: they
// were an integration-test binary of their own, and joined the crate's unit
// tests so that `cargo test --workspace` links fewer binaries.
#[cfg(test)]
extern crate self as engine;
#[cfg(test)]
mod tests;

pub mod backtest;
pub mod catalog;
pub mod config;
pub mod contracts;
pub mod counter;
pub mod dispatch;
pub mod errors;
pub mod evaluator;
pub mod instance;
pub mod label_check;
pub mod labels;
pub mod ledger;
pub mod mode;
pub mod names;
pub mod playbook;
pub mod policy;
pub mod recording;
pub mod rule;
pub mod rule_test;
pub mod runtime;
pub mod series;
pub mod silence;
pub mod stats;
pub mod store;
#[cfg(any(test, feature = "test-util"))]
pub mod testing;
pub mod time;
pub mod topology;
pub mod window;

pub use contracts::{
    Action, ActionKindDecl, Actuator, ActuatorError, Batch, Change, HealthBoard, HealthState, LimitClass, Note,
    Outcome, Prepared, Prior, Proposal, RequestPlan, Scope, Sensor, SensorContext, SensorError, SensorHealth,
    Verification,
};
pub use counter::{CounterSpec, Overflow, RateBound};
pub use errors::{BuildError, Component, Errors, SchemaError};
pub use evaluator::{
    EngineEvent, EngineStats, Evaluator, InstanceView, ObserveRequest, ReloadReport, RuleHealth, STEP_TIME,
};
pub use instance::{Instance, State};
pub use labels::Labels;
pub use mode::Mode;
pub use rule::{Helpers, Rule, RuleError, RuleErrors, RuleSet, Severity};
pub use series::{Sample, SampleKind, SeriesId, SeriesSpec, SeriesTable, Value};
pub use store::Store;
pub use time::{Nanos, MS, SECOND};
pub use topology::Topology;

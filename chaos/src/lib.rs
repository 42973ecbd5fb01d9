//! The chaos harness of rocemend: faults injected on purpose, against the
//! daemon's own sensors, engine, dispatcher and actuators, and how fast the
//! fabric recovers. Two rooms on one floor: the scenario harness (one
//! daemon's parts in lockstep with the simulated fabric, or on real links)
//! and the fleet game day (many daemon processes and a real etcd). They
//! share one fault table, one resolution of it and one report shape.
//!
//! # Brief overview
//!
//! A scenario file is read into a [`scenario::Scenario`] and resolved into
//! a [`scenario::ScenarioPlan`], its faults [`plan::FaultPlan`]s; the
//! runner ([`run::run_scenario`]) plays it and returns a
//! [`report::Report`], which [`report::html`] and [`report::table`] draw.
//!
//! ```
//! use std::path::Path;
//!
//! let (path, text) = chaos::library::SCENARIOS.iter().find(|(p, _)| p.ends_with("/pfc_storm.toml")).unwrap();
//! let loaded = chaos::scenario::parse(text, Path::new(path)).unwrap();
//! let storm = &loaded.plan.faults[0];
//! assert_eq!(storm.label, "pfc_storm {node=node-04, netdev=eth3}");
//! assert_eq!((storm.at, storm.prio), (1_000_000_000, 3), "1s, and the default priority");
//! ```
//!
//! # Layout
//!
//! - [`spec`]: what both files share as written: the [`spec::FaultSpec`]
//!   table, durations, key places, [`spec::ScenarioError`];
//! - [`plan`]: the one resolution both build on: a fault's defaults,
//!   label, locations and fabric effects, errors at `file:line:col`;
//! - [`scenario`]: chaos scenarios as TOML files (faults, steady-state
//!   hypothesis, expectations), and the check of a run against them;
//!   `docs/chaos.md`.
//! - [`run`]: the runner — one run in lockstep with the simulated fabric
//!   (`rocemend-sim`) on the virtual clock, or on real links in a network
//!   namespace on the wall clock, or attached to a running daemon.
//! - [`fleet_day`]: fleet game days — real daemon processes coordinating
//!   through a real etcd cluster, on the simulated fabric; the fleet
//!   budget, token return and etcd leader loss measured.
//! - [`report`]: run records (JSON), recovery percentiles, a game day's
//!   figures, the terminal table and the HTML report (its markup is the
//!   `rocemend-render` crate's).
//! - [`library`]: the scenario library and its playbook, built in for
//!   `rocemend demo` (the standard rules are the `rocemend-rules` crate's).
//! - [`ChaosError`]: why a run could not be made.
//!
//! The simulator itself (fabric model, simulated switches, the demo
//! recording) is the `rocemend-sim` crate: the sensors' and actuators'
//! tests use it, so it cannot depend on them; this crate does.

#![deny(missing_docs)]

// The tests in `src/tests/` use the crate by its name, as its users do: they
// were an integration-test binary of their own, and joined the crate's unit
// tests so that `cargo test --workspace` links fewer binaries.
#[cfg(test)]
extern crate self as chaos;
#[cfg(test)]
mod tests;

mod error;
pub mod fleet_day;
pub mod library;
pub mod plan;
pub mod report;
pub mod run;
pub mod scenario;
pub mod spec;

pub use error::ChaosError;

//! The chaos harness of rocemend: faults injected on purpose, against the
//! daemon's own sensors, engine, dispatcher and actuators, and how fast the
//! fabric recovers.
//!
//! # Layout
//!
//! - [`scenario`]: chaos scenarios as TOML files (faults, steady-state
//!   hypothesis, expectations), and the check of a run against them;
//!   `docs/chaos.md`.
//! - [`run`]: the runner — one run in lockstep with the simulated fabric
//!   (`rocemend-sim`) on the virtual clock, or on real links in a network
//!   namespace on the wall clock, or attached to a running daemon.
//! - [`report`]: run records (JSON), recovery percentiles, the terminal
//!   table, the generic SVG timeline and the HTML report.
//! - [`library`]: the scenario library, its rules and playbook, built in
//!   for `rocemend demo`.
//! - [`fleet_day`]: fleet game days — real daemon processes coordinating
//!   through a real etcd cluster, on the simulated fabric; the fleet
//!   budget, token return and etcd leader loss measured.
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
pub mod report;
pub mod run;
pub mod scenario;

pub use error::ChaosError;

//! The simulated fabric of rocemend: what the chaos harness, the demo and
//! the tests of the sensors and actuators run against instead of real
//! switches and NICs.
//!
//! # Brief overview
//!
//! [`demo`] generates the demo recording, [`DEMO_RECORDING`]: 25 seconds of
//! the example cluster (`docs/examples/inventory.toml`, 4 nodes × 8 NICs)
//! with three faults — a PFC storm, a link flap storm and a symbol-error
//! burst — each announced by a `fault` note and closed by a `recovery` note.
//! It is what `rocemend demo` plays, and a fixture for tests across the
//! workspace.
//!
//! ```
//! use engine::recording::{Event, Reader};
//!
//! let mut reader = Reader::new(sim::DEMO_RECORDING, "demo.jsonl");
//! let mut faults = Vec::new();
//! while let Some(event) = reader.next_event().unwrap() {
//!     if let Event::Note(note) = event {
//!         if note.kind == "fault" {
//!             faults.push(note.labels.get("node").unwrap_or_default().to_string());
//!         }
//!     }
//! }
//! assert_eq!(faults, ["node-02", "node-03", "node-04"]);
//! ```
//!
//! # Layout
//!
//! - [`demo`]: the deterministic generator of the demo recording, its fault
//!   schedule ([`demo::FAULTS`]) and the checked-in output.
//! - [`switch`]: a simulated SONiC switch serving gNMI (Capabilities, Get,
//!   Set, Subscribe) over a [`switch::Model`] that tests and the fabric
//!   simulator drive: [`switch::serve`], [`switch::spawn_many`].
//! - [`fabric`]: a rail-optimized fabric built from the inventory, whose
//!   counters (sysfs per node, the leaves' gNMI trees, Prometheus text per
//!   job) respond to faults and to actuators; `docs/simulator.md`.
//! - [`leaves`]: a fabric's leaves served over gNMI, and a playbook's switch
//!   actuators pointed at them (the chaos runner and `rocemend demo`).
//!
//! This crate depends on the engine's contracts and the gNMI messages only:
//! the sensors and actuators dev-depend on it, so it must never depend on
//! them (the chaos runner in `rocemend-chaos` does).

#![deny(missing_docs)]

// The tests in `src/tests/` use the crate by its name, as its users do: they
// were an integration-test binary of their own, and joined the crate's unit
// tests so that `cargo test --workspace` links fewer binaries.
#[cfg(test)]
extern crate self as sim;
#[cfg(test)]
mod tests;

pub mod demo;
pub mod fabric;
pub mod field_cases;
pub mod leaves;
pub mod switch;
pub mod why_cases;

pub use demo::{demo_recording, DEMO_RECORDING};

//! The chaos harness of rocemend: faults injected on purpose, and the
//! recordings that show them.
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
//! let mut reader = Reader::new(chaos::DEMO_RECORDING, "demo.jsonl");
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
//! - [`scenario`]: chaos scenarios as TOML files (faults, steady-state
//!   hypothesis, expectations), and the check of a run against them;
//!   `docs/chaos.md`.
//! - [`report`]: run records (JSON), recovery percentiles, the generic SVG
//!   timeline and the HTML report.
//!
//! The runner that wires the fabric to the daemon's sensors, engine and
//! dispatcher is `rocemend chaos run` in the binary crate: this crate cannot
//! depend on the sensors (their tests depend on it).

#![deny(missing_docs)]

pub mod demo;
pub mod fabric;
pub mod report;
pub mod scenario;
pub mod switch;

pub use demo::{demo_recording, DEMO_RECORDING};

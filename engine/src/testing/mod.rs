//! Fakes for tests across the workspace, behind the `test-util` feature
//! (and in the engine's own tests): one copy instead of one per test
//! binary.
//!
//! - [`Knobs`]: an actuator with one knob per target that tests can read
//!   and change by hand;
//! - [`proposal`]: a proposal of an action on a node, as a rule makes it;
//! - [`SensorHarness`]: a sensor's context with its series table, batch
//!   channel and stop switch;
//! - [`Scripted`]: a sensor that sends the batches a test wrote for it.

mod knobs;
mod scripted;

pub use knobs::Knobs;
pub use scripted::Scripted;

use std::collections::BTreeMap;

use tokio::sync::{mpsc, watch};

use crate::contracts::Severity;
use crate::contracts::{Action, Proposal};
use crate::contracts::{Batch, SensorContext};
use crate::labels::Labels;
use crate::mode::Mode;
use crate::series::SeriesTable;
use crate::time::Nanos;

/// A critical, enforcing proposal of `rule` to do `kind` on `target`,
/// about the subject `node`, decided at `at`.
pub fn proposal(rule: &str, kind: &str, node: &str, target: Labels, at: Nanos) -> Proposal {
    Proposal {
        id: format!("p-{rule}-{kind}-{node}-{at}"),
        rule: rule.into(),
        rule_hash: "ab".repeat(32),
        rule_mode: Mode::Enforce,
        severity: Severity::Critical,
        subject: Labels::from_pairs([("node", node)]),
        action: Action { kind: kind.into(), target, params: BTreeMap::new() },
        jobs: Vec::new(),
        values: Vec::new(),
        active_at: at,
        sample_at: at,
        decided_at: at,
        restored: false,
    }
}

/// What a sensor under test runs with, and what the test reads.
pub struct SensorHarness {
    /// The series table the sensor registers into.
    pub table: SeriesTable,
    /// The context to hand to `Sensor::run`.
    pub ctx: SensorContext,
    /// The batches it sends.
    pub rx: mpsc::Receiver<Batch>,
    /// Turn true to stop it.
    pub stop: watch::Sender<bool>,
}

impl SensorHarness {
    /// A harness for the sensor `name`, which may register `max_series`.
    pub fn new(name: &str, max_series: usize) -> SensorHarness {
        let table = SeriesTable::default();
        let (tx, rx) = mpsc::channel(64);
        let (stop, shutdown) = watch::channel(false);
        let ctx = SensorContext::new(table.clone(), name, max_series, tx, shutdown);
        SensorHarness { table, ctx, rx, stop }
    }

    /// Every batch sent so far, without waiting.
    pub fn drain(&mut self) -> Vec<Batch> {
        let mut out = Vec::new();
        while let Ok(batch) = self.rx.try_recv() {
            out.push(batch);
        }
        out
    }
}

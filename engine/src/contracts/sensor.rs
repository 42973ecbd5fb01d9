//! The sensor contract: what a [`Sensor`] is given ([`SensorContext`]),
//! what it sends ([`Batch`]es of samples and [`Note`]s) and how its health
//! is reported ([`HealthBoard`]).

use std::collections::BTreeSet;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};

use crate::labels::Labels;
use crate::series::{Sample, SensorId, SeriesError, SeriesId, SeriesSpec, SeriesTable};
use crate::time::Nanos;

/// A note carried with samples: a fault marker in a recording, a chaos
/// harness annotation. Notes do not feed rules; they are shown and recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    /// When.
    pub ts: Nanos,
    /// What kind of note (`fault`, `recovery`, …).
    pub kind: String,
    /// Free text.
    pub text: String,
    /// Labels of what it is about.
    #[serde(default)]
    pub labels: Labels,
}

impl Note {
    /// The kind of note a sensor sends when it reconnects to a target (its
    /// labels name it, e.g. `switch`): a target that was away may have
    /// restarted and lost what was set on it, so the actions in effect there
    /// are read back at once.
    pub const RECONNECTED: &'static str = "reconnected";
}

/// What a sensor sends: samples and notes read at about the same time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// The samples.
    pub samples: Vec<Sample>,
    /// Notes, if any.
    pub notes: Vec<Note>,
}

/// A sensor failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SensorError {
    /// What the sensor reads does not exist on this node (no GPU, no RDMA
    /// device, no NVIDIA library). The daemon runs on without it.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// Its configuration is invalid.
    #[error("configuration: {0}")]
    Config(String),
    /// Reading failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being read.
        context: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A series could not be registered (cardinality cap).
    #[error(transparent)]
    Series(#[from] SeriesError),
    /// The input is malformed.
    #[error("{0}")]
    Malformed(String),
    /// The engine stopped taking samples.
    #[error("the engine is gone")]
    Closed,
}

/// A sensor's state, as it reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HealthState {
    /// Not read yet.
    Starting,
    /// Reading normally.
    Up,
    /// Reading, with errors (some devices, targets or files fail).
    Degraded,
    /// What it reads does not exist here (no GPU, no RDMA device, no library).
    Unavailable,
    /// Ended (a replay finished) or failed.
    Stopped,
}

/// What the daemon knows about one sensor's health.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SensorHealth {
    /// The sensor.
    pub name: String,
    /// Its state.
    pub state: HealthState,
    /// Why, in a few words (the device that fails, the missing library).
    pub detail: String,
    /// Wall-clock time of the last successful read.
    pub last_ok: Option<Nanos>,
    /// Successful reads.
    pub reads: u64,
    /// Samples it sent to the engine.
    #[serde(default)]
    pub samples: u64,
    /// Errors by kind (`io`, `parse`, `timeout`, `connect`, …).
    pub errors: std::collections::BTreeMap<String, u64>,
    /// The last error.
    pub last_error: Option<String>,
    /// Time spent reading, in nanoseconds: the sensor's own cost.
    pub busy_ns: u64,
    /// It delivers only what is pushed to it (job signals over the control
    /// API), so it is ready before its first sample.
    #[serde(default)]
    pub push_driven: bool,
}

/// Every sensor's health, shared between the sensors and whoever reports it.
#[derive(Debug, Clone, Default)]
pub struct HealthBoard(std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<String, SensorHealth>>>);

impl HealthBoard {
    fn update(&self, name: &str, f: impl FnOnce(&mut SensorHealth)) {
        let mut board = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let entry = board.entry(name.to_string()).or_insert_with(|| SensorHealth {
            name: name.to_string(),
            state: HealthState::Starting,
            detail: String::new(),
            last_ok: None,
            reads: 0,
            samples: 0,
            errors: Default::default(),
            last_error: None,
            busy_ns: 0,
            push_driven: false,
        });
        f(entry);
    }

    /// Sets the state of sensor `name` with a reason.
    pub fn set_state(&self, name: &str, state: HealthState, detail: &str) {
        self.update(name, |h| {
            h.state = state;
            h.detail = detail.to_string();
        });
    }

    /// The engine refused a sample of sensor `name` (`why`): counted as an
    /// error of kind `refused`, and the sensor is degraded, since what it
    /// sends cannot all be believed.
    pub fn refused(&self, name: &str, why: &str) {
        self.update(name, |h| {
            *h.errors.entry("refused".to_string()).or_default() += 1;
            h.last_error = Some(why.to_string());
            if matches!(h.state, HealthState::Up | HealthState::Starting) {
                h.state = HealthState::Degraded;
                h.detail = "some samples are refused".to_string();
            }
        });
    }

    /// The clock of a series of sensor `name` stepped back (`why`, with the
    /// size of the step): counted as an error of kind `clock_step`. The
    /// series is taken up again from its new time; the sensor's state is
    /// left as it is, since what it sends is believed.
    pub fn clock_stepped(&self, name: &str, why: &str) {
        self.update(name, |h| {
            *h.errors.entry("clock_step".to_string()).or_default() += 1;
            h.last_error = Some(why.to_string());
        });
    }

    /// The sensors that keep the daemon from being ready: those that have
    /// not delivered a sample yet and have not declared that what they read
    /// does not exist here (`unavailable`) or that they wait for pushes.
    pub fn not_ready(&self) -> Vec<SensorHealth> {
        let waiting = |h: &SensorHealth| h.samples == 0 && h.state != HealthState::Unavailable && !h.push_driven;
        self.snapshot().into_iter().filter(waiting).collect()
    }

    /// Every sensor's health, by name.
    pub fn snapshot(&self) -> Vec<SensorHealth> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }
}

/// What a running sensor is given: where to register series, where to send
/// batches, where to report its health, and when to stop.
#[derive(Debug, Clone)]
pub struct SensorContext {
    series: SeriesTable,
    id: SensorId,
    name: String,
    out: mpsc::Sender<Batch>,
    shutdown: watch::Receiver<bool>,
    health: HealthBoard,
}

impl SensorContext {
    /// A context for the sensor `name`, allowed `max_series` series.
    pub fn new(
        series: SeriesTable,
        name: &str,
        max_series: usize,
        out: mpsc::Sender<Batch>,
        shutdown: watch::Receiver<bool>,
    ) -> SensorContext {
        let id = series.add_sensor(name, max_series);
        let health = HealthBoard::default();
        health.update(name, |_| {});
        SensorContext { series, id, name: name.to_string(), out, shutdown, health }
    }

    /// Reports health to `board` instead of a private one.
    pub fn with_health(mut self, board: HealthBoard) -> SensorContext {
        board.update(&self.name, |_| {});
        self.health = board;
        self
    }

    /// The board this sensor reports to.
    pub fn health(&self) -> &HealthBoard {
        &self.health
    }

    /// A read succeeded, taking `cost` of CPU/wall time. A degraded sensor
    /// stays degraded until [`SensorContext::set_state`] says otherwise.
    pub fn read_ok(&self, cost: std::time::Duration) {
        let now = crate::time::wall_clock_now();
        self.health.update(&self.name, |h| {
            h.reads += 1;
            h.last_ok = Some(now);
            h.busy_ns += cost.as_nanos() as u64;
            if h.state == HealthState::Starting {
                h.state = HealthState::Up;
            }
        });
    }

    /// A read failed; `kind` groups errors (`io`, `parse`, `timeout`, …).
    pub fn read_failed(&self, kind: &str, error: &str) {
        self.health.update(&self.name, |h| {
            *h.errors.entry(kind.to_string()).or_default() += 1;
            h.last_error = Some(error.to_string());
            if matches!(h.state, HealthState::Up | HealthState::Starting) {
                h.state = HealthState::Degraded;
            }
        });
    }

    /// Says the sensor delivers only what is pushed to it: up, and ready
    /// without a sample.
    pub fn push_driven(&self, detail: &str) {
        self.health.update(&self.name, |h| {
            h.push_driven = true;
            h.state = HealthState::Up;
            h.detail = detail.to_string();
        });
    }

    /// Sets the sensor's state with a reason.
    pub fn set_state(&self, state: HealthState, detail: &str) {
        self.health.set_state(&self.name, state, detail);
    }

    /// The sensor's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Registers a series (idempotent), enforcing the sensor's cap.
    pub fn register(&self, spec: &SeriesSpec) -> Result<SeriesId, SeriesError> {
        self.series.register(self.id, spec)
    }

    /// Sends a batch to the engine; waits when the engine is behind (the
    /// channel is bounded, so a fast sensor cannot outrun memory).
    pub async fn send(&self, batch: Batch) -> Result<(), SensorError> {
        let n = batch.samples.len() as u64;
        self.out.send(batch).await.map_err(|_| SensorError::Closed)?;
        if n > 0 {
            self.health.update(&self.name, |h| h.samples += n);
        }
        Ok(())
    }

    /// Whether shutdown was requested.
    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Resolves when shutdown is requested.
    pub async fn shutdown(&self) {
        let mut rx = self.shutdown.clone();
        while !*rx.borrow() {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Waits for the next tick of a polling sensor's `interval`; `false`
    /// when shutdown came first (the sensor returns).
    pub async fn next_tick(&self, interval: &mut tokio::time::Interval) -> bool {
        tokio::select! {
            biased;
            _ = self.shutdown() => false,
            _ = interval.tick() => true,
        }
    }

    /// Sends `samples` as one batch, nothing when there are none; `false`
    /// when shutdown came first (the engine may not be reading any more).
    pub async fn send_samples(&self, samples: Vec<Sample>) -> Result<bool, SensorError> {
        if samples.is_empty() {
            return Ok(true);
        }
        tokio::select! {
            biased;
            _ = self.shutdown() => Ok(false),
            sent = self.send(Batch { samples, notes: Vec::new() }) => sent.map(|()| true),
        }
    }
}

/// A source of samples.
#[async_trait]
pub trait Sensor: Send {
    /// A short name (`replay`, `rdma_sysfs`, …), used in logs and health.
    fn name(&self) -> &str;

    /// Runs until the input ends, shutdown is requested, or it fails.
    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError>;

    /// The switches this sensor reads, by name (a `gnmi` sensor's targets);
    /// none for a sensor of the node. Switch aggregators that share their
    /// switches share these.
    fn switches(&self) -> Vec<String> {
        Vec::new()
    }

    /// From now on, reads only the switches named in `owned`, following its
    /// changes: the aggregators of a shard group share the switches, and
    /// each switch is read by its owner alone. Called before
    /// [`Sensor::run`], and only on a sensor whose [`Sensor::switches`] is
    /// not empty; a sensor that reads switches must implement it.
    fn read_only_owned(&mut self, owned: watch::Receiver<BTreeSet<String>>) {
        let _ = owned;
    }
}

//! The contracts between the engine and the outside world: [`Sensor`]s feed
//! it, [`Actuator`]s carry out what it decides. Concrete sensors and
//! actuators live in their own crates; the engine depends on none of them.

use std::collections::BTreeSet;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};

use crate::action::Action;
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

/// Exactly what an actuator would send for an action, without sending it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The actuator.
    pub actuator: String,
    /// Each request it would make, as text (an argv, a gNMI Set, an HTTP body).
    pub requests: Vec<String>,
}

/// Whether a prepared `prior` (see [`Actuator::prepare`]) says the target
/// already holds what the action sets.
pub fn already_holds(prior: &serde_json::Value) -> bool {
    match (prior.get("before"), prior.get("after")) {
        (Some(before), Some(after)) => before == after,
        _ => false,
    }
}

/// What an actuator did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// One line for people.
    pub summary: String,
    /// What was sent, request by request (the same text as the [`Plan`]).
    pub requests: Vec<String>,
    /// The target's state before the change, for undo.
    #[serde(default)]
    pub prior: Option<serde_json::Value>,
}

/// An actuator failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ActuatorError {
    /// The action's target or parameters are not acceptable; retrying will
    /// not help.
    #[error("invalid action: {0}")]
    Invalid(String),
    /// The target does not support this action.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// It failed; a retry may succeed.
    #[error("failed: {0}")]
    Failed(String),
    /// It did not finish in time.
    #[error("timed out after {0} ms")]
    Timeout(u64),
}

/// What an actuator reads back from a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", content = "detail", rename_all = "kebab-case")]
pub enum Verification {
    /// The target is as the action leaves it.
    InEffect,
    /// The action is not in effect (never applied, or reverted).
    NotInEffect,
    /// Someone else changed the target since the action: it is theirs now.
    Changed(String),
    /// This actuator cannot read the target back.
    Unknown,
}

/// Something that changes the fabric (or tells a human).
///
/// The engine drives timeouts, retries and verification; an actuator only
/// says what it would send, sends it, reads the target back and restores it.
#[async_trait]
pub trait Actuator: Send + Sync {
    /// The actuator's name, as the playbook calls it.
    fn name(&self) -> &str;

    /// Why this actuator, as configured, cannot carry out actions of
    /// `kind`: a verb it does not know, or a side (switches, the host) it
    /// has no settings for. A playbook whose rules propose such a kind is
    /// refused by `check` and `run` alike. `None`: it can, as far as the kind
    /// alone tells (the default: notifications and commands take any kind).
    fn cannot(&self, kind: &str) -> Option<String> {
        let _ = kind;
        None
    }

    /// Exactly what [`Actuator::execute`] would send for `action`.
    async fn dry_run(&self, action: &Action) -> Result<Plan, ActuatorError>;

    /// Carries out `action`. The outcome's `prior` is the target's state
    /// before, so [`Actuator::undo`] can restore it.
    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError>;

    /// Reads the target before acting: what it holds now and what `action`
    /// would make it hold, as the outcome's `prior` carries them
    /// (`{"before": …, "after": …}`). The dispatcher writes this into the
    /// intent, durably, before [`Actuator::apply`] changes anything, so a
    /// crash between the change and its record can always be reconciled
    /// and undone. When `before` already equals `after`, the target holds
    /// what the action sets: nothing is sent and nothing is recorded as ours.
    ///
    /// `Ok(None)`: this actuator has no state to read (a notification, a
    /// command); the dispatcher calls [`Actuator::execute`] instead.
    async fn prepare(&self, action: &Action) -> Result<Option<serde_json::Value>, ActuatorError> {
        let _ = action;
        Ok(None)
    }

    /// Carries out `action` on a target read by [`Actuator::prepare`] as
    /// `prior`: changes exactly `prior["after"]`, and returns the outcome with
    /// `prior` as its prior. Actuators that prepare implement it (and their
    /// [`Actuator::execute`] as prepare then apply).
    async fn apply(&self, action: &Action, prior: &serde_json::Value) -> Result<Outcome, ActuatorError> {
        let _ = prior;
        self.execute(action).await
    }

    /// Reads the target back: is `action` in effect? `applied` is the
    /// outcome of the execution, when known (not after a crash mid-action).
    async fn verify(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let _ = (action, applied);
        Ok(Verification::Unknown)
    }

    /// Exactly what [`Actuator::undo`] would send.
    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<Plan, ActuatorError> {
        let _ = (action, applied);
        Err(ActuatorError::NotSupported(format!("{} cannot undo {}", self.name(), action.kind)))
    }

    /// Restores what `applied` changed.
    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let _ = applied;
        Err(ActuatorError::NotSupported(format!("{} cannot undo {}", self.name(), action.kind)))
    }
}

//! The run loop: sensors → evaluator → dispatcher, with reload and shutdown.
//!
//! Sensors run as tasks and send batches over one bounded channel (a sensor
//! that outruns the engine waits instead of growing memory). The evaluator
//! lives in the loop task; the dispatcher in its own task, so a slow
//! actuator never delays detection. Every event goes to one observer
//! callback, called on the loop task in order.
//!
//! - [`command`]: what a running daemon is asked, for the evaluator
//!   ([`EngineCommand`]) or for the dispatcher ([`DispatchCommand`]);
//! - `event_loop`: the loop task — batches, ticks, engine commands;
//! - `dispatcher_task`: the dispatcher's task and its inbox;
//! - [`reload`]: rules loaded off the loop, and a reload that would empty
//!   or halve the rule set refused unless asked for;
//! - [`time_guard`]: samples stamped too far ahead of the clock are refused;
//! - `refusals`: refused samples reported to sensor health and the log.

pub mod command;
mod dispatcher_task;
mod event_loop;
mod refusals;
pub mod reload;
pub mod time_guard;

pub use command::{Command, DispatchCommand, EngineCommand};
pub use reload::{ReloadError, ReloadRequest, ReloadResult};
pub use time_guard::{TimeGuard, DEFAULT_MAX_AHEAD};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use crate::contracts::{Note, Sensor};
use crate::dispatch::{Decision, Dispatcher, Mode, Silence};
use crate::evaluator::{EngineEvent, EngineStats, Evaluator, InstanceView, ReloadReport, RuleHealth};
use crate::policy::BreakerState;
use crate::recording::{RecordingFile, Rotation};
use crate::rule::{Helpers, Rule, RuleSet};

/// Batches in flight between sensors and the engine. At 100 ms polls and a
/// few dozen sensors this is seconds of slack; beyond it sensors wait.
pub const BATCH_CHANNEL: usize = 1024;
/// Proposals in flight to the dispatcher.
pub const DISPATCH_CHANNEL: usize = 1024;

/// What time the evaluator runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockMode {
    /// The wall clock, with a periodic tick for time-driven transitions.
    Wall,
    /// The newest sample's time: for replays, so a recording is evaluated on
    /// its own time however fast it is played.
    Samples,
}

/// A sensor with its series cap.
pub struct SensorSlot {
    /// The sensor.
    pub sensor: Box<dyn Sensor>,
    /// How many series it may register.
    pub max_series: usize,
}

/// Builds a new rule set for a reload; given the evaluator's helpers so the
/// firing index carries over. Runs on a blocking thread.
pub type RuleLoader = Arc<dyn Fn(Helpers) -> Result<RuleSet, crate::rule::RuleErrors> + Send + Sync>;

/// Everything the run loop needs.
pub struct Daemon {
    /// The evaluator, with its rules loaded.
    pub evaluator: Evaluator,
    /// The dispatcher.
    pub dispatcher: Dispatcher,
    /// The sensors.
    pub sensors: Vec<SensorSlot>,
    /// How to load the rules again on reload, if reloading is possible.
    pub loader: Option<RuleLoader>,
    /// Which clock to run on.
    pub clock: ClockMode,
    /// How far ahead of the clock a sample may be stamped
    /// ([`DEFAULT_MAX_AHEAD`] unless configured); later ones are refused.
    pub max_ahead: crate::time::Nanos,
    /// Evaluation tick on the wall clock.
    pub tick: Duration,
    /// Write everything seen to this recording.
    pub record: Option<Recording>,
    /// Also hand every admitted sample to this sink (remote write).
    pub sink: Option<Box<dyn SampleSink>>,
    /// Stop when every sensor has ended (replays, tests). A daemon keeps
    /// running instead, so approvals, expiry and the control API go on.
    pub stop_when_sensors_end: bool,
    /// Where sensors report their health.
    pub health: crate::contracts::HealthBoard,
    /// Once the daemon is asked to stop, how long the dispatcher may take to
    /// finish what it was given ([`DEFAULT_SHUTDOWN_GRACE`] unless configured).
    pub shutdown_grace: Duration,
}

/// Where the loop copies every sample it admits, besides the recording
/// (the remote-write queue). Called on the loop task for each batch after
/// the time guard, so it must never wait: a bounded queue that drops and
/// counts when it is full.
pub trait SampleSink: Send {
    /// Takes a copy of `samples`.
    fn offer(&mut self, samples: &[crate::series::Sample]);
}

/// How long, by default, the dispatcher may take to finish once the daemon
/// is asked to stop: an actuator call in flight (a gNMI Set, a `scontrol`)
/// takes seconds at most, and systemd's and Kubernetes' stop timeouts
/// (`packaging/`) give the whole daemon 30 s.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Where a daemon records what it sees, and how large the file may grow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    /// The file; rotated files are `PATH.1`, `PATH.2`, ….
    pub path: PathBuf,
    /// Its size bound and how many rotated files are kept.
    pub rotation: Rotation,
}

/// What the evaluator can say about itself, for the control API and metrics.
#[derive(Debug, Clone)]
pub struct EngineView {
    /// The evaluator's counters.
    pub stats: EngineStats,
    /// Each rule loaded: name, severity, mode, health.
    pub rules: Vec<(Arc<Rule>, RuleHealth)>,
    /// Every instance that is not idle.
    pub instances: Vec<InstanceView>,
    /// Series registered.
    pub series: usize,
    /// Evaluation passes run (one per batch or tick).
    pub evaluations: u64,
    /// Wall time spent in those passes, in nanoseconds: the rules' cost.
    pub evaluation_ns: u64,
}

/// What the dispatcher can say about itself.
#[derive(Debug, Clone)]
pub struct DispatchStatus {
    /// Global mode.
    pub mode: Mode,
    /// The breaker, with its latest trips.
    pub breaker: BreakerState,
    /// The breaker's window (`[breaker] window`): trips within it are the
    /// ones `status` counts.
    pub breaker_window: crate::time::Nanos,
    /// Requests awaiting approval.
    pub pending: Vec<Decision>,
    /// Actions in effect: what changed a target and is not undone (not
    /// what a dry-run planned or shadow mode recorded).
    pub in_effect: Vec<crate::policy::Effect>,
    /// Whether the ledger can be written (`None`: no ledger); while it
    /// cannot, no action or undo is sent.
    pub ledger: Option<crate::store::WriteHealth>,
    /// Silences in force.
    pub silences: Vec<Silence>,
    /// The latest actions found drifted.
    pub drifted: Vec<crate::dispatch::Drifted>,
    /// Drifts found since start: (reverted, changed by someone else).
    pub drift_counts: (u64, u64),
    /// Subjects on escalation ladders with repeat incidents, or a rung that
    /// worked, within their ladder's window.
    pub offenders: Vec<crate::ledger::Standing>,
}

/// What the observer sees.
#[derive(Debug, Clone)]
pub enum DaemonEvent {
    /// From the evaluator.
    Engine(EngineEvent),
    /// From the dispatcher.
    Decision(Box<Decision>),
    /// A note carried by a sensor (fault markers in recordings).
    Note(Note),
    /// A reload succeeded.
    Reloaded(ReloadReport),
    /// A reload was refused; the old rules keep running.
    ReloadFailed(Vec<String>),
    /// An operator set the global mode.
    ModeSet(crate::ledger::ModeSet),
    /// A sensor stopped.
    SensorExited {
        /// Which.
        sensor: String,
        /// Why, if it failed.
        error: Option<String>,
    },
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// The evaluator's counters.
    pub stats: EngineStats,
    /// Decisions made.
    pub decisions: usize,
}

/// Runs until every sensor has stopped (with
/// [`Daemon::stop_when_sensors_end`]) or `shutdown` turns true.
pub async fn run(
    daemon: Daemon,
    shutdown: watch::Receiver<bool>,
    commands: mpsc::Receiver<Command>,
    mut observe: impl FnMut(&DaemonEvent) + Send,
) -> Result<RunSummary, std::io::Error> {
    let Daemon {
        evaluator,
        dispatcher,
        sensors,
        loader,
        clock,
        max_ahead,
        tick,
        record,
        sink,
        stop_when_sensors_end,
        health,
        shutdown_grace,
    } = daemon;
    let recorder = match &record {
        Some(r) => Some(RecordingFile::open(&r.path, r.rotation, crate::time::wall_clock_now(), "rocemend started")?),
        None => None,
    };
    let sensors = event_loop::Sensors::start(sensors, evaluator.series(), &shutdown, &health);
    let dispatcher = dispatcher_task::DispatcherTask::spawn(dispatcher, evaluator.firing_snapshot());
    let mut event_loop = event_loop::EventLoop {
        evaluator,
        loader,
        clock,
        recorder,
        sink,
        dispatcher,
        health,
        events: Vec::new(),
        last_now: crate::time::wall_clock_now(),
        tally: event_loop::Tally::default(),
        guard: TimeGuard::new(clock, max_ahead),
        reloading: None,
        refusals: refusals::RefusalReporter::default(),
        shutdown: shutdown.clone(),
        stopping: false,
    };
    event_loop.run(sensors, shutdown, commands, tick, stop_when_sensors_end, &mut observe).await;
    event_loop.finish(shutdown_grace, &mut observe).await
}

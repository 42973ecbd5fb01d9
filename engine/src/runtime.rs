//! The run loop: sensors → evaluator → dispatcher, with reload and shutdown.
//!
//! Sensors run as tasks and send batches over one bounded channel (a sensor
//! that outruns the engine waits instead of growing memory). The evaluator
//! lives in the loop task; the dispatcher in its own task, so a slow
//! actuator never delays detection. Every event goes to one observer
//! callback, called on the loop task in order.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;

use crate::contracts::{Batch, Note, Sensor, SensorContext};
use crate::dispatch::{Decision, Dispatcher, Mode, Silence};
use crate::evaluator::{EngineEvent, EngineStats, Evaluator, InstanceView, ReloadReport, RuleHealth};
use crate::instance::State;
use crate::labels::Labels;
use crate::policy::BreakerState;
use crate::recording::Writer;
use crate::rule::{Helpers, Rule, RuleSet};
use crate::time::{wall_clock_now, Nanos};

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
/// firing index carries over.
pub type RuleLoader = Box<dyn Fn(Helpers) -> Result<RuleSet, crate::rule::RuleErrors> + Send>;

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
    /// Evaluation tick on the wall clock.
    pub tick: Duration,
    /// Write everything seen to this recording.
    pub record: Option<PathBuf>,
    /// Stop when every sensor has ended (replays, tests). A daemon keeps
    /// running instead, so approvals, expiry and the control API go on.
    pub stop_when_sensors_end: bool,
    /// Where sensors report their health.
    pub health: crate::contracts::HealthBoard,
}

/// Requests to a running daemon.
#[derive(Debug)]
pub enum Command {
    /// Load the rules again.
    Reload,
    /// Switch the global mode.
    SetMode(Mode),
    /// Approve a held request.
    Approve {
        /// The decision id.
        id: String,
        /// Who approves.
        by: String,
        /// The decision after approval.
        reply: oneshot::Sender<Result<Decision, String>>,
    },
    /// Reject a held request.
    Reject {
        /// The decision id.
        id: String,
        /// Who rejects.
        by: String,
        /// The decision after rejection.
        reply: oneshot::Sender<Result<Decision, String>>,
    },
    /// Reset the circuit breaker.
    ResetBreaker {
        /// Who resets it.
        by: String,
        /// The state before the reset.
        reply: oneshot::Sender<BreakerState>,
    },
    /// The dispatcher's state.
    Status {
        /// The answer.
        reply: oneshot::Sender<DispatchStatus>,
    },
    /// Silence a rule or a target for a while (see [`crate::dispatch::silence`]).
    Silence {
        /// The silence; its id is assigned by the dispatcher.
        silence: Silence,
        /// The silence as set, or why it was refused.
        reply: oneshot::Sender<Result<Silence, String>>,
    },
    /// Lift a silence early.
    Unsilence {
        /// The silence's id.
        id: String,
        /// Whether there was such a silence.
        reply: oneshot::Sender<bool>,
    },
    /// The evaluator's state: rules with their health, instances, counters.
    Engine {
        /// The answer.
        reply: oneshot::Sender<EngineView>,
    },
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
    /// The breaker.
    pub breaker: BreakerState,
    /// Requests awaiting approval.
    pub pending: Vec<Decision>,
    /// Actions in effect.
    pub in_effect: Vec<crate::policy::Effect>,
    /// Silences in force.
    pub silences: Vec<Silence>,
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

enum ToDispatcher {
    Proposal(crate::action::Proposal),
    Resolved { rule: String, subject: Labels, at: Nanos },
    Tick(Nanos),
    Command(Command, Nanos),
}

/// Runs until every sensor has stopped or `shutdown` turns true.
pub async fn run(
    daemon: Daemon,
    mut shutdown: watch::Receiver<bool>,
    mut commands: mpsc::Receiver<Command>,
    mut observe: impl FnMut(&DaemonEvent) + Send,
) -> Result<RunSummary, std::io::Error> {
    let Daemon { mut evaluator, mut dispatcher, sensors, loader, clock, tick, record, stop_when_sensors_end, health } =
        daemon;
    let mut recorder = match &record {
        Some(path) => Some(Writer::new(BufWriter::new(File::create(path)?))),
        None => None,
    };
    let (batch_tx, mut batch_rx) = mpsc::channel::<Batch>(BATCH_CHANNEL);
    let mut tasks = JoinSet::new();
    for slot in sensors {
        let name = slot.sensor.name().to_string();
        let ctx =
            SensorContext::new(evaluator.series().clone(), &name, slot.max_series, batch_tx.clone(), shutdown.clone())
                .with_health(health.clone());
        tasks.spawn(async move { (name, slot.sensor.run(ctx).await) });
    }
    drop(batch_tx);

    let (to_dispatcher, mut dispatcher_rx) = mpsc::channel::<ToDispatcher>(DISPATCH_CHANNEL);
    let (decision_tx, mut decision_rx) = mpsc::channel::<Decision>(DISPATCH_CHANNEL);
    let dispatcher_task = tokio::spawn(async move {
        for decision in dispatcher.reconcile(wall_clock_now()).await {
            if decision_tx.send(decision).await.is_err() {
                return;
            }
        }
        while let Some(msg) = dispatcher_rx.recv().await {
            let decisions = match msg {
                ToDispatcher::Proposal(p) => vec![dispatcher.dispatch(p).await],
                ToDispatcher::Resolved { rule, subject, at } => dispatcher.instance_resolved(&rule, &subject, at).await,
                ToDispatcher::Tick(now) => dispatcher.expire(now),
                ToDispatcher::Command(command, now) => match command {
                    Command::SetMode(mode) => {
                        dispatcher.set_mode(mode);
                        vec![]
                    }
                    Command::Approve { id, by, reply } => {
                        let result = dispatcher.approve(&id, &by, now).await;
                        let decided = result.as_ref().ok().cloned();
                        let _ = reply.send(result);
                        decided.into_iter().collect()
                    }
                    Command::Reject { id, by, reply } => {
                        let result = dispatcher.reject(&id, &by, now);
                        let decided = result.as_ref().ok().cloned();
                        let _ = reply.send(result);
                        decided.into_iter().collect()
                    }
                    Command::ResetBreaker { by, reply } => {
                        let _ = reply.send(dispatcher.reset_breaker(&by));
                        vec![]
                    }
                    Command::Status { reply } => {
                        let _ = reply.send(DispatchStatus {
                            mode: dispatcher.mode(),
                            breaker: dispatcher.breaker().clone(),
                            pending: dispatcher.pending().cloned().collect(),
                            in_effect: dispatcher.policy().in_effect().cloned().collect(),
                            silences: dispatcher.silences(now),
                        });
                        vec![]
                    }
                    Command::Silence { silence, reply } => {
                        let _ = reply.send(dispatcher.silence(silence));
                        vec![]
                    }
                    Command::Unsilence { id, reply } => {
                        let _ = reply.send(dispatcher.unsilence(&id));
                        vec![]
                    }
                    Command::Reload | Command::Engine { .. } => vec![],
                },
            };
            for decision in decisions {
                if decision_tx.send(decision).await.is_err() {
                    return;
                }
            }
        }
    });

    let mut ticker = tokio::time::interval(tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut events = Vec::new();
    let mut decisions = 0usize;
    let mut sensors_done = false;
    let mut last_now = wall_clock_now();
    let mut commands_open = true;
    let (mut evaluations, mut evaluation_ns) = (0u64, 0u64);
    loop {
        tokio::select! {
            batch = batch_rx.recv(), if !sensors_done => match batch {
                Some(batch) => {
                    if let Some(w) = recorder.as_mut() {
                        record_batch(w, &evaluator, &batch);
                    }
                    for note in &batch.notes {
                        observe(&DaemonEvent::Note(note.clone()));
                    }
                    evaluator.ingest(&batch.samples);
                    let now = match clock {
                        ClockMode::Wall => wall_clock_now(),
                        ClockMode::Samples => evaluator.newest_sample().max(batch.notes.iter().map(|n| n.ts).max().unwrap_or(Nanos::MIN)),
                    };
                    last_now = now;
                    let started = std::time::Instant::now();
                    evaluator.evaluate(now, &mut events);
                    evaluations += 1;
                    evaluation_ns += started.elapsed().as_nanos() as u64;
                    forward(&mut events, &to_dispatcher, &mut observe).await;
                    if clock == ClockMode::Samples {
                        let _ = to_dispatcher.send(ToDispatcher::Tick(now)).await;
                    }
                }
                None => sensors_done = true,
            },
            Some(joined) = tasks.join_next() => {
                let (sensor, error) = match joined {
                    Ok((name, Ok(()))) => (name, None),
                    Ok((name, Err(e))) => (name, Some(e.to_string())),
                    Err(e) => ("<task>".to_string(), Some(format!("sensor task panicked: {e}"))),
                };
                health.set_state(&sensor, crate::contracts::HealthState::Stopped, error.as_deref().unwrap_or("finished"));
                observe(&DaemonEvent::SensorExited { sensor, error });
            },
            _ = ticker.tick(), if clock == ClockMode::Wall => {
                let now = wall_clock_now();
                last_now = now;
                let started = std::time::Instant::now();
                evaluator.evaluate(now, &mut events);
                evaluations += 1;
                evaluation_ns += started.elapsed().as_nanos() as u64;
                forward(&mut events, &to_dispatcher, &mut observe).await;
                let _ = to_dispatcher.send(ToDispatcher::Tick(now)).await;
            },
            command = commands.recv(), if commands_open => match command {
                Some(Command::Reload) => match &loader {
                    Some(load) => match load(evaluator.helpers().clone()) {
                        Ok(rules) => {
                            let report = evaluator.reload(rules);
                            tracing::info!(message = "Rules reloaded.", unchanged = report.unchanged.len(), changed = report.changed.len(), added = report.added.len(), removed = report.removed.len());
                            observe(&DaemonEvent::Reloaded(report));
                        }
                        Err(errors) => {
                            let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
                            for error in &errors {
                                tracing::error!(message = "Reload refused; the running rules stay.", %error);
                            }
                            observe(&DaemonEvent::ReloadFailed(errors));
                        }
                    },
                    None => observe(&DaemonEvent::ReloadFailed(vec!["this daemon has no rule directory to reload".into()])),
                },
                Some(Command::Engine { reply }) => {
                    let _ = reply.send(EngineView {
                        stats: evaluator.stats().clone(),
                        rules: evaluator.rules().map(|(r, h)| (r.clone(), h.clone())).collect(),
                        instances: evaluator.instances(),
                        series: evaluator.series().read().len(),
                        evaluations,
                        evaluation_ns,
                    });
                }
                Some(other) => {
                    let _ = to_dispatcher.send(ToDispatcher::Command(other, last_now)).await;
                }
                None => commands_open = false,
            },
            Some(decision) = decision_rx.recv() => {
                decisions += 1;
                observe(&DaemonEvent::Decision(Box::new(decision)));
            },
            _ = shutdown.changed() => break,
        }
        if sensors_done && tasks.is_empty() && stop_when_sensors_end {
            break;
        }
    }
    // Let the dispatcher finish what it was given, and report it.
    drop(to_dispatcher);
    while let Some(decision) = decision_rx.recv().await {
        decisions += 1;
        observe(&DaemonEvent::Decision(Box::new(decision)));
    }
    let _ = dispatcher_task.await;
    if let Some(w) = recorder.as_mut() {
        w.flush()?;
    }
    if let Err(error) = evaluator.flush() {
        tracing::error!(message = "Could not flush instance state.", %error);
    }
    Ok(RunSummary { stats: evaluator.stats().clone(), decisions })
}

async fn forward(
    events: &mut Vec<EngineEvent>,
    to_dispatcher: &mpsc::Sender<ToDispatcher>,
    observe: &mut (impl FnMut(&DaemonEvent) + Send),
) {
    for event in events.drain(..) {
        match &event {
            EngineEvent::Proposal(p) => {
                let _ = to_dispatcher.send(ToDispatcher::Proposal(p.clone())).await;
            }
            EngineEvent::Transition { rule, subject, from: State::Firing, at, .. } => {
                let _ = to_dispatcher
                    .send(ToDispatcher::Resolved { rule: rule.clone(), subject: subject.clone(), at: *at })
                    .await;
            }
            _ => {}
        }
        observe(&DaemonEvent::Engine(event));
    }
}

fn record_batch(w: &mut Writer<BufWriter<File>>, evaluator: &Evaluator, batch: &Batch) {
    let mut result = Ok(());
    for s in &batch.samples {
        result = result.and(w.sample(evaluator.series(), s.series, s.ts, s.value));
    }
    for n in &batch.notes {
        result = result.and(w.note(n));
    }
    if let Err(error) = result {
        tracing::error!(message = "Could not write the recording.", %error);
    }
}

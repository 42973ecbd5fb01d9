//! The loop task: the evaluator's home. It ingests sensor batches,
//! evaluates on the run's clock, forwards proposals and resolutions to the
//! dispatcher's task, answers engine commands, and shows every event to the
//! observer in order.

use std::fs::File;
use std::io::BufWriter;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::command::{Command, EngineCommand};
use super::dispatcher_task::{DispatcherTask, ToDispatcher};
use super::{ClockMode, DaemonEvent, EngineView, RuleLoader, RunSummary, SensorSlot, BATCH_CHANNEL};
use crate::contracts::{Batch, HealthBoard, HealthState, SensorContext, SensorError};
use crate::evaluator::{EngineEvent, Evaluator};
use crate::instance::State;
use crate::recording::Writer;
use crate::series::SeriesTable;
use crate::time::{wall_clock_now, Nanos};

/// The running sensors: their batches, and their tasks to see them end.
pub(super) struct Sensors {
    batches: mpsc::Receiver<Batch>,
    tasks: JoinSet<(String, Result<(), SensorError>)>,
    /// Every batch channel sender has gone: no sensor sends any more.
    done: bool,
}

impl Sensors {
    /// Starts each sensor on its own task, registering into `series`.
    pub fn start(
        slots: Vec<SensorSlot>,
        series: &SeriesTable,
        shutdown: &watch::Receiver<bool>,
        health: &HealthBoard,
    ) -> Sensors {
        let (batch_tx, batches) = mpsc::channel::<Batch>(BATCH_CHANNEL);
        let mut tasks = JoinSet::new();
        for slot in slots {
            let name = slot.sensor.name().to_string();
            let ctx = SensorContext::new(series.clone(), &name, slot.max_series, batch_tx.clone(), shutdown.clone())
                .with_health(health.clone());
            tasks.spawn(async move { (name, slot.sensor.run(ctx).await) });
        }
        Sensors { batches, tasks, done: false }
    }
}

/// The loop's state.
pub(super) struct EventLoop {
    pub evaluator: Evaluator,
    pub loader: Option<RuleLoader>,
    pub clock: ClockMode,
    pub recorder: Option<Writer<BufWriter<File>>>,
    pub dispatcher: DispatcherTask,
    pub health: HealthBoard,
    /// The events of one evaluation pass, kept to reuse the allocation.
    pub events: Vec<EngineEvent>,
    /// The time of the last evaluation: dispatch commands run at it.
    pub last_now: Nanos,
    pub tally: Tally,
}

/// What the loop counts for its summary and views.
#[derive(Debug, Default)]
pub(super) struct Tally {
    decisions: usize,
    evaluations: u64,
    evaluation_ns: u64,
}

impl EventLoop {
    /// Serves until the sensors are done (with `stop_when_sensors_end`) or
    /// `shutdown` changes.
    pub async fn run(
        &mut self,
        mut sensors: Sensors,
        mut shutdown: watch::Receiver<bool>,
        mut commands: mpsc::Receiver<Command>,
        tick: Duration,
        stop_when_sensors_end: bool,
        observe: &mut (impl FnMut(&DaemonEvent) + Send),
    ) {
        let mut ticker = tokio::time::interval(tick);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut commands_open = true;
        loop {
            tokio::select! {
                batch = sensors.batches.recv(), if !sensors.done => match batch {
                    Some(batch) => self.on_batch(batch, observe).await,
                    None => sensors.done = true,
                },
                Some(joined) = sensors.tasks.join_next() => self.on_sensor_end(joined, observe),
                _ = ticker.tick(), if self.clock == ClockMode::Wall => self.on_tick(observe).await,
                command = commands.recv(), if commands_open => match command {
                    Some(Command::Engine(command)) => self.on_command(command, observe),
                    Some(Command::Dispatch(command)) => {
                        let _ = self.dispatcher.inbox.send(ToDispatcher::Command(command, self.last_now)).await;
                    }
                    None => commands_open = false,
                },
                Some(decision) = self.dispatcher.decisions.recv() => self.on_decision(decision, observe),
                _ = shutdown.changed() => break,
            }
            if sensors.done && sensors.tasks.is_empty() && stop_when_sensors_end {
                break;
            }
        }
    }

    /// Lets the dispatcher finish what it was given, reports it, and flushes
    /// the recording and the instance state.
    pub async fn finish(self, observe: &mut (impl FnMut(&DaemonEvent) + Send)) -> Result<RunSummary, std::io::Error> {
        let EventLoop { evaluator, mut recorder, dispatcher, tally, .. } = self;
        let mut decisions = tally.decisions;
        let DispatcherTask { inbox, decisions: mut decided, task } = dispatcher;
        drop(inbox);
        while let Some(decision) = decided.recv().await {
            decisions += 1;
            observe(&DaemonEvent::Decision(Box::new(decision)));
        }
        let _ = task.await;
        if let Some(w) = recorder.as_mut() {
            w.flush()?;
        }
        if let Err(error) = evaluator.flush() {
            tracing::error!(message = "Could not flush instance state.", %error);
        }
        Ok(RunSummary { stats: evaluator.stats().clone(), decisions })
    }

    async fn on_batch(&mut self, batch: Batch, observe: &mut (impl FnMut(&DaemonEvent) + Send)) {
        if let Some(w) = self.recorder.as_mut() {
            record_batch(w, &self.evaluator, &batch);
        }
        for note in &batch.notes {
            observe(&DaemonEvent::Note(note.clone()));
        }
        self.evaluator.ingest(&batch.samples);
        let now = match self.clock {
            ClockMode::Wall => wall_clock_now(),
            ClockMode::Samples => {
                self.evaluator.newest_sample().max(batch.notes.iter().map(|n| n.ts).max().unwrap_or(Nanos::MIN))
            }
        };
        self.evaluate(now, observe).await;
        if self.clock == ClockMode::Samples {
            let _ = self.dispatcher.inbox.send(ToDispatcher::Tick(now)).await;
        }
    }

    async fn on_tick(&mut self, observe: &mut (impl FnMut(&DaemonEvent) + Send)) {
        let now = wall_clock_now();
        self.evaluate(now, observe).await;
        let _ = self.dispatcher.inbox.send(ToDispatcher::Tick(now)).await;
    }

    /// One evaluation pass at `now`, its events forwarded and observed.
    async fn evaluate(&mut self, now: Nanos, observe: &mut (impl FnMut(&DaemonEvent) + Send)) {
        self.last_now = now;
        let started = Instant::now();
        self.evaluator.evaluate(now, &mut self.events);
        self.tally.evaluations += 1;
        self.tally.evaluation_ns += started.elapsed().as_nanos() as u64;
        for event in self.events.drain(..) {
            match &event {
                EngineEvent::Proposal(p) => {
                    let _ = self.dispatcher.inbox.send(ToDispatcher::Proposal(p.clone())).await;
                }
                EngineEvent::Transition { rule, subject, from: State::Firing, at, .. } => {
                    let resolved = ToDispatcher::Resolved { rule: rule.clone(), subject: subject.clone(), at: *at };
                    let _ = self.dispatcher.inbox.send(resolved).await;
                }
                _ => {}
            }
            observe(&DaemonEvent::Engine(event));
        }
    }

    fn on_sensor_end(
        &mut self,
        joined: Result<(String, Result<(), SensorError>), tokio::task::JoinError>,
        observe: &mut (impl FnMut(&DaemonEvent) + Send),
    ) {
        let (sensor, error) = match joined {
            Ok((name, Ok(()))) => (name, None),
            Ok((name, Err(e))) => (name, Some(e.to_string())),
            Err(e) => ("<task>".to_string(), Some(format!("sensor task panicked: {e}"))),
        };
        self.health.set_state(&sensor, HealthState::Stopped, error.as_deref().unwrap_or("finished"));
        observe(&DaemonEvent::SensorExited { sensor, error });
    }

    fn on_command(&mut self, command: EngineCommand, observe: &mut (impl FnMut(&DaemonEvent) + Send)) {
        match command {
            EngineCommand::Reload => self.reload(observe),
            EngineCommand::View { reply } => {
                let _ = reply.send(EngineView {
                    stats: self.evaluator.stats().clone(),
                    rules: self.evaluator.rules().map(|(r, h)| (r.clone(), h.clone())).collect(),
                    instances: self.evaluator.instances(),
                    series: self.evaluator.series().read().len(),
                    evaluations: self.tally.evaluations,
                    evaluation_ns: self.tally.evaluation_ns,
                });
            }
        }
    }

    /// Loads the rules again; a refused load leaves the running rules.
    fn reload(&mut self, observe: &mut (impl FnMut(&DaemonEvent) + Send)) {
        let Some(load) = &self.loader else {
            observe(&DaemonEvent::ReloadFailed(vec!["this daemon has no rule directory to reload".into()]));
            return;
        };
        match load(self.evaluator.helpers().clone()) {
            Ok(rules) => {
                let report = self.evaluator.reload(rules);
                tracing::info!(
                    message = "Rules reloaded.",
                    unchanged = report.unchanged.len(),
                    changed = report.changed.len(),
                    added = report.added.len(),
                    removed = report.removed.len()
                );
                observe(&DaemonEvent::Reloaded(report));
            }
            Err(errors) => {
                let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
                for error in &errors {
                    tracing::error!(message = "Reload refused; the running rules stay.", %error);
                }
                observe(&DaemonEvent::ReloadFailed(errors));
            }
        }
    }

    fn on_decision(&mut self, decision: crate::dispatch::Decision, observe: &mut (impl FnMut(&DaemonEvent) + Send)) {
        self.tally.decisions += 1;
        observe(&DaemonEvent::Decision(Box::new(decision)));
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

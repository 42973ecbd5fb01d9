//! The loop task: the evaluator's home. It ingests sensor batches,
//! evaluates on the run's clock, forwards proposals and resolutions to the
//! dispatcher's task, answers engine commands, and shows every event to the
//! observer in order.

use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::command::{Command, DispatchCommand, EngineCommand};
use super::dispatcher_task::{DispatcherTask, ToDispatcher};
use super::refusals::RefusalReporter;
use super::reload::{shrink_refusal, ReloadError, ReloadRequest, Reloading};
use super::time_guard::{TimeGuard, SEGMENT_START};
use super::{ClockMode, DaemonEvent, EngineView, RuleLoader, RunSummary, SensorSlot, BATCH_CHANNEL};
use crate::contracts::{Batch, HealthBoard, HealthState, Note, SensorContext, SensorError};
use crate::evaluator::{EngineEvent, Evaluator, Refused};
use crate::instance::State;
use crate::ledger::ModeSet;
use crate::recording::RecordingFile;
use crate::series::SeriesTable;
use crate::time::{wall_clock_now, Nanos};

/// How often, on the wall clock, the dispatcher is given a tick: approval
/// expiry, ledger compaction, re-verification and a shard's adoption of
/// switches taken over, all on a scale of seconds. Not every evaluation
/// tick (50 ms): waking the dispatcher's task costs a few thread wake-ups
/// each time, which at 20 a second was half of an idle daemon's CPU. Also
/// the longest a quiet daemon sleeps between ticks (`EventLoop::next_tick`).
const DISPATCHER_TICK: Nanos = crate::time::SECOND / 4;

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
    pub recorder: Option<RecordingFile>,
    pub sink: Option<Box<dyn super::SampleSink>>,
    pub dispatcher: DispatcherTask,
    pub health: HealthBoard,
    /// The events of one evaluation pass, kept to reuse the allocation.
    pub events: Vec<EngineEvent>,
    /// The time of the last evaluation: dispatch commands run at it.
    pub last_now: Nanos,
    pub tally: Tally,
    /// Refuses samples stamped too far ahead of the clock.
    pub guard: TimeGuard,
    pub refusals: RefusalReporter,
    /// A reload in flight, off the loop.
    pub reloading: Option<Reloading>,
    /// Turns true when the daemon is asked to stop: a send to the
    /// dispatcher's full inbox gives up then instead of waiting on.
    pub shutdown: watch::Receiver<bool>,
    /// Shutdown was seen while waiting on the dispatcher: the loop ends.
    pub stopping: bool,
}

/// What the loop counts for its summary and views.
#[derive(Debug, Default)]
pub(super) struct Tally {
    decisions: usize,
    evaluations: u64,
    evaluation_ns: u64,
    /// Samples the time guard refused.
    refused_future: u64,
    /// When the dispatcher was last given a wall-clock tick.
    dispatcher_ticked: Nanos,
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
        let ticker = tokio::time::sleep(tick);
        tokio::pin!(ticker);
        let mut last_tick = tokio::time::Instant::now();
        let mut commands_open = true;
        // The recording's blocks reach the file on the wall clock whatever
        // clock evaluation runs on (a replay on its samples' time has no ticks).
        let mut recording_due = tokio::time::interval(Duration::from_secs(1));
        recording_due.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = recording_due.tick(), if self.recorder.is_some() => {
                    self.flush_recording();
                }
                batch = sensors.batches.recv(), if !sensors.done => match batch {
                    Some(batch) => self.on_batch(batch, observe).await,
                    None => sensors.done = true,
                },
                Some(joined) = sensors.tasks.join_next() => self.on_sensor_end(joined, observe),
                _ = &mut ticker, if self.clock == ClockMode::Wall => {
                    last_tick = tokio::time::Instant::now();
                    self.on_tick(tick, observe).await;
                }
                command = commands.recv(), if commands_open => match command {
                    Some(Command::Engine(command)) => self.on_command(command, observe),
                    Some(Command::Dispatch(command)) => {
                        if let DispatchCommand::SetMode { mode, by } = &command {
                            let set = ModeSet { mode: *mode, by: by.clone(), at: wall_clock_now() };
                            observe(&DaemonEvent::ModeSet(set));
                        }
                        self.send_to_dispatcher(ToDispatcher::Command(command, self.last_now), observe).await;
                    }
                    None => commands_open = false,
                },
                Some(decision) = self.dispatcher.decisions.recv() => self.on_decision(decision, observe),
                loaded = reloaded(&mut self.reloading) => self.on_reloaded(loaded, observe),
                _ = shutdown.changed() => break,
            }
            if self.stopping || (sensors.done && sensors.tasks.is_empty() && stop_when_sensors_end) {
                break;
            }
            let next = self.next_tick(last_tick, tick);
            if next != ticker.deadline() {
                ticker.as_mut().reset(next);
            }
        }
    }

    /// When the next wall-clock tick is due: `tick` after the last one while
    /// the evaluator has work on every tick; when it is idle (no instances,
    /// nothing unevaluated: a quiet fabric), at its next stale scan, at most
    /// [`DISPATCHER_TICK`] away, and the tick's housekeeping is done then
    /// ([`Self::on_tick`]). A quiet daemon wakes 4 times a second instead of
    /// 20 and still decides on the batch that brings a fault (batches are
    /// evaluated as they arrive, not on ticks). Asked after every event, so
    /// a batch that starts an instance brings the ticks back at once.
    fn next_tick(&self, last_tick: tokio::time::Instant, tick: Duration) -> tokio::time::Instant {
        let every_tick = last_tick + tick;
        let Some(idle_until) = self.evaluator.idle_until() else { return every_tick };
        let wait = idle_until.saturating_sub(wall_clock_now()).clamp(0, DISPATCHER_TICK) as u64;
        every_tick.max(tokio::time::Instant::now() + Duration::from_nanos(wait))
    }

    /// Lets the dispatcher finish what it was given, reports it, and flushes
    /// the recording and the instance state. Once the daemon is asked to
    /// stop, the dispatcher gets `grace` to finish; then its task is
    /// stopped where it waits, as a crash would stop it: an intent is on
    /// disk before any change, and the next start settles it.
    pub async fn finish(
        self,
        grace: Duration,
        observe: &mut (impl FnMut(&DaemonEvent) + Send),
    ) -> Result<RunSummary, std::io::Error> {
        let EventLoop { evaluator, mut recorder, dispatcher, tally, mut shutdown, .. } = self;
        let mut decisions = tally.decisions;
        let DispatcherTask { inbox, decisions: mut decided, task, .. } = dispatcher;
        drop(inbox);
        let mut deadline = None;
        loop {
            let out_of_time = async move {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                decision = decided.recv() => match decision {
                    Some(decision) => {
                        decisions += 1;
                        observe(&DaemonEvent::Decision(Box::new(decision)));
                    }
                    None => break,
                },
                _ = stopped(&mut shutdown), if deadline.is_none() => {
                    deadline = Some(tokio::time::Instant::now() + grace);
                }
                _ = out_of_time => {
                    task.abort();
                    tracing::error!(
                        message = "The dispatcher did not finish within the shutdown timeout; stopped where it was.",
                        timeout = ?grace,
                        consequence = "what it had not decided is proposed again at the next start",
                    );
                    break;
                }
            }
        }
        let _ = task.await;
        if let Some(w) = recorder.as_mut() {
            w.finish()?;
        }
        if let Err(error) = evaluator.flush() {
            tracing::error!(message = "Could not flush instance state.", %error);
        }
        Ok(RunSummary { stats: evaluator.stats().clone(), decisions })
    }

    /// Every second of wall time: the recording's buffered frames reach the
    /// file, and a block whose first sample waited its span is written, so
    /// `timeline`, `why` and `replay` on a running daemon see up to a
    /// block's span ago.
    fn flush_recording(&mut self) {
        if let Some(Err(error)) = self.recorder.as_mut().map(RecordingFile::flush) {
            tracing::error!(message = "Could not write the recording.", %error);
        }
    }

    async fn on_batch(&mut self, mut batch: Batch, observe: &mut (impl FnMut(&DaemonEvent) + Send)) {
        self.screen(&mut batch);
        if let Some(w) = self.recorder.as_mut() {
            record_batch(w, &self.evaluator, &batch);
        }
        if let Some(sink) = self.sink.as_mut() {
            sink.offer(&batch.samples);
        }
        for note in &batch.notes {
            if note.kind == Note::RECONNECTED {
                let reconnected = ToDispatcher::Reconnected { target: note.labels.clone(), at: note.ts };
                self.send_to_dispatcher(reconnected, observe).await;
            }
            observe(&DaemonEvent::Note(note.clone()));
        }
        self.evaluator.ingest(&batch.samples);
        let refused = self.evaluator.take_refusals();
        self.refusals.report(&refused, self.evaluator.series(), &self.health);
        let stepped = self.evaluator.take_steps_back();
        self.refusals.report_steps_back(&stepped, self.evaluator.series(), &self.health);
        let now = match self.clock {
            ClockMode::Wall => wall_clock_now(),
            ClockMode::Samples => self.guard.clock().unwrap_or(self.last_now),
        };
        self.evaluate(now, observe).await;
        if self.clock == ClockMode::Samples {
            self.send_to_dispatcher(ToDispatcher::Tick(now), observe).await;
        }
    }

    /// Drops the samples and notes of `batch` stamped too far ahead of the
    /// clock, and reports them.
    fn screen(&mut self, batch: &mut Batch) {
        let wall = wall_clock_now();
        let mut refused = Vec::new();
        let guard = &mut self.guard;
        let series = self.evaluator.series();
        batch.samples.retain(|s| match guard.admit_from(Some(s.series), s.ts, wall, |id| source_of(series, id)) {
            Ok(()) => true,
            Err(refusal) => {
                refused.push(Refused { series: s.series, ts: s.ts, refusal });
                false
            }
        });
        batch.notes.retain(|n| {
            if n.kind == SEGMENT_START {
                guard.segment_start(n.ts);
                return true;
            }
            guard.admit(None, n.ts, wall).is_ok()
        });
        for step in guard.take_steps_back() {
            tracing::warn!(
                message = "The recording's clock stepped back; evaluation goes on from there.",
                by = %crate::time::Span(step.from - step.to),
                from = %crate::time::rfc3339(step.from),
                to = %crate::time::rfc3339(step.to),
            );
        }
        self.tally.refused_future += refused.len() as u64;
        self.refusals.report(&refused, self.evaluator.series(), &self.health);
    }

    /// A wall-clock tick: evaluation, and the housekeeping on a scale of
    /// seconds. The next tick may be up to [`DISPATCHER_TICK`] away
    /// ([`Self::next_tick`]), so what falls due before then is done now
    /// rather than late: the dispatcher's ticks come one evaluation tick
    /// early rather than a whole idle interval late.
    async fn on_tick(&mut self, tick: Duration, observe: &mut (impl FnMut(&DaemonEvent) + Send)) {
        let now = wall_clock_now();
        self.evaluate(now, observe).await;
        let early = (tick.as_nanos() as Nanos).min(DISPATCHER_TICK);
        if now.saturating_sub(self.tally.dispatcher_ticked) >= DISPATCHER_TICK - early {
            self.tally.dispatcher_ticked = now;
            self.send_to_dispatcher(ToDispatcher::Tick(now), observe).await;
        }
    }

    /// One evaluation pass at `now`, its events forwarded and observed.
    async fn evaluate(&mut self, now: Nanos, observe: &mut (impl FnMut(&DaemonEvent) + Send)) {
        self.last_now = now;
        let started = Instant::now();
        self.evaluator.evaluate(now, &mut self.events);
        self.tally.evaluations += 1;
        self.tally.evaluation_ns += started.elapsed().as_nanos() as u64;
        let mut events = std::mem::take(&mut self.events);
        for event in events.drain(..) {
            match &event {
                EngineEvent::Proposal(p) => self.send_to_dispatcher(ToDispatcher::Proposal(p.clone()), observe).await,
                EngineEvent::Transition { rule, subject, from: State::Firing, at, .. } => {
                    let resolved = ToDispatcher::Resolved { rule: rule.clone(), subject: subject.clone(), at: *at };
                    self.send_to_dispatcher(resolved, observe).await;
                }
                _ => {}
            }
            observe(&DaemonEvent::Engine(event));
        }
        self.events = events;
        for due in self.dispatcher.canaries.take_due(now) {
            let reading = self.evaluator.reading(&due.rule, &due.subject, &due.signal, now);
            self.send_to_dispatcher(ToDispatcher::JudgeCanary { id: due.id, reading, at: now }, observe).await;
        }
        for open in self.dispatcher.outcomes.due(now) {
            let seen = self.evaluator.observe(&open.request(), now);
            self.send_to_dispatcher(ToDispatcher::JudgeOutcome { id: open.id, seen, at: now }, observe).await;
        }
    }

    /// Hands `msg` to the dispatcher's task. Its inbox is bounded, and so
    /// is the channel its decisions come back on: waiting for room in the
    /// inbox without taking its decisions would let each side wait for the
    /// other for ever once both are full (a replay at full speed that makes
    /// decisions faster than the dispatcher settles them did: it stopped at
    /// about a thousand). So while it waits, the loop takes the decisions as
    /// they come, and it gives up when the daemon is asked to stop: the
    /// message is dropped, as a crash would drop it (a firing instance
    /// proposes again at the next start; an action that outlived its
    /// incident is undone then).
    async fn send_to_dispatcher(&mut self, msg: ToDispatcher, observe: &mut (impl FnMut(&DaemonEvent) + Send)) {
        if self.stopping {
            return;
        }
        loop {
            let decision = tokio::select! {
                biased;
                permit = self.dispatcher.inbox.reserve() => {
                    if let Ok(permit) = permit {
                        permit.send(msg);
                    }
                    return;
                }
                Some(decision) = self.dispatcher.decisions.recv() => decision,
                _ = stopped(&mut self.shutdown) => {
                    self.stopping = true;
                    return;
                }
            };
            self.on_decision(decision, observe);
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
            EngineCommand::Reload(request) => self.reload(request, observe),
            EngineCommand::View { reply } => {
                let mut stats = self.evaluator.stats().clone();
                stats.refused.future = self.tally.refused_future;
                let _ = reply.send(EngineView {
                    stats,
                    rules: self.evaluator.rules().map(|(r, h)| (r.clone(), h.clone())).collect(),
                    instances: self.evaluator.instances(),
                    series: self.evaluator.series().read().len(),
                    evaluations: self.tally.evaluations,
                    evaluation_ns: self.tally.evaluation_ns,
                });
            }
        }
    }

    /// Starts loading the rules again, off the loop; while a load is under
    /// way, the request waits for one more after it.
    fn reload(&mut self, request: ReloadRequest, observe: &mut (impl FnMut(&DaemonEvent) + Send)) {
        if let Some(reloading) = &mut self.reloading {
            reloading.queued.push(request);
            return;
        }
        let Some(loader) = &self.loader else {
            observe(&DaemonEvent::ReloadFailed(vec![ReloadError::NoRuleDirectory.to_string()]));
            if let Some(reply) = request.reply {
                let _ = reply.send(Err(ReloadError::NoRuleDirectory));
            }
            return;
        };
        self.reloading = Some(Reloading::start(loader, self.evaluator.helpers().clone(), vec![request]));
    }

    /// A load finished: the new rules are swapped in, or refused with the
    /// running ones kept; every request it served is answered.
    fn on_reloaded(
        &mut self,
        loaded: Result<crate::rule::RuleSet, Vec<String>>,
        observe: &mut (impl FnMut(&DaemonEvent) + Send),
    ) {
        let Some(reloading) = self.reloading.take() else { return };
        let allow_shrink = reloading.requests.iter().any(|r| r.allow_shrink);
        let running = self.evaluator.rules().count();
        let result = loaded.and_then(|rules| match shrink_refusal(running, rules.rules.len(), allow_shrink) {
            Some(reason) => Err(vec![reason]),
            None => Ok(self.evaluator.reload(rules)),
        });
        match &result {
            Ok(report) => {
                tracing::info!(
                    message = "Rules reloaded.",
                    unchanged = report.unchanged.len(),
                    changed = report.changed.len(),
                    added = report.added.len(),
                    removed = report.removed.len()
                );
                observe(&DaemonEvent::Reloaded(report.clone()));
            }
            Err(errors) => {
                for error in errors {
                    tracing::error!(message = "Reload refused; the running rules stay.", %error);
                }
                observe(&DaemonEvent::ReloadFailed(errors.clone()));
            }
        }
        for request in reloading.requests {
            if let Some(reply) = request.reply {
                let _ = reply.send(result.clone().map_err(ReloadError::Refused));
            }
        }
        let mut queued = reloading.queued.into_iter();
        if let Some(first) = queued.next() {
            self.reload(first, observe);
            if let Some(again) = &mut self.reloading {
                again.requests.extend(queued);
            }
        }
    }

    fn on_decision(&mut self, decision: crate::dispatch::Decision, observe: &mut (impl FnMut(&DaemonEvent) + Send)) {
        self.tally.decisions += 1;
        observe(&DaemonEvent::Decision(Box::new(decision)));
    }
}

/// Whose clock stamps the samples of `series`: its node's, else its
/// switch's, else its sensor's (see [`super::time_guard`]).
fn source_of(series: &crate::series::SeriesTable, id: crate::series::SeriesId) -> super::time_guard::Source {
    let reg = series.read();
    let info = reg.info(id);
    for (tag, key) in [(1u64, "node"), (2, "switch")] {
        if let Some(value) = reg.interner().get(key).and_then(|sym| info.labels.get(sym)) {
            return tag << 32 | u64::from(value.0);
        }
    }
    3 << 32 | u64::from(info.sensor.0)
}

/// Resolves once `shutdown` is true (at once if it is already).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    while !*shutdown.borrow_and_update() {
        if shutdown.changed().await.is_err() {
            // The sender is gone: nobody can ask any more; never resolves.
            std::future::pending::<()>().await;
        }
    }
}

/// Resolves with the result of the reload in flight; never without one.
async fn reloaded(reloading: &mut Option<Reloading>) -> Result<crate::rule::RuleSet, Vec<String>> {
    match reloading {
        Some(r) => (&mut r.result).await.unwrap_or_else(|_| Err(vec!["the rule loader stopped".to_string()])),
        None => std::future::pending().await,
    }
}

fn record_batch(w: &mut RecordingFile, evaluator: &Evaluator, batch: &Batch) {
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

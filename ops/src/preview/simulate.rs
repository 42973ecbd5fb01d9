//! One preview run: a recording through a playbook's rules and its whole
//! safety policy, on the recording's clock, with planning actuators.
//!
//! This is the daemon's run loop on the samples' clock (as `chaos run`
//! drives it in lockstep): every evaluation's proposals go to the
//! dispatcher at the recorded time they were made, resolved instances
//! expire their requests and undo their actions, and the dispatcher's
//! housekeeping (approval expiry) runs at every recorded step. The
//! dispatcher's own clock is the recording's too, so nothing in a preview
//! depends on when it is run.

use std::io::BufReader;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use engine::dispatch::{ActuatorRoute, Decision, Dispatcher};
use engine::ledger::{Ledger, Retention};
use engine::{EngineEvent, Evaluator, Labels, Mode, Nanos, SeriesTable, State, Store};

use super::budget::LocalBudgets;
use super::planner::{Changed, Planner};
use super::PreviewError;
use crate::plan::{Components, PlaybookPart};
use crate::progress::Progress;

/// What the dispatcher did with one proposal, resolution or expiry.
#[derive(Debug, Clone)]
pub struct Line {
    /// The recorded time it happened at.
    pub at: Nanos,
    /// The decision.
    pub decision: Decision,
    /// The decision said again because its outcome check was judged.
    pub judged: bool,
}

impl Line {
    fn new(at: Nanos, decision: Decision) -> Line {
        Line { at, decision, judged: false }
    }

    /// The mode that applied.
    pub fn mode(&self) -> Mode {
        self.decision.mode
    }
}

/// What a playbook did on a recording.
#[derive(Debug, Default)]
pub struct Preview {
    /// Decisions in time order.
    pub lines: Vec<Line>,
    /// The recording's first and last timestamp.
    pub span: (Nanos, Nanos),
    /// Samples read.
    pub samples: u64,
    /// Requests still waiting for approval when the recording ends.
    pub waiting_at_end: usize,
}

/// What a run needs besides the recording.
pub struct Inputs<'a> {
    /// The playbook, its policy and rules, as `check` accepts them.
    pub part: &'a PlaybookPart,
    /// The series table the rules were loaded with.
    pub series: SeriesTable,
    /// The inventory, for limits in topology terms.
    pub topology: Option<Arc<engine::Topology>>,
    /// The fleet budgets to count locally, if the daemon config has any.
    pub budgets: Option<LocalBudgets>,
    /// What builds the dispatcher's settings.
    pub components: &'a dyn Components,
}

/// The playbook's routes with each actuator replaced by a planning one of
/// the same name: the same kinds reach the same names, destructive or not.
fn planned_routes(part: &PlaybookPart) -> Vec<ActuatorRoute> {
    let changed = Changed::default();
    part.routes
        .iter()
        .map(|r| ActuatorRoute {
            pattern: r.pattern.clone(),
            actuator: Arc::new(Planner::new(r.actuator.name(), r.actuator.kinds().to_vec(), changed.clone())),
            destructive: r.destructive,
        })
        .collect()
}

/// Runs `recording` through `inputs`; `progress` follows the bytes read.
pub fn run(recording: &Path, inputs: Inputs<'_>, progress: &Progress) -> Result<Preview, PreviewError> {
    let Inputs { part, series, topology, budgets, components } = inputs;
    // Undo reads the record of what it undoes from the ledger: a ledger of
    // the preview's own, thrown away with it.
    let state = tempfile::Builder::new().prefix("rocemend-preview-").tempdir()?;
    let store = Store::open(&state.path().join("state.sled"))?;
    let ledger = Ledger::open(&store, Retention::default())?;
    let config = components.dispatch_config(&part.playbook, planned_routes(part), part.policy.clone(), topology);
    let clock = Arc::new(AtomicI64::new(0));
    let now = clock.clone();
    let mut dispatcher = Dispatcher::new(config, Some(ledger)).with_clock(Arc::new(move || now.load(Ordering::SeqCst)));
    if let Some(budgets) = budgets {
        dispatcher = dispatcher.with_coordinator(Arc::new(budgets), part.playbook.scopes());
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let file = std::fs::File::open(recording)
        .map_err(|source| PreviewError::Open { path: recording.to_path_buf(), source })?;
    let mut lines = Vec::new();
    let backtest = engine::backtest::run_steps(
        BufReader::new(progress.reader(file)),
        &recording.display().to_string(),
        part.rules.clone(),
        series,
        |t, events, evaluator| {
            clock.store(t, Ordering::SeqCst);
            rt.block_on(step(&mut dispatcher, t, events, &mut lines));
            rt.block_on(judge_outcomes(&mut dispatcher, evaluator, t, &mut lines));
        },
    )?;
    let waiting_at_end = dispatcher.pending().count();
    drop(dispatcher);
    drop(store);
    Ok(Preview { lines, span: backtest.span, samples: backtest.samples, waiting_at_end })
}

/// One evaluation's events through the dispatcher, as the run loop hands
/// them over, then its housekeeping at `t`.
async fn step(dispatcher: &mut Dispatcher, t: Nanos, events: &mut Vec<EngineEvent>, lines: &mut Vec<Line>) {
    for event in events.drain(..) {
        match event {
            EngineEvent::Proposal(p) => {
                let decision = dispatcher.dispatch(p).await;
                lines.push(Line::new(t, decision));
            }
            EngineEvent::Transition { rule, subject, from: State::Firing, at, .. } => {
                let resolved: &Labels = &subject;
                for decision in dispatcher.instance_resolved(&rule, resolved, at).await {
                    lines.push(Line::new(t, decision));
                }
            }
            _ => {}
        }
    }
    for decision in dispatcher.maintain(t) {
        lines.push(Line::new(t, decision));
    }
}

/// The outcome checks due at `t`, read off the rules as the run loop reads
/// them, and the ladders' rungs that failed climbed: a judged decision is
/// said again (`judged`), and a rung decided after it follows it.
async fn judge_outcomes(dispatcher: &mut Dispatcher, evaluator: &mut Evaluator, t: Nanos, lines: &mut Vec<Line>) {
    for decision in dispatcher.judge_due(t, |w| evaluator.observe(&w.request(), t)).await {
        // The action's own decision, said again with its judgement (not an
        // undo, a page, or the next rung, whose check is open).
        let judged = decision.undo_of.is_none() && decision.outcome.as_ref().is_some_and(|o| !o.is_open());
        lines.push(Line { at: t, decision, judged });
    }
}

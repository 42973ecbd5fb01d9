//! Backtesting: what a rule set would have done on a recording, and how two
//! rule sets differ on it (`rocemend replay`).
//!
//! The recording is evaluated on its own time, as fast as it can be read:
//! every group of lines with one timestamp is ingested, then evaluated at
//! that timestamp, exactly as the daemon would have seen it.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::sync::Arc;

use crate::contracts::Note;
use crate::contracts::Proposal;
use crate::evaluator::{EngineEvent, Evaluator};
use crate::labels::Labels;
use crate::recording::SEGMENT_START;
use crate::recording::{Event, Reader, RecordingError};
use crate::rule::RuleSet;
use crate::runtime::{ClockMode, TimeGuard, DEFAULT_MAX_AHEAD};
use crate::series::{Sample, SeriesId, SeriesTable};
use crate::time::Nanos;
use crate::topology::Topology;

/// A backtest could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BacktestError {
    /// The recording is malformed.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// A series could not be registered.
    #[error("{0}")]
    Series(#[from] crate::series::SeriesError),
    /// The state store failed (never: backtests use none).
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
}

/// What a rule set did on a recording.
#[derive(Debug, Clone, Default)]
pub struct Backtest {
    /// Every engine event, with the recording time it happened at.
    pub events: Vec<EngineEvent>,
    /// Notes found in the recording.
    pub notes: Vec<Note>,
    /// Samples read.
    pub samples: u64,
    /// First and last timestamp.
    pub span: (Nanos, Nanos),
    /// Samples and notes refused: stamped far ahead of the recording's
    /// clock, or readings no counter can hold.
    pub refused: u64,
}

impl Backtest {
    /// The proposals made.
    pub fn proposals(&self) -> impl Iterator<Item = &Proposal> {
        self.events.iter().filter_map(|e| match e {
            EngineEvent::Proposal(p) => Some(p),
            _ => None,
        })
    }
}

/// Runs `rules` over the recording read from `input`.
pub fn run(
    input: impl BufRead,
    origin: &str,
    rules: RuleSet,
    topology: Option<Arc<Topology>>,
) -> Result<Backtest, BacktestError> {
    let mut events = Vec::new();
    let series = SeriesTable::new(topology, Labels::default());
    let mut out = run_steps(input, origin, rules, series, |_, step, _| events.append(step))?;
    out.events = events;
    Ok(out)
}

/// Runs `rules` over the recording read from `input`, handing each
/// evaluation's events to `on_step` with the recorded time it ran at, as
/// it happens: a caller that acts on them (`rocemend preview` dispatches
/// them) sees the recording's clock advance between two steps, as the
/// daemon does. The returned backtest holds no events: `on_step` had them.
/// `series` is the table the rules were loaded with (their helpers read
/// it), empty.
pub fn run_steps(
    input: impl BufRead,
    origin: &str,
    rules: RuleSet,
    series: SeriesTable,
    mut on_step: impl FnMut(Nanos, &mut Vec<EngineEvent>, &mut Evaluator),
) -> Result<Backtest, BacktestError> {
    let sensor = series.add_sensor("replay", usize::MAX);
    let mut evaluator = Evaluator::new(series.clone(), rules, None)?;
    let mut reader = Reader::new(input, origin);
    let mut ids: BTreeMap<u32, SeriesId> = BTreeMap::new();
    let mut out = Backtest { span: (Nanos::MAX, Nanos::MIN), ..Backtest::default() };
    let mut batch: Vec<Sample> = Vec::new();
    let mut batch_time: Option<Nanos> = None;
    let mut step: Vec<EngineEvent> = Vec::new();
    let mut flush = |evaluator: &mut Evaluator, batch: &mut Vec<Sample>, t: Nanos| {
        evaluator.ingest(batch);
        batch.clear();
        evaluator.evaluate(t, &mut step);
        on_step(t, &mut step, evaluator);
        step.clear();
    };
    // The daemon's guard on a recording's clock: a sample far ahead of the
    // recording's time is refused, so one bad timestamp moves nothing.
    let mut guard = TimeGuard::new(ClockMode::Samples, DEFAULT_MAX_AHEAD);
    while let Some(event) = reader.next_event()? {
        let t = match &event {
            Event::Series(id, spec) => {
                ids.insert(*id, series.register(sensor, spec)?);
                continue;
            }
            Event::Sample { id, t, .. } => guard.admit(ids.get(id).copied(), *t, 0).is_ok().then_some(*t),
            Event::Note(n) if n.kind == SEGMENT_START => {
                guard.segment_start(n.ts);
                Some(n.ts)
            }
            Event::Note(n) => guard.admit(None, n.ts, 0).is_ok().then_some(n.ts),
        };
        let Some(t) = t else {
            out.refused += 1;
            continue;
        };
        if let Some(bt) = batch_time.filter(|bt| *bt != t) {
            // Every time here was admitted by the guard: evaluating at it
            // never jumps the clock.
            flush(&mut evaluator, &mut batch, bt);
        }
        batch_time = Some(t);
        out.span = (out.span.0.min(t), out.span.1.max(t));
        match event {
            Event::Sample { id, t, value } => {
                let series_id = *ids.get(&id).expect("the reader checks declarations");
                batch.push(Sample { series: series_id, ts: t, value });
                out.samples += 1;
            }
            Event::Note(n) => out.notes.push(n),
            Event::Series(..) => {}
        }
    }
    if let Some(bt) = batch_time {
        flush(&mut evaluator, &mut batch, bt);
    }
    out.refused += evaluator.stats().refused.total();
    Ok(out)
}

/// How one proposal compares between two backtests.
#[derive(Debug, Clone, PartialEq)]
pub enum DiffLine {
    /// Proposed by both, at these times.
    Both {
        /// `rule subject action`.
        key: String,
        /// Time in the first set.
        a: Nanos,
        /// Time in the second set.
        b: Nanos,
    },
    /// Proposed only by the first set.
    OnlyA {
        /// `rule subject action`.
        key: String,
        /// When.
        at: Nanos,
    },
    /// Proposed only by the second set.
    OnlyB {
        /// `rule subject action`.
        key: String,
        /// When.
        at: Nanos,
    },
}

/// Compares the proposals of two backtests of one recording. Proposals are
/// matched by rule, subject and action, in order of occurrence.
pub fn diff(a: &Backtest, b: &Backtest) -> Vec<DiffLine> {
    let key = |p: &Proposal| format!("{} {} → {}", p.rule, p.subject, p.action);
    let mut left: BTreeMap<String, Vec<Nanos>> = BTreeMap::new();
    for p in a.proposals() {
        left.entry(key(p)).or_default().push(p.decided_at);
    }
    let mut right: BTreeMap<String, Vec<Nanos>> = BTreeMap::new();
    for p in b.proposals() {
        right.entry(key(p)).or_default().push(p.decided_at);
    }
    let mut out = Vec::new();
    let keys: std::collections::BTreeSet<&String> = left.keys().chain(right.keys()).collect();
    for k in keys {
        let (l, r) = (left.get(k).cloned().unwrap_or_default(), right.get(k).cloned().unwrap_or_default());
        for i in 0..l.len().max(r.len()) {
            out.push(match (l.get(i), r.get(i)) {
                (Some(a), Some(b)) => DiffLine::Both { key: k.clone(), a: *a, b: *b },
                (Some(a), None) => DiffLine::OnlyA { key: k.clone(), at: *a },
                (None, Some(b)) => DiffLine::OnlyB { key: k.clone(), at: *b },
                (None, None) => unreachable!("i is below one of the lengths"),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::{load_sources, Helpers};

    const RECORDING: &str = r#"{"series":0,"metric":"flaps","labels":{"node":"n1"},"kind":"counter","bits":32,"overflow":"wrap"}
{"s":0,"t":0,"v":0}
{"s":0,"t":1000000000,"v":2}
{"s":0,"t":2000000000,"v":5}
"#;

    fn rules(threshold: u32) -> RuleSet {
        let src = format!(
            r#"fn fire(w) {{ w.n >= {threshold}.0 }}
#{{ name: "flap", select: ["flaps"], group_by: ["node"], windows: #{{ n: increase("flaps", "10s") }},
   actions: [ #{{ action: "link.isolate", target: #{{ node: "{{node}}" }} }} ] }}"#
        );
        load_sources(&[("flap.rhai".into(), src)], Helpers::default()).unwrap()
    }

    #[test]
    fn a_backtest_proposes_on_recorded_time() {
        let bt = run(RECORDING.as_bytes(), "rec", rules(2), None).unwrap();
        let proposals: Vec<_> = bt.proposals().collect();
        assert_eq!(proposals.len(), 1);
        assert_eq!(proposals[0].decided_at, 1_000_000_000);
        assert_eq!(bt.samples, 3);
        assert_eq!(bt.span, (0, 2_000_000_000));
    }

    #[test]
    fn a_diff_shows_when_each_set_acts() {
        let a = run(RECORDING.as_bytes(), "rec", rules(2), None).unwrap();
        let b = run(RECORDING.as_bytes(), "rec", rules(4), None).unwrap();
        let c = run(RECORDING.as_bytes(), "rec", rules(9), None).unwrap();
        assert!(matches!(&diff(&a, &b)[..], [DiffLine::Both { a: 1_000_000_000, b: 2_000_000_000, .. }]));
        assert!(matches!(&diff(&a, &c)[..], [DiffLine::OnlyA { at: 1_000_000_000, .. }]));
    }
}

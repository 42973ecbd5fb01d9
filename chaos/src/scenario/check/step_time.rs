//! What the faults cost the jobs: the `step_time_ratio` probe (the slowest
//! job's step time over its healthy one), its baseline before the first
//! fault, the worst during the faults, when it came back, and the
//! `step_time` expectation.
//!
//! "Back" is [`StepTime::is_back`] (within `within` of the baseline) on
//! every point from then on, to the end of the window judged, with the
//! steady state's `hold` still to run — the rule the steady state's
//! recovery follows.

use engine::time::Nanos;

use super::{ms, settled, Window};
use crate::report::record::{FaultOutcome, ProbeSeries, RunOutcome, RunRecord, StepTime};
use crate::scenario::plan::{ScenarioPlan, STEP_TIME_PROBE};

/// The recorded step-time series, if the run has one.
fn series(record: &RunRecord) -> Option<&ProbeSeries> {
    record.probes.iter().find(|p| p.name == STEP_TIME_PROBE)
}

/// The tolerance of "back": the scenario's, else the default.
fn within(plan: &ScenarioPlan) -> f64 {
    plan.expect.step_time.map(|s| s.within).unwrap_or(StepTime::DEFAULT_WITHIN)
}

/// The run's step time: the mean before the first fault (`fault_at`), the
/// worst and when it came back from then on. `None` when it was not
/// recorded (no job, or the wall clock).
pub(super) fn of_run(plan: &ScenarioPlan, record: &RunRecord, fault_at: Option<Nanos>) -> Option<StepTime> {
    let s = series(record)?;
    let before: Vec<f64> =
        s.points.iter().filter(|p| fault_at.is_none_or(|f| p.0 < f) && p.1.is_finite()).map(|p| p.1).collect();
    let baseline = (!before.is_empty()).then(|| before.iter().sum::<f64>() / before.len() as f64);
    let within = within(plan);
    let Some(from) = fault_at else { return Some(StepTime { baseline, within, ..StepTime::default() }) };
    let window = Window::to_end(from, record);
    let (worst, worst_at) = worst(record, window).unzip();
    let back_at = baseline.and_then(|b| back_at(plan, record, b, within, window));
    Some(StepTime { baseline, within, worst, worst_at, back_at })
}

/// The highest ratio in `w`, and when.
pub(super) fn worst(record: &RunRecord, w: Window) -> Option<(f64, Nanos)> {
    series(record)?.points.iter().filter(|p| w.contains(p.0) && p.1.is_finite()).fold(
        None,
        |best: Option<(f64, Nanos)>, &(t, v)| match best {
            Some((b, _)) if b >= v => best,
            _ => Some((v, t)),
        },
    )
}

/// When the ratio was back within `within` of `baseline` for good in `w`.
pub(super) fn back_at(plan: &ScenarioPlan, record: &RunRecord, baseline: f64, within: f64, w: Window) -> Option<Nanos> {
    let points = series(record)?.points.iter().map(|&(t, v)| (t, StepTime::is_back(v, baseline, within)));
    settled(points, w, plan.hold)
}

/// The `step_time` expectation against `outcome`: for each fault that
/// happened, the step time back within `after` of its end — of its
/// mitigation when it did not end within the run, of its start when it
/// was not mitigated either.
pub(super) fn failures(plan: &ScenarioPlan, outcome: &RunOutcome) -> Vec<String> {
    let Some(expect) = plan.expect.step_time else { return Vec::new() };
    let baseline = outcome.step_time.as_ref().and_then(|s| s.baseline);
    let Some(baseline) = baseline else {
        return vec![format!("step time: no baseline, no {STEP_TIME_PROBE} recorded before the first fault")];
    };
    let pct = expect.within * 100.0;
    let mut out = Vec::new();
    for f in outcome.faults.iter().filter(|f| f.moments.fault_at.is_some()) {
        let (origin, what) = origin(f);
        match f.step_back_at {
            Some(back) if back - origin <= expect.after => {}
            Some(back) => out.push(format!(
                "step time after {}: back within {pct:.0} % of its baseline {baseline:.3} {} after {what}; expected within {}",
                f.label,
                ms(back - origin),
                ms(expect.after)
            )),
            None => out.push(format!(
                "step time after {}: not back within {pct:.0} % of its baseline {baseline:.3} before the next fault or the run's end (worst {}); expected within {} of {what}",
                f.label,
                f.step_worst.map(|w| format!("{w:.3}")).unwrap_or_else(|| "-".into()),
                ms(expect.after)
            )),
        }
    }
    out
}

/// Where a fault's step-time deadline counts from, and its name.
fn origin(f: &FaultOutcome) -> (Nanos, &'static str) {
    match (f.ended_at, f.moments.mitigated_at, f.moments.fault_at) {
        (Some(end), _, _) => (end, "the fault's end"),
        (None, Some(m), _) => (m, "its mitigation (it did not end)"),
        (None, None, start) => (start.unwrap_or_default(), "its start (it neither ended nor was mitigated)"),
    }
}

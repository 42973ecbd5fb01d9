//! What a run saw, with every timestamp: the JSON report's content.
//!
//! Times are nanoseconds since the epoch on the run's clock (the virtual
//! clock starts at a fixed instant, so a seed always gives the same
//! record); `start` is the run's origin and the offsets shown in the HTML
//! page are taken from it.

use std::collections::BTreeMap;

use engine::time::Nanos;
use serde::{Deserialize, Serialize};

pub use super::stats::Stats;

/// One fault occurrence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// What and where.
    pub label: String,
    /// The nodes it touched.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// Start.
    pub start: Nanos,
    /// End, if it ended within the run.
    pub end: Option<Nanos>,
}

/// A rule instance changed state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransitionRecord {
    /// When.
    pub at: Nanos,
    /// The rule.
    pub rule: String,
    /// Its subject.
    pub subject: BTreeMap<String, String>,
    /// From.
    pub from: String,
    /// To.
    pub to: String,
}

/// A dispatcher decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// When it was decided.
    pub at: Nanos,
    /// The decision id.
    pub id: String,
    /// The rule.
    pub rule: String,
    /// The action kind.
    pub action: String,
    /// The action's target.
    pub target: BTreeMap<String, String>,
    /// The verdict (`executed`, `held`, `dry-run`, …).
    pub verdict: String,
    /// Why, for verdicts with a reason.
    #[serde(default)]
    pub reason: Option<String>,
    /// For an undo: the decision it undoes.
    #[serde(default)]
    pub undo_of: Option<String>,
    /// For a canary: `open` until judged, then `promoted`, `reverted`, `kept` or `unread`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<String>,
    /// For an executed change: its outcome check, `open` until judged, then
    /// `effective`, `ineffective`, `harmful` or `unread`. A decision is
    /// recorded again when its canary or its outcome is judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The outcome check's judgement as `explain` tells it, once judged
    /// (`outcome: harmful after 4.0 s: job.step_time 0.500 → 0.557`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgement: Option<String>,
    /// What the actuator sent (executed) or would send (dry-run), e.g.
    /// the text of a gNMI SetRequest and the switch's address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<String>,
}

/// A probe's values, one per step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSeries {
    /// The probe.
    pub name: String,
    /// `(time, value)`.
    pub points: Vec<(Nanos, f64)>,
}

/// The instants a recovery is measured by, the same for a whole run and
/// for each of its faults, so the durations between them are computed in
/// one place. Flattened into both, so the JSON keeps its keys; each is
/// absent (`None`) when it did not happen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Moments {
    /// The (first) fault's start.
    pub fault_at: Option<Nanos>,
    /// The start of the last fault occurrence at or before detection (the
    /// flap that made the count, the storm itself).
    pub trigger_at: Option<Nanos>,
    /// When a detecting rule first fired.
    pub detected_at: Option<Nanos>,
    /// When a mitigating action was first executed (undos and
    /// notifications do not count).
    pub mitigated_at: Option<Nanos>,
    /// When the steady state held again (and kept holding); `None` when it
    /// never did, or when the scenario has no steady state to hold.
    pub recovered_at: Option<Nanos>,
}

/// From `from` to `to`, ns, when both happened.
fn between(from: Option<Nanos>, to: Option<Nanos>) -> Option<Nanos> {
    Some(to? - from?)
}

impl Moments {
    /// Time to detect, ns from the fault's start.
    pub fn ttd(&self) -> Option<Nanos> {
        between(self.fault_at, self.detected_at)
    }
    /// Time to mitigate, ns from the fault's start.
    pub fn ttm(&self) -> Option<Nanos> {
        between(self.fault_at, self.mitigated_at)
    }
    /// Time to recover, ns from the fault's start.
    pub fn ttr(&self) -> Option<Nanos> {
        between(self.fault_at, self.recovered_at)
    }
    /// Time from the trigger to detection, ns.
    pub fn trigger_ttd(&self) -> Option<Nanos> {
        between(self.trigger_at, self.detected_at)
    }
    /// Time from the trigger to mitigation, ns.
    pub fn trigger_ttm(&self) -> Option<Nanos> {
        between(self.trigger_at, self.mitigated_at)
    }
}

/// How a run ended against its expectations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunOutcome {
    /// Every expectation held.
    pub passed: bool,
    /// Why the run was aborted early, if it was.
    pub aborted: Option<String>,
    /// Each expectation that failed, in words.
    pub failures: Vec<String>,
    /// From the first fault's start to recovery, over every fault.
    #[serde(flatten)]
    pub moments: Moments,
    /// Each `[[fault]]` of the scenario (all its occurrences) with its own
    /// detection, mitigation and recovery, in the scenario's order.
    pub faults: Vec<FaultOutcome>,
    /// The jobs' step time, when the run recorded it (a scenario with a
    /// `[[job]]`).
    pub step_time: Option<StepTime>,
}

impl RunOutcome {
    /// Time from the first fault's start until the step time was back
    /// within tolerance of its baseline, ns.
    pub fn step_back(&self) -> Option<Nanos> {
        between(self.moments.fault_at, self.step_time.as_ref()?.back_at)
    }
}

/// One `[[fault]]` of the scenario in one run, all its occurrences
/// together: when it started, and when the daemon detected and mitigated
/// *it* (a rule firing, an action executed, on its location) and the
/// steady state held again after it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FaultOutcome {
    /// Its index among the scenario's `[[fault]]`s.
    pub fault: usize,
    /// What and where (its occurrences' label).
    pub label: String,
    /// Its occurrences in the run (repeats, flaps).
    pub occurrences: usize,
    /// From its first occurrence's start; a rule firing on a subject at
    /// its location, an action executed on a target there, the steady
    /// state back after it.
    #[serde(flatten)]
    pub moments: Moments,
    /// Its last occurrence's end, when every occurrence ended within the
    /// run.
    pub ended_at: Option<Nanos>,
    /// The rule and subject that detected it (`link-flap {node=node-03,
    /// netdev=eth5}`).
    pub detected_by: Option<String>,
    /// The action and target that mitigated it.
    pub mitigated_by: Option<String>,
    /// The highest step-time ratio from its start until the next fault
    /// that starts after it ended (or the run's end).
    pub step_worst: Option<f64>,
    /// When the step time was back within tolerance of the baseline (and
    /// stayed), over the same span.
    pub step_back_at: Option<Nanos>,
}

impl FaultOutcome {
    /// Time until the step time was back, ns from its first start.
    pub fn step_back(&self) -> Option<Nanos> {
        between(self.moments.fault_at, self.step_back_at)
    }
}

/// The jobs' step time in one run: the `step_time_ratio` probe, the
/// slowest job's step time over its healthy step time (the largest of the
/// jobs' `chaos_job_step_ratio` gauges).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTime {
    /// The mean ratio before the first fault; `None` when no point was
    /// recorded before it.
    pub baseline: Option<f64>,
    /// How far from the baseline still counts as back, a fraction (0.05:
    /// within 5 %): the scenario's `step_time.within`, else
    /// [`StepTime::DEFAULT_WITHIN`].
    pub within: f64,
    /// The highest ratio from the first fault's start on.
    pub worst: Option<f64>,
    /// When it was highest.
    pub worst_at: Option<Nanos>,
    /// When it was back within `within` of the baseline for good.
    pub back_at: Option<Nanos>,
}

impl StepTime {
    /// The tolerance when the scenario sets none: 5 %.
    pub const DEFAULT_WITHIN: f64 = 0.05;

    /// Whether `ratio` is within `within` of `baseline` (relative).
    pub fn is_back(ratio: f64, baseline: f64, within: f64) -> bool {
        ratio.is_finite() && (ratio - baseline).abs() <= within * baseline.abs()
    }
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Its index.
    pub run: u32,
    /// Its seed.
    pub seed: u64,
    /// Origin of the run's clock.
    pub start: Nanos,
    /// When it ended.
    pub end: Nanos,
    /// The faults.
    pub faults: Vec<FaultRecord>,
    /// Rule instance transitions.
    pub transitions: Vec<TransitionRecord>,
    /// Decisions.
    pub decisions: Vec<DecisionRecord>,
    /// Probes.
    pub probes: Vec<ProbeSeries>,
    /// Against the expectations.
    pub outcome: RunOutcome,
}

/// Time to detect, to mitigate and to recover across runs, and to detect
/// from the trigger: for a scenario as a whole and for each of its faults.
/// Flattened into both, so the JSON keeps its keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecoveryStats {
    /// Time to detect.
    pub detect: Stats,
    /// Time to mitigate.
    pub mitigate: Stats,
    /// Time to recover.
    pub recover: Stats,
    /// Time from the trigger to detection.
    #[serde(default)]
    pub detect_from_trigger: Stats,
}

impl RecoveryStats {
    /// The percentiles of `moments`, one per run.
    fn of<'a>(moments: impl Iterator<Item = &'a Moments> + Clone) -> RecoveryStats {
        let of = |f: fn(&Moments) -> Option<Nanos>| Stats::of(&moments.clone().filter_map(f).collect::<Vec<_>>());
        RecoveryStats {
            detect: of(Moments::ttd),
            mitigate: of(Moments::ttm),
            recover: of(Moments::ttr),
            detect_from_trigger: of(Moments::trigger_ttd),
        }
    }
}

/// MTTD, time to mitigate and MTTR across runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// From the first fault's start.
    #[serde(flatten)]
    pub recovery: RecoveryStats,
    /// Time from the trigger to mitigation.
    #[serde(default)]
    pub mitigate_from_trigger: Stats,
    /// The same per `[[fault]]` of the scenario, in its order.
    #[serde(default)]
    pub faults: Vec<FaultSummary>,
    /// The jobs' step time, when the runs recorded it.
    #[serde(default)]
    pub step_time: Option<StepTimeSummary>,
}

/// One `[[fault]]`'s times across runs, milliseconds from its first start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultSummary {
    /// Its index among the scenario's `[[fault]]`s.
    pub fault: usize,
    /// What and where.
    pub label: String,
    /// From its first start.
    #[serde(flatten)]
    pub recovery: RecoveryStats,
    /// The worst step-time ratio during it (a ratio, not ms).
    #[serde(default)]
    pub step_worst: Stats,
    /// Time until the step time was back.
    #[serde(default)]
    pub step_back: Stats,
}

/// The jobs' step time across runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTimeSummary {
    /// The baseline ratio before the first fault (a ratio).
    pub baseline: Stats,
    /// The worst ratio from the first fault on (a ratio).
    pub worst: Stats,
    /// Time until it was back, ms from the first fault's start.
    pub back: Stats,
    /// The tolerance that counted as back (the first run's).
    pub within: f64,
}

/// A report: a scenario's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The scenario's name.
    pub scenario: String,
    /// Its description.
    #[serde(default)]
    pub description: String,
    /// The scenario file.
    pub file: String,
    /// `virtual` or `wall`.
    pub clock: String,
    /// Sensor interval, ns.
    pub step: Nanos,
    /// Runs that passed.
    pub passed: usize,
    /// Runs that failed.
    pub failed: usize,
    /// Wall-clock time the runs took, ms.
    pub elapsed_ms: f64,
    /// Percentiles.
    pub summary: Summary,
    /// The steady-state bounds of the probes.
    #[serde(default)]
    pub bounds: Vec<crate::plan::Bound>,
    /// The runs.
    pub runs: Vec<RunRecord>,
    /// A fleet game day's own figures (absent from a scenario's report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<super::fleet::FleetFigures>,
}

impl Report {
    /// The summary of `runs`.
    pub fn summarize(runs: &[RunRecord]) -> Summary {
        let moments = runs.iter().map(|r| &r.outcome.moments);
        Summary {
            recovery: RecoveryStats::of(moments.clone()),
            mitigate_from_trigger: Stats::of(&moments.filter_map(Moments::trigger_ttm).collect::<Vec<_>>()),
            faults: Self::summarize_faults(runs),
            step_time: Self::summarize_step_time(runs),
        }
    }

    /// Each fault's percentiles, faults in index order; the label is the
    /// first run's.
    fn summarize_faults(runs: &[RunRecord]) -> Vec<FaultSummary> {
        let mut by_fault: BTreeMap<usize, Vec<&FaultOutcome>> = BTreeMap::new();
        for f in runs.iter().flat_map(|r| &r.outcome.faults) {
            by_fault.entry(f.fault).or_default().push(f);
        }
        by_fault
            .into_iter()
            .map(|(fault, list)| {
                let worst: Vec<f64> = list.iter().filter_map(|o| o.step_worst).collect();
                let back: Vec<Nanos> = list.iter().filter_map(|o| o.step_back()).collect();
                FaultSummary {
                    fault,
                    label: list[0].label.clone(),
                    recovery: RecoveryStats::of(list.iter().map(|o| &o.moments)),
                    step_worst: Stats::of_values(&worst),
                    step_back: Stats::of(&back),
                }
            })
            .collect()
    }

    /// The step time across the runs that recorded it.
    fn summarize_step_time(runs: &[RunRecord]) -> Option<StepTimeSummary> {
        let recorded: Vec<(&RunOutcome, &StepTime)> =
            runs.iter().filter_map(|r| Some((&r.outcome, r.outcome.step_time.as_ref()?))).collect();
        let first = recorded.first()?;
        let baseline: Vec<f64> = recorded.iter().filter_map(|(_, s)| s.baseline).collect();
        let worst: Vec<f64> = recorded.iter().filter_map(|(_, s)| s.worst).collect();
        let back: Vec<Nanos> = recorded.iter().filter_map(|(o, _)| o.step_back()).collect();
        Some(StepTimeSummary {
            baseline: Stats::of_values(&baseline),
            worst: Stats::of_values(&worst),
            back: Stats::of(&back),
            within: first.1.within,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(faults: Vec<FaultOutcome>, step_time: Option<StepTime>) -> RunRecord {
        RunRecord {
            run: 0,
            seed: 0,
            start: 0,
            end: 10_000_000_000,
            faults: Vec::new(),
            transitions: Vec::new(),
            decisions: Vec::new(),
            probes: Vec::new(),
            outcome: RunOutcome {
                moments: Moments { fault_at: Some(1_000_000_000), ..Moments::default() },
                faults,
                step_time,
                ..RunOutcome::default()
            },
        }
    }

    #[test]
    fn each_fault_is_summarized_on_its_own() {
        let fault = |fault: usize, detected_ms: i64, recovered: Option<i64>| FaultOutcome {
            fault,
            label: format!("f{fault}"),
            moments: Moments {
                fault_at: Some(1_000_000_000),
                detected_at: Some(1_000_000_000 + detected_ms * 1_000_000),
                recovered_at: recovered,
                ..Moments::default()
            },
            ..FaultOutcome::default()
        };
        let step = |worst: f64, back_ms: i64| StepTime {
            baseline: Some(1.0),
            within: 0.05,
            worst: Some(worst),
            worst_at: None,
            back_at: Some(1_000_000_000 + back_ms * 1_000_000),
        };
        let runs = [
            run(vec![fault(0, 200, Some(1_400_000_000)), fault(1, 700, None)], Some(step(3.0, 900))),
            run(vec![fault(0, 300, None), fault(1, 500, None)], Some(step(4.0, 1_100))),
        ];
        let s = Report::summarize(&runs);
        assert_eq!(s.faults.len(), 2);
        assert_eq!((s.faults[0].label.as_str(), s.faults[0].recovery.detect.max), ("f0", Some(300.0)));
        assert_eq!((s.faults[1].recovery.detect.p50, s.faults[1].recovery.detect.max), (Some(500.0), Some(700.0)));
        // One run of fault 0 recovered, no run of fault 1: a count, never 0 ms.
        assert_eq!((s.faults[0].recovery.recover.count, s.faults[0].recovery.recover.max), (1, Some(400.0)));
        assert_eq!((s.faults[1].recovery.recover.count, s.faults[1].recovery.recover.p50), (0, None));
        let st = s.step_time.unwrap();
        assert_eq!((st.worst.max, st.back.p50, st.back.max, st.within), (Some(4.0), Some(900.0), Some(1_100.0), 0.05));
        assert_eq!(Report::summarize(&[run(Vec::new(), None)]).step_time, None, "no job, no step time");
    }
}

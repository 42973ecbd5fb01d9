//! What a run saw, with every timestamp: the JSON report's content.
//!
//! Times are nanoseconds since the epoch on the run's clock (the virtual
//! clock starts at a fixed instant, so a seed always gives the same
//! record); `start` is the run's origin and the offsets shown in the HTML
//! page are taken from it.

use std::collections::BTreeMap;

use engine::time::Nanos;
use serde::{Deserialize, Serialize};

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

/// How a run ended against its expectations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// Every expectation held.
    pub passed: bool,
    /// Why the run was aborted early, if it was.
    #[serde(default)]
    pub aborted: Option<String>,
    /// Each expectation that failed, in words.
    #[serde(default)]
    pub failures: Vec<String>,
    /// The first fault's start.
    #[serde(default)]
    pub fault_at: Option<Nanos>,
    /// The start of the last fault occurrence before detection (the flap
    /// that made the count, the storm itself).
    #[serde(default)]
    pub trigger_at: Option<Nanos>,
    /// When the detecting rule first fired.
    #[serde(default)]
    pub detected_at: Option<Nanos>,
    /// When the mitigating action was first executed.
    #[serde(default)]
    pub mitigated_at: Option<Nanos>,
    /// When the steady state held again (and kept holding).
    #[serde(default)]
    pub recovered_at: Option<Nanos>,
}

impl RunOutcome {
    /// Time to detect, ns.
    pub fn ttd(&self) -> Option<Nanos> {
        Some(self.detected_at? - self.fault_at?)
    }
    /// Time to mitigate, ns.
    pub fn ttm(&self) -> Option<Nanos> {
        Some(self.mitigated_at? - self.fault_at?)
    }
    /// Time from the trigger to detection, ns.
    pub fn trigger_ttd(&self) -> Option<Nanos> {
        Some(self.detected_at? - self.trigger_at?)
    }
    /// Time from the trigger to mitigation, ns.
    pub fn trigger_ttm(&self) -> Option<Nanos> {
        Some(self.mitigated_at? - self.trigger_at?)
    }
    /// Time to recover, ns.
    pub fn ttr(&self) -> Option<Nanos> {
        Some(self.recovered_at? - self.fault_at?)
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

/// Percentiles of one duration across runs, milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Runs that have the duration.
    pub count: usize,
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// Largest.
    pub max: Option<f64>,
}

impl Stats {
    /// The nearest-rank percentiles of `values` (ns), in ms.
    pub fn of(values: &[Nanos]) -> Stats {
        let mut v: Vec<f64> = values.iter().map(|n| *n as f64 / 1e6).collect();
        v.sort_by(f64::total_cmp);
        let rank = |p: f64| -> Option<f64> {
            if v.is_empty() {
                return None;
            }
            let i = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
            Some(v[i])
        };
        Stats { count: v.len(), p50: rank(0.50), p90: rank(0.90), p99: rank(0.99), max: v.last().copied() }
    }
}

/// MTTD, time to mitigate and MTTR across runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Time to detect.
    pub detect: Stats,
    /// Time to mitigate.
    pub mitigate: Stats,
    /// Time to recover.
    pub recover: Stats,
    /// Time from the trigger to detection.
    #[serde(default)]
    pub detect_from_trigger: Stats,
    /// Time from the trigger to mitigation.
    #[serde(default)]
    pub mitigate_from_trigger: Stats,
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
    pub bounds: Vec<crate::scenario::plan::Bound>,
    /// The runs.
    pub runs: Vec<RunRecord>,
}

impl Report {
    /// The summary of `runs`.
    pub fn summarize(runs: &[RunRecord]) -> Summary {
        let collect =
            |f: fn(&RunOutcome) -> Option<Nanos>| -> Vec<Nanos> { runs.iter().filter_map(|r| f(&r.outcome)).collect() };
        Summary {
            detect: Stats::of(&collect(RunOutcome::ttd)),
            mitigate: Stats::of(&collect(RunOutcome::ttm)),
            recover: Stats::of(&collect(RunOutcome::ttr)),
            detect_from_trigger: Stats::of(&collect(RunOutcome::trigger_ttd)),
            mitigate_from_trigger: Stats::of(&collect(RunOutcome::trigger_ttm)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<Nanos> = (1..=100).map(|i| i * 1_000_000).collect();
        let s = Stats::of(&values);
        assert_eq!((s.count, s.p50, s.p90, s.p99, s.max), (100, Some(50.0), Some(90.0), Some(99.0), Some(100.0)));
        assert_eq!(Stats::of(&[]).p50, None);
        assert_eq!(Stats::of(&[7_000_000]).p99, Some(7.0));
    }
}

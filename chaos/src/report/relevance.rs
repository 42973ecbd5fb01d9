//! Which tracks of a run's timeline show what the faults moved: a reader
//! looks at the top rows first, so they should be the probes that changed
//! when a fault began and the rule instances on the faulted nodes, not
//! whatever came first in the scenario file. Probes that never moved are
//! not worth a row each.
//!
//! A probe's relevance is a robust effect size, as `rocemend why` ranks
//! signals: how far it moved from its median before the first fault while
//! the faults were in force (the largest shift seen in two samples at
//! least), over its spread (median absolute deviation) before, with a floor
//! so a probe that was perfectly still before does not divide by zero.

use engine::stats::{mad, median};
use engine::time::Nanos;

use super::record::{FaultRecord, ProbeSeries, TransitionRecord};

/// How far apart two values may be and still count as the same: relative,
/// so a probe near 1e9 with rounding noise is flat, and one at 0.001 that
/// doubles is not.
const SAME: f64 = 1e-9;

/// Whether `points` never change: one value (or none) over the whole run.
/// Non-finite values count as values: a probe that goes NaN moved.
pub fn flat(points: &[(Nanos, f64)]) -> bool {
    let Some(&(_, first)) = points.first() else { return true };
    points.iter().all(|&(_, v)| v == first || (v - first).abs() <= SAME * first.abs().max(v.abs()).max(1.0))
}

/// The window the faults were in force: from the first one's start to the
/// last one's end (or `run_end` for one still in force).
fn fault_window(faults: &[FaultRecord], run_end: Nanos) -> Option<(Nanos, Nanos)> {
    let start = faults.iter().map(|f| f.start).min()?;
    let end = faults.iter().map(|f| f.end.unwrap_or(run_end)).max().unwrap_or(run_end);
    Some((start, end.max(start)))
}

/// How much `points` moved while the faults were in force, against before
/// them: the second largest |value − median before| during, over the
/// spread before. 0 when there is no fault, or no point on one side of its
/// start.
pub fn effect(points: &[(Nanos, f64)], faults: &[FaultRecord], run_end: Nanos) -> f64 {
    let Some((start, end)) = fault_window(faults, run_end) else { return 0.0 };
    let finite = |keep: &dyn Fn(Nanos) -> bool| -> Vec<f64> {
        points.iter().filter(|(t, v)| keep(*t) && v.is_finite()).map(|(_, v)| *v).collect()
    };
    let before = finite(&|t| t < start);
    let during = finite(&|t| t >= start && t <= end);
    if before.is_empty() || during.is_empty() {
        return 0.0;
    }
    let b = median(&before);
    let mut shifts: Vec<f64> = during.iter().map(|v| (v - b).abs()).collect();
    shifts.sort_by(f64::total_cmp);
    // The largest shift seen in two samples at least, not the median one:
    // a storm the watchdog contained in 300 ms moved its probe for a
    // moment only, and that moment is what the reader looks for; one odd
    // sample alone is not.
    let held = shifts[shifts.len().saturating_sub(2)];
    let spread = 1.4826 * mad(&before, b);
    let floor = (b.abs() * 0.01).max(1e-9);
    held / spread.max(floor)
}

/// The probes split into those that moved, most relevant first (ties keep
/// the scenario's order), and those that stayed flat all run.
pub fn order_probes<'a>(
    probes: &'a [ProbeSeries],
    faults: &[FaultRecord],
    run_end: Nanos,
) -> (Vec<&'a ProbeSeries>, Vec<&'a ProbeSeries>) {
    let (flat, mut moved): (Vec<&ProbeSeries>, Vec<&ProbeSeries>) = probes.iter().partition(|p| flat(&p.points));
    let mut scored: Vec<(f64, &ProbeSeries)> =
        moved.drain(..).map(|p| (effect(&p.points, faults, run_end), p)).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    (scored.into_iter().map(|(_, p)| p).collect(), flat)
}

/// Whether a rule instance's subject is on a node a fault touched.
pub fn on_faulted_node(transition: &TransitionRecord, faults: &[FaultRecord]) -> bool {
    transition.subject.get("node").is_some_and(|node| faults.iter().any(|f| f.nodes.contains(node)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    fn probe(name: &str, values: &[f64]) -> ProbeSeries {
        ProbeSeries {
            name: name.into(),
            points: values.iter().enumerate().map(|(i, v)| (i as Nanos * S, *v)).collect(),
        }
    }

    fn fault(start: Nanos, end: Option<Nanos>) -> FaultRecord {
        FaultRecord { label: "pfc_storm node-05 eth5".into(), nodes: vec!["node-05".into()], start, end }
    }

    #[test]
    fn a_probe_that_never_changes_is_flat_and_one_that_goes_nan_is_not() {
        assert!(flat(&[]));
        assert!(flat(&probe("p", &[3.0]).points));
        assert!(flat(&probe("p", &[1e9, 1e9 + 1e-3, 1e9]).points), "rounding noise on a large value");
        assert!(!flat(&probe("p", &[0.001, 0.002]).points));
        assert!(!flat(&probe("p", &[1.0, f64::NAN]).points));
    }

    #[test]
    fn the_probe_that_moved_most_when_the_fault_began_comes_first_and_flat_ones_apart() {
        let probes = [
            probe("queue depth", &[10.0, 11.0, 10.0, 12.0, 11.0, 13.0, 12.0, 11.0]),
            probe("paused fraction", &[0.0, 0.01, 0.0, 0.01, 0.9, 0.95, 0.9, 0.92]),
            probe("link up", &[1.0; 8]),
        ];
        let (moved, still) = order_probes(&probes, &[fault(4 * S, None)], 8 * S);
        let moved: Vec<&str> = moved.iter().map(|p| p.name.as_str()).collect();
        let still: Vec<&str> = still.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(moved, ["paused fraction", "queue depth"]);
        assert_eq!(still, ["link up"]);
    }

    #[test]
    fn without_a_fault_the_scenario_order_stays() {
        let probes = [probe("a", &[1.0, 2.0, 3.0]), probe("b", &[5.0, 50.0, 500.0])];
        let (moved, _) = order_probes(&probes, &[], 3 * S);
        assert_eq!(moved.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn an_instance_on_a_faulted_node_is_relevant() {
        let on = |node: &str| TransitionRecord {
            at: 0,
            rule: "pfc-storm".into(),
            subject: [("node".to_string(), node.to_string())].into(),
            from: "inactive".into(),
            to: "firing".into(),
        };
        let faults = [fault(0, None)];
        assert!(on_faulted_node(&on("node-05"), &faults));
        assert!(!on_faulted_node(&on("node-06"), &faults));
    }
}

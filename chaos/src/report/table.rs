//! The recovery table of a set of reports, for a terminal: what `rocemend
//! chaos run` and `rocemend demo` print.

use super::record::{Stats, StepTimeSummary};
use super::Report;

/// A number that can be shown: a value that is not finite is as missing
/// as no value, and prints `-`, never `NaN`.
fn shown(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite())
}

fn cell(v: Option<f64>) -> String {
    shown(v).map(|v| format!("{v:>7.0}")).unwrap_or_else(|| format!("{:>7}", "-"))
}

/// A latency to a tenth of a millisecond, or `-` when there is none.
fn tenths(v: Option<f64>) -> String {
    shown(v).map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into())
}

/// A step-time ratio to a hundredth, or `-`.
fn ratio(v: Option<f64>) -> String {
    shown(v).map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into())
}

/// The p50, p99 and max cells of `s`.
fn cells(s: &Stats) -> String {
    format!("{} {} {}", cell(s.p50), cell(s.p99), cell(s.max))
}

/// The step-time line of a scenario: baseline, worst, when it came back.
fn step_line(scenario: &str, s: &StepTimeSummary, runs: usize) -> String {
    format!(
        "  {scenario:<18} job step time: baseline {}, worst p50 {} max {}; back within {:.0} %: p50 {} p99 {} max {} ms ({}/{runs} runs)\n",
        ratio(s.baseline.p50),
        ratio(s.worst.p50),
        ratio(s.worst.max),
        s.within * 100.0,
        cell(s.back.p50).trim(),
        cell(s.back.p99).trim(),
        cell(s.back.max).trim(),
        s.back.count,
    )
}

/// What the outcome checks of a scenario's runs found, summed over its
/// runs in the order first judged (`rail.drain harmful 20, undone 20`);
/// empty when nothing was judged.
fn outcome_line(report: &Report) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut count = |what: String| match counts.iter_mut().find(|(w, _)| *w == what) {
        Some((_, n)) => *n += 1,
        None => counts.push((what, 1)),
    };
    for d in report.runs.iter().flat_map(|run| &run.decisions) {
        match (&d.undo_of, d.outcome.as_deref()) {
            (Some(_), _) => count(format!("{} undone", d.action)),
            (None, Some(outcome)) if outcome != "open" => count(format!("{} {outcome}", d.action)),
            _ => {}
        }
    }
    if counts.is_empty() {
        return String::new();
    }
    let listed: Vec<String> = counts.iter().map(|(what, n)| format!("{what} {n}")).collect();
    format!("  {:<18} outcomes over {} runs: {}\n", report.scenario, report.runs.len(), listed.join(", "))
}

/// How many failed runs the console lists; the report has them all.
const FAILURES_SHOWN: usize = 3;

/// The recovery table of `reports`, for a terminal.
pub fn table(reports: &[Report]) -> String {
    let mut out = format!(
        "  {:<18} {:>5} {:>6}   {:>7} {:>7} {:>7}   {:>7} {:>7} {:>7}   {:>7} {:>7} {:>7}\n",
        "scenario", "runs", "failed", "TTD p50", "p99", "max", "TTM p50", "p99", "max", "TTR p50", "p99", "max"
    );
    for r in reports {
        let s = &r.summary;
        out.push_str(&format!(
            "  {:<18} {:>5} {:>6}   {}   {}   {}\n",
            r.scenario,
            r.runs.len(),
            r.failed,
            cells(&s.recovery.detect),
            cells(&s.recovery.mitigate),
            cells(&s.recovery.recover),
        ));
        // Each fault on its own (from its own start), named at the end of
        // its row: labels are longer than the first column.
        for f in &s.faults {
            out.push_str(&format!(
                "    {:<16} {:>5} {:>6}   {}   {}   {}   {}\n",
                format!("fault {}", f.fault),
                "",
                "",
                cells(&f.recovery.detect),
                cells(&f.recovery.mitigate),
                cells(&f.recovery.recover),
                f.label,
            ));
        }
        if let Some(step) = &s.step_time {
            out.push_str(&step_line(&r.scenario, step, r.runs.len()));
        }
        out.push_str(&outcome_line(r));
    }
    for r in reports {
        // Scenarios whose deadlines run from the fault that triggered the
        // rule (the third flap, say): those latencies too.
        let s = &r.summary;
        if s.recovery.detect_from_trigger.count > 0 && s.recovery.detect_from_trigger.p50 != s.recovery.detect.p50 {
            out.push_str(&format!(
                "  {:<18} from the trigger: TTD p50 {} p99 {} max {}, TTM p50 {} p99 {} max {}\n",
                r.scenario,
                tenths(s.recovery.detect_from_trigger.p50),
                tenths(s.recovery.detect_from_trigger.p99),
                tenths(s.recovery.detect_from_trigger.max),
                tenths(s.mitigate_from_trigger.p50),
                tenths(s.mitigate_from_trigger.p99),
                tenths(s.mitigate_from_trigger.max),
            ));
        }
    }
    out.push_str(
        "  (ms from the first fault's start, a fault's row from its own: time to detect, to mitigate, to recover; -: did not happen or not measured)\n",
    );
    out
}

/// The first failed runs of `report`, one line each, and how many more
/// there are.
pub fn first_failures(report: &Report) -> Vec<String> {
    let failed: Vec<_> = report.runs.iter().filter(|r| !r.outcome.passed).collect();
    let mut out: Vec<String> = failed
        .iter()
        .take(FAILURES_SHOWN)
        .map(|r| format!("  run {} (seed {}): {}", r.run, r.seed, r.outcome.failures.join("; ")))
        .collect();
    if failed.len() > FAILURES_SHOWN {
        out.push(format!("  and {} more failed runs (every one is in the report)", failed.len() - FAILURES_SHOWN));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::record::{RecoveryStats, RunOutcome, RunRecord, Summary};

    fn report(failed: u32) -> Report {
        let run = |run: u32, passed: bool| RunRecord {
            run,
            seed: u64::from(run),
            start: 0,
            end: 0,
            faults: Vec::new(),
            transitions: Vec::new(),
            decisions: Vec::new(),
            probes: Vec::new(),
            outcome: RunOutcome { passed, failures: vec![format!("failure {run}")], ..RunOutcome::default() },
        };
        Report {
            scenario: "s".into(),
            description: String::new(),
            file: "s.toml".into(),
            clock: "virtual".into(),
            step: 0,
            passed: 1,
            failed: failed as usize,
            elapsed_ms: 0.0,
            summary: Summary::default(),
            bounds: Vec::new(),
            runs: (0..=failed).map(|i| run(i, i == 0)).collect(),
            fleet: None,
        }
    }

    #[test]
    fn every_failed_run_is_counted_though_only_the_first_are_listed() {
        let lines = first_failures(&report(5));
        assert_eq!(lines.len(), FAILURES_SHOWN + 1, "{lines:#?}");
        assert_eq!(lines[0], "  run 1 (seed 1): failure 1");
        assert_eq!(lines[3], "  and 2 more failed runs (every one is in the report)");
        assert_eq!(first_failures(&report(2)).len(), 2, "no \"more\" line when all are listed");
    }

    #[test]
    fn each_fault_has_its_row_and_a_recovery_nothing_measured_is_a_dash() {
        use crate::report::record::FaultSummary;
        let mut r = report(0);
        r.summary.recovery.detect = Stats::of(&[200_000_000]);
        r.summary.faults = vec![
            FaultSummary {
                fault: 0,
                label: "pfc_storm {node=node-04}".into(),
                recovery: RecoveryStats { detect: Stats::of(&[200_000_000]), ..RecoveryStats::default() },
                ..FaultSummary::default()
            },
            FaultSummary {
                fault: 1,
                label: "link_flap {node=node-03}".into(),
                recovery: RecoveryStats { detect: Stats::of(&[1_500_000_000]), ..RecoveryStats::default() },
                ..FaultSummary::default()
            },
        ];
        r.summary.step_time = Some(StepTimeSummary {
            baseline: Stats::of_values(&[1.0]),
            worst: Stats::of_values(&[f64::NAN, 3.5]),
            back: Stats::of(&[1_200_000_000]),
            within: 0.05,
        });
        let text = table(&[r]);
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(
            rows[1].split_whitespace().collect::<Vec<_>>()[3..],
            ["200", "200", "200", "-", "-", "-", "-", "-", "-"]
        );
        let fault1: Vec<&str> = rows[3].split_whitespace().collect();
        assert_eq!(fault1[..5], ["fault", "1", "1500", "1500", "1500"], "{text}");
        assert_eq!(fault1[8..11], ["-", "-", "-"], "no steady state: TTR is missing, never 0: {text}");
        assert!(rows[3].ends_with("link_flap {node=node-03}"), "{text}");
        assert!(
            rows[4].contains("job step time: baseline 1.00, worst p50 3.50 max 3.50; back within 5 %: p50 1200 p99 1200 max 1200 ms (1/1 runs)"),
            "{text}"
        );
        assert!(!text.contains("NaN"), "{text}");
    }

    #[test]
    fn a_latency_that_is_missing_prints_a_dash_never_nan() {
        let mut r = report(0);
        r.summary.recovery.detect = Stats::of(&[2_000_000]);
        r.summary.recovery.detect_from_trigger = Stats::of(&[1_000_000]);
        let text = table(&[r]);
        assert!(text.contains("from the trigger: TTD p50 1.0 p99 1.0 max 1.0, TTM p50 - p99 - max -"), "{text}");
        assert!(!text.contains("NaN"), "{text}");
    }
}

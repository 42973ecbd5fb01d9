//! The recovery table of a set of reports, for a terminal: what `rocemend
//! chaos run` and `rocemend demo` print.

use super::Report;

fn cell(v: Option<f64>) -> String {
    v.map(|v| format!("{v:>7.0}")).unwrap_or_else(|| format!("{:>7}", "-"))
}

/// A latency to a tenth of a millisecond, or `-` when there is none.
fn tenths(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into())
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
            "  {:<18} {:>5} {:>6}   {} {} {}   {} {} {}   {} {} {}\n",
            r.scenario,
            r.runs.len(),
            r.failed,
            cell(s.detect.p50),
            cell(s.detect.p99),
            cell(s.detect.max),
            cell(s.mitigate.p50),
            cell(s.mitigate.p99),
            cell(s.mitigate.max),
            cell(s.recover.p50),
            cell(s.recover.p99),
            cell(s.recover.max),
        ));
    }
    for r in reports {
        // Scenarios whose deadlines run from the fault that triggered the
        // rule (the third flap, say): those latencies too.
        let s = &r.summary;
        if s.detect_from_trigger.count > 0 && s.detect_from_trigger.p50 != s.detect.p50 {
            out.push_str(&format!(
                "  {:<18} from the trigger: TTD p50 {} p99 {} max {}, TTM p50 {} p99 {} max {}\n",
                r.scenario,
                tenths(s.detect_from_trigger.p50),
                tenths(s.detect_from_trigger.p99),
                tenths(s.detect_from_trigger.max),
                tenths(s.mitigate_from_trigger.p50),
                tenths(s.mitigate_from_trigger.p99),
                tenths(s.mitigate_from_trigger.max),
            ));
        }
    }
    out.push_str("  (milliseconds from the fault's start: time to detect, to mitigate, to recover)\n");
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
    use crate::report::record::{RunOutcome, RunRecord, Stats, Summary};

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
    fn a_latency_that_is_missing_prints_a_dash_never_nan() {
        let mut r = report(0);
        r.summary.detect = Stats::of(&[2_000_000]);
        r.summary.detect_from_trigger = Stats::of(&[1_000_000]);
        let text = table(&[r]);
        assert!(text.contains("from the trigger: TTD p50 1.0 p99 1.0 max 1.0, TTM p50 - p99 - max -"), "{text}");
        assert!(!text.contains("NaN"), "{text}");
    }
}

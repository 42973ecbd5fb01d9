//! The recovery table of a set of reports, for a terminal: what `rocemend
//! chaos run` and `rocemend demo` print.

use super::Report;

fn cell(v: Option<f64>) -> String {
    v.map(|v| format!("{v:>7.0}")).unwrap_or_else(|| format!("{:>7}", "-"))
}

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
                "  {:<18} from the trigger: TTD p50 {:.1} p99 {:.1} max {:.1}, TTM p50 {:.1} p99 {:.1} max {:.1}\n",
                r.scenario,
                s.detect_from_trigger.p50.unwrap_or(f64::NAN),
                s.detect_from_trigger.p99.unwrap_or(f64::NAN),
                s.detect_from_trigger.max.unwrap_or(f64::NAN),
                s.mitigate_from_trigger.p50.unwrap_or(f64::NAN),
                s.mitigate_from_trigger.p99.unwrap_or(f64::NAN),
                s.mitigate_from_trigger.max.unwrap_or(f64::NAN),
            ));
        }
    }
    out.push_str("  (milliseconds from the fault's start: time to detect, to mitigate, to recover)\n");
    out
}

/// The first failed runs of `report`, one line each.
pub fn first_failures(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for r in report.runs.iter().filter(|r| !r.outcome.passed).take(3) {
        out.push(format!("  run {} (seed {}): {}", r.run, r.seed, r.outcome.failures.join("; ")));
    }
    out
}

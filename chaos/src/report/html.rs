//! The HTML page of a report: the recovery table (time to detect, to
//! mitigate, to recover: p50 / p90 / p99 / max) for the scenario and for
//! each of its faults, the jobs' step time (baseline, worst, back), one row
//! per run and one per fault of each run, and an SVG timeline per run
//! (every failed run, and the first [`TIMELINES`] runs).
//!
//! A figure that is missing (never happened, nothing measured it) is a
//! dash, never 0 and never NaN.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::record::{Report, RunOutcome, RunRecord, Stats, StepTimeSummary};
use super::rows::{table_head, Row};
use super::timeline::{escape, Mark, Span, Timeline, Track};

/// Timelines drawn besides those of failed runs: a page of 100 runs stays
/// small enough to open.
pub const TIMELINES: usize = 10;

fn cell(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map(|v| format!("{v:.0}")).unwrap_or_else(|| "–".into())
}

/// A step-time ratio, to a hundredth.
fn ratio(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map(|v| format!("{v:.2}")).unwrap_or_else(|| "–".into())
}

fn stats_row(name: &str, s: &Stats) -> String {
    stats_row_with(name, s, cell)
}

/// A row of `s`, its values written by `show`.
fn stats_row_with(name: &str, s: &Stats, show: fn(Option<f64>) -> String) -> String {
    Row::new()
        .cell(name)
        .cell(s.count)
        .cell(show(s.p50))
        .cell(show(s.p90))
        .cell(show(s.p99))
        .cell(show(s.max))
        .to_string()
}

/// A table of [`stats_row`]s, opened with its header.
fn stats_table(id: &str) -> String {
    table_head(id, &["", "runs", "p50", "p90", "p99", "max"])
}

/// Each fault's recovery across runs.
fn fault_tables(report: &Report, out: &mut String) {
    if report.summary.faults.is_empty() {
        return;
    }
    let _ = write!(out, "<h2>Recovery per fault (ms from its first start)</h2>{}", stats_table("faults"));
    for f in &report.summary.faults {
        let _ = write!(
            out,
            "<tr><th colspan=\"6\" style=\"text-align:left\">fault {}: {}</th></tr>{}{}{}",
            f.fault,
            escape(&f.label),
            stats_row("time to detect", &f.detect),
            stats_row("time to mitigate", &f.mitigate),
            stats_row("time to recover", &f.recover)
        );
        if f.step_worst.count > 0 {
            let _ = write!(
                out,
                "{}{}",
                stats_row_with("worst step-time ratio", &f.step_worst, ratio),
                stats_row("step time back", &f.step_back)
            );
        }
    }
    out.push_str("</table>");
}

/// The jobs' step time across runs.
fn step_table(s: &StepTimeSummary, out: &mut String) {
    let _ = write!(
        out,
        "<h2>Job step time</h2><p>The slowest job's step time over its healthy step time (<code>step_time_ratio</code>): \
         its mean before the first fault, the worst after it, and when it was back within {:.0} % of that baseline \
         (ms from the first fault's start).</p>{}{}{}{}</table>",
        s.within * 100.0,
        stats_table("step-time"),
        stats_row_with("baseline ratio", &s.baseline, ratio),
        stats_row_with("worst ratio", &s.worst, ratio),
        stats_row("back (ms)", &s.back)
    );
}

/// Each run's faults, one row each.
fn run_fault_rows(report: &Report, out: &mut String) {
    if report.runs.iter().all(|r| r.outcome.faults.is_empty()) {
        return;
    }
    out.push_str("<h2>Faults per run</h2>");
    out.push_str(&table_head(
        "run-faults",
        &[
            "run",
            "fault",
            "detected by",
            "detect ms",
            "mitigated by",
            "mitigate ms",
            "recover ms",
            "worst step ratio",
            "step back ms",
        ],
    ));
    for r in &report.runs {
        for f in &r.outcome.faults {
            let row = Row::new()
                .cell(r.run)
                .text(&f.label)
                .text(f.detected_by.as_deref().unwrap_or("–"))
                .cell(ms(f.moments.ttd()))
                .text(f.mitigated_by.as_deref().unwrap_or("–"))
                .cell(ms(f.moments.ttm()))
                .cell(ms(f.moments.ttr()))
                .cell(ratio(f.step_worst))
                .cell(ms(f.step_back()));
            let _ = write!(out, "{row}");
        }
    }
    out.push_str("</table>");
}

fn subject(labels: &BTreeMap<String, String>) -> String {
    const SHOWN: &[&str] = &["node", "netdev", "switch", "port", "prio", "rail"];
    let parts: Vec<String> = SHOWN.iter().filter_map(|k| labels.get(*k).map(|v| format!("{k}={v}"))).collect();
    parts.join(" ")
}

/// The timeline of one run.
pub fn run_timeline(report: &Report, run: &RunRecord) -> Timeline {
    let mut tracks = Vec::new();
    for p in &run.probes {
        let bounds = report.bounds.iter().find(|b| b.probe == p.name).map(|b| (b.min, b.max)).unwrap_or((None, None));
        tracks.push(Track::Series { label: p.name.clone(), points: p.points.clone(), bounds });
    }
    tracks.push(Track::Spans {
        label: "faults".into(),
        spans: run
            .faults
            .iter()
            .map(|f| Span { start: f.start, end: f.end, label: f.label.clone(), class: "fault".into() })
            .collect(),
    });
    // Rule instances: one row each, a span per state other than inactive.
    let mut instances: BTreeMap<(String, String), Vec<(i64, String)>> = BTreeMap::new();
    for t in &run.transitions {
        instances.entry((t.rule.clone(), subject(&t.subject))).or_default().push((t.at, t.to.clone()));
    }
    for ((rule, subj), states) in instances {
        let mut spans = Vec::new();
        for (i, (at, state)) in states.iter().enumerate() {
            if state == "inactive" {
                continue;
            }
            let end = states.get(i + 1).map(|s| s.0);
            spans.push(Span { start: *at, end, label: format!("{rule} {state} {subj}"), class: state.clone() });
        }
        tracks.push(Track::Spans { label: format!("{rule} {subj}"), spans });
    }
    tracks.push(Track::Marks {
        label: "decisions".into(),
        marks: run
            .decisions
            .iter()
            .map(|d| Mark {
                at: d.at,
                label: format!(
                    "{} {} {}{}{}",
                    d.action,
                    subject(&d.target),
                    d.verdict,
                    if d.undo_of.is_some() { " (undo)" } else { "" },
                    d.requests.iter().map(|r| format!("\n{r}")).collect::<String>()
                ),
                class: d.verdict.clone(),
            })
            .collect(),
    });
    let o = &run.outcome;
    let mut milestones = Vec::new();
    let m = &o.moments;
    for (at, what) in [(m.detected_at, "detected"), (m.mitigated_at, "mitigated"), (m.recovered_at, "recovered")] {
        if let Some(at) = at {
            milestones.push(Mark { at, label: what.into(), class: what.into() });
        }
    }
    tracks.push(Track::Marks { label: "milestones".into(), marks: milestones });
    // With several faults, each one's own milestones, named.
    if o.faults.len() > 1 {
        let mut marks = Vec::new();
        for f in &o.faults {
            let m = &f.moments;
            for (at, what) in
                [(m.detected_at, "detected"), (m.mitigated_at, "mitigated"), (m.recovered_at, "recovered")]
            {
                if let Some(at) = at {
                    marks.push(Mark { at, label: format!("{what}: {}", f.label), class: what.into() });
                }
            }
        }
        tracks.push(Track::Marks { label: "per fault".into(), marks });
    }
    let verdict = if o.passed { "passed" } else { "FAILED" };
    Timeline {
        title: format!("run {} (seed {}): {verdict}", run.run, run.seed),
        start: run.start,
        end: run.end,
        tracks,
    }
}

/// One run's row of the runs table: its times, and why it failed in red.
fn run_row(r: &RunRecord) -> Row {
    let o = &r.outcome;
    let step = o.step_time.as_ref();
    Row::new()
        .cell(r.run)
        .cell(r.seed)
        .cell(ms(o.moments.ttd()))
        .cell(ms(o.moments.ttm()))
        .cell(ms(o.moments.ttr()))
        .cell(ratio(step.and_then(|s| s.baseline)))
        .cell(ratio(step.and_then(|s| s.worst)))
        .cell(ms(o.step_back()))
        .text(verdict(o))
        .fail_if(!o.passed)
}

/// `passed`, or `failed:` and why (the abort first).
fn verdict(o: &RunOutcome) -> String {
    if o.passed {
        return "passed".into();
    }
    let aborted = o.aborted.as_ref().map(|a| format!("aborted: {a}"));
    let why: Vec<String> = aborted.into_iter().chain(o.failures.iter().cloned()).collect();
    format!("failed: {}", why.join("; "))
}

fn ms(v: Option<i64>) -> String {
    v.map(|v| format!("{:.0}", v as f64 / 1e6)).unwrap_or_else(|| "–".into())
}

/// The page.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>chaos: {}</title>\
         <style>body{{font:14px sans-serif;margin:20px}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}td:first-child{{text-align:left}}\
         .fail{{color:#b00}}td.text{{text-align:left}}</style></head><body>",
        escape(&report.scenario)
    );
    let _ = write!(
        out,
        "<h1>{}</h1><p>{}</p><p>{} run(s): {} passed, {} failed; {} clock, {:.0} ms sensor interval, {:.0} ms of wall-clock time.</p>",
        escape(&report.scenario),
        escape(&report.description),
        report.runs.len(),
        report.passed,
        report.failed,
        escape(&report.clock),
        report.step as f64 / 1e6,
        report.elapsed_ms
    );
    let s = &report.summary;
    let _ = write!(
        out,
        "<h2>Recovery (ms from the first fault)</h2>{}{}{}{}</table>",
        stats_table("recovery"),
        stats_row("time to detect", &s.detect),
        stats_row("time to mitigate", &s.mitigate),
        stats_row("time to recover", &s.recover)
    );
    fault_tables(report, &mut out);
    if let Some(step) = &s.step_time {
        step_table(step, &mut out);
    }
    out.push_str("<h2>Runs</h2>");
    out.push_str(&table_head(
        "runs",
        &[
            "run",
            "seed",
            "detect ms",
            "mitigate ms",
            "recover ms",
            "step baseline",
            "worst step",
            "step back ms",
            "verdict",
        ],
    ));
    for r in &report.runs {
        let _ = write!(out, "{}", run_row(r));
    }
    out.push_str("</table>");
    run_fault_rows(report, &mut out);
    out.push_str("<h2>Timelines</h2>");
    let mut drawn = 0;
    for r in &report.runs {
        if r.outcome.passed && drawn >= TIMELINES {
            continue;
        }
        drawn += 1;
        let _ = write!(out, "<div class=\"run\" id=\"run-{}\">{}</div>", r.run, run_timeline(report, r).svg(1100));
    }
    // For headless checks: what the browser laid out (getBBox is zero for
    // anything not rendered).
    out.push_str(
        "<script>addEventListener('load',function(){var svgs=document.querySelectorAll('svg.timeline');\
         var drawn=0;svgs.forEach(function(s){var b=s.getBBox();if(b.width>0&&b.height>0)drawn++;});\
         document.body.setAttribute('data-timelines',String(drawn));\
         document.body.setAttribute('data-marks',String(document.querySelectorAll('svg.timeline g.mark').length));});</script>",
    );
    out.push_str("</body></html>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::record::{FaultOutcome, Moments, StepTime};

    fn report() -> Report {
        let faults = vec![
            FaultOutcome {
                fault: 0,
                label: "pfc_storm {node=node-04}".into(),
                moments: Moments {
                    fault_at: Some(1_000_000_000),
                    detected_at: Some(1_250_000_000),
                    ..Moments::default()
                },
                detected_by: Some("switch-pfc-storm {port=Ethernet12}".into()),
                step_worst: Some(f64::NAN),
                ..FaultOutcome::default()
            },
            FaultOutcome { fault: 1, label: "link_flap <eth5>".into(), ..FaultOutcome::default() },
        ];
        let outcome = RunOutcome {
            passed: true,
            moments: Moments { fault_at: Some(1_000_000_000), ..Moments::default() },
            faults,
            step_time: Some(StepTime { baseline: Some(1.0), within: 0.05, worst: Some(3.25), ..StepTime::default() }),
            ..RunOutcome::default()
        };
        let run = RunRecord {
            run: 0,
            seed: 1,
            start: 0,
            end: 5_000_000_000,
            faults: Vec::new(),
            transitions: Vec::new(),
            decisions: Vec::new(),
            probes: Vec::new(),
            outcome,
        };
        let runs = vec![run];
        Report {
            scenario: "s".into(),
            description: String::new(),
            file: "s.toml".into(),
            clock: "virtual".into(),
            step: 100_000_000,
            passed: 1,
            failed: 0,
            elapsed_ms: 1.0,
            summary: Report::summarize(&runs),
            bounds: Vec::new(),
            runs,
        }
    }

    #[test]
    fn each_fault_and_the_step_time_have_rows_and_what_is_missing_is_a_dash() {
        let page = render(&report());
        assert!(page.contains("<table id=\"faults\">"), "{page}");
        assert!(page.contains("fault 0: pfc_storm {node=node-04}") && page.contains("fault 1: link_flap &lt;eth5&gt;"));
        // Run 0, fault 0: detected after 250 ms, never mitigated or recovered.
        assert!(
            page.contains(
                "<tr><td>0</td><td class=\"text\">pfc_storm {node=node-04}</td><td class=\"text\">switch-pfc-storm {port=Ethernet12}</td><td>250</td><td class=\"text\">–</td><td>–</td><td>–</td><td>–</td><td>–</td></tr>"
            ),
            "{page}"
        );
        assert!(page.contains("<table id=\"step-time\">"), "{page}");
        assert!(page.contains("<td>1.00</td><td>3.25</td><td>–</td>"), "baseline, worst, back: {page}");
        assert!(!page.contains("NaN"), "{page}");
    }
}

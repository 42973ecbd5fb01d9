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

use super::record::{Report, RunRecord, Stats, StepTimeSummary};
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
    format!(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        escape(name),
        s.count,
        show(s.p50),
        show(s.p90),
        show(s.p99),
        show(s.max)
    )
}

const STATS_HEAD: &str = "<tr><th></th><th>runs</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>";

/// Each fault's recovery across runs.
fn fault_tables(report: &Report, out: &mut String) {
    if report.summary.faults.is_empty() {
        return;
    }
    let _ = write!(out, "<h2>Recovery per fault (ms from its first start)</h2><table id=\"faults\">{STATS_HEAD}");
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
         (ms from the first fault's start).</p><table id=\"step-time\">{STATS_HEAD}{}{}{}</table>",
        s.within * 100.0,
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
    out.push_str(
        "<h2>Faults per run</h2><table id=\"run-faults\"><tr><th>run</th><th>fault</th><th>detected by</th>\
         <th>detect ms</th><th>mitigated by</th><th>mitigate ms</th><th>recover ms</th><th>worst step ratio</th>\
         <th>step back ms</th></tr>",
    );
    for r in &report.runs {
        for f in &r.outcome.faults {
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                r.run,
                escape(&f.label),
                escape(f.detected_by.as_deref().unwrap_or("–")),
                ms(f.ttd()),
                escape(f.mitigated_by.as_deref().unwrap_or("–")),
                ms(f.ttm()),
                ms(f.ttr()),
                ratio(f.step_worst),
                ms(f.step_back())
            );
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
    for (at, what) in [(o.detected_at, "detected"), (o.mitigated_at, "mitigated"), (o.recovered_at, "recovered")] {
        if let Some(at) = at {
            milestones.push(Mark { at, label: what.into(), class: what.into() });
        }
    }
    tracks.push(Track::Marks { label: "milestones".into(), marks: milestones });
    // With several faults, each one's own milestones, named.
    if o.faults.len() > 1 {
        let mut marks = Vec::new();
        for f in &o.faults {
            for (at, what) in
                [(f.detected_at, "detected"), (f.mitigated_at, "mitigated"), (f.recovered_at, "recovered")]
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
        "<h2>Recovery (ms from the first fault)</h2><table id=\"recovery\">{STATS_HEAD}{}{}{}</table>",
        stats_row("time to detect", &s.detect),
        stats_row("time to mitigate", &s.mitigate),
        stats_row("time to recover", &s.recover)
    );
    fault_tables(report, &mut out);
    if let Some(step) = &s.step_time {
        step_table(step, &mut out);
    }
    let _ = write!(
        out,
        "<h2>Runs</h2><table id=\"runs\"><tr><th>run</th><th>seed</th><th>detect ms</th><th>mitigate ms</th><th>recover ms</th>\
         <th>step baseline</th><th>worst step</th><th>step back ms</th><th>verdict</th></tr>"
    );
    for r in &report.runs {
        let o = &r.outcome;
        let verdict = if o.passed {
            "passed".to_string()
        } else {
            let mut why = o.failures.clone();
            if let Some(a) = &o.aborted {
                why.insert(0, format!("aborted: {a}"));
            }
            format!("<span class=\"fail\">failed: {}</span>", escape(&why.join("; ")))
        };
        let step = o.step_time.as_ref();
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td style=\"text-align:left\">{verdict}</td></tr>",
            r.run,
            r.seed,
            ms(o.ttd()),
            ms(o.ttm()),
            ms(o.ttr()),
            ratio(step.and_then(|s| s.baseline)),
            ratio(step.and_then(|s| s.worst)),
            ms(o.step_back())
        );
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
    use crate::report::record::{FaultOutcome, RunOutcome, StepTime};

    fn report() -> Report {
        let faults = vec![
            FaultOutcome {
                fault: 0,
                label: "pfc_storm {node=node-04}".into(),
                fault_at: Some(1_000_000_000),
                detected_at: Some(1_250_000_000),
                detected_by: Some("switch-pfc-storm {port=Ethernet12}".into()),
                step_worst: Some(f64::NAN),
                ..FaultOutcome::default()
            },
            FaultOutcome { fault: 1, label: "link_flap <eth5>".into(), ..FaultOutcome::default() },
        ];
        let outcome = RunOutcome {
            passed: true,
            fault_at: Some(1_000_000_000),
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

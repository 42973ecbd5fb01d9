//! The HTML page of a report: the recovery table (time to detect, to
//! mitigate, to recover: p50 / p90 / p99 / max), one row per run, and an
//! SVG timeline per run (every failed run, and the first
//! [`TIMELINES`] runs).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::record::{Report, RunRecord, Stats};
use super::timeline::{escape, Mark, Span, Timeline, Track};

/// Timelines drawn besides those of failed runs: a page of 100 runs stays
/// small enough to open.
pub const TIMELINES: usize = 10;

fn cell(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.0}")).unwrap_or_else(|| "–".into())
}

fn stats_row(name: &str, s: &Stats) -> String {
    format!(
        "<tr><td>{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        s.count,
        cell(s.p50),
        cell(s.p90),
        cell(s.p99),
        cell(s.max)
    )
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
         .fail{{color:#b00}}</style></head><body>",
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
        "<h2>Recovery (ms from the first fault)</h2><table id=\"recovery\"><tr><th></th><th>runs</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>{}{}{}</table>",
        stats_row("time to detect", &s.detect),
        stats_row("time to mitigate", &s.mitigate),
        stats_row("time to recover", &s.recover)
    );
    let _ = write!(
        out,
        "<h2>Runs</h2><table id=\"runs\"><tr><th>run</th><th>seed</th><th>detect ms</th><th>mitigate ms</th><th>recover ms</th><th>verdict</th></tr>"
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
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td style=\"text-align:left\">{verdict}</td></tr>",
            r.run,
            r.seed,
            ms(o.ttd()),
            ms(o.ttm()),
            ms(o.ttr())
        );
    }
    out.push_str("</table><h2>Timelines</h2>");
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

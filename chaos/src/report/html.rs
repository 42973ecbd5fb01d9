//! The HTML page of a report: the recovery table (time to detect, to
//! mitigate, to recover: p50 / p90 / p99 / max) for the scenario and for
//! each of its faults, the jobs' step time (baseline, worst, back), one row
//! per run and one per fault of each run, and an SVG timeline per run
//! (every failed run, and the first [`TIMELINES`] runs).
//!
//! A fleet game day's report has its own section before the timelines
//! ([`super::fleet::html`]).
//!
//! A figure that is missing (never happened, nothing measured it) is a
//! dash, never 0 and never NaN.

use std::collections::BTreeMap;
use std::fmt::Write;

use render::table::{table, table_head, Row};
use render::{escape, Mark, Span, Timeline, Track};

use super::record::{Moments, Report, RunOutcome, RunRecord, Stats, StepTimeSummary};
use super::relevance;

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
            stats_row("time to detect", &f.recovery.detect),
            stats_row("time to mitigate", &f.recovery.mitigate),
            stats_row("time to recover", &f.recovery.recover)
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
///
/// Top to bottom: the faults; the probes that moved, those that moved most
/// when the faults began first ([`relevance`]); one row naming the probes
/// that never moved; the rule instances, those on a faulted node first;
/// the decisions and the milestones.
pub fn run_timeline(report: &Report, run: &RunRecord) -> Timeline {
    let mut tracks = vec![Track::Spans {
        label: "faults".into(),
        spans: run
            .faults
            .iter()
            .map(|f| Span { start: f.start, end: f.end, label: f.label.clone(), class: "fault".into() })
            .collect(),
    }];
    tracks.extend(probe_tracks(report, run));
    tracks.extend(instance_tracks(run));
    tracks.push(decision_track(run));
    tracks.extend(milestone_tracks(&run.outcome));
    let verdict = if run.outcome.passed { "passed" } else { "FAILED" };
    Timeline {
        title: format!("run {} (seed {}): {verdict}", run.run, run.seed),
        start: run.start,
        end: run.end,
        tracks,
    }
}

/// The probes that moved, each with its bounds, and one row naming those
/// that did not.
fn probe_tracks(report: &Report, run: &RunRecord) -> Vec<Track> {
    let (moved, still) = relevance::order_probes(&run.probes, &run.faults, run.end);
    let mut tracks = Vec::new();
    for p in moved {
        let bounds = report.bounds.iter().find(|b| b.probe == p.name).map(|b| (b.min, b.max)).unwrap_or((None, None));
        tracks.push(Track::Series { label: p.name.clone(), points: p.points.clone(), bounds });
    }
    if !still.is_empty() {
        let names: Vec<&str> = still.iter().map(|p| p.name.as_str()).collect();
        let label = format!(
            "{} unchanged",
            if names.len() == 1 { "1 probe".into() } else { format!("{} probes", names.len()) }
        );
        tracks.push(Track::Note { label, text: names.join(", ") });
    }
    tracks
}

/// Rule instances: one row each, a span per state other than inactive;
/// those on a faulted node first.
fn instance_tracks(run: &RunRecord) -> Vec<Track> {
    let mut instances: BTreeMap<(bool, String, String), Vec<(i64, String)>> = BTreeMap::new();
    for t in &run.transitions {
        // `false` sorts first: instances on a faulted node come first.
        let elsewhere = !relevance::on_faulted_node(t, &run.faults);
        instances.entry((elsewhere, t.rule.clone(), subject(&t.subject))).or_default().push((t.at, t.to.clone()));
    }
    let mut tracks = Vec::new();
    for ((_, rule, subj), states) in instances {
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
    tracks
}

/// Every decision, coloured by its verdict, with its reason (a hold's, a
/// canary's judgement) and what the actuator sent.
fn decision_track(run: &RunRecord) -> Track {
    Track::Marks {
        label: "decisions".into(),
        marks: run
            .decisions
            .iter()
            .map(|d| Mark {
                at: d.at,
                label: format!(
                    "{} {} {}{}{}{}{}{}",
                    d.action,
                    subject(&d.target),
                    d.verdict,
                    if d.undo_of.is_some() { " (undo)" } else { "" },
                    d.canary.as_ref().map(|c| format!(" (canary: {c})")).unwrap_or_default(),
                    d.judgement
                        .clone()
                        .or_else(|| d.outcome.as_ref().map(|o| format!("outcome: {o}")))
                        .map(|o| format!(" ({o})"))
                        .unwrap_or_default(),
                    d.reason.as_ref().map(|r| format!("\n{r}")).unwrap_or_default(),
                    d.requests.iter().map(|r| format!("\n{r}")).collect::<String>()
                ),
                class: d.verdict.clone(),
            })
            .collect(),
    }
}

/// The run's detected, mitigated and recovered marks; with several faults,
/// each one's own on a row of their own, named.
fn milestone_tracks(o: &RunOutcome) -> Vec<Track> {
    let marks = |m: &Moments, name: &dyn Fn(&str) -> String| -> Vec<Mark> {
        [(m.detected_at, "detected"), (m.mitigated_at, "mitigated"), (m.recovered_at, "recovered")]
            .into_iter()
            .filter_map(|(at, what)| Some(Mark { at: at?, label: name(what), class: what.into() }))
            .collect()
    };
    let mut tracks = vec![Track::Marks { label: "milestones".into(), marks: marks(&o.moments, &|w| w.to_string()) }];
    if o.faults.len() > 1 {
        let per_fault = o.faults.iter().flat_map(|f| marks(&f.moments, &|w| format!("{w}: {}", f.label))).collect();
        tracks.push(Track::Marks { label: "per fault".into(), marks: per_fault });
    }
    tracks
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
    let style = format!("{}{}", render::page::BODY_STYLE, render::table::STYLE);
    let mut out = render::page::start(&format!("chaos: {}", report.scenario), &style);
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
        stats_row("time to detect", &s.recovery.detect),
        stats_row("time to mitigate", &s.recovery.mitigate),
        stats_row("time to recover", &s.recovery.recover)
    );
    fault_tables(report, &mut out);
    if let Some(step) = &s.step_time {
        step_table(step, &mut out);
    }
    out.push_str("<h2>Runs</h2>");
    out.push_str(&table(
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
        &report.runs,
        run_row,
    ));
    run_fault_rows(report, &mut out);
    if let Some(fleet) = &report.fleet {
        out.push_str(&super::fleet::html::section(fleet));
    }
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
    out.push_str(render::page::END);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::record::{FaultOutcome, Moments, ProbeSeries, StepTime};

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
            fleet: None,
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

    #[test]
    fn the_timeline_puts_what_the_fault_moved_first_and_names_the_flat_probes_in_one_row() {
        let mut report = report();
        let s = 1_000_000_000;
        let series = |values: &[f64]| values.iter().enumerate().map(|(i, v)| (i as i64 * s / 2, *v)).collect();
        let run = &mut report.runs[0];
        run.faults = vec![crate::report::FaultRecord {
            label: "pfc_storm node-04 eth2".into(),
            nodes: vec!["node-04".into()],
            start: 2 * s,
            end: None,
        }];
        run.probes = vec![
            ProbeSeries { name: "step time".into(), points: series(&[1.0, 1.02, 0.98, 1.0, 1.1, 1.12, 1.1, 1.08]) },
            ProbeSeries { name: "link up".into(), points: series(&[1.0; 8]) },
            ProbeSeries { name: "paused fraction".into(), points: series(&[0.0, 0.01, 0.0, 0.0, 0.9, 0.9, 0.95, 0.9]) },
            ProbeSeries { name: "carrier changes".into(), points: series(&[4.0; 8]) },
        ];
        let transition = |node: &str| crate::report::TransitionRecord {
            at: 3 * s,
            rule: "pfc-storm".into(),
            subject: [("node".to_string(), node.to_string())].into(),
            from: "inactive".into(),
            to: "firing".into(),
        };
        run.transitions = vec![transition("node-01"), transition("node-04")];
        let timeline = run_timeline(&report, &report.runs[0]);
        let labels: Vec<String> = timeline
            .tracks
            .iter()
            .map(|t| match t {
                Track::Series { label, .. }
                | Track::Spans { label, .. }
                | Track::Marks { label, .. }
                | Track::Note { label, .. } => label.clone(),
            })
            .collect();
        assert_eq!(
            labels[..5],
            ["faults", "paused fraction", "step time", "2 probes unchanged", "pfc-storm node=node-04"],
            "{labels:?}"
        );
        assert!(labels.contains(&"pfc-storm node=node-01".to_string()), "{labels:?}");
        let note = timeline.tracks.iter().find_map(|t| match t {
            Track::Note { text, .. } => Some(text.clone()),
            _ => None,
        });
        assert_eq!(note.as_deref(), Some("link up, carrier changes"));
        let svg = timeline.svg(900);
        assert!(svg.contains(r#"class="note" data-label="link up, carrier changes""#), "{svg}");
    }
}

//! The page: one section per group of tracks, each an SVG timeline of the
//! same window and width, so the sections stack on one time axis (UTC wall
//! clock), in the order an SRE reads a slowdown: GPU, NCCL, NIC, switch,
//! job step time, then what the daemon made of it: rule states, decisions,
//! actions. Drawn by the chaos report's renderer.

use std::collections::BTreeMap;
use std::fmt::Write;

use engine::dispatch::{Decision, Verdict};
use engine::{Labels, Nanos, Note, State};
use render::escape;
use render::timeline::{Axis, Mark, Span, Timeline, Track, STYLE};

use super::history::Transition;
use super::signals::{Group, SeriesTrack};
use super::window::Window;
use crate::report::{rfc3339, verdict};

/// Page width in pixels; every section uses it, so their axes line up.
pub const WIDTH: u32 = 1100;

/// Everything a page shows.
pub struct Page<'a> {
    /// The window.
    pub window: Window,
    /// What the page is about (its focus), in words.
    pub focus: String,
    /// Where each input came from: (what, where).
    pub sources: Vec<(&'static str, String)>,
    /// How the rule states were obtained, in words.
    pub rule_states: String,
    /// Signal tracks, in group order.
    pub signals: &'a [SeriesTrack],
    /// Series the bound left out.
    pub left_out: usize,
    /// Rule instance transitions in focus, in time order (earlier ones too,
    /// for the state at the window's start).
    pub transitions: &'a [Transition],
    /// Ledger records in focus.
    pub decisions: &'a [Decision],
    /// Notes in the window.
    pub notes: &'a [Note],
}

/// `metric node eth3 prio=3`: the labels that tell tracks apart, short.
fn label(metric: &str, labels: &Labels, rate: bool) -> String {
    let mut parts = vec![format!("{metric}{}", if rate { "/s" } else { "" })];
    for key in ["job", "node", "gpu", "netdev", "rdma_dev", "switch", "port", "prio"] {
        // The inventory adds the nearest GPU and the far-end switch to NIC
        // series: on a NIC's row they repeat what its netdev already says.
        let nic = labels.get("netdev").is_some() || labels.get("rdma_dev").is_some();
        let redundant = match key {
            "rdma_dev" => labels.get("netdev").is_some(),
            "gpu" => nic,
            "switch" => labels.get("port").is_none(),
            _ => false,
        };
        if redundant {
            continue;
        }
        if let Some(v) = labels.get(key) {
            parts.push(if matches!(key, "gpu" | "prio") { format!("{key}={v}") } else { v.to_string() });
        }
    }
    parts.join(" ")
}

/// A value in a few characters.
fn num(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e5 || v.abs() < 0.01) {
        format!("{v:.2e}")
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The drawn range, since each row is scaled to its own: `(90 – 180)`.
fn range(points: &[(Nanos, f64)]) -> String {
    let lo = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let hi = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    if lo == hi {
        format!("(= {})", num(lo))
    } else {
        format!("({} – {})", num(lo), num(hi))
    }
}

fn subject(labels: &Labels) -> String {
    label("", labels, false).trim().to_string()
}

/// A pending / firing / resolved row per rule instance.
fn rule_tracks(window: &Window, transitions: &[Transition]) -> Vec<Track> {
    let mut by_instance: BTreeMap<(String, String), Vec<(Nanos, State)>> = BTreeMap::new();
    for t in transitions {
        by_instance.entry((t.rule.clone(), subject(&t.subject))).or_default().push((t.at, t.to));
    }
    let mut tracks = Vec::new();
    for ((rule, subj), states) in by_instance {
        let mut spans = Vec::new();
        for (i, (at, state)) in states.iter().enumerate() {
            let end = states.get(i + 1).map(|s| s.0);
            let outside = *at > window.to || end.is_some_and(|e| e < window.from);
            if *state == State::Inactive || outside {
                continue;
            }
            spans.push(Span {
                start: (*at).max(window.from),
                end: end.map(|e| e.min(window.to)),
                label: format!("{rule} {} {subj}", state.as_str()),
                class: state.as_str().to_string(),
            });
        }
        if !spans.is_empty() {
            tracks.push(Track::Spans { label: format!("{rule} {subj}"), spans });
        }
    }
    tracks
}

fn what(d: &Decision) -> String {
    format!("{}: {}{}", d.proposal.rule, d.proposal.action, if d.undo_of.is_some() { " (undo)" } else { "" })
}

/// When a decision took effect, on the daemon's clock: its last step.
/// `dispatched_at` and `finished_at` are wall-clock stamps for latency,
/// while steps and `decided_at` run on the clock the samples are judged on
/// (the same in a live daemon, the recording's own time in a replay).
pub fn effective_at(d: &Decision) -> Nanos {
    d.steps.iter().map(|s| s.at).max().unwrap_or(d.proposal.decided_at).max(d.proposal.decided_at)
}

/// Decisions as marks; actions as the time each was in effect, and the
/// dispatcher's steps as marks.
fn ledger_tracks(window: &Window, decisions: &[Decision]) -> (Vec<Track>, Vec<Track>) {
    let marks = decisions
        .iter()
        .filter(|d| window.contains(d.proposal.decided_at))
        .map(|d| Mark {
            at: d.proposal.decided_at,
            label: format!("{} → {}", what(d), d.verdict.name()),
            class: d.verdict.name().to_string(),
        })
        .collect();
    let by_id: BTreeMap<&str, &Decision> = decisions.iter().map(|d| (d.id.as_str(), d)).collect();
    let mut in_effect = Vec::new();
    for d in decisions.iter().filter(|d| matches!(d.verdict, Verdict::Executed { .. }) && d.undo_of.is_none()) {
        let end = d.undone_by.as_deref().and_then(|u| by_id.get(u)).map(|u| effective_at(u));
        let start = effective_at(d);
        if start <= window.to && end.is_none_or(|e| e >= window.from) {
            let label = format!("{} in effect{}", what(d), if end.is_some() { ", then undone" } else { "" });
            in_effect.push(Span { start: start.max(window.from), end, label, class: "in-effect".into() });
        }
    }
    let steps = decisions
        .iter()
        .flat_map(|d| d.steps.iter().map(move |s| (d, s)))
        .filter(|(_, s)| window.contains(s.at))
        .map(|(d, s)| Mark { at: s.at, label: format!("{}: {}", what(d), s.what), class: d.verdict.name().to_string() })
        .collect();
    (
        vec![Track::Marks { label: "decisions".into(), marks }],
        vec![
            Track::Spans { label: "in effect".into(), spans: in_effect },
            Track::Marks { label: "dispatcher steps".into(), marks: steps },
        ],
    )
}

fn section(out: &mut String, kind: &str, title: &str, window: &Window, tracks: Vec<Track>, empty: &str) {
    section_with(out, kind, title, window, tracks, empty, "");
}

/// [`section`], with `extra` HTML at its end.
fn section_with(
    out: &mut String,
    kind: &str,
    title: &str,
    window: &Window,
    tracks: Vec<Track>,
    empty: &str,
    extra: &str,
) {
    let n = tracks.len();
    let _ = write!(out, "<section class=\"group\" data-kind=\"{kind}\" data-tracks=\"{n}\"><h2>{}</h2>", escape(title));
    let drawn = tracks.iter().any(|t| match t {
        Track::Series { points, .. } => !points.is_empty(),
        Track::Spans { spans, .. } => !spans.is_empty(),
        Track::Marks { marks, .. } => !marks.is_empty(),
        Track::Note { text, .. } => !text.is_empty(),
    });
    if drawn {
        // The section's heading names it; the SVG's own title stays empty.
        let t = Timeline { title: String::new(), start: window.from, end: window.to, tracks };
        out.push_str(&t.svg_with_axis(WIDTH, Axis::Clock));
    } else if !empty.is_empty() || extra.is_empty() {
        let _ = write!(out, "<p class=\"empty\">{}</p>", escape(empty));
    }
    out.push_str(extra);
    out.push_str("</section>");
}

/// One line for a group's series that did not move, listing them.
fn unchanged(kind: &str, labels: &[String]) -> String {
    let mut out = String::new();
    if labels.is_empty() {
        return out;
    }
    let n = labels.len();
    let _ = write!(
        out,
        "<details class=\"unchanged\" data-kind=\"{kind}\" data-unchanged=\"{n}\"><summary>{n} series unchanged</summary><ul>"
    );
    for l in labels {
        let _ = write!(out, "<li data-label=\"{0}\">{0}</li>", escape(l));
    }
    out.push_str("</ul></details>");
    out
}

/// Colours for the classes this page adds to the renderer's.
const EXTRA_STYLE: &str = ".timeline .span.in-effect rect{fill:#2ca02c;opacity:.45}\
.timeline .mark.shadowed line{stroke:#8c564b}.timeline .mark.suppressed line{stroke:#7f7f7f}\
.timeline .mark.fault line{stroke:#d62728}.timeline .mark.recovery line{stroke:#17becf}";

/// The HTML page.
pub fn render(p: &Page) -> String {
    let (from, to) = (rfc3339(p.window.from), rfc3339(p.window.to));
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>rocemend timeline {from} – {to}</title>\
         <style>body{{font:14px sans-serif;margin:20px}}h2{{font-size:15px;margin:18px 0 4px}}\
         table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left}}\
         .empty{{color:#777}}{STYLE}{EXTRA_STYLE}</style></head><body>"
    );
    let _ = write!(
        out,
        "<h1>Timeline {from} – {to}</h1><p id=\"scope\">{}. Times are UTC; every section has the same axis.</p><ul id=\"sources\">",
        escape(&p.focus)
    );
    for (what, at) in &p.sources {
        let _ = write!(out, "<li>{what}: <code>{}</code></li>", escape(at));
    }
    let _ = write!(out, "<li>rule states: {}</li></ul>", escape(&p.rule_states));
    if p.left_out > 0 {
        let _ = write!(
            out,
            "<p class=\"left-out\">{} more series were left out (at most {} are drawn): narrow the page with --node or --job.</p>",
            p.left_out,
            super::signals::MAX_SERIES
        );
    }
    // Tracks come ranked (what moved first); the flat ones of a group are
    // one line listing them, so a node's 40 quiet counters do not bury the
    // one that paused its port.
    let mut groups: BTreeMap<Group, (Vec<Track>, Vec<String>)> = BTreeMap::new();
    for s in p.signals {
        let text = format!("{} {}", label(&s.metric, &s.labels, s.rate), range(&s.points));
        let group = groups.entry(s.group).or_default();
        if s.flat {
            group.1.push(text);
        } else {
            group.0.push(Track::Series { label: text, points: s.points.clone(), bounds: (None, None) });
        }
    }
    for (group, (tracks, flat)) in groups {
        section_with(&mut out, group.name(), group.title(), &p.window, tracks, "", &unchanged(group.name(), &flat));
    }
    section(
        &mut out,
        "rules",
        "Rule states",
        &p.window,
        rule_tracks(&p.window, p.transitions),
        "No rule instance was pending or firing in the window.",
    );
    let (decisions, actions) = ledger_tracks(&p.window, p.decisions);
    section(&mut out, "decisions", "Decisions", &p.window, decisions, "No decision in the window.");
    section(&mut out, "actions", "Actions", &p.window, actions, "No action in the window.");
    if !p.notes.is_empty() {
        let marks =
            p.notes.iter().map(|n| Mark { at: n.ts, label: format!("{}: {}", n.kind, n.text), class: n.kind.clone() });
        section(
            &mut out,
            "notes",
            "Notes",
            &p.window,
            vec![Track::Marks { label: "notes".into(), marks: marks.collect() }],
            "",
        );
    }
    decision_table(&mut out, p);
    // For headless checks: what the browser laid out (getBBox is zero for
    // anything not rendered), as the chaos report does.
    out.push_str(
        "<script>addEventListener('load',function(){var svgs=document.querySelectorAll('svg.timeline');\
         var drawn=0;svgs.forEach(function(s){var b=s.getBBox();if(b.width>0&&b.height>0)drawn++;});\
         document.body.setAttribute('data-timelines',String(drawn));\
         document.body.setAttribute('data-series',String(document.querySelectorAll('svg.timeline g.series').length));\
         document.body.setAttribute('data-marks',String(document.querySelectorAll('svg.timeline g.mark').length));});</script>",
    );
    out.push_str("</body></html>");
    out
}

/// The decisions in the window, with their incident (`--incident ID`) and
/// id (`rocemend explain ID`).
fn decision_table(out: &mut String, p: &Page) {
    let shown: Vec<&Decision> = p.decisions.iter().filter(|d| p.window.contains(d.proposal.decided_at)).collect();
    if shown.is_empty() {
        return;
    }
    out.push_str("<h2>Decisions in the window</h2><table id=\"decisions\"><tr><th>decided</th><th>decision</th><th>incident</th><th>rule</th><th>action</th><th>verdict</th></tr>");
    for d in shown {
        let pr = &d.proposal;
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"incident\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            rfc3339(pr.decided_at),
            escape(&d.id),
            crate::control::incidents::incident_id(&pr.rule, &pr.subject, pr.active_at),
            escape(&pr.rule),
            escape(&pr.action.to_string()),
            escape(&verdict(d))
        );
    }
    out.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_states_are_clipped_to_the_window_and_idle_instances_left_out() {
        let l = Labels::from_pairs([("node", "n1")]);
        let t = |at, to| Transition { rule: "r".into(), subject: l.clone(), to, at };
        let w = Window::new(100, 200).unwrap();
        let tracks = rule_tracks(&w, &[t(10, State::Pending), t(150, State::Firing), t(190, State::Inactive)]);
        let Track::Spans { label, spans } = &tracks[0] else { panic!("{tracks:?}") };
        assert_eq!(label, "r n1");
        let drawn: Vec<(Nanos, Option<Nanos>, &str)> =
            spans.iter().map(|s| (s.start, s.end, s.class.as_str())).collect();
        assert_eq!(drawn, [(100, Some(150), "pending"), (150, Some(190), "firing")]);
        assert!(rule_tracks(&w, &[t(10, State::Firing), t(20, State::Inactive)]).is_empty(), "over before the window");
    }

    #[test]
    fn values_are_short_and_ranges_say_what_a_row_spans() {
        assert_eq!(range(&[(0, 90.0), (1, 180.0)]), "(90 – 180)");
        assert_eq!(range(&[(0, 1.25)]), "(= 1.25)");
        assert_eq!(num(900_000.0), "9.00e5");
        assert_eq!(num(0.0), "0");
    }
}

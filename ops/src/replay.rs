//! `rocemend replay`: what a rule set would have done on a recording, or
//! how two rule sets differ on it; the backtest is the engine's
//! (`engine::backtest`), this is how it is told.

use std::fmt::Write as _;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::backtest::{self, Backtest, BacktestError, DiffLine};
use engine::rule::{self, Helpers};
use engine::topology::TopologyError;
use engine::{EngineEvent, RuleErrors, Topology};

use crate::progress::Progress;
use crate::report::{offset, short};

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The inventory.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A rule directory.
    #[error(transparent)]
    Rules(#[from] RuleErrors),
    /// The recording cannot be opened.
    #[error("opening {}", path.display())]
    Open {
        /// The recording.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The recording, run through the rules.
    #[error(transparent)]
    Backtest(#[from] BacktestError),
}

/// What `rocemend replay` is asked.
pub struct Request<'a> {
    /// The recording.
    pub recording: &'a Path,
    /// The rule directory (A).
    pub rules: &'a Path,
    /// A second rule directory (B): only what differs.
    pub diff: Option<&'a Path>,
    /// The inventory; the example inventory without it.
    pub inventory: Option<&'a Path>,
    /// JSON instead of text.
    pub json: bool,
}

/// What a replay found: its text, and with `diff` whether any proposal differs.
#[derive(Debug, Clone)]
pub struct Replayed {
    /// What to print.
    pub text: String,
    /// With `diff`: whether the two rule sets differ.
    pub differs: bool,
}

fn backtest_one(
    recording: &Path,
    rules_dir: &Path,
    topology: Option<Arc<Topology>>,
    which: &str,
) -> Result<Backtest, ReplayError> {
    let rules = rule::load_dir(rules_dir, Helpers::new(None, topology.clone()))?;
    let file = File::open(recording).map_err(|source| ReplayError::Open { path: recording.to_path_buf(), source })?;
    let progress = Progress::file(recording, &format!("{which} {}", recording.display()));
    let backtest =
        backtest::run(BufReader::new(progress.reader(file)), &recording.display().to_string(), rules, topology)?;
    progress.finish();
    Ok(backtest)
}

/// Runs the replay `request` asks for.
pub fn replay(request: &Request<'_>) -> Result<Replayed, ReplayError> {
    let topology = match request.inventory {
        Some(p) => Arc::new(Topology::load(p)?),
        None => Arc::new(Topology::parse(engine::topology::EXAMPLE_INVENTORY, "example inventory")?),
    };
    let (recording, rules_dir) = (request.recording, request.rules);
    let a = backtest_one(recording, rules_dir, Some(topology.clone()), "A")?;
    let t0 = a.span.0;
    let mut out = String::new();
    let Some(other) = request.diff else {
        for event in &a.events {
            let line = if request.json { event_json(event).to_string() } else { event_text(event, t0) };
            let _ = writeln!(out, "{line}");
        }
        if !request.json {
            let _ = writeln!(
                out,
                "{} samples over {:.1}s; {} proposals",
                a.samples,
                (a.span.1 - a.span.0) as f64 / 1e9,
                a.proposals().count()
            );
        }
        return Ok(Replayed { text: out, differs: false });
    };
    let b = backtest_one(recording, other, Some(topology), "B")?;
    let mut lines = backtest::diff(&a, &b);
    lines.sort_by_key(|l| (when(l), key(l).to_string()));
    let differ = lines.iter().filter(|l| differs(l)).count();
    if request.json {
        let _ = writeln!(out, "{}", diff_json(rules_dir, other, t0, &lines));
    } else {
        let _ = writeln!(out, "A = {}   B = {}", rules_dir.display(), other.display());
        for line in lines.iter().filter(|l| differs(l)) {
            let _ = writeln!(out, "{}", diff_text(line, t0));
        }
        let _ = writeln!(out, "{}", diff_summary(&lines));
    }
    Ok(Replayed { text: out, differs: differ > 0 })
}

/// Whether a line of a diff is a difference: made by one set only, or at
/// another time.
fn differs(line: &DiffLine) -> bool {
    !matches!(line, DiffLine::Both { a, b, .. } if a == b)
}

/// When a line happened: the earlier of its two times.
fn when(line: &DiffLine) -> i64 {
    match line {
        DiffLine::Both { a, b, .. } => *a.min(b),
        DiffLine::OnlyA { at, .. } | DiffLine::OnlyB { at, .. } => *at,
    }
}

fn key(line: &DiffLine) -> &str {
    match line {
        DiffLine::Both { key, .. } | DiffLine::OnlyA { key, .. } | DiffLine::OnlyB { key, .. } => key,
    }
}

/// How many proposals differ, and how.
struct Counts {
    only_a: usize,
    only_b: usize,
    moved: usize,
    same: usize,
}

fn counts(lines: &[DiffLine]) -> Counts {
    let mut c = Counts { only_a: 0, only_b: 0, moved: 0, same: 0 };
    for line in lines {
        match line {
            DiffLine::Both { a, b, .. } if a == b => c.same += 1,
            DiffLine::Both { .. } => c.moved += 1,
            DiffLine::OnlyA { .. } => c.only_a += 1,
            DiffLine::OnlyB { .. } => c.only_b += 1,
        }
    }
    c
}

/// `2 proposals differ: 1 only in A, 1 at another time in B; 3 the same`.
fn diff_summary(lines: &[DiffLine]) -> String {
    let c = counts(lines);
    let differ = c.only_a + c.only_b + c.moved;
    if differ == 0 {
        return format!("no proposal differs ({} the same)", c.same);
    }
    let verb = if differ == 1 { "proposal differs" } else { "proposals differ" };
    format!(
        "{differ} {verb}: {} only in A, {} only in B, {} at another time in B; {} the same",
        c.only_a, c.only_b, c.moved, c.same
    )
}

/// One line of a diff, for people.
fn diff_text(line: &DiffLine, t0: i64) -> String {
    match line {
        DiffLine::Both { key, a, b } if a == b => format!("  both  {}  {key}", offset(*a, t0)),
        DiffLine::Both { key, a, b } => {
            format!("  both  A {} B {} (B {:+.3}s)  {key}", offset(*a, t0), offset(*b, t0), (b - a) as f64 / 1e9)
        }
        DiffLine::OnlyA { key, at } => format!("  A     {}  {key}", offset(*at, t0)),
        DiffLine::OnlyB { key, at } => format!("  B     {}  {key}", offset(*at, t0)),
    }
}

/// The whole diff as one JSON document: which rule sets, when the
/// recording starts, and each proposal with where it was made and when
/// (ns since the epoch; `null` where a set did not make it), in time
/// order, and a summary of what differs.
fn diff_json(a: &Path, b: &Path, t0: i64, lines: &[DiffLine]) -> serde_json::Value {
    let proposals: Vec<serde_json::Value> = lines
        .iter()
        .map(|line| match line {
            DiffLine::Both { key, a, b } => serde_json::json!({"key": key, "in": "both", "a": a, "b": b}),
            DiffLine::OnlyA { key, at } => serde_json::json!({"key": key, "in": "a", "a": at, "b": null}),
            DiffLine::OnlyB { key, at } => serde_json::json!({"key": key, "in": "b", "a": null, "b": at}),
        })
        .collect();
    let count = |f: fn(&DiffLine) -> bool| lines.iter().filter(|l| f(l)).count();
    let c = counts(lines);
    serde_json::json!({
        "summary": {
            "differ": c.only_a + c.only_b + c.moved,
            "only_a": c.only_a,
            "only_b": c.only_b,
            "other_time": c.moved,
            "same": c.same,
            "text": diff_summary(lines),
        },
        "a": a.display().to_string(),
        "b": b.display().to_string(),
        "start": t0,
        "proposals": proposals,
        "both": count(|l| matches!(l, DiffLine::Both { .. })),
        "only_a": count(|l| matches!(l, DiffLine::OnlyA { .. })),
        "only_b": count(|l| matches!(l, DiffLine::OnlyB { .. })),
    })
}

/// One event as one JSON object.
fn event_json(event: &EngineEvent) -> serde_json::Value {
    use serde_json::json;
    match event {
        EngineEvent::Transition { rule, subject, from, to, at, values, .. } => {
            json!({"event": "transition", "rule": rule, "subject": subject, "from": from, "to": to, "at": at, "values": values})
        }
        EngineEvent::Proposal(p) => json!({"event": "proposal", "proposal": p}),
        EngineEvent::SensorStale { rule, subject, last_seen, at } => {
            json!({"event": "sensor-stale", "rule": rule, "subject": subject, "last_seen": last_seen, "at": at})
        }
        EngineEvent::SensorFresh { rule, subject, at } => {
            json!({"event": "sensor-fresh", "rule": rule, "subject": subject, "at": at})
        }
        EngineEvent::ActionError { rule, subject, message } => {
            json!({"event": "action-error", "rule": rule, "subject": subject, "error": message})
        }
        EngineEvent::Quarantined { rule, error, at } => {
            json!({"event": "quarantined", "rule": rule, "error": error.to_string(), "at": at})
        }
    }
}

/// One event as one line of words, its time first.
fn event_text(event: &EngineEvent, t0: i64) -> String {
    match event {
        EngineEvent::Transition { rule, subject, from, to, at, values, .. } => {
            let values: Vec<String> = values.iter().map(|(k, v)| format!("{k}={v:.4}")).collect();
            format!(
                "{}  {:<9} {rule} {}  {}",
                offset(*at, t0),
                format!("{}→{}", from.as_str(), to.as_str()),
                short(subject),
                values.join(" ")
            )
        }
        EngineEvent::Proposal(p) => format!("{}  would     {}", offset(p.decided_at, t0), p.action),
        EngineEvent::SensorStale { rule, subject, at, .. } => {
            format!("{}  stale     {rule} {}", offset(*at, t0), short(subject))
        }
        EngineEvent::SensorFresh { rule, subject, at } => {
            format!("{}  fresh     {rule} {}: inputs fresh again", offset(*at, t0), short(subject))
        }
        // No time of its own: it follows the line before.
        EngineEvent::ActionError { rule, subject, message } => {
            format!("{:>9}  error     {rule} {}: could not build an action: {message}", "", short(subject))
        }
        EngineEvent::Quarantined { rule, error, at } => {
            format!("{}  error     {rule} quarantined: {error}", offset(*at, t0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::Labels;

    #[test]
    fn a_fresh_sensor_and_an_action_error_are_told_in_words_not_debug_structs() {
        let subject = Labels::from_pairs([("node", "gpu-01"), ("netdev", "eth0")]);
        let fresh = EngineEvent::SensorFresh { rule: "pfc-storm".into(), subject: subject.clone(), at: 2_500_000_000 };
        let text = event_text(&fresh, 0);
        assert_eq!(text, "+  2.500s  fresh     pfc-storm {node=gpu-01 netdev=eth0}: inputs fresh again");
        let error = EngineEvent::ActionError { rule: "link-flap".into(), subject, message: "needs label port".into() };
        let text = event_text(&error, 0);
        assert!(text.ends_with("link-flap {node=gpu-01 netdev=eth0}: could not build an action: needs label port"));
        for e in [&fresh, &error] {
            let (text, json) = (event_text(e, 0), event_json(e).to_string());
            for debug in ["SensorFresh", "ActionError", "Labels(", "{ rule"] {
                assert!(!text.contains(debug) && !json.contains(debug), "{debug} in {text} / {json}");
            }
        }
        assert_eq!(event_json(&fresh)["subject"]["netdev"], "eth0");
    }

    #[test]
    fn the_diff_as_json_counts_each_side() {
        let lines = vec![
            DiffLine::Both { key: "k1".into(), a: 1, b: 2 },
            DiffLine::OnlyA { key: "k2".into(), at: 3 },
            DiffLine::OnlyB { key: "k3".into(), at: 4 },
            DiffLine::OnlyB { key: "k4".into(), at: 5 },
        ];
        let v = diff_json(Path::new("a"), Path::new("b"), 0, &lines);
        assert_eq!((v["both"].as_u64(), v["only_a"].as_u64(), v["only_b"].as_u64()), (Some(1), Some(1), Some(2)));
        assert_eq!(v["proposals"][1], serde_json::json!({"key": "k2", "in": "a", "a": 3, "b": null}));
        assert_eq!(v["summary"]["differ"], 4);
        assert_eq!(
            diff_summary(&lines),
            "4 proposals differ: 1 only in A, 2 only in B, 1 at another time in B; 0 the same"
        );
        let same = vec![DiffLine::Both { key: "k1".into(), a: 1, b: 1 }];
        assert_eq!(diff_summary(&same), "no proposal differs (1 the same)");
        assert!(!differs(&same[0]));
    }
}

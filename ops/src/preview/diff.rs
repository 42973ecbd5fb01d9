//! `preview --diff`: two playbooks on one recording, and only what
//! differs.
//!
//! Decisions are matched by what they are about (rule, action, target;
//! undo and expiry apart from the proposal) in order of occurrence, as
//! `replay --diff` matches proposals. A pair differs when its time, mode
//! or verdict differs; ids are not compared (each run numbers its own).

use std::collections::BTreeMap;

use engine::Nanos;

use super::show::{self, Told};
use super::simulate::{Line, Preview};
use crate::report::offset;

/// One side of a differing pair.
pub struct Side<'a> {
    /// The decision.
    pub line: &'a Line,
    /// Its verdict.
    pub told: Told,
}

/// A decision that differs: what OLD did and what NEW does (`None`: that
/// playbook made no such decision).
pub struct Change<'a> {
    /// What it is about: `rule kind target`.
    pub subject: String,
    /// OLD's decision.
    pub old: Option<Side<'a>>,
    /// NEW's decision.
    pub new: Option<Side<'a>>,
}

impl Change<'_> {
    /// When it happened: the earlier side.
    pub fn at(&self) -> Nanos {
        let times = [self.old.as_ref().map(|s| s.line.at), self.new.as_ref().map(|s| s.line.at)];
        times.into_iter().flatten().min().unwrap_or_default()
    }
}

/// The decisions of `preview` by what they are about, each with its verdict.
fn sides<'a>(preview: &'a Preview) -> BTreeMap<String, Vec<Side<'a>>> {
    let t0 = preview.span.0;
    let seen = show::first_seen(preview);
    let at_of = |id: &str| seen.get(id).copied();
    let mut out: BTreeMap<String, Vec<Side<'a>>> = BTreeMap::new();
    for line in &preview.lines {
        let told = show::tell(line, t0, &at_of);
        // An expiry is the same decision as its request: matched apart, so a
        // request is compared with a request.
        let stage = if told.category == "expired" { " (expiry)" } else { "" };
        out.entry(format!("{}{stage}", show::subject(line))).or_default().push(Side { line, told });
    }
    out
}

fn same(a: &Side<'_>, b: &Side<'_>, t0a: Nanos, t0b: Nanos) -> bool {
    a.line.at - t0a == b.line.at - t0b && a.line.mode() == b.line.mode() && a.told.compare == b.told.compare
}

/// What differs between OLD and NEW, in time order.
pub fn changes<'a>(old: &'a Preview, new: &'a Preview) -> Vec<Change<'a>> {
    let (mut left, mut right) = (sides(old), sides(new));
    let keys: std::collections::BTreeSet<String> = left.keys().chain(right.keys()).cloned().collect();
    let mut out = Vec::new();
    for key in keys {
        let mut l = left.remove(&key).unwrap_or_default().into_iter();
        let mut r = right.remove(&key).unwrap_or_default().into_iter();
        loop {
            let (a, b) = (l.next(), r.next());
            if a.is_none() && b.is_none() {
                break;
            }
            if let (Some(a), Some(b)) = (&a, &b) {
                if same(a, b, old.span.0, new.span.0) {
                    continue;
                }
            }
            out.push(Change { subject: key.clone(), old: a, new: b });
        }
    }
    out.sort_by(|a, b| a.at().cmp(&b.at()).then_with(|| a.subject.cmp(&b.subject)));
    out
}

fn side_text(side: &Option<Side<'_>>, t0: Nanos, shown_at: Nanos) -> String {
    match side {
        None => "no such decision".into(),
        Some(s) => {
            let when = if s.line.at != shown_at {
                format!(" at {}", offset(s.line.at, t0).replace(' ', ""))
            } else {
                String::new()
            };
            format!("{} [{}]{when}", s.told.text, s.line.mode().as_str())
        }
    }
}

/// One change as one line: when, what, what OLD did, what NEW does.
pub fn text(change: &Change<'_>, t0: Nanos) -> String {
    let at = change.at();
    format!(
        "{}  {}: OLD {} | NEW {}",
        offset(at, t0),
        change.subject,
        side_text(&change.old, t0, at),
        side_text(&change.new, t0, at)
    )
}

/// One change as one JSON object.
pub fn json(change: &Change<'_>, t0: Nanos) -> serde_json::Value {
    let side = |s: &Option<Side<'_>>| s.as_ref().map(|s| show::json(s.line, &s.told, t0));
    serde_json::json!({
        "at": change.at(),
        "offset_s": (change.at() - t0) as f64 / 1e9,
        "subject": change.subject,
        "old": side(&change.old),
        "new": side(&change.new),
    })
}

/// What became of a changed decision, in the summary's words.
fn outcome(change: &Change<'_>) -> String {
    let (old, new) = (change.old.as_ref().map(|s| s.told.category), change.new.as_ref().map(|s| s.told.category));
    match new {
        None => "no longer made".into(),
        Some(n) if old == Some(n) => format!("still {n}, at another time, mode or reason"),
        Some("held") => "would now be held".into(),
        Some("suppressed") => "would now be suppressed".into(),
        Some("would execute") => "would now execute".into(),
        Some("waiting for approval") => "would now wait for approval".into(),
        Some("shadow") => "would now be shadowed".into(),
        Some("duplicate") => "would now be duplicates".into(),
        Some(n) => format!("now {n}"),
    }
}

/// `2 decisions differ: 1 would now be held, 1 no longer made`.
pub fn summary(changes: &[Change<'_>]) -> String {
    if changes.is_empty() {
        return "no decision differs".into();
    }
    let outcomes: Vec<String> = changes.iter().map(outcome).collect();
    let counts = show::counts(outcomes.iter().map(String::as_str));
    let parts: Vec<String> = counts.iter().map(|(c, n)| format!("{n} {c}")).collect();
    let verb = if changes.len() == 1 { "decision differs" } else { "decisions differ" };
    format!("{} {verb}: {}", changes.len(), parts.join(", "))
}

/// The summary as a JSON object.
pub fn summary_json(changes: &[Change<'_>]) -> serde_json::Value {
    let outcomes: Vec<String> = changes.iter().map(outcome).collect();
    let counts: serde_json::Map<String, serde_json::Value> =
        show::counts(outcomes.iter().map(String::as_str)).into_iter().map(|(c, n)| (c.to_string(), n.into())).collect();
    serde_json::json!({"summary": {"differ": changes.len(), "by_outcome": counts, "text": summary(changes)}})
}

//! What rocemend decided while the job was slow, and whether the job came
//! back after.
//!
//! A decision belongs to the regression when the dispatcher decided it from
//! a little before the job's rise (a rule may fire on the cause before the
//! step time shows it) to the regression's end, and its subject or target
//! is on the job's path. Its effect is read from the job signal: the first
//! time after the decision that the job is back within the threshold of its
//! baseline to stay.

use engine::dispatch::Decision;
use engine::{Labels, Nanos};
use serde::Serialize;

use super::window::{recovered_after, Windows};

/// One decision taken in the regression.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Taken {
    /// Decision id (`rocemend explain ID`).
    pub id: String,
    /// Its incident (`rocemend timeline --incident ID`).
    pub incident: String,
    /// The rule that proposed it.
    pub rule: String,
    /// `pfcwd.escalate`, …
    pub action: String,
    /// What it acted on.
    pub target: String,
    /// executed, dry-run, …
    pub verdict: String,
    /// When it was decided.
    pub decided_at: Nanos,
    /// When the job was back to its baseline after it, if it was.
    pub recovered_at: Option<Nanos>,
}

/// The decisions of `all` in the regression of `w` whose subject or target
/// `on_path` keeps, oldest first; `incident` names each one's incident.
pub fn taken(
    all: &[Decision],
    w: &Windows,
    lead: Nanos,
    on_path: impl Fn(&Labels) -> bool,
    incident: impl Fn(&Decision) -> String,
    signal: &[(Nanos, f64)],
    (baseline, relative): (f64, f64),
) -> Vec<Taken> {
    let (from, to) = (w.regression.0 - lead, w.regression.1);
    let mut out: Vec<Taken> = all
        .iter()
        .filter(|d| (from..=to).contains(&d.proposal.decided_at))
        .filter(|d| on_path(&d.proposal.subject) || on_path(&d.proposal.action.target))
        .map(|d| Taken {
            id: d.id.clone(),
            incident: incident(d),
            rule: d.proposal.rule.clone(),
            action: d.proposal.action.kind.clone(),
            target: d.proposal.action.target.to_string(),
            verdict: d.verdict.name().to_string(),
            decided_at: d.proposal.decided_at,
            recovered_at: recovered_after(signal, baseline, relative, d.proposal.decided_at),
        })
        .collect();
    out.sort_by_key(|t| t.decided_at);
    out
}

//! How a preview's decisions are told: one line (or JSON object) per
//! decision, a summary by verdict, and the comparable form a diff matches.

use std::collections::BTreeMap;

use engine::dispatch::Verdict;
use engine::Nanos;

use super::simulate::{Line, Preview};
use crate::report::{offset, rfc3339};

/// Jobs a line names; the JSON object has them all.
const JOBS_IN_A_LINE: usize = 8;

/// A decision's verdict in the few words a preview line ends with, and
/// the category the summary counts it under. Ids are left out of the
/// category so two playbooks' runs compare.
pub struct Told {
    /// The category: `would execute`, `held`, `waiting for approval`, …
    pub category: &'static str,
    /// The whole verdict, for people.
    pub text: String,
    /// The verdict without decision ids, which differ between two runs:
    /// what a diff compares.
    pub compare: String,
}

/// The verdict of `line`; `t0` is the recording's start, `at_of` finds
/// when a decision named by id was made.
pub fn tell(line: &Line, t0: Nanos, at_of: &dyn Fn(&str) -> Option<Nanos>) -> Told {
    let d = &line.decision;
    if let Some(told) = judged(line) {
        return told;
    }
    let when = |id: &str| at_of(id).map(|at| format!(" ({})", offset(at, t0).replace(' ', ""))).unwrap_or_default();
    let (category, text) = match &d.verdict {
        Verdict::Executed { .. } if d.undo_of.is_some() => {
            let of = d.undo_of.as_deref().unwrap_or_default();
            let compare = format!("would undo the decision{}", when(of));
            return Told { category: "would undo", text: format!("would undo {of}{}", when(of)), compare };
        }
        Verdict::Executed { .. } => match ladder_rung(d) {
            Some(rung) => ("would execute", format!("would execute ({rung})")),
            None => ("would execute", "would execute".into()),
        },
        Verdict::DryRun { plan } => {
            ("would plan (dry-run)", format!("would plan (dry-run): {}", plan.requests.join(" ; ")))
        }
        Verdict::Shadowed => match out_of_canary_group(d) {
            Some(why) => ("shadow (out of its canary group)", format!("shadow: {why}")),
            None => ("shadow", "shadow: recorded only".into()),
        },
        Verdict::Duplicate { of } => {
            let compare = format!("duplicate of the decision{}", when(of));
            return Told { category: "duplicate", text: format!("duplicate of {of}{}", when(of)), compare };
        }
        Verdict::AlreadyHeld { detail } => ("already held", format!("already held: {detail}")),
        Verdict::Suppressed { reason } => ("suppressed", format!("suppressed: {reason}")),
        Verdict::Held { reason } => ("held", format!("held: {reason}")),
        Verdict::AwaitingApproval { expires_at } => {
            let until = offset(*expires_at, t0).replace(' ', "");
            let mut text = format!("waiting for approval until {until} ({})", rfc3339(*expires_at));
            // What a human is asked to weigh: the running jobs it would touch (`max_jobs_touched`).
            if !d.proposal.jobs.is_empty() {
                let (n, list) = (d.proposal.jobs.len(), d.proposal.job_list(JOBS_IN_A_LINE));
                text.push_str(&format!("; touches {n} running jobs: {list}"));
            }
            ("waiting for approval", text)
        }
        Verdict::Rejected { by } => ("rejected", format!("rejected by {by}")),
        Verdict::Expired { reason } => ("expired", format!("approval expired: {reason}")),
        Verdict::NoActuator => ("no actuator", "no actuator handles it".into()),
        Verdict::Failed { error } => ("failed", format!("failed: {error}")),
        Verdict::Skipped { reason } => ("skipped", format!("undo skipped: {reason}")),
        Verdict::Interrupted { found, .. } => ("interrupted", format!("interrupted: {found}")),
    };
    Told { category, compare: text.clone(), text }
}

/// A decision said again when its outcome check was judged: the judgement.
fn judged(line: &Line) -> Option<Told> {
    let check = line.decision.outcome.as_ref().filter(|_| line.judged)?;
    let result = check.judged.as_ref()?.result;
    let category = match result {
        engine::contracts::OutcomeResult::Effective => "judged effective",
        engine::contracts::OutcomeResult::Ineffective => "judged ineffective",
        engine::contracts::OutcomeResult::Harmful => "judged harmful",
        engine::contracts::OutcomeResult::Unread => "judged unread",
    };
    Some(Told { category, text: check.describe(), compare: category.to_string() })
}

/// Why a shadowed decision was: its rule is enforced on a canary group
/// its subject is not in (the dispatcher's step), if that is why.
fn out_of_canary_group(d: &engine::dispatch::Decision) -> Option<&str> {
    d.steps.iter().map(|s| s.what.as_str()).find(|w| w.starts_with("canary group "))
}

/// The ladder's rung a decision was decided on after the one before it
/// proved ineffective (its note, the step after the first), if it was.
fn ladder_rung(d: &engine::dispatch::Decision) -> Option<&str> {
    d.steps.get(1).map(|s| s.what.as_str()).filter(|w| w.starts_with("ladder: rung"))
}

/// What a decision is about: `rule kind target`, `undo` marked.
pub fn subject(line: &Line) -> String {
    let d = &line.decision;
    let undo = if d.undo_of.is_some() { "undo " } else { "" };
    format!("{} {undo}{} {}", d.proposal.rule, d.proposal.action.kind, d.proposal.action.target)
}

/// When each decision of `preview` was first made, by id.
pub fn first_seen(preview: &Preview) -> BTreeMap<String, Nanos> {
    let mut out = BTreeMap::new();
    for line in &preview.lines {
        out.entry(line.decision.id.clone()).or_insert(line.at);
    }
    out
}

/// One decision as one line of text.
pub fn text(line: &Line, told: &Told, t0: Nanos) -> String {
    format!("{}  {:<8} {}  {}", offset(line.at, t0), line.mode().as_str(), subject(line), told.text)
}

/// One decision as one JSON object.
pub fn json(line: &Line, told: &Told, t0: Nanos) -> serde_json::Value {
    let d = &line.decision;
    serde_json::json!({
        "at": line.at,
        "offset_s": (line.at - t0) as f64 / 1e9,
        "id": d.id,
        "rule": d.proposal.rule,
        "action": d.proposal.action.kind,
        "target": d.proposal.action.target,
        "mode": line.mode().as_str(),
        "verdict": d.verdict.name(),
        "category": told.category,
        "reason": d.verdict.reason(),
        "expires_at": match d.verdict { Verdict::AwaitingApproval { expires_at } => Some(expires_at), _ => None },
        "undo_of": d.undo_of,
        "outcome": d.outcome.as_ref().map(|o| o.describe()),
        "jobs": d.proposal.jobs,
        "text": told.text,
    })
}

/// Decisions by category, in the order they first appear.
pub fn counts<'a>(categories: impl Iterator<Item = &'a str>) -> Vec<(&'a str, usize)> {
    let mut out: Vec<(&str, usize)> = Vec::new();
    for c in categories {
        match out.iter_mut().find(|(k, _)| *k == c) {
            Some((_, n)) => *n += 1,
            None => out.push((c, 1)),
        }
    }
    out
}

/// `3 decisions: 2 would execute, 1 held`.
pub fn summary(counts: &[(&str, usize)]) -> String {
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    let parts: Vec<String> = counts.iter().map(|(c, n)| format!("{n} {c}")).collect();
    let noun = if total == 1 { "decision" } else { "decisions" };
    if parts.is_empty() {
        format!("0 {noun}")
    } else {
        format!("{total} {noun}: {}", parts.join(", "))
    }
}

//! Printing what the daemon does, for people: subjects in a few labels,
//! verdicts in a few words, one decision explained, the daemon's log lines,
//! subjects on escalation ladders ([`offenders`]), and the one text table of
//! the verbs ([`table`]).

pub mod offenders;
pub mod sensors;
pub mod table;

use engine::dispatch::{Decision, Verdict};
use engine::runtime::DaemonEvent;
use engine::{EngineEvent, Labels, Nanos, State, MS};

/// The labels worth showing in one line, in this order.
const SHOWN: &[&str] = &["node", "netdev", "rdma_dev", "prio", "gpu", "rail", "switch", "port", "job"];

/// A subject in a few labels.
pub fn short(labels: &Labels) -> String {
    let parts: Vec<String> = SHOWN.iter().filter_map(|k| labels.get(k).map(|v| format!("{k}={v}"))).collect();
    format!("{{{}}}", parts.join(" "))
}

/// Milliseconds, for latencies.
pub fn ms(ns: Nanos) -> String {
    format!("{:.0} ms", ns as f64 / MS as f64)
}

/// Seconds since `t0`, for timelines.
pub fn offset(t: Nanos, t0: Nanos) -> String {
    format!("+{:>7.3}s", (t - t0) as f64 / 1e9)
}

/// One verdict in a few words.
pub fn verdict(d: &Decision) -> String {
    match &d.verdict {
        Verdict::Executed { outcome } => format!("executed: {}", outcome.summary),
        Verdict::DryRun { plan } => format!("dry-run via {}: would send {}", plan.actuator, plan.requests.join(" ; ")),
        Verdict::Shadowed => "shadow: recorded only".into(),
        Verdict::Duplicate { of } => format!("duplicate of {of}: already in effect"),
        Verdict::NoActuator => "no actuator handles this action".into(),
        Verdict::Failed { error } => format!("failed: {error}"),
        Verdict::Suppressed { reason } => format!("suppressed: {reason}"),
        Verdict::Held { reason } => format!("held: {reason}"),
        Verdict::AwaitingApproval { expires_at } => {
            format!("awaiting approval (`rocemend approve {}`) until {}", d.id, rfc3339(*expires_at))
        }
        Verdict::Rejected { by } => format!("rejected by {by}"),
        Verdict::Expired { reason } => format!("expired: {reason}"),
        Verdict::Skipped { reason } => format!("skipped: {reason}"),
        Verdict::Interrupted { found, .. } => format!("interrupted by a crash: {found}"),
        Verdict::AlreadyHeld { detail } => format!("already held by the target ({detail}): nothing sent"),
    }
}

/// One event as a log line (for `rocemend run`).
pub fn log_event(event: &DaemonEvent) {
    match event {
        DaemonEvent::Engine(EngineEvent::Transition { rule, subject, from, to, values, .. }) => {
            let values: Vec<String> = values.iter().map(|(k, v)| format!("{k}={v:.4}")).collect();
            tracing::info!(message = "Instance changed state.", %rule, subject = %short(subject), from = from.as_str(), to = to.as_str(), values = %values.join(" "));
        }
        DaemonEvent::Engine(EngineEvent::SensorStale { rule, subject, .. }) => {
            tracing::warn!(message = "Inputs went stale; the rule will not act on this subject.", %rule, subject = %short(subject));
        }
        DaemonEvent::Engine(EngineEvent::SensorFresh { rule, subject, .. }) => {
            tracing::info!(message = "Inputs are fresh again.", %rule, subject = %short(subject));
        }
        DaemonEvent::Engine(EngineEvent::Quarantined { rule, error, .. }) => {
            tracing::error!(message = "Rule quarantined.", %rule, %error);
        }
        DaemonEvent::Engine(EngineEvent::ActionError { rule, subject, message }) => {
            tracing::error!(message = "Could not build an action.", %rule, subject = %short(subject), error = %message);
        }
        DaemonEvent::Engine(EngineEvent::Proposal(_)) => {}
        DaemonEvent::Decision(d) => {
            // The ledger's id: what `rocemend explain` takes.
            let (id, proposal, rule, action, mode) =
                (&d.id, &d.proposal.id, &d.proposal.rule, &d.proposal.action, d.mode.as_str());
            match &d.verdict {
                Verdict::Failed { .. } => {
                    tracing::error!(message = "Decision: the action failed.", %id, %proposal, %rule, %action, mode, verdict = %verdict(d))
                }
                Verdict::Held { .. } | Verdict::Interrupted { .. } | Verdict::Skipped { .. } => {
                    tracing::warn!(message = "Decision.", %id, %proposal, %rule, %action, mode, verdict = %verdict(d))
                }
                _ => tracing::info!(message = "Decision.", %id, %proposal, %rule, %action, mode, verdict = %verdict(d)),
            }
        }
        DaemonEvent::Note(n) => tracing::info!(message = "Note.", kind = %n.kind, text = %n.text),
        // The dispatcher logs it with what the mode was before.
        DaemonEvent::ModeSet(_) => {}
        DaemonEvent::Reloaded(r) => {
            tracing::info!(message = "Rules reloaded.", unchanged = %r.unchanged.join(" "), changed = %r.changed.join(" "), added = %r.added.join(" "), removed = %r.removed.join(" "))
        }
        DaemonEvent::ReloadFailed(errors) => {
            for error in errors {
                tracing::error!(message = "Reload refused; the running rules stay.", %error);
            }
        }
        DaemonEvent::SensorExited { sensor, error } => match error {
            Some(error) => tracing::warn!(message = "Sensor stopped.", %sensor, %error),
            None => tracing::info!(message = "Sensor finished.", %sensor),
        },
    }
}

/// Whether a transition is one people want to see in a timeline.
pub fn is_notable(to: State) -> bool {
    matches!(to, State::Pending | State::Firing | State::Resolved)
}

pub use crate::time::rfc3339;

/// An error and its causes on one line, `what: why: why`, as the binary
/// prints its errors: for the places that show an error as text (a
/// problem of `check`, a page of the console).
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        out.push_str(": ");
        out.push_str(&e.to_string());
        cause = e.source();
    }
    out
}

/// One decision with its evidence and every step, as `rocemend explain`
/// prints it and the web console shows it.
pub fn explain_text(d: &Decision) -> String {
    use std::fmt::Write as _;
    let p = &d.proposal;
    let mut out = String::new();
    let undo = d.undo_of.as_ref().map(|o| format!(" (undo of {o})")).unwrap_or_default();
    let _ = writeln!(out, "decision  {}{undo}", d.id);
    let _ = writeln!(out, "rule      {} (sha256 {})", p.rule, p.rule_hash);
    let _ = writeln!(out, "subject   {} {}", short(&p.subject), p.subject);
    let _ = writeln!(out, "action    {}", p.action);
    if !p.jobs.is_empty() {
        let _ = writeln!(out, "jobs      {} running: {}", p.jobs.len(), p.job_list(usize::MAX));
    }
    let values: Vec<String> = p.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = writeln!(out, "evidence  {}", values.join("  "));
    let _ = writeln!(
        out,
        "times     fault seen {}  last sample {}  decided {}",
        rfc3339(p.active_at),
        rfc3339(p.sample_at),
        rfc3339(p.decided_at)
    );
    let _ = writeln!(out, "          dispatched {}  finished {}", rfc3339(d.dispatched_at), rfc3339(d.finished_at));
    let _ = writeln!(
        out,
        "mode      {}   actuator {}   destructive {}",
        d.mode.as_str(),
        d.actuator.as_deref().unwrap_or("-"),
        d.destructive
    );
    let _ = writeln!(out, "verdict   {}", verdict_line(d));
    if let Some(by) = &d.undone_by {
        let _ = writeln!(out, "undone by {by}");
    }
    let _ = writeln!(out, "history");
    for step in &d.steps {
        let _ = writeln!(out, "  {}  {}", rfc3339(step.at), step.what);
    }
    out
}

/// The verdict, with its reason when it has one (`held: limit …`).
pub fn verdict_line(d: &Decision) -> String {
    match d.verdict.reason() {
        Some(reason) => format!("{}: {reason}", d.verdict.name()),
        None => d.verdict.name().to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use engine::dispatch::Step;
    use engine::{Action, Mode, Proposal, Severity};

    /// Decision `id`: a cordon of n1 that touches `jobs`.
    pub(crate) fn decision(id: &str, jobs: &[&str]) -> Decision {
        let node = Labels::from_pairs([("node", "n1")]);
        let proposal = Proposal {
            id: id.into(),
            rule: "gpu-xid".into(),
            rule_hash: String::new(),
            rule_mode: Mode::Enforce,
            severity: Severity::Critical,
            subject: node.clone(),
            action: Action { kind: "node.cordon".into(), target: node, params: Default::default() },
            jobs: jobs.iter().map(|j| j.to_string()).collect(),
            values: vec![],
            active_at: 0,
            sample_at: 0,
            decided_at: 0,
            restored: false,
        };
        Decision::new(id.into(), proposal, Mode::Enforce, Step { at: 0, what: "proposed".into() }, 0)
    }

    #[test]
    fn explain_lists_the_jobs_an_action_touches_and_only_when_it_touches_some() {
        let text = explain_text(&decision("0000000001", &["eval-c", "train-a"]));
        let action = text.lines().position(|l| l.starts_with("action ")).unwrap();
        assert_eq!(text.lines().nth(action + 1), Some("jobs      2 running: eval-c, train-a"), "{text}");
        assert!(!explain_text(&decision("0000000001", &[])).contains("jobs "), "no line for an action touching no job");
    }
}

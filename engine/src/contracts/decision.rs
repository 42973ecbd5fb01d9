//! What the dispatcher decides about a proposal ([`Decision`]), as the
//! ledger stores it and a [`Coordinator`](super::Coordinator) hands it over.

use serde::{Deserialize, Serialize};

use super::action::{Action, Proposal};
use super::actuator::{Outcome, RequestPlan};
use super::prior::Prior;
use crate::labels::Labels;
use crate::mode::Mode;
use crate::time::Nanos;

/// What became of a proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Sent, and the actuator reports success.
    Executed {
        /// What it did.
        outcome: Outcome,
    },
    /// Dry-run: what would have been sent.
    DryRun {
        /// The plan.
        plan: RequestPlan,
    },
    /// Shadow mode: recorded only.
    Shadowed,
    /// The same action on the same target is already in effect.
    Duplicate {
        /// The decision that put it in effect.
        of: String,
    },
    /// The target already holds what the action sets (someone else's doing,
    /// or ours from before a crash): nothing sent, nothing recorded as ours.
    AlreadyHeld {
        /// What the target holds.
        detail: String,
    },
    /// Per-target cooldown or rate limit.
    Suppressed {
        /// Why.
        reason: String,
    },
    /// Over a blast-radius limit, or the circuit breaker is tripped.
    Held {
        /// Why.
        reason: String,
    },
    /// Waits for `rocemend approve ID` or `reject ID`.
    AwaitingApproval {
        /// When the request expires.
        expires_at: Nanos,
    },
    /// A human rejected it.
    Rejected {
        /// Who.
        by: String,
    },
    /// Nobody approved it in time, or the fault it was for is gone.
    Expired {
        /// Why.
        reason: String,
    },
    /// No actuator of the playbook handles this action kind.
    NoActuator,
    /// The actuator failed.
    Failed {
        /// Why.
        error: String,
    },
    /// An undo that was not done: the target is no longer as we left it.
    Skipped {
        /// Why.
        reason: String,
    },
    /// A crash interrupted the actuator call; what verification found. The
    /// action is never repeated by itself.
    Interrupted {
        /// What verification found.
        found: String,
        /// Whether the change may have landed: `false` when the target was
        /// found holding its prior values, so a proposal made again for the
        /// still-firing fault is decided afresh.
        #[serde(default = "may_have_landed")]
        applied: bool,
    },
}

fn may_have_landed() -> bool {
    true
}

impl Verdict {
    /// Short name.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Executed { .. } => "executed",
            Verdict::DryRun { .. } => "dry-run",
            Verdict::Shadowed => "shadowed",
            Verdict::Duplicate { .. } => "duplicate",
            Verdict::AlreadyHeld { .. } => "already-held",
            Verdict::Suppressed { .. } => "suppressed",
            Verdict::Held { .. } => "held",
            Verdict::AwaitingApproval { .. } => "awaiting-approval",
            Verdict::Rejected { .. } => "rejected",
            Verdict::Expired { .. } => "expired",
            Verdict::NoActuator => "no-actuator",
            Verdict::Failed { .. } => "failed",
            Verdict::Skipped { .. } => "skipped",
            Verdict::Interrupted { .. } => "interrupted",
        }
    }

    /// The reason, for verdicts that have one.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Verdict::Suppressed { reason } | Verdict::Held { reason } | Verdict::Expired { reason } => Some(reason),
            Verdict::Skipped { reason } => Some(reason),
            Verdict::AlreadyHeld { detail } => Some(detail),
            Verdict::Failed { error } => Some(error),
            Verdict::Interrupted { found, .. } => Some(found),
            _ => None,
        }
    }
}

/// Where a decision is in its life. The intent is on disk before the
/// actuator runs; a record found in `Intent` at start was interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Decided without calling an actuator, or waiting for approval.
    Decided,
    /// The actuator is being called.
    Intent,
    /// The actuator call finished.
    Done,
}

/// What re-verification found of an action that was in effect: it no
/// longer is, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drift {
    /// When it was found (the dispatcher's clock).
    pub at: Nanos,
    /// Whose doing: the target went back to what it held before (a restart,
    /// a config reload), or someone else set other values.
    pub kind: DriftKind,
    /// What the target holds now.
    pub found: String,
}

/// An action found drifted, for status and metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Drifted {
    /// The decision that had put it in effect.
    pub id: String,
    /// The action.
    pub action: Action,
    /// What was found.
    pub drift: Drift,
    /// The decision that re-applied it, if it was re-applied.
    pub reapplied_by: Option<String>,
}

/// Whose doing a drift is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriftKind {
    /// The target holds its values from before the action again: the change
    /// was lost (a switch restart). Re-applied through the policy while the
    /// incident still fires.
    Reverted,
    /// Someone else changed the target: theirs now, left alone.
    Changed,
}

impl DriftKind {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            DriftKind::Reverted => "reverted",
            DriftKind::Changed => "changed",
        }
    }
}

/// An incident an operator ended by hand (`rocemend resolve`): what the
/// dispatcher does when a rule instance resolves, done at their word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    /// The incident's rule.
    pub rule: String,
    /// Its subject.
    pub subject: Labels,
    /// When its fault was first seen: with rule and subject, the incident.
    pub started: Nanos,
    /// Who ended it.
    pub by: String,
    /// When (the dispatcher's clock).
    pub at: Nanos,
    /// The decisions it made: undos, and requests it expired.
    pub decisions: Vec<String>,
}

/// One step of a decision's history (`explain` shows them in order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// When (the dispatcher's clock).
    pub at: Nanos,
    /// What happened.
    pub what: String,
}

/// The first action of its kind in its plane (see `[[canary]]` in the
/// playbook): the rest of the plane waits until it is judged by the rule
/// that asked for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Canary {
    /// What it stands for: `plane 0`.
    pub group: String,
    /// The proposing rule's window value that must not rise (`spread`).
    pub signal: String,
    /// Its value when the rule fired. `null` in JSON when unknown.
    #[serde(with = "nan_as_null")]
    pub before: f64,
    /// When it is judged.
    pub judge_at: Nanos,
    /// How much higher than `before` counts as worse (0.1: 10 %).
    pub margin: f64,
    /// The judgement, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<CanaryJudgement>,
}

/// What a canary's judgement found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CanaryJudgement {
    /// When.
    pub at: Nanos,
    /// The verdict.
    pub outcome: CanaryOutcome,
    /// The signal's value then (`null`: it could not be read).
    #[serde(with = "nan_as_null")]
    pub value: f64,
    /// Whether the rule's clear condition held then.
    pub cleared: bool,
}

/// A canary's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CanaryOutcome {
    /// The rule's clear condition holds on its subject: the rest of the
    /// plane goes ahead.
    Promoted,
    /// Its signal rose: undone, and its kind held in the plane.
    Reverted,
    /// Neither: it stays, the rest of the plane does not follow.
    Kept,
    /// Its signal could not be read (stale, gone): as `Kept`.
    Unread,
}

impl CanaryOutcome {
    /// Its name as the ledger writes it.
    pub fn name(self) -> &'static str {
        match self {
            CanaryOutcome::Promoted => "promoted",
            CanaryOutcome::Reverted => "reverted",
            CanaryOutcome::Kept => "kept",
            CanaryOutcome::Unread => "unread",
        }
    }
}

impl Canary {
    /// One line for a report: `canary of plane 0, promoted: spread 2.95 → 1.31 (cleared)`.
    pub fn describe(&self) -> String {
        match &self.judged {
            None => format!(
                "canary of {}: {} {:.2} when it fired, judged at {}",
                self.group,
                self.signal,
                self.before,
                crate::time::rfc3339(self.judge_at)
            ),
            Some(j) => format!(
                "canary of {}, {}: {} {:.2} \u{2192} {:.2}{}",
                self.group,
                j.outcome.name(),
                self.signal,
                self.before,
                j.value,
                if j.cleared { " (the rule's clear condition holds)" } else { "" }
            ),
        }
    }
}

/// `f64` fields that may be NaN: JSON has none, so written `null`.
pub(super) mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

/// A proposal with everything decided about it: the ledger record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The decision id (`rocemend explain ID`).
    pub id: String,
    /// For an undo: the decision it undoes.
    #[serde(default)]
    pub undo_of: Option<String>,
    /// For an executed action: the undo that reversed it.
    #[serde(default)]
    pub undone_by: Option<String>,
    /// What the target held before and what the action sets, as the
    /// actuator records it (most: `{"before": …, "after": …}`), read before
    /// acting and written into the intent, so a crash after the change can
    /// be reconciled and undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior: Option<Prior>,
    /// For an executed action: re-verification found it no longer in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
    /// For an executed action of a kind a `[[canary]]` lists, the first of
    /// its plane: what it is judged by, and the judgement once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<Canary>,
    /// For an executed action that changed something: what it should
    /// achieve, by when, and what it did once judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<super::outcome::OutcomeCheck>,
    /// For a proposal held while a canary of its kind and plane is judged:
    /// that canary's decision. Decided again when it is promoted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits_for: Option<String>,
    /// The proposal and its evidence.
    pub proposal: Proposal,
    /// The mode that applied.
    pub mode: Mode,
    /// The actuator it went to, if any.
    pub actuator: Option<String>,
    /// Whether that actuator is destructive (blast-radius limits apply).
    pub destructive: bool,
    /// What became of it.
    pub verdict: Verdict,
    /// Where it is in its life.
    pub phase: Phase,
    /// Actuator calls made.
    pub attempts: u32,
    /// What happened, in order.
    pub steps: Vec<Step>,
    /// When it reached the dispatcher.
    pub dispatched_at: Nanos,
    /// When its verdict was final.
    pub finished_at: Nanos,
}

impl Decision {
    /// A decision about `proposal` as it reaches the dispatcher: in `mode`,
    /// with its first step, not yet decided (`Shadowed` until the dispatcher
    /// says otherwise), going to no actuator yet (so counted destructive).
    pub fn new(id: String, proposal: Proposal, mode: Mode, first: Step, dispatched_at: Nanos) -> Decision {
        Decision {
            id,
            undo_of: None,
            undone_by: None,
            prior: None,
            drift: None,
            canary: None,
            outcome: None,
            waits_for: None,
            proposal,
            mode,
            actuator: None,
            destructive: true,
            verdict: Verdict::Shadowed,
            phase: Phase::Decided,
            attempts: 0,
            steps: vec![first],
            dispatched_at,
            finished_at: 0,
        }
    }
}

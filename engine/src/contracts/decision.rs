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

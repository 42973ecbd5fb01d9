//! What the dispatcher decides, as stored in the ledger.

use serde::{Deserialize, Serialize};

use crate::action::Proposal;
use crate::contracts::{Outcome, Plan};
pub use crate::mode::Mode;
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
        plan: Plan,
    },
    /// Shadow mode: recorded only.
    Shadowed,
    /// The same action on the same target is already in effect.
    Duplicate {
        /// The decision that put it in effect.
        of: String,
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
    },
}

impl Verdict {
    /// Short name.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Executed { .. } => "executed",
            Verdict::DryRun { .. } => "dry-run",
            Verdict::Shadowed => "shadowed",
            Verdict::Duplicate { .. } => "duplicate",
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
            Verdict::Failed { error } => Some(error),
            Verdict::Interrupted { found } => Some(found),
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

//! Fleet coordination: the contract between the dispatcher and whatever
//! keeps a safety budget shared by every daemon of the fleet.
//!
//! One daemon runs per node, so the local safety policy sees
//! only what this daemon did. Limits such as "at most 3 nodes cordoned per
//! 10 minutes" are fleet-wide: when a spine fails, every daemon in its blast
//! radius sees the fault at once, and without a shared budget all of them
//! act. A [`Coordinator`] keeps that budget.
//!
//! The dispatcher consults it only for actions whose [`Scope`] is
//! [`Scope::Fleet`] (as their actuator declares it, unless the playbook
//! sets another), and only after the local policy admitted them, so the
//! path of local actions makes no network call. [`Standalone`] is the
//! default: it grants everything the local policy admitted, which is
//! exactly the behaviour of a daemon without coordination.
//!
//! Fail safe: a coordinator that cannot be reached answers
//! [`Admission::Unavailable`], and the dispatcher holds the action with
//! "coordination unavailable: …" as the reason. Nothing is queued: the rule
//! proposes again while its fault persists, and the daemon recovers by
//! itself when the store returns.

use serde::{Deserialize, Serialize};

#[cfg(doc)]
use super::kinds::Scope;

use super::action::{Action, Impact};
use super::decision::Decision;
use crate::time::Nanos;

/// What a daemon asks the coordinator for before a fleet-scoped action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    /// The decision the token is for (`rocemend explain ID`).
    pub decision: String,
    /// The action kind, e.g. `node.cordon`.
    pub kind: String,
    /// Where it lands: budgets are kept per plane or per switch as well.
    pub impact: Impact,
    /// The decision's time (the dispatcher's clock).
    pub at: Nanos,
}

/// A token taken from the fleet's budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token {
    /// The decision it was taken for.
    pub decision: String,
    /// Who holds it (the daemon's identity).
    pub holder: String,
    /// The budgets it counts against, e.g. `cordon (fleet)`. Empty when no
    /// fleet budget applies (and always with [`Standalone`]).
    pub budgets: Vec<String>,
    /// The store's keys, for release.
    pub keys: Vec<String>,
}

/// The coordinator's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Go ahead.
    Granted(Token),
    /// A budget is exhausted, or the fleet breaker is tripped: the reason
    /// names the budget, its use and who holds its tokens.
    Refused(String),
    /// The store cannot be reached or did not answer in time.
    Unavailable(String),
}

/// Why a token goes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// The action was not carried out: every key goes back at once.
    NotDone,
    /// The action was undone: tokens of concurrency budgets ("one rail per
    /// plane at once") go back; tokens of windowed budgets ("3 per 10
    /// minutes") keep counting until their window ends.
    Undone,
}

/// The fleet-wide circuit breaker.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetBreaker {
    /// Whether it is tripped.
    pub tripped: bool,
    /// Who tripped it (a daemon's identity).
    #[serde(default)]
    pub by: String,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// When, in wall-clock nanoseconds.
    #[serde(default)]
    pub at: Option<Nanos>,
}

/// Whether the coordinator's store can be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Reachable, with a live session.
    Reachable,
    /// Not reachable: why.
    Unreachable(String),
}

/// A switch this daemon may not change now: the aggregators of its shard
/// group share their switches, and this one is another's (or nobody's
/// yet, or this daemon's claim is not confirmed under a live lease).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("switch {switch} is not this aggregator's to change: shard group {group} gives it to {owner}")]
pub struct NotOwner {
    /// The switch.
    pub switch: String,
    /// The shard group.
    pub group: String,
    /// Who has it, in words (an identity, "nobody yet", …).
    pub owner: String,
}

/// The coordination backend could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoordinationError {
    /// The store cannot be reached.
    #[error("coordination unavailable: {0}")]
    Unavailable(String),
    /// The store refused the request.
    #[error("coordination store refused the request: {0}")]
    Refused(String),
}

/// Keeps the fleet's shared safety budget, the fleet breaker and health.
///
/// [`Coordinator::breaker`] and [`Coordinator::health`] read state the
/// backend keeps current in the background (a watch), so asking costs no
/// network call.
#[async_trait::async_trait]
pub trait Coordinator: Send + Sync {
    /// Name, in decisions and status.
    fn name(&self) -> &str;

    /// This daemon's identity in the fleet.
    fn identity(&self) -> &str;

    /// Takes a token for a fleet-scoped action, in one step: either every
    /// budget that applies has room and all are taken, or none is.
    async fn acquire(&self, request: &TokenRequest) -> Admission;

    /// Gives a token back.
    async fn release(&self, token: &Token, why: Release) -> Result<(), CoordinationError>;

    /// The fleet breaker, as last seen.
    fn breaker(&self) -> FleetBreaker;

    /// Trips the fleet breaker for every daemon.
    async fn trip(&self, reason: &str) -> Result<(), CoordinationError>;

    /// Resets the fleet breaker for every daemon (a human did it); returns
    /// the state it had.
    async fn reset(&self, by: &str) -> Result<FleetBreaker, CoordinationError>;

    /// Whether the store can be reached, as last seen.
    fn health(&self) -> Health;

    /// Whether this daemon may change `switch` now, whatever the action's
    /// scope: switch aggregators that share their switches change only the
    /// ones they own, confirmed with the store right before. `Err` is the
    /// reason to hold the action (who owns the switch). Without sharing,
    /// every switch may be changed.
    async fn may_change_switch(&self, switch: &str) -> Result<(), NotOwner> {
        let _ = switch;
        Ok(())
    }

    /// The executed `decision` changed `switch`: aggregators that share
    /// their switches record it where the switch's next owner finds it, so
    /// an action in effect is never left behind when its aggregator dies.
    /// Without sharing, nothing to do.
    async fn switch_changed(&self, decision: &Decision, switch: &str) {
        let _ = (decision, switch);
    }

    /// `action` on `switch` is no longer in effect (undone, or found gone):
    /// its record goes.
    async fn switch_restored(&self, action: &Action, switch: &str) {
        let _ = (action, switch);
    }

    /// Actions in effect on switches this daemon took over from another,
    /// each the executed decision of the previous owner, to adopt as its
    /// own; drained by the call.
    fn take_adopted(&self) -> Vec<Adopted> {
        Vec::new()
    }
}

/// An action in effect on a switch that changed hands: the previous owner's
/// executed decision, for the new owner to undo and reverify as its own.
/// Decision ids are a daemon's own: the adopter records it under one of its
/// own ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Adopted {
    /// The decision, as the previous owner recorded it; its subject's
    /// `node` label is already this daemon's where it was the previous
    /// owner's.
    pub decision: Decision,
    /// Who took it (a daemon's identity).
    pub from: String,
    /// The switch.
    pub switch: String,
}

/// No coordination: the local policy alone decides, as without a fleet.
#[derive(Debug, Clone, Default)]
pub struct Standalone;

#[async_trait::async_trait]
impl Coordinator for Standalone {
    fn name(&self) -> &str {
        "standalone"
    }

    fn identity(&self) -> &str {
        "local"
    }

    async fn acquire(&self, request: &TokenRequest) -> Admission {
        Admission::Granted(Token {
            decision: request.decision.clone(),
            holder: "local".into(),
            budgets: Vec::new(),
            keys: Vec::new(),
        })
    }

    async fn release(&self, _token: &Token, _why: Release) -> Result<(), CoordinationError> {
        Ok(())
    }

    fn breaker(&self) -> FleetBreaker {
        FleetBreaker::default()
    }

    async fn trip(&self, _reason: &str) -> Result<(), CoordinationError> {
        Ok(())
    }

    async fn reset(&self, _by: &str) -> Result<FleetBreaker, CoordinationError> {
        Ok(FleetBreaker::default())
    }

    fn health(&self) -> Health {
        Health::Reachable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn standalone_grants_with_no_budget_and_never_trips() {
        let s = Standalone;
        let request =
            TokenRequest { decision: "d1".into(), kind: "node.cordon".into(), impact: Impact::default(), at: 0 };
        match s.acquire(&request).await {
            Admission::Granted(token) => {
                assert_eq!(token.decision, "d1");
                assert!(token.budgets.is_empty() && token.keys.is_empty());
            }
            other => panic!("standalone refused: {other:?}"),
        }
        s.trip("x").await.unwrap();
        assert!(!s.breaker().tripped);
        assert_eq!(s.health(), Health::Reachable);
    }
}
